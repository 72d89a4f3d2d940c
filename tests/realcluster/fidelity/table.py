"""The agreement table in docs/accounting.md: per feature and release, how many generated cases had the feature and
how many of them agreed with the real scheduler.

Rules:
1. The table sits between ``<!-- agreement:begin -->`` and ``<!-- agreement:end -->``; its rows are exactly
   ``features.FEATURES`` in order, after one row for all cases, and its columns the releases, oldest first.
2. A run covers one release at a time (the real-cluster suite runs one control plane at a time): writing replaces
   that release's column and keeps the others, so three runs fill the table.
3. A cell reads ``agreeing/cases``; ``n/a`` where the release cannot have the shape (``features.occurs_in``);
   ``-`` where no run has filled it yet. The line under the table says which seeds each column covers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from tests.realcluster.fidelity.features import FEATURES, occurs_in

DOC = Path(__file__).resolve().parents[3] / "docs" / "accounting.md"
RELEASES = ("v1.36", "v1.37", "v1.38")
ALL = "all cases"
_BLOCK = re.compile(r"(<!-- agreement:begin -->\n)(.*?)(<!-- agreement:end -->)", re.S)
_SEEDS = re.compile(r"^Seeds: (.*)$", re.M)

Counts = Mapping[str, tuple[int, int]]  # feature (or ALL) -> (cases, agreeing cases)


def block(text: str) -> str:
    found = _BLOCK.search(text)
    assert found is not None, f"{DOC} has no agreement block"
    return found[2]


def cells(table: str) -> dict[str, dict[str, str]]:
    """Row name -> release -> cell, read from the table's text."""
    out: dict[str, dict[str, str]] = {}
    for line in table.splitlines():
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(parts) == len(RELEASES) + 1 and parts[0] not in ("feature", "---"):
            out[parts[0].strip("`")] = dict(zip(RELEASES, parts[1:], strict=True))
    return out


def render(table: dict[str, dict[str, str]], seeds: dict[str, str]) -> str:
    lines = [f"| feature | {' | '.join(RELEASES)} |", f"|---|{'---|' * len(RELEASES)}"]
    for row in (ALL, *FEATURES):
        lines.append(f"| {row} | " + " | ".join(table.get(row, {}).get(r, "-") for r in RELEASES) + " |")
    shown = "; ".join(f"{r} {seeds[r]}" for r in RELEASES if r in seeds)
    return "\n".join(lines) + f"\n\nSeeds: {shown or 'none yet'}\n"


def update(text: str, release: str, counts: Counts, seeds: str) -> str:
    """Rule 2: ``text`` (the page) with ``release``'s column replaced by ``counts``."""
    old = block(text)
    table = cells(old)
    for row in (ALL, *FEATURES):
        cases, agreeing = counts.get(row, (0, 0))
        table.setdefault(row, {})[release] = (f"{agreeing}/{cases}" if cases or row == ALL
                                              else "n/a" if not occurs_in(row, release) else "0/0")
    found = _SEEDS.search(old)
    known = dict(part.split(" ", 1) for part in found[1].split("; ")) if found and found[1] != "none yet" else {}
    known[release] = seeds
    return _BLOCK.sub(lambda m: m[1] + render(table, known) + m[3], text, count=1)


def write(release: str, counts: Counts, seeds: str) -> None:
    DOC.write_text(update(DOC.read_text(encoding="utf-8"), release, counts, seeds), encoding="utf-8")
