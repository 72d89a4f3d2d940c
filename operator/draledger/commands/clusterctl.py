"""Cluster commands for people and pipelines: ``freeze``, ``resume``, ``export`` and ``report``.

Rules:
1. Freeze and resume are merge patches of a ledger's ``spec.frozen`` and ``spec.reason`` (what GitOps or
   ``kubectl patch`` would do); bound pods are never touched, only new claim pods stay gated. A freeze without
   ``--reason`` keeps the reason already written (freezing again does not erase why); a resume removes it. A
   command names its nodes (``--node``, repeatable) or says ``--all``: nothing is frozen or resumed by default.
2. An export identifies itself: a ``draledgerExport`` block beside the List's items says where it comes from
   (the cluster, or a dump it was computed from), which cluster (the UID of its ``kube-system`` Namespace),
   the server, the time and the ledgers it holds.
3. ``resume --since-export FILE`` refuses, before touching anything (exit 2, one line naming the file), a file
   that is not such an export, an export computed from a dump, an export of another cluster (or one whose
   cluster it cannot verify), and an export without a node it was named to resume. It resumes only frozen
   nodes whose ``mappingVersion`` moved past the exported one and whose Node is the one exported (same UID);
   every other node stays frozen and is named, and the exit code is 1 while any does.
4. The API is asked with short timeouts and one retry: an unreachable, refusing or untrusted server ends the
   command within seconds with one line naming the server and the cause (exit 1); an unusable kubeconfig
   exits 2. Never a traceback for the outside world's faults.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import aiohttp
import yaml

from draledger.commands.errors import UNUSABLE, CommandError, writable
from draledger.core.bodies import API_VERSION, KIND, PLURAL
from draledger.core.views.problems import show
from draledger.operator.connecting import CredentialsError, Source, credentials
from draledger.operator.kubeapi import ApiError, KubeApi, NotFound, transport_cause
from draledger.operator.options import ConfigError, resolve

LEDGERS = f"/apis/{API_VERSION}/{PLURAL}"
CLUSTER_ID = "/api/v1/namespaces/kube-system"  # its UID is the cluster's identity
EXPORT = "draledgerExport"
FORMAT_VERSION = 1
# One retry, 3 s to connect, 10 s per request: a person at a terminal learns within seconds that the server
# cannot be reached (the operator's own client retries for half a minute).
ATTEMPTS, TIMEOUT, CONNECT_TIMEOUT = 1, 10.0, 3.0


# ------------------------------------------------------------------ talking to the API server


def connect(server: str, kubeconfig: str, context: str = "") -> KubeApi:
    """A client with short timeouts; CommandError(2) when no usable credentials can be found."""
    source = Source(server, kubeconfig, context)
    try:
        info = credentials(source)
    except CredentialsError as error:
        raise CommandError(str(error), UNUSABLE) from None
    return KubeApi(info, attempts=ATTEMPTS, timeout=TIMEOUT, connect_timeout=CONNECT_TIMEOUT,
                   login=lambda: credentials(source))


def unreachable(api: KubeApi, error: BaseException) -> CommandError:
    if isinstance(error, ApiError) and error.status in (401, 403):
        return CommandError(f"the API server {api.server} refused the request: {error}")
    return CommandError(f"cannot reach the API server {api.server}: {transport_cause(error, TIMEOUT)}")


async def cluster_id(api: KubeApi) -> str | None:
    """The UID of the ``kube-system`` Namespace; None when it cannot be read (403, 404)."""
    try:
        namespace = await api.get(CLUSTER_ID)
    except ApiError as error:
        if error.status in (403, 404):
            return None
        raise
    uid = (namespace.get("metadata") or {}).get("uid") if isinstance(namespace, dict) else None
    return uid if isinstance(uid, str) and uid else None


async def list_ledgers(api: KubeApi) -> list[dict[str, Any]]:
    try:
        items = await api.list_all(LEDGERS)
    except NotFound:
        raise CommandError(
            f"the API server {api.server} serves no {KIND} (HTTP 404): is the dra-ledger CRD installed?"
        ) from None
    return sorted(items, key=lambda obj: obj["metadata"]["name"])


def _field(obj: object, *path: str) -> object:
    """``obj[path[0]][path[1]]...``, or None where a step is missing or not an object (ledgers from a file
    are checked like any other input)."""
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _frozen(obj: dict[str, Any]) -> bool:
    return _field(obj, "spec", "frozen") is True


def _owner_uid(obj: dict[str, Any]) -> str:
    owners = _field(obj, "metadata", "ownerReferences")
    for owner in owners if isinstance(owners, list) else ():
        if _field(owner, "kind") == "Node" and isinstance(uid := _field(owner, "uid"), str):
            return uid
    return ""


# ------------------------------------------------------------------ freeze and resume


async def set_frozen(
    api: KubeApi, names: Sequence[str], frozen: bool, reason: str | None, out: TextIO, err: TextIO
) -> int:
    """Patch ``spec.frozen`` (and ``spec.reason``, which the operator's Events quote) of each named ledger: a
    freeze without a reason (None) keeps the one the ledger has, ``""`` removes it; a resume removes it."""
    failed = 0
    for name in names:
        spec: dict[str, Any] = {"frozen": frozen}
        if not frozen or reason is not None:
            spec["reason"] = reason or None
        try:
            await api.merge_patch(f"{LEDGERS}/{name}", {"spec": spec})
        except NotFound:
            failed += 1
            err.write(f"error: nodeallocatableledger/{name}: not found (no such node, or no ledger for it yet)\n")
            continue
        except ApiError as error:
            if error.status in (401, 403):
                raise
            failed += 1
            err.write(f"error: nodeallocatableledger/{name}: {' '.join(str(error).split())}\n")
            continue
        out.write(f"nodeallocatableledger/{name} {'frozen' if frozen else 'resumed'}\n")
    return 1 if failed else 0


async def freeze(api: KubeApi, nodes: Sequence[str] | None, reason: str | None, out: TextIO, err: TextIO) -> int:
    """Freeze the named nodes, or every ledger (``nodes=None``)."""
    names = list(nodes) if nodes is not None else [o["metadata"]["name"] for o in await list_ledgers(api)]
    if not names:
        out.write("no ledgers to freeze\n")
    return await set_frozen(api, names, True, reason, out, err)


async def resume(
    api: KubeApi, nodes: Sequence[str] | None, since_export: str, out: TextIO, err: TextIO
) -> int:
    """Resume the named nodes, or every frozen ledger (``nodes=None``); with an export, only those whose
    mappings were repaired since (rule 3)."""
    if not since_export:
        if nodes is None:
            nodes = [o["metadata"]["name"] for o in await list_ledgers(api) if _frozen(o)]
            if not nodes:
                out.write("no frozen ledgers\n")
        return await set_frozen(api, nodes, False, None, out, err)
    export = read_export(since_export, nodes)
    live = {o["metadata"]["name"]: o for o in await list_ledgers(api)}
    if export.cluster:
        here = await cluster_id(api)
        if here is None:
            raise CommandError(
                f"{since_export}: cannot verify that it is an export of this cluster: the kube-system Namespace "
                f"of {api.server} cannot be read (grant get on namespaces/kube-system)", UNUSABLE
            )
        if here != export.cluster:
            raise CommandError(
                f"{since_export}: an export of another cluster (kube-system uid {export.cluster}, exported from "
                f"{export.server or 'an unnamed server'}); this cluster's is {here}", UNUSABLE
            )
    asked = list(nodes) if nodes is not None else [name for name, obj in live.items() if _frozen(obj)]
    ready: list[str] = []
    held = 0
    failed = 0
    for name in asked:
        obj = live.get(name)
        if obj is None:
            failed += 1
            err.write(f"error: nodeallocatableledger/{name}: not found (no such node, or no ledger for it yet)\n")
            continue
        if not _frozen(obj):
            out.write(f"nodeallocatableledger/{name} is not frozen\n")
            continue
        why = export.holds_back(name, obj)
        if why:
            held += 1
            out.write(f"nodeallocatableledger/{name} stays frozen: {why}\n")
        else:
            ready.append(name)
    if not asked:
        out.write("no frozen ledgers\n")
    code = await set_frozen(api, ready, False, None, out, err) if ready else 0
    return 1 if held or failed or code else 0


# ------------------------------------------------------------------ exports


@dataclass(frozen=True, slots=True)
class ExportedLedger:
    mapping_version: int | None  # None: the ledger had no status yet when it was exported
    node_uid: str


@dataclass(frozen=True, slots=True)
class Export:
    path: str
    cluster: str  # kube-system uid; "" when it could not be read at export time
    server: str
    exported_at: str
    ledgers: dict[str, ExportedLedger]

    def holds_back(self, name: str, live: dict[str, Any]) -> str:
        """Why a frozen node must stay frozen (rule 3), or "" when it may resume."""
        exported = self.ledgers.get(name)
        if exported is None:
            return f"not in the export {self.path} (a node added since? resume it by name, without the export)"
        now_uid = _owner_uid(live)
        if exported.node_uid and now_uid and exported.node_uid != now_uid:
            return f"its Node was replaced since the export (uid {exported.node_uid}, now {now_uid})"
        if not self.cluster and not (exported.node_uid and now_uid):
            return "cannot tell it is the node exported (the export names no cluster, the ledger no Node UID)"
        if exported.mapping_version is None:
            return "the export holds no mappingVersion for it (its ledger had no status yet)"
        version = _field(live, "status", "mappingVersion")
        if type(version) is not int:
            return "its ledger has no mappingVersion yet"
        if version <= exported.mapping_version:
            return f"mappingVersion {exported.mapping_version} unchanged since export"
        return ""


def read_export(path: str, nodes: Sequence[str] | None = None) -> Export:
    """The export in ``path``, checked (rule 3); CommandError(2) naming the file and the reason."""
    from draledger.commands.dumps import DumpError, parse_text, read_source

    def refuse(reason: str) -> CommandError:
        return CommandError(f"{path}: {reason}", UNUSABLE)

    try:
        document = parse_text(read_source(path), path)
    except DumpError as error:
        raise CommandError(str(error), UNUSABLE) from None
    block = document.get(EXPORT) if isinstance(document, dict) else None
    if not isinstance(block, dict):
        raise refuse(
            f"not a draledger export (no {EXPORT} block): write one with `draledger export --from-cluster`"
        )
    if block.get("source") == "dump":
        raise refuse(
            "an export computed from a dump (draledger export -f), not a snapshot of the cluster's ledgers: "
            "export with --from-cluster"
        )
    fields = {key: block.get(key) for key in ("source", "cluster", "server", "exportedAt")}
    if fields["source"] != "cluster" or not all(isinstance(v, str) for v in fields.values()):
        raise refuse(f"a malformed export: {EXPORT} needs source: cluster and string cluster, server, exportedAt")
    if block.get("formatVersion") != FORMAT_VERSION:
        raise refuse(f"an export of format {show(block.get('formatVersion'))}; this draledger reads {FORMAT_VERSION}")
    listed = block.get("ledgers")
    items = document.get("items")
    if not (isinstance(listed, list) and all(isinstance(n, str) for n in listed) and isinstance(items, list)):
        raise refuse(f"a malformed export: {EXPORT}.ledgers and items must be lists")
    ledgers: dict[str, ExportedLedger] = {}
    for index, item in enumerate(items):
        meta = item.get("metadata") if isinstance(item, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        version = _field(item, "status", "mappingVersion")
        if not isinstance(name, str) or _field(item, "kind") != KIND or not (version is None or type(version) is int):
            raise refuse(f"a malformed export: items[{index}] is not a {KIND} with a name (and an integer "
                         "mappingVersion, if any)")
        ledgers[name] = ExportedLedger(version, _owner_uid(item))
    if sorted(ledgers) != sorted(listed) or len(listed) != len(items):
        raise refuse(f"its items are not the ledgers its {EXPORT} lists (edited or cut short?)")
    missing = [n for n in nodes or () if n not in ledgers]
    if missing:
        raise refuse(f"the export holds no ledger for {', '.join(missing)}")
    return Export(path, str(fields["cluster"]), str(fields["server"]), str(fields["exportedAt"]), ledgers)


def export_document(items: list[dict[str, Any]], identity: dict[str, Any]) -> dict[str, Any]:
    """A ``kind: List`` of ledgers with its ``draledgerExport`` block (rule 2)."""
    block = {"formatVersion": FORMAT_VERSION, **identity, "ledgers": [i["metadata"]["name"] for i in items]}
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, EXPORT: block, "items": items}


def cluster_identity(cluster: str | None, server: str, now: str) -> dict[str, Any]:
    return {"source": "cluster", "cluster": cluster or "", "server": server, "exportedAt": now}


def dump_identity(files: Sequence[str], now: str) -> dict[str, Any]:
    return {"source": "dump", "files": list(files), "exportedAt": now}


def write_document(document: dict[str, Any], path: str, output: str, stdout: TextIO | None = None) -> None:
    """The export as ``output`` (json, yaml, or table: one line a ledger, for people) into ``path``
    (``-``: ``stdout``, by default sys.stdout)."""
    out = stdout if stdout is not None else sys.stdout
    try:
        stream: TextIO = out if path == "-" else open(path, "w", encoding="utf-8")  # noqa: SIM115
    except OSError as error:
        raise CommandError(f"{path}: cannot write: {error.strerror or error}", UNUSABLE) from None
    try:
        if output == "yaml":
            yaml.safe_dump(document, stream, sort_keys=False)
        elif output == "table":
            from draledger.commands.tables import export_table

            stream.write(export_table(document["items"]))
        else:
            json.dump(document, stream, indent=2)
            stream.write("\n")
    finally:
        if stream is not out:
            stream.close()


def strip_server_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """What an export keeps: name, owner, spec and status; not the server's bookkeeping."""
    meta = obj.get("metadata") or {}
    kept = {k: meta[k] for k in ("name", "ownerReferences", "labels", "annotations") if k in meta}
    return {"apiVersion": API_VERSION, "kind": obj.get("kind", KIND), "metadata": kept,
            "spec": obj.get("spec") or {}, "status": obj.get("status") or {}}


# ------------------------------------------------------------------ the commands


async def _command(args: argparse.Namespace, api: KubeApi, out: TextIO, err: TextIO) -> int:
    nodes = None if getattr(args, "all", False) else list(getattr(args, "node", []))
    if args.command == "freeze":
        return await freeze(api, nodes, args.reason, out, err)
    if args.command == "resume":
        return await resume(api, nodes, args.since_export, out, err)
    items = [strip_server_fields(o) for o in await list_ledgers(api)]
    if args.command == "export":
        from draledger.operator.clocks import now_rfc3339

        cluster = await cluster_id(api)
        if cluster is None:
            err.write(
                "warning: the kube-system Namespace cannot be read: the export names no cluster, and "
                "`resume --since-export` will check each node's UID instead\n"
            )
        document = export_document(items, cluster_identity(cluster, api.server, now_rfc3339()))
        write_document(document, args.output_file, args.output, out)
        if args.output_file != "-":
            out.write(f"wrote {args.output_file} ({len(items)} ledgers)\n")
        return 0
    from draledger.commands import report

    try:
        report.write_svg(args.svg, items)
    except OSError as error:
        raise CommandError(f"{args.svg}: cannot write: {error.strerror or error}", UNUSABLE) from None
    out.write(f"wrote {args.svg} ({len(items)} ledgers)\n")
    return 0


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``freeze``, ``resume``, ``export --from-cluster`` or ``report``; any failure is one line on ``err``."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        resolve(args)  # --server, --kubeconfig, --context not given: their variables (done already by main)
    except ConfigError as error:
        err.write(f"error: {error}\n")
        return UNUSABLE

    async def go() -> int:
        if args.command == "resume" and args.since_export:
            read_export(args.since_export, None if args.all else args.node)  # refuse a bad file before connecting
        writable(args.svg if args.command == "report" else getattr(args, "output_file", "-"))
        api = connect(args.server, args.kubeconfig, args.context)
        try:
            try:
                await api.session()  # builds the TLS context: a missing CA file is a bad kubeconfig
            except (OSError, ssl.SSLError, ValueError) as error:
                cause = transport_cause(error, TIMEOUT)
                raise CommandError(f"cannot use the credentials for {api.server}: {cause}", UNUSABLE) from None
            return await _command(args, api, out, err)
        except (aiohttp.ClientError, TimeoutError, json.JSONDecodeError, ssl.SSLError) as error:
            raise unreachable(api, error) from None
        except ApiError as error:
            if error.status in (401, 403):
                raise unreachable(api, error) from None
            raise CommandError(f"{api.server}: {error}") from None
        finally:
            await api.close()

    try:
        return asyncio.run(go())
    except CommandError as error:
        err.write(f"error: {error}\n")
        return error.code
