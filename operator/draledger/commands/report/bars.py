"""Stacked bars against a limit: a resource's requests against ``allocatable``, a zone's claims against its
capacity.

How a resource bar reads (left to right, against ``allocatable``):
- ordinary requests: ``requested − claims`` (clipped at 0: with pod-level resources the claims may be
  part of, or exceed, the pod's own request; the bar shows what the scheduler charges, ``requested``);
- DRA claims: ``claims``, up to ``requested``;
- free: ``allocatable − requested`` when positive;
- overcommit: when ``requested > allocatable`` the bar's scale becomes ``requested``, the allocatable
  line moves inside the bar and everything past it is drawn in the warning colour.

Widths are exact: a segment is ``width × part.nanos / scale.nanos`` as a Fraction. Every bar is a group of
class ``mark``: text never crosses one (the report's layout tests check this in a real browser).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from draledger.commands.report.drawing import Svg, token
from draledger.commands.report.measuring import Px
from draledger.commands.report.nodes import Line
from draledger.commands.report.palette import BORDER, CLAIMS, DIVERGENCE, FREE, ORDINARY, WARNING
from draledger.core.quantities import Quantity

Segment = tuple[Quantity, str, str]  # amount, colour, class


def _share(part: int, whole: int, width: Px) -> Fraction:
    return Fraction(part, whole) * width if whole > 0 else Fraction(0)


def bar(svg: Svg, x: Px, y: Px, width: Px, height: Px, used: Sequence[Segment], limit: Quantity, *,
        tooltip: str, cls: str) -> None:
    """``used`` segments against ``limit``, on the scale ``max(limit, Σ used)``."""
    total = sum(q.nanos for q, _, _ in used)
    scale = max(limit.nanos, total)
    svg.open(f"mark {cls}", title=tooltip)
    svg.rect(x, y, width, height, FREE, cls="track")
    if scale > 0:
        start = 0
        for quantity, colour, segment in used:
            if quantity.nanos <= 0:
                continue
            left = x + _share(start, scale, width)
            start += quantity.nanos
            svg.rect(left, y, x + _share(start, scale, width) - left, height, colour, cls=segment)
        limit_x = x + _share(limit.nanos, scale, width)
        if total < limit.nanos:
            used_x = x + _share(total, scale, width)
            svg.rect(used_x, y, limit_x - used_x, height, FREE, cls="seg-free")
        if total > limit.nanos:
            svg.rect(limit_x, y, x + width - limit_x, height, WARNING, cls="seg-over")
            svg.rect(limit_x, y, x + width - limit_x, height, "url(#over-hatch)", cls="seg-over-hatch")
        svg.allocatable_mark(limit_x, y - 2, height + 4)
    svg.rect(x, y, width, height, "none", extra=f' stroke="{BORDER}" stroke-width="0.5"')
    svg.close()


def segments(line: Line) -> list[Segment]:
    """Ordinary then claims, adding up to exactly ``requested`` (claims clipped to it)."""
    claims = line.claims if line.claims <= line.requested else line.requested
    return [(line.requested - claims, ORDINARY, "seg-ordinary"), (claims, CLAIMS, "seg-claims")]


def resource_bar(svg: Svg, x: Px, y: Px, width: Px, height: Px, line: Line) -> None:
    """``line`` as a bar, with the scheduler's total as a dashed tick when it diverges from the ledger."""
    bar(svg, x, y, width, height, segments(line), line.allocatable, tooltip=tooltip(line),
        cls=f"bar resource-{token(line.name)}")
    if line.charged is None or not line.diverges:
        return
    scale = max(line.allocatable.nanos, line.requested.nanos)
    if scale <= 0:
        return
    at = x + min(_share(segments(line)[0][0].nanos + line.charged.nanos, scale, width), Fraction(width))
    svg.line(at, y - 2, at, y + height + 2, DIVERGENCE, cls="mark divergence-tick",
             extra=' stroke-width="2" stroke-dasharray="3 2"')


def tooltip(line: Line) -> str:
    """Every figure of ``line`` in the ledger's exact notation (hover a bar to read it)."""
    text = (
        f"{line.name}: requested {line.requested} of allocatable {line.allocatable} "
        f"(ordinary {line.ordinary}, DRA claims {line.claims}"
    )
    if line.pod_requests is not None:
        text += f", podRequests {line.pod_requests}"
    text += f"), free {line.free}"
    if line.charged is not None:
        text += f", schedulerCharged {line.charged}"
    return text
