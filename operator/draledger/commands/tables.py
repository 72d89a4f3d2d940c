"""Tables that read like kubectl's: upper-case headers, left-aligned columns, three spaces apart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MAIN = ("cpu", "memory")


def render(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = [
        "   ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in [headers, *rows]
    ]
    return "\n".join(lines) + "\n"


def _pair(resources: dict[str, Any], name: str, used: str = "requested", total: str = "allocatable") -> str:
    line = resources.get(name)
    return f"{line[used]}/{line[total]}" if line else "-"


def ledger_table(ledgers: Sequence[dict[str, Any]], numa: bool = False) -> str:
    """One row a node (``audit -o table``); ``numa`` adds one row per zone below its node."""
    headers = (
        "NAME",
        "PHASE",
        "CPU REQ/ALLOC",
        "MEMORY REQ/ALLOC",
        "OTHER",
        "CLAIMS",
        "SCHEDULER",
        "PROBLEMS",
    )
    rows: list[list[str]] = []
    for ledger in ledgers:
        status = ledger["status"]
        resources = status["resources"]
        other = ",".join(f"{r}={_pair(resources, r)}" for r in resources if r not in MAIN) or "-"
        sync = next((c for c in status["conditions"] if c["type"] == "SchedulerInSync"), None)
        rows.append(
            [
                status["nodeName"],
                status["phase"],
                _pair(resources, "cpu"),
                _pair(resources, "memory"),
                other,
                str(status["claimCount"]),
                "InSync" if sync and sync["status"] == "True" else "Diverged",
                str(len(status["problems"])),
            ]
        )
        if numa:
            for zone in status["numaZones"]:
                zres = zone["resources"]
                zother = ",".join(
                    f"{r}={_pair(zres, r, 'claims', 'capacity')}" for r in zres if r not in MAIN
                )
                rows.append(
                    [
                        f"  numa-{zone['id']}",
                        "",
                        _pair(zres, "cpu", "claims", "capacity"),
                        _pair(zres, "memory", "claims", "capacity"),
                        zother or "-",
                        "",
                        "",
                        "",
                    ]
                )
    return render(headers, rows)
