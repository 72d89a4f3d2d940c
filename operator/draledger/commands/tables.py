"""Tables that read like kubectl's: upper-case headers, left-aligned columns, three spaces apart.

Rules:
1. Figures are for people, as core/figures.py prints them (``41.7Gi/494Gi``, both sides of a pair in one unit,
   but ``64Mi/1Gi``: a whole binary amount as written); the exact ones are in ``-o json|yaml``.
2. PROBLEMS counts every problem the ledger shows (``core.bodies.problem_count``), as ``kubectl get nal -o wide``
   does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from draledger.commands import colour
from draledger.core.bodies import problem_count
from draledger.core.figures import humanize_pair
from draledger.core.views.problems import printable

MAIN = ("cpu", "memory")
PHASE = 1  # the column of the ledger table that is coloured


def render(
    headers: Sequence[str], rows: Sequence[Sequence[str]], paint: Callable[[int, str], str] | None = None
) -> str:
    """The table; ``paint(column, text)`` may colour a cell's text (never its padding: columns stay aligned).
    A cell that does not print (a newline or a lone surrogate in a name) is shown escaped, on its row."""
    rows = [[printable(text) for text in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def cell(index: int, text: str, painted: bool) -> str:
        shown = paint(index, text) if painted and paint is not None else text
        return shown + " " * (widths[index] - len(text))

    lines = [
        "   ".join(cell(i, text, number > 0) for i, text in enumerate(row)).rstrip()
        for number, row in enumerate([headers, *rows])
    ]
    return "\n".join(lines) + "\n"


def _pair(resources: dict[str, Any], name: str, used: str = "requested", total: str = "allocatable") -> str:
    line = resources.get(name)
    return humanize_pair(name, line[used], line[total]) if line else "-"


def _paint_phase(column: int, text: str) -> str:
    return colour.phase(text) if column == PHASE else text


def ledger_table(ledgers: Sequence[dict[str, Any]], numa: bool = False, coloured: bool = False) -> str:
    """One row a node (``audit -o table``), ending with the release whose rules it follows; ``numa`` adds one row
    per zone below its node; ``coloured`` colours the phases (for a terminal: see commands/colour.py)."""
    headers = (
        "NAME",
        "PHASE",
        "CPU REQ/ALLOC",
        "MEMORY REQ/ALLOC",
        "OTHER",
        "CLAIMS",
        "SCHEDULER",
        "PROBLEMS",
        "RELEASE",
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
                str(problem_count(status)),
                str(status.get("release") or "-"),
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
                        "",
                    ]
                )
    return render(headers, rows, _paint_phase if coloured else None)


def export_table(ledgers: Sequence[dict[str, Any]]) -> str:
    """One row a ledger exported (``export -o table``): what a person checks before a resume."""
    headers = ("NAME", "PHASE", "FROZEN", "MAPPING VERSION", "LEDGER VERSION", "NODE UID")
    rows = []
    for ledger in ledgers:
        status, spec = ledger.get("status") or {}, ledger.get("spec") or {}
        owners = ledger["metadata"].get("ownerReferences") or ()
        owner: dict[str, Any] = next((o for o in owners if o.get("kind") == "Node"), {})
        rows.append([
            ledger["metadata"]["name"],
            str(status.get("phase", "-")),
            "yes" if spec.get("frozen") is True else "no",
            str(status.get("mappingVersion", "-")),
            str(status.get("ledgerVersion", "-")),
            str(owner.get("uid", "-")),
        ])
    return render(headers, rows) if rows else "No ledgers.\n"
