"""The key to the colours: bar segments, marks and phase badges, wrapped to the page width."""

from __future__ import annotations

from typing import Final

from draledger.commands.report.drawing import Svg, badge_width
from draledger.commands.report.measuring import Px, text_width
from draledger.commands.report.palette import (
    ALLOC_LINE,
    BORDER,
    CLAIMS,
    FREE,
    MUTED,
    ORDINARY,
    PHASE_COLOURS,
    TEXT,
    WARNING,
)

_SIZE: Final = 11
_ITEMS: Final = (
    ("ordinary", "ordinary requests (requested − claims)"),
    ("claims", "DRA claims"),
    ("free", "free"),
    ("over", "overcommit (past allocatable)"),
    ("line", "allocatable"),
    ("divergence", "claims ≠ schedulerCharged (dashed tick: the scheduler's total)"),
)
_SWATCHES: Final = {"ordinary": ORDINARY, "claims": CLAIMS, "free": FREE, "over": WARNING}


def _swatch(svg: Svg, kind: str, x: Px, y: Px) -> None:
    if kind == "line":
        svg.rect(x, y, 12, 10, FREE)
        svg.line(x + 6, y - 2, x + 6, y + 12, ALLOC_LINE, extra=' stroke-width="1.5"')
    elif kind == "divergence":
        svg.diamond(x + 6, y + 5, 6, cls="legend-divergence")
    else:
        svg.rect(x, y, 12, 10, _SWATCHES[kind], extra=f' stroke="{BORDER}" stroke-width="0.5"')
        if kind == "over":
            svg.rect(x, y, 12, 10, "url(#over-hatch)")


def legend(svg: Svg, x: Px, y: Px, width: Px) -> Px:
    """Swatches, then phase badges; wraps to ``width``. Returns the height used."""
    svg.open("legend")
    cx, cy = x, y
    for kind, label in _ITEMS:
        item_w = 18 + text_width(label, _SIZE) + 18
        if cx + item_w > x + width and cx > x:
            cx, cy = x, cy + 20
        _swatch(svg, kind, cx, cy + 2)
        svg.text(cx + 18, cy + 11, label, size=_SIZE, fill=TEXT)
        cx += item_w
    cy += 24
    svg.text(x, cy + 12, "phase:", size=_SIZE, fill=MUTED)
    start = x + text_width("phase: ", _SIZE) + 4
    right = start
    for phase in PHASE_COLOURS:
        w = badge_width(phase, 10)
        if right + w > x + width:
            right, cy = start, cy + 22
        svg.badge(right + w, cy, phase, 10)
        right += w + 6
    svg.close()
    return cy + 20 - y
