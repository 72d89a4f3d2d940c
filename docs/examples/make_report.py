"""Render docs/images/ledger-report.svg from four conformance cases, one node each.

Every conformance dump calls its node ``n1``; loaded together they would collide. So each dump is
computed on its own (as ``draledger audit -f DUMP`` would) and its node renamed before rendering.

    .venv/bin/python docs/examples/make_report.py
"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from draledger.core.accounting.ledger import Flags
from draledger.commands.audit import ledgers_of
from draledger.commands.dumps import load_paths
from draledger.commands.report import write_svg

ROOT = Path(__file__).resolve().parents[2]
CASES = {  # conformance case -> the name its node gets in the picture
    "v02-gpu-hugepages-cores": "gpu-node-1",
    "v11-overcommitted": "cpu-node-2",
    "v09-scheduler-divergence": "cpu-node-3",
    "v06-missing-resource-slice": "gpu-node-4",
}
NOW = "2026-12-02T10:00:00Z"


def renamed(ledger: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """The ledger of node ``old`` as if the node were called ``new`` (name, nodeName, pools)."""
    out = copy.deepcopy(ledger)
    out["metadata"]["name"] = new
    out["status"]["nodeName"] = new
    for claim in out["status"].get("claims", []):
        for device in claim.get("devices", []):
            device["pool"] = str(device.get("pool", "")).replace(old, new, 1)
    return out


def main(output: Path = ROOT / "docs" / "images" / "ledger-report.svg") -> None:
    ledgers: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for case, name in CASES.items():
            dump = json.loads((ROOT / "tests" / "conformance" / f"{case}.json").read_text())["dump"]
            path = Path(tmp) / f"{case}.json"
            path.write_text(json.dumps(dump))
            for ledger in ledgers_of(load_paths([str(path)]), Flags(), NOW):
                ledgers.append(renamed(ledger, ledger["status"]["nodeName"], name))
    write_svg(output, ledgers, title="dra-ledger: four conformance cases as one cluster")
    sys.stdout.write(f"wrote {output.relative_to(ROOT)} ({len(ledgers)} nodes)\n")


if __name__ == "__main__":
    main()
