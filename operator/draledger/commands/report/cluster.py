"""The overview of a large cluster: how many nodes are in each phase, how pressed each resource is across
nodes, which nodes to look at first, and a count of the rest.

Rules:
1. Readable at any size: the picture's height grows with the number of resources and of cards shown
   (at most ``ATTENTION_CARDS + PRESSED_CARDS``), never with the number of nodes.
2. Pressure is bucketed exactly: a node falls in bucket ``⌊10 × requested / allocatable⌋`` (0-9, 100 %
   in the last one) or, past allocatable, in the "over" bucket. Nodes with nothing allocatable and nothing
   requested for a resource are left out of its histogram.
3. Nodes to look at, most urgent first: overcommitted, not Ready, with problems, diverging from the
   scheduler (``Node.severity``); then the most pressed of the others.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Final

from draledger.commands.report.cards import COMPACT_WIDTH, compact_card, compact_height
from draledger.commands.report.drawing import Svg
from draledger.commands.report.layout import GAP, grid
from draledger.commands.report.measuring import Px, fit, text_width
from draledger.commands.report.nodes import Line, Node, percent, ratio, resource_order
from draledger.commands.report.palette import (
    BORDER,
    FREE,
    MUTED,
    ORDINARY,
    PHASE_COLOURS,
    TEXT,
    WARNING,
    phase_colours,
)

ATTENTION_CARDS: Final = 12
PRESSED_CARDS: Final = 6
CARD_COLUMNS: Final = 6
SEVERITIES: Final = ("overcommitted", "not Ready", "with problems", "diverging from the scheduler")

BINS: Final = 10
_BIN_W: Final = 24
_OVER_GAP: Final = 16
_CHART_H: Final = 56
HISTOGRAM_WIDTH: Final = 300
HISTOGRAM_HEIGHT: Final = 118


def count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def phase_counts(nodes: Sequence[Node]) -> list[tuple[str, int]]:
    """Phases with their node counts: the known phases in their usual order, then the others by name."""
    counts = Counter(node.phase for node in nodes)
    known = [p for p in PHASE_COLOURS if p in counts] + sorted(p for p in counts if p not in PHASE_COLOURS)
    return [(phase, counts[phase]) for phase in known]


def summary(nodes: Sequence[Node]) -> str:
    """``5,000 nodes: 4,950 Ready, 50 Stale, 2,500 diverging from the scheduler``."""
    parts = [f"{n:,} {phase}" for phase, n in phase_counts(nodes)]
    diverging = sum(node.diverges for node in nodes)
    if diverging:
        parts.append(f"{diverging:,} diverging from the scheduler")
    return f"{count(len(nodes), 'node')}: " + (", ".join(parts) if parts else "none")


# --- phases ---------------------------------------------------------------------------------------------


def phase_strip(svg: Svg, nodes: Sequence[Node], x: Px, y: Px, width: Px) -> Px:
    """One bar split by phase, then the counts under it; returns the height used."""
    counts = phase_counts(nodes)
    total = len(nodes)
    svg.open("mark phase-strip", title=summary(nodes))
    left: Px = x
    done = 0
    for phase, n in counts:
        done += n
        right = x + Fraction(done, total) * width
        svg.rect(left, y, right - left, 14, phase_colours(phase)[0], cls=f"phase-{phase}")
        left = right
    svg.close()
    cx, cy = x, y + 24
    for phase, n in counts:
        label = f"{n:,} {phase} ({percent(Decimal(n) / Decimal(total))})"
        item_w = 16 + text_width(label, 11) + 20
        if cx + item_w > x + width and cx > x:
            cx, cy = x, cy + 18
        svg.rect(cx, cy + 1, 10, 10, phase_colours(phase)[0], extra=' rx="2"')
        svg.text(cx + 16, cy + 10, label, size=11)
        cx += item_w
    return cy + 18 - y


# --- pressure histograms --------------------------------------------------------------------------------


def bucket(line: Line) -> int | None:
    """0-9 by tenths of allocatable, ``BINS`` past it; None for a resource the node does not have."""
    if line.empty:
        return None
    share = ratio(line.requested, line.allocatable)
    if share is None or share > 1:
        return BINS
    return min(int(share * BINS), BINS - 1)


def _lines_of(nodes: Sequence[Node]) -> dict[str, list[tuple[Line, Node]]]:
    by_resource: dict[str, list[tuple[Line, Node]]] = {}
    for node in nodes:
        for line in node.lines:
            if not line.empty:
                by_resource.setdefault(line.name, []).append((line, node))
    return {name: by_resource[name] for name in resource_order(by_resource)}


def _rank(values: Sequence[Decimal], share: Fraction) -> Decimal:
    """The nearest-rank percentile of sorted ``values``."""
    index = max(0, -(-len(values) * share.numerator // share.denominator) - 1)
    return values[index]


def _stats(rows: Sequence[tuple[Line, Node]]) -> str:
    pressures = sorted(line.pressure for line, _ in rows)
    top_line, top_node = max(rows, key=lambda row: (row[0].pressure, row[1].name))
    return (
        f"median {percent(_rank(pressures, Fraction(1, 2)))} · p90 {percent(_rank(pressures, Fraction(9, 10)))}"
        f" · max {percent(top_line.pressure)} on {top_node.name}"
    )


def histogram(svg: Svg, resource: str, rows: Sequence[tuple[Line, Node]], x: Px, y: Px) -> None:
    """Nodes by requested/allocatable of ``resource``: ten buckets of 10 % and one past allocatable."""
    counts = Counter(bucket(line) for line, _ in rows)
    tallest = max(counts.values())
    svg.open("histogram", at=(x, y), title=f"{resource}: requested / allocatable across {count(len(rows), 'node')}")
    scale = f"{count(len(rows), 'node')} · tallest bar {tallest:,}"
    svg.text(HISTOGRAM_WIDTH, 12, scale, size=10, fill=MUTED, anchor="end")
    svg.text(0, 12, fit(resource, HISTOGRAM_WIDTH - text_width(scale, 10) - 10, 12, bold=True), size=12, bold=True)
    base = 22 + _CHART_H
    for index in range(BINS + 1):
        n = counts.get(index, 0)
        left = index * _BIN_W + (_OVER_GAP if index == BINS else 0)
        span = "past allocatable" if index == BINS else f"{index * 10}–{index * 10 + 10}%"
        svg.open("mark column", title=f"{resource} {span}: {count(n, 'node')}")
        svg.rect(left + 1, 22, _BIN_W - 2, _CHART_H, FREE)
        if n:
            h = max(Fraction(n, tallest) * _CHART_H, Fraction(1))
            svg.rect(left + 1, base - h, _BIN_W - 2, h, WARNING if index == BINS else ORDINARY)
        svg.close()
    svg.line(0, base, BINS * _BIN_W + _OVER_GAP + _BIN_W, base, BORDER)
    svg.text(0, base + 12, "0%", size=9, fill=MUTED)
    svg.text(5 * _BIN_W, base + 12, "50%", size=9, fill=MUTED, anchor="middle")
    svg.text(BINS * _BIN_W, base + 12, "100%", size=9, fill=MUTED, anchor="middle")
    over = counts.get(BINS, 0)
    svg.text(BINS * _BIN_W + _OVER_GAP + _BIN_W // 2, base + 12, "over", size=9, anchor="middle",
             fill=WARNING if over else MUTED, bold=bool(over))
    svg.text(0, base + 30, fit(_stats(rows), HISTOGRAM_WIDTH, 10), size=10, fill=TEXT)
    svg.close()


def histograms(svg: Svg, nodes: Sequence[Node], x: Px, y: Px, width: Px) -> Px:
    """One histogram per resource, as many a row as fit ``width``; returns the height used."""
    by_resource = _lines_of(nodes)
    columns = max(1, int(width // (HISTOGRAM_WIDTH + 40)))
    step = Fraction(width) / columns
    top = y
    for index, (resource, rows) in enumerate(by_resource.items()):
        row, column = divmod(index, columns)
        histogram(svg, resource, rows, x + column * step, top + row * (HISTOGRAM_HEIGHT + GAP))
    rows_used = -(-len(by_resource) // columns)
    return rows_used * (HISTOGRAM_HEIGHT + GAP)


# --- nodes to look at -----------------------------------------------------------------------------------


def pick(nodes: Sequence[Node]) -> tuple[list[Node], list[Node], list[Node], list[Node]]:
    """(every node needing attention, the ones shown, the most pressed of the others, the rest)."""
    attention = sorted((n for n in nodes if n.severity is not None), key=lambda n: (n.severity, -n.pressure, n.name))
    shown = attention[:ATTENTION_CARDS]
    calm = sorted((n for n in nodes if n.severity is None), key=lambda n: (-n.pressure, n.name))
    pressed = calm[:PRESSED_CARDS]
    picked = {n.name for n in shown} | {n.name for n in pressed}
    return attention, shown, pressed, [n for n in nodes if n.name not in picked]


def attention_heading(attention: Sequence[Node], shown: int) -> str:
    if not attention:
        return "Nothing needs attention: no node is overcommitted, not Ready, with problems or diverging."
    by_severity = Counter(n.severity for n in attention)
    reasons = ", ".join(f"{by_severity[i]:,} {label}" for i, label in enumerate(SEVERITIES) if by_severity[i])
    head = f"Needs attention: {count(len(attention), 'node')} ({reasons})"
    return head + (f"; the {shown} most urgent:" if shown < len(attention) else ":")


def cards(svg: Svg, nodes: Sequence[Node], x: Px, y: Px, width: Px) -> Px:
    """The nodes to look at as compact cards, then one line for the rest; returns the height used."""
    attention, shown, pressed, rest = pick(nodes)
    start = y
    svg.text(x, y + 14, fit(attention_heading(attention, len(shown)), width, 13, bold=True), size=13, bold=True,
             cls="section")
    y += 24
    y = grid(svg, shown, x=x, y=y, columns=CARD_COLUMNS, card_width=COMPACT_WIDTH, height=compact_height,
             draw=compact_card)
    if pressed:
        heading = f"Most pressed of the other nodes (peak requested/allocatable), {len(pressed)} shown:"
        svg.text(x, y + 14, fit(heading, width, 13, bold=True), size=13, bold=True, cls="section")
        y += 24
        y = grid(svg, pressed, x=x, y=y, columns=CARD_COLUMNS, card_width=COMPACT_WIDTH, height=compact_height,
                 draw=compact_card)
    if rest:
        line = "and " + summary(rest).replace(count(len(rest), "node"), f"{count(len(rest), 'more node')}", 1)
        svg.text(x, y + 14, fit(line, width, 12), size=12, fill=MUTED, cls="rest")
        y += 24
    return y - start
