"""``draledger audit --check-releases`` on a dump of a cluster the real operator released pods in (issue 24):
every release record holds against the ledgers the dump holds, and a record that does not is named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from draledger.core.records import ANNOTATION
from draledger.demo.emulator import serve_emulator
from tests.gating.test_release import allocated_claim, gated_pod, released, unallocated_claim
from tests.integration.harness import CLAIMS, LEDGERS, NODES, PODS, SLICES, case_items, eventually, phase_is, running


def audit(dump: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "draledger", "audit", "-f", str(dump), "--check-releases", *args],
                          capture_output=True, text=True, timeout=60, check=False)


async def test_the_operators_releases_hold_and_a_pod_bound_elsewhere_does_not(tmp_path: Path) -> None:
    """A pod released for the scheduler and one pinned to n1, both bound as released: their records hold. The
    pinned one moved to n3 in the dump does not, and audit exits 1 naming it."""
    async with serve_emulator() as (emulator, url):
        emulator.load_objects([*case_items("v08"), unallocated_claim(), allocated_claim("pre", "n1", "a1")])
        async with running(url, pod_status="observe"):
            for node in ("n1", "n2", "n3"):
                await eventually(phase_is(emulator, node, "Ready"))
            emulator.load_objects([gated_pod("free"), gated_pod("pinned", claim="pre")])
            await eventually(lambda: released(emulator, "free") and released(emulator, "pinned"),
                             what="both released")
        for name, node in (("free", "n2"), ("pinned", "n1")):  # the scheduler's part
            emulator.patch_object(PODS, name, {"spec": {"nodeName": node}}, namespace="t")
        items: list[Any] = [obj for resource in (NODES, PODS, SLICES, CLAIMS, LEDGERS)
                            for obj in emulator.store.live(emulator.require(resource).resource)]
    records = {i["metadata"]["name"]: i["metadata"]["annotations"][ANNOTATION] for i in items
               if i["kind"] == "Pod" and ANNOTATION in (i["metadata"].get("annotations") or {})}
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), encoding="utf-8")
    held = audit(dump)
    for item in items:
        if item["kind"] == "Pod" and item["metadata"]["name"] == "pinned":
            item["spec"]["nodeName"] = "n3"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), encoding="utf-8")
    moved = audit(dump)

    assert {"free", "pinned"} == set(records)
    assert records["pinned"].startswith("n1@ledgerVersion=")
    assert records["free"].startswith("*@resourceVersion=")
    assert 0 == held.returncode, held.stderr
    assert "releases: 2 released pods checked, 0 do not hold" in held.stderr
    assert 1 == moved.returncode
    assert (f"release: t/pinned released on {records['pinned']}, bound to n3, its ledger now at ledgerVersion"
            in moved.stderr)
    assert f"bound to n3, but released on {records['pinned']} only" in moved.stderr
