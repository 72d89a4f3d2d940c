"""Node cards: one node's phase, resources and zones, in a full size (small clusters) and a compact one
(the nodes a large cluster's overview picks out).

Rules: every text is measured (``measuring``) and cut with an ellipsis before it can reach its neighbour;
rows are spaced so that a line of text never touches a bar; figures are humanised in the unit of their row
(``41.7Gi/494Gi``), exact figures are in each bar's tooltip.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from draledger.commands.report.bars import bar, resource_bar
from draledger.commands.report.drawing import Svg
from draledger.commands.report.measuring import Px, fit, text_width
from draledger.commands.report.nodes import Line, Node, percent
from draledger.commands.report.palette import (
    BORDER,
    CARD,
    CLAIMS,
    CLAIMS_INK,
    DIVERGENCE,
    MUTED,
    ORDINARY_INK,
    PHASE_COLOURS,
    PROBLEM_INK,
    TEXT,
    WARNING,
)
from draledger.core.phases import Phase

FULL_WIDTH: Final = 440
COMPACT_WIDTH: Final = 250
SHORT_NAMES: Final = {"ephemeral-storage": "ephemeral"}


def _outline(node: Node) -> str:
    if node.overcommitted:
        return f' stroke="{WARNING}" stroke-width="2"'
    if node.phase == Phase.STALE:
        return f' stroke="{PHASE_COLOURS[Phase.STALE][0]}" stroke-width="2" stroke-dasharray="6 3"'
    return f' stroke="{BORDER}" stroke-width="1"'


def problem_summary(problems: Sequence[str]) -> str:
    counts: dict[str, int] = {}
    for reason in problems:
        counts[reason] = counts.get(reason, 0) + 1
    parts = [f"{reason} ×{count}" if count > 1 else reason for reason, count in counts.items()]
    return f"{len(problems)} {'problem' if len(problems) == 1 else 'problems'}: " + ", ".join(parts)


def short_name(resource: str) -> str:
    return SHORT_NAMES.get(resource, resource.replace("hugepages-", "hp-"))


def facts(node: Node, *, short: bool = False) -> str:
    """The line under a node's name: why it is frozen, claims, its peak resource, and what is wrong."""
    out = [node.frozen] if node.frozen else []
    if node.claim_count is not None:
        out.append(f"{node.claim_count} claim" + ("" if node.claim_count == 1 else "s"))
    peak = node.peak
    if peak is not None:
        out.append(f"peak {percent(peak.pressure)} {short_name(peak.name) if short else peak.name}")
    if node.diverges:
        out.append("diverges" if short else "scheduler diverges")
    return " · ".join(out)


# --- full size ----------------------------------------------------------------------------------------

_PAD: Final = 12
_ROW: Final = 60  # one resource: name and figures, bar, detail line


def full_height(node: Node) -> int:
    height = 56 + _ROW * len(node.lines) + 16 * sum(line.diverges for line in node.lines)
    height += 0 if node.lines else 20
    height += 16 if node.unreadable else 0
    height += 18 + 16 * len(node.zones) if node.zones else 0
    height += 18 if node.problems else 0
    return height + 6


def full_card(svg: Svg, node: Node, x: Px, y: Px, height: Px) -> None:
    inner = FULL_WIDTH - 2 * _PAD
    svg.open("panel", at=(x, y), title=node.name)
    svg.rect(0, 0, FULL_WIDTH, height, CARD, cls="panel-box", extra=f' rx="6"{_outline(node)}')
    badge = svg.badge(FULL_WIDTH - _PAD, _PAD - 2, node.phase, 11)
    svg.text(_PAD, _PAD + 13, fit(node.name, inner - badge - 8, 14, bold=True), size=14, bold=True,
             cls="node-name")
    svg.text(_PAD, 44, fit(facts(node), inner, 11), size=11, fill=MUTED)
    cursor = 56
    if not node.lines:
        svg.text(_PAD, cursor + 12, "no resources in status", size=11, fill=MUTED)
        cursor += 20
    for line in node.lines:
        _resource_row(svg, line, cursor, inner)
        cursor += _ROW
        if line.diverges:
            svg.open("divergence-note")
            svg.diamond(_PAD + 5, cursor + 6, 5)
            note = f"divergence: ledger claims {line.claims} ≠ schedulerCharged {line.charged}"
            svg.text(_PAD + 15, cursor + 10, fit(note, inner - 15, 10, bold=True), size=10, fill=DIVERGENCE,
                     bold=True)
            svg.close()
            cursor += 16
    if node.unreadable:
        text = "unreadable figures: " + ", ".join(node.unreadable)
        svg.text(_PAD, cursor + 11, fit(text, inner, 10), size=10, fill=WARNING)
        cursor += 16
    if node.zones:
        cursor = _zones(svg, node, cursor, inner)
    if node.problems:
        svg.text(_PAD, cursor + 12, fit(problem_summary(node.problems), inner, 10), size=10, fill=PROBLEM_INK,
                 cls="problems")
    svg.close()


def _resource_row(svg: Svg, line: Line, top: int, inner: int) -> None:
    figure = f"{line.pair} requested ({percent(line.pressure)})"
    figure_w = text_width(figure, 11)
    diamond_room = 16 if line.diverges else 0
    name = fit(line.name, inner - figure_w - diamond_room - 12, 12, bold=True)
    svg.text(_PAD, top + 12, name, size=12, bold=True)
    if line.diverges:
        svg.diamond(_PAD + text_width(name, 12, bold=True) + 9, top + 8, 4)
    svg.text(FULL_WIDTH - _PAD, top + 12, fit(figure, inner, 11), size=11, anchor="end")
    resource_bar(svg, _PAD, top + 20, inner, 14, line)
    ordinary, claims, pod_requests, free, over = line.human(
        line.ordinary, line.claims, line.pod_requests or line.ordinary, line.free, -line.free
    )
    if line.free.nanos < 0:
        right, ink = f"over by {over}", WARNING
        svg.text(FULL_WIDTH - _PAD, top + 50, right, size=10, fill=ink, bold=True, anchor="end",
                 cls="overcommit-label")
    else:
        right, ink = f"free {free}", MUTED
        svg.text(FULL_WIDTH - _PAD, top + 50, right, size=10, fill=ink, anchor="end")
    room = inner - text_width(right, 10, bold=True) - 12
    detail = [(f"ordinary {ordinary}", ORDINARY_INK), (" · ", MUTED), (f"claims {claims}", CLAIMS_INK)]
    if line.pod_requests is not None and line.pod_requests != line.ordinary:
        detail.append((f" · podRequests {pod_requests}", MUTED))
    while len(detail) > 1 and text_width("".join(t for t, _ in detail), 10) > room:
        detail.pop()
    if len(detail) == 1:
        detail = [(fit(detail[0][0], room, 10), ORDINARY_INK)]
    svg.spans(_PAD, top + 50, detail, size=10)


def _zones(svg: Svg, node: Node, cursor: int, inner: int) -> int:
    svg.text(_PAD, cursor + 11, "NUMA zones: DRA device capacity vs claims", size=10, fill=MUTED, bold=True)
    cursor += 18
    zone_w, label_w, figure_w = 48, 140, 96
    previous = None
    for zone in node.zones:
        if zone.zone != previous:
            svg.text(_PAD, cursor + 10, fit(f"zone {zone.zone}", zone_w - 6, 10, bold=True), size=10, bold=True)
            previous = zone.zone
        svg.text(_PAD + zone_w, cursor + 10, fit(zone.resource, label_w - zone_w - 6, 10), size=10)
        free = zone.capacity - zone.claims
        tooltip = (
            f"NUMA zone {zone.zone} {zone.resource}: claims {zone.claims} of capacity {zone.capacity}, free {free}"
        )
        bar(svg, _PAD + label_w, cursor + 3, inner - label_w - figure_w, 8, [(zone.claims, CLAIMS, "seg-claims")],
            zone.capacity, tooltip=tooltip, cls="numa-bar")
        used = Line(zone.resource, zone.capacity, zone.claims, zone.claims, None, None)
        svg.text(FULL_WIDTH - _PAD, cursor + 10, fit(used.pair, figure_w - 8, 10), size=10, anchor="end",
                 fill=WARNING if free.nanos < 0 else TEXT)
        cursor += 16
    return cursor


# --- compact -------------------------------------------------------------------------------------------

_CPAD: Final = 8
_CROW: Final = 14


def _shown(node: Node) -> list[Line]:
    """The compact card leaves out resources with nothing allocatable and nothing requested."""
    return [line for line in node.lines if not line.empty]


def compact_height(node: Node) -> int:
    return 38 + _CROW * max(1, len(_shown(node)) + bool(node.unreadable)) + 4


def compact_card(svg: Svg, node: Node, x: Px, y: Px, height: Px) -> None:
    inner = COMPACT_WIDTH - 2 * _CPAD
    svg.open("panel compact", at=(x, y), title=node.name)
    svg.rect(0, 0, COMPACT_WIDTH, height, CARD, cls="panel-box", extra=f' rx="4"{_outline(node)}')
    badge = svg.badge(COMPACT_WIDTH - _CPAD, 6, node.phase, 9)
    svg.text(_CPAD, 18, fit(node.name, inner - badge - 6, 11, bold=True), size=11, bold=True, cls="node-name")
    why = facts(node, short=True) if not node.problems else problem_summary(node.problems)
    if node.frozen and node.problems:
        why = f"{node.frozen} · {why}"
    svg.text(_CPAD, 32, fit(why, inner, 9), size=9, fill=PROBLEM_INK if node.problems else MUTED)
    cursor = 38
    label_w, figure_w = 66, 80
    bar_w = inner - label_w - figure_w - 6
    for line in _shown(node):
        svg.text(_CPAD, cursor + 10, fit(short_name(line.name), label_w - 14, 9), size=9)
        if line.diverges:
            svg.diamond(_CPAD + label_w - 7, cursor + 6, 4)
        resource_bar(svg, _CPAD + label_w, cursor + 2, bar_w, 8, line)
        over = line.free.nanos < 0
        svg.text(COMPACT_WIDTH - _CPAD, cursor + 10, fit(line.pair, figure_w, 9, bold=over), size=9,
                 anchor="end", fill=WARNING if over else TEXT, bold=over)
        cursor += _CROW
    if node.unreadable or not _shown(node):
        text = "unreadable figures: " + ", ".join(node.unreadable) if node.unreadable else "no resources"
        svg.text(_CPAD, cursor + 10, fit(text, inner, 9), size=9, fill=WARNING if node.unreadable else MUTED)
    svg.close()
