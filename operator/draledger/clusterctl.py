"""Cluster commands for people and pipelines: ``freeze``, ``resume``, ``export`` and ``report``.

Rules:
1. Freeze and resume are patches of a ledger's ``spec.frozen`` (what GitOps or ``kubectl patch`` would
   do); bound pods are never touched, only new claim pods stay gated.
2. ``resume --since-export FILE`` resumes only the nodes whose ``mappingVersion`` moved past the exported
   one (their mappings were repaired); the others stay frozen and are named.
3. ``export`` writes every ledger with its versions, from the cluster or computed from a dump.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import yaml

from draledger.config import OperatorConfig
from draledger.kubeapi import ApiError, KubeApi
from draledger.ledgers import API_VERSION, PLURAL

LEDGERS = f"/apis/{API_VERSION}/{PLURAL}"


def _api(server: str, kubeconfig: str) -> KubeApi:
    from draledger.running import connection_info

    if kubeconfig:
        os.environ["KUBECONFIG"] = kubeconfig
    return KubeApi(connection_info(OperatorConfig(server=server)))


async def list_ledgers(api: KubeApi) -> list[dict[str, Any]]:
    items = await api.list_all(LEDGERS)
    return sorted(items, key=lambda obj: obj["metadata"]["name"])


async def set_frozen(
    api: KubeApi, nodes: Sequence[str], frozen: bool, reason: str, out: TextIO
) -> int:
    names = list(nodes) or [obj["metadata"]["name"] for obj in await list_ledgers(api)]
    failed = 0
    for name in names:
        spec: dict[str, Any] = {"frozen": frozen, "reason": reason or None}
        try:
            await api.merge_patch(f"{LEDGERS}/{name}", {"spec": spec})
        except ApiError as error:
            failed += 1
            out.write(f"error: {name}: {error}\n")
            continue
        out.write(f"nodeallocatableledger/{name} {'frozen' if frozen else 'resumed'}\n")
    return 1 if failed else 0


def exported_versions(path: str) -> dict[str, int]:
    with open(path, encoding="utf-8") as stream:
        document = yaml.safe_load(stream)
    return {
        item["metadata"]["name"]: int((item.get("status") or {}).get("mappingVersion") or 0)
        for item in (document or {}).get("items") or []
    }


async def resume(api: KubeApi, nodes: Sequence[str], since_export: str, out: TextIO) -> int:
    if not since_export:
        return await set_frozen(api, nodes, False, "", out)
    before = exported_versions(since_export)
    ready: list[str] = []
    held: list[str] = []
    for obj in await list_ledgers(api):
        name = obj["metadata"]["name"]
        if nodes and name not in nodes:
            continue
        now = int((obj.get("status") or {}).get("mappingVersion") or 0)
        (ready if name not in before or now > before[name] else held).append(name)
    for name in held:
        out.write(f"nodeallocatableledger/{name} stays frozen: mappingVersion {before[name]} unchanged since export\n")
    if not ready:
        return 1 if held else 0
    return await set_frozen(api, ready, False, "", out)


def write_list(items: list[dict[str, Any]], path: str, output: str) -> None:
    document = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}
    stream: TextIO = sys.stdout if path == "-" else open(path, "w", encoding="utf-8")  # noqa: SIM115
    try:
        if output == "yaml":
            yaml.safe_dump(document, stream, sort_keys=False)
        else:
            json.dump(document, stream, indent=2)
            stream.write("\n")
    finally:
        if stream is not sys.stdout:
            stream.close()


def strip_server_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """What an export keeps: name, owner, spec and status; not the server's bookkeeping."""
    meta = obj.get("metadata") or {}
    kept = {k: meta[k] for k in ("name", "ownerReferences", "labels", "annotations") if k in meta}
    return {"apiVersion": API_VERSION, "kind": obj.get("kind", "NodeAllocatableLedger"), "metadata": kept,
            "spec": obj.get("spec") or {}, "status": obj.get("status") or {}}
