"""A picture of the ledgers: one SVG panel per node, small multiples sorted by pressure.

Pure: ledger dicts (``NodeAllocatableLedger`` objects, or their bare ``status``) in, SVG 1.1 text out.
Quantities are read with :func:`parse_quantity` and compared and subtracted as exact decimals; only a
final pixel width is a float, computed from a ratio of two Decimals.

How a resource bar reads (left to right, against ``allocatable``):
- ordinary requests: ``requested − claims`` (clipped at 0: with pod-level resources the claims may be
  part of, or exceed, the pod's own request; the bar shows what the scheduler charges, ``requested``);
- DRA claims: ``claims``, up to ``requested``;
- free: ``allocatable − requested`` when positive;
- overcommit: when ``requested > allocatable`` the bar's scale becomes ``requested``, the allocatable
  line moves inside the bar and everything past it is drawn in the warning colour.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any, Final
from xml.sax.saxutils import escape, quoteattr

from draledger.core.quantities import ZERO, Quantity, QuantityError, parse_quantity

__all__ = ["COMPACT_ABOVE", "PHASE_COLOURS", "WARNING", "render_svg", "write_svg"]

COMPACT_ABOVE: Final = 24  # more nodes than this: compact panels, no NUMA rows

ORDINARY: Final = "#6f8fbf"  # ordinary (non-DRA) requests
CLAIMS: Final = "#2a9d8f"  # DRA claims
ORDINARY_INK: Final = "#3d5f94"  # text that names the ordinary segment
CLAIMS_INK: Final = "#1d7066"  # text that names the claims segment
FREE: Final = "#e7ebef"  # free capacity
WARNING: Final = "#d62728"  # overcommit: requested past allocatable
DIVERGENCE: Final = "#b5179e"  # claims != schedulerCharged
ALLOC_LINE: Final = "#1f2328"
TEXT: Final = "#1f2328"
MUTED: Final = "#57606a"
BORDER: Final = "#d0d7de"
PHASE_COLOURS: Final = {
    "Ready": ("#2e7d32", "#ffffff"),
    "Stale": ("#f2a900", "#1f2328"),
    "Overcommitted": (WARNING, "#ffffff"),
    "Frozen": ("#0969da", "#ffffff"),
    "Rebuilding": ("#6e7781", "#ffffff"),
}
UNKNOWN_PHASE: Final = ("#afb8c1", "#1f2328")
FONT: Final = "Helvetica, Arial, 'DejaVu Sans', 'Liberation Sans', sans-serif"
RESOURCE_ORDER: Final = ("cpu", "memory")
SHORT_NAMES: Final = {"ephemeral-storage": "ephemeral"}
INFINITY: Final = Decimal("Infinity")


# --- reading ledgers --------------------------------------------------------------------------------


def _quantity(raw: object) -> Quantity | None:
    try:
        return parse_quantity(raw)
    except QuantityError:
        return None


@dataclass(frozen=True, slots=True)
class _Line:
    """One resource of one node."""

    name: str
    allocatable: Quantity
    requested: Quantity
    claims: Quantity
    pod_requests: Quantity | None
    charged: Quantity | None

    @property
    def ordinary(self) -> Quantity:
        """The part of ``requested`` that is not DRA claims (never negative)."""
        rest = self.requested - self.claims
        return rest if rest.value > 0 else ZERO

    @property
    def free(self) -> Quantity:
        return self.allocatable - self.requested

    @property
    def diverges(self) -> bool:
        return self.charged is not None and self.charged != self.claims

    @property
    def pressure(self) -> Decimal:
        if self.allocatable.value > 0:
            return self.requested.value / self.allocatable.value
        return INFINITY if self.requested.value > 0 else Decimal(0)


@dataclass(frozen=True, slots=True)
class _ZoneLine:
    zone: str
    resource: str
    capacity: Quantity
    claims: Quantity


@dataclass(frozen=True, slots=True)
class _Node:
    name: str
    phase: str
    lines: tuple[_Line, ...]
    zones: tuple[_ZoneLine, ...]
    problems: tuple[str, ...]
    claim_count: int | None
    unreadable: tuple[str, ...]  # resources whose figures do not parse

    @property
    def overcommitted(self) -> bool:
        return self.phase == "Overcommitted" or any(line.free.value < 0 for line in self.lines)

    @property
    def diverges(self) -> bool:
        return any(line.diverges for line in self.lines)

    @property
    def peak(self) -> _Line | None:
        return max(self.lines, key=lambda line: line.pressure, default=None)

    @property
    def pressure(self) -> Decimal:
        peak = self.peak
        return peak.pressure if peak is not None else Decimal(0)

    @property
    def group(self) -> int:
        """0: overcommitted, 1: stale, 2: the rest (sorted first to last)."""
        if self.overcommitted:
            return 0
        return 1 if self.phase == "Stale" else 2


def _resource_key(name: str) -> tuple[int, Decimal, str]:
    if name in RESOURCE_ORDER:
        return (RESOURCE_ORDER.index(name), Decimal(0), name)
    if name.startswith("hugepages-"):
        size = _quantity(name.removeprefix("hugepages-"))
        return (2, size.value if size is not None else Decimal(0), name)
    if name == "ephemeral-storage":
        return (3, Decimal(0), name)
    return (4, Decimal(0), name)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _read(ledger: Mapping[str, Any]) -> _Node:
    status = _mapping(ledger.get("status")) if "status" in ledger or "metadata" in ledger else ledger
    metadata = _mapping(ledger.get("metadata"))
    name = str(status.get("nodeName") or metadata.get("name") or "?")
    lines: list[_Line] = []
    unreadable: list[str] = []
    resources = _mapping(status.get("resources"))
    for resource in sorted(resources, key=_resource_key):
        figures = _mapping(resources[resource])
        allocatable, requested, claims = (
            _quantity(figures.get(k, "0")) for k in ("allocatable", "requested", "claims")
        )
        if allocatable is None or requested is None or claims is None:
            unreadable.append(str(resource))
            continue
        charged = _quantity(figures["schedulerCharged"]) if "schedulerCharged" in figures else None
        pod_requests = _quantity(figures["podRequests"]) if "podRequests" in figures else None
        lines.append(_Line(str(resource), allocatable, requested, claims, pod_requests, charged))
    zones: list[_ZoneLine] = []
    for zone in status.get("numaZones") or ():
        zone = _mapping(zone)
        zres = _mapping(zone.get("resources"))
        for resource in sorted(zres, key=_resource_key):
            capacity = _quantity(_mapping(zres[resource]).get("capacity", "0"))
            zclaims = _quantity(_mapping(zres[resource]).get("claims", "0"))
            if capacity is not None and zclaims is not None:
                zones.append(_ZoneLine(str(zone.get("id", "?")), str(resource), capacity, zclaims))
    problems = tuple(str(_mapping(p).get("reason", "Problem")) for p in status.get("problems") or ())
    count = status.get("claimCount")
    return _Node(
        name=name,
        phase=str(status.get("phase") or "Unknown"),
        lines=tuple(lines),
        zones=tuple(zones),
        problems=problems,
        claim_count=count if isinstance(count, int) and not isinstance(count, bool) else None,
        unreadable=tuple(unreadable),
    )


def _ordered(ledgers: Iterable[Mapping[str, Any]]) -> list[_Node]:
    """Overcommitted first, then stale, then the rest; by pressure (descending), then by name."""
    nodes = [_read(ledger) for ledger in ledgers]
    return sorted(nodes, key=lambda n: (n.group, -n.pressure, n.name))


# --- drawing primitives -----------------------------------------------------------------------------


def _token(text: str) -> str:
    """A class-name token: letters, digits, ``-`` and ``_`` only."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def _text_safe(text: str) -> str:
    """Escape for XML and drop the control characters XML 1.0 cannot carry at all."""
    cleaned = "".join(c for c in text if c in "\t\n" or ord(c) >= 0x20)
    return escape(cleaned)


def _attr(value: str) -> str:
    return quoteattr("".join(c for c in value if ord(c) >= 0x20))


def _n(value: float) -> str:
    """A coordinate: two decimals, no trailing zeros."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def _px(part: Decimal, whole: Decimal, width: float) -> float:
    """``part / whole`` of ``width`` pixels: the ratio is exact, only the pixel count is a float."""
    if whole <= 0:
        return 0.0
    return float(part / whole) * width


def _percent(ratio: Decimal) -> str:
    if ratio.is_infinite():
        return "∞%"
    return f"{(ratio * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP)}%"


def _text_width(text: str, size: float) -> float:
    """A conservative estimate (no font metrics in a pure module): 0.6 em a character."""
    return len(text) * size * 0.6


def _fit(text: str, width: float, size: float) -> str:
    """Cut ``text`` with an ellipsis so it fits ``width`` pixels at ``size``."""
    room = max(1, int(width / (size * 0.6)))
    return text if len(text) <= room else text[: max(0, room - 1)] + "…"


def _badge_width(phase: str, size: float) -> float:
    return _text_width(phase, size) * 1.12 + size * 1.2  # bold runs wider than the estimate


class _Svg:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def add(self, markup: str) -> None:
        self.parts.append(markup)

    def rect(
        self, x: float, y: float, w: float, h: float, fill: str, *, cls: str = "", extra: str = ""
    ) -> None:
        attrs = f' class="{cls}"' if cls else ""
        self.add(
            f'<rect{attrs} x="{_n(x)}" y="{_n(y)}" width="{_n(max(w, 0.0))}" height="{_n(h)}" '
            f'fill="{fill}"{extra}/>'
        )

    def text(
        self,
        x: float,
        y: float,
        content: str,
        *,
        size: float = 12,
        fill: str = TEXT,
        weight: str = "",
        anchor: str = "",
        cls: str = "",
    ) -> None:
        attrs = f' class="{cls}"' if cls else ""
        attrs += f' font-size="{_n(size)}" fill="{fill}"'
        if weight:
            attrs += f' font-weight="{weight}"'
        if anchor:
            attrs += f' text-anchor="{anchor}"'
        self.add(f'<text{attrs} x="{_n(x)}" y="{_n(y)}">{_text_safe(content)}</text>')

    def spans(self, x: float, y: float, parts: Sequence[tuple[str, str]], *, size: float) -> None:
        """One line of text in several colours: (content, fill) pairs."""
        inner = "".join(f'<tspan fill="{fill}">{_text_safe(content)}</tspan>' for content, fill in parts)
        self.add(f'<text xml:space="preserve" font-size="{_n(size)}" x="{_n(x)}" y="{_n(y)}">{inner}</text>')

    def title(self, content: str) -> None:
        self.add(f"<title>{_text_safe(content)}</title>")

    def badge(self, x_right: float, y: float, phase: str, size: float) -> float:
        """A phase badge whose right edge is at ``x_right``; returns its width."""
        fill, ink = PHASE_COLOURS.get(phase, UNKNOWN_PHASE)
        width = _badge_width(phase, size)
        height = size * 1.6
        self.add(f'<g class="badge phase-{_token(phase)}">')
        self.rect(x_right - width, y, width, height, fill, extra=f' rx="{_n(height / 2)}"')
        self.text(
            x_right - width / 2, y + height * 0.72, phase, size=size, fill=ink, weight="bold", anchor="middle"
        )
        self.add("</g>")
        return width

    def diamond(self, cx: float, cy: float, r: float) -> None:
        points = f"{_n(cx)},{_n(cy - r)} {_n(cx + r)},{_n(cy)} {_n(cx)},{_n(cy + r)} {_n(cx - r)},{_n(cy)}"
        self.add(f'<polygon class="divergence" points="{points}" fill="{DIVERGENCE}"/>')


def _bar(
    svg: _Svg,
    x: float,
    y: float,
    width: float,
    height: float,
    used: Sequence[tuple[Quantity, str, str]],
    limit: Quantity,
    tooltip: str,
    cls: str,
) -> None:
    """A stacked bar: ``used`` segments (quantity, colour, class) against ``limit``.

    The scale is ``max(limit, Σ used)``: a bar that fits ends at ``limit``; one that overflows keeps
    the limit line inside the bar and draws everything past it in the warning colour.
    """
    total = sum((q.value for q, _, _ in used), Decimal(0))
    scale = max(limit.value, total)
    svg.add(f'<g class="{cls}">')
    svg.title(tooltip)
    svg.rect(x, y, width, height, FREE, cls="track")
    if scale > 0:
        start = Decimal(0)
        for quantity, colour, segment in used:
            if quantity.value <= 0:
                continue
            left = x + _px(start, scale, width)
            start += quantity.value
            svg.rect(left, y, x + _px(start, scale, width) - left, height, colour, cls=segment)
        limit_x = x + _px(limit.value, scale, width)
        if total < limit.value:
            svg.rect(
                x + _px(total, scale, width),
                y,
                limit_x - x - _px(total, scale, width),
                height,
                FREE,
                cls="seg-free",
            )
        if total > limit.value:
            svg.rect(limit_x, y, x + width - limit_x, height, WARNING, cls="seg-over")
            svg.rect(limit_x, y, x + width - limit_x, height, "url(#over-hatch)", cls="seg-over-hatch")
        svg.add(
            f'<line class="alloc-line" x1="{_n(limit_x)}" y1="{_n(y - 2)}" x2="{_n(limit_x)}" '
            f'y2="{_n(y + height + 2)}" stroke="{ALLOC_LINE}" stroke-width="1.5"/>'
        )
    svg.add(
        f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(width)}" height="{_n(height)}" fill="none" '
        f'stroke="{BORDER}" stroke-width="0.5"/>'
    )
    svg.add("</g>")


def _scheduler_tick(
    svg: _Svg, x: float, y: float, width: float, height: float, line: _Line, charged: Quantity
) -> None:
    """Where the bar would end with the scheduler's charge: ordinary + schedulerCharged (clipped)."""
    scale = max(line.allocatable.value, line.requested.value)
    if scale <= 0:
        return
    view = _segments(line)[0][0].value + charged.value
    at = x + min(_px(view, scale, width), width)
    svg.add(
        f'<line class="divergence-tick" x1="{_n(at)}" y1="{_n(y - 3)}" x2="{_n(at)}" '
        f'y2="{_n(y + height + 3)}" stroke="{DIVERGENCE}" stroke-width="2" stroke-dasharray="3 2"/>'
    )


def _segments(line: _Line) -> list[tuple[Quantity, str, str]]:
    """Ordinary then claims, adding up to exactly ``requested`` (claims clipped to it)."""
    claims = line.claims if line.claims <= line.requested else line.requested
    ordinary = line.requested - claims
    return [(ordinary, ORDINARY, "seg-ordinary"), (claims, CLAIMS, "seg-claims")]


def _line_tooltip(line: _Line) -> str:
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


# --- panels -----------------------------------------------------------------------------------------

NORMAL_WIDTH: Final = 440.0
COMPACT_WIDTH: Final = 250.0


def _panel_height(node: _Node, compact: bool) -> float:
    if compact:
        return 28 + 14 * max(1, len(node.lines) + bool(node.unreadable)) + 6
    height = 48.0
    for line in node.lines:
        height += 54 + (15 if line.diverges else 0)
    if not node.lines:
        height += 20
    if node.unreadable:
        height += 16
    if node.zones:
        height += 18 + 16 * len(node.zones)
    if node.problems:
        height += 18
    return height + 4


def _outline(node: _Node) -> tuple[str, str]:
    if node.overcommitted:
        return WARNING, ' stroke-width="2"'
    if node.phase == "Stale":
        return PHASE_COLOURS["Stale"][0], ' stroke-width="2" stroke-dasharray="6 3"'
    return BORDER, ' stroke-width="1"'


def _problem_summary(problems: Sequence[str]) -> str:
    counts: dict[str, int] = {}
    for reason in problems:
        counts[reason] = counts.get(reason, 0) + 1
    parts = [f"{reason} ×{count}" if count > 1 else reason for reason, count in counts.items()]
    noun = "problem" if len(problems) == 1 else "problems"
    return f"{len(problems)} {noun}: " + ", ".join(parts)


def _panel_normal(svg: _Svg, node: _Node, x: float, y: float, height: float) -> None:
    pad, width = 12.0, NORMAL_WIDTH
    inner = width - 2 * pad
    stroke, stroke_extra = _outline(node)
    svg.add(f'<g class="panel" transform="translate({_n(x)},{_n(y)})">')
    svg.title(node.name)
    svg.rect(
        0, 0, width, height, "#ffffff", cls="panel-box", extra=f' rx="6" stroke="{stroke}"{stroke_extra}'
    )
    badge_w = svg.badge(width - pad, pad - 2, node.phase, 11)
    svg.text(pad, pad + 12, _fit(node.name, inner - badge_w - 8, 14), size=14, weight="bold", cls="node-name")
    facts = []
    if node.claim_count is not None:
        facts.append(f"{node.claim_count} claim" + ("" if node.claim_count == 1 else "s"))
    peak = node.peak
    if peak is not None:
        facts.append(f"peak {_percent(peak.pressure)} {peak.name}")
    if node.diverges:
        facts.append("scheduler diverges")
    svg.text(pad, pad + 29, " · ".join(facts), size=11, fill=MUTED)
    cursor = 48.0
    if not node.lines:
        svg.text(pad, cursor + 12, "no resources in status", size=11, fill=MUTED)
        cursor += 20
    for line in node.lines:
        svg.text(pad, cursor + 11, line.name, size=12, weight="bold")
        if line.diverges:
            svg.diamond(pad + _text_width(line.name, 12) + 8, cursor + 7, 4.5)
        svg.text(
            width - pad,
            cursor + 11,
            f"{line.requested} of {line.allocatable} requested ({_percent(line.pressure)})",
            size=11.5,
            anchor="end",
        )
        _bar(
            svg,
            pad,
            cursor + 17,
            inner,
            14,
            _segments(line),
            line.allocatable,
            _line_tooltip(line),
            f"bar resource-{_token(line.name)}",
        )
        if line.diverges and line.charged is not None:
            _scheduler_tick(svg, pad, cursor + 17, inner, 14, line, line.charged)
        detail = [
            (f"ordinary {line.ordinary}", ORDINARY_INK),
            (" · ", MUTED),
            (f"claims {line.claims}", CLAIMS_INK),
        ]
        if line.pod_requests is not None and line.pod_requests != line.ordinary:
            detail.append((f" · podRequests {line.pod_requests}", MUTED))
        free = line.free
        svg.spans(pad, cursor + 45, detail, size=10.5)
        if free.value < 0:
            svg.text(
                width - pad,
                cursor + 45,
                f"over by {-free}",
                size=10.5,
                fill=WARNING,
                weight="bold",
                anchor="end",
                cls="overcommit-label",
            )
        else:
            svg.text(width - pad, cursor + 45, f"free {free}", size=10.5, fill=MUTED, anchor="end")
        cursor += 54
        if line.diverges:
            svg.add('<g class="divergence-note">')
            svg.diamond(pad + 5, cursor + 2, 5)
            svg.text(
                pad + 15,
                cursor + 6,
                f"divergence: ledger claims {line.claims} ≠ schedulerCharged {line.charged}",
                size=10.5,
                fill=DIVERGENCE,
                weight="bold",
            )
            svg.add("</g>")
            cursor += 15
    if node.unreadable:
        svg.text(
            pad, cursor + 11, "unreadable figures: " + ", ".join(node.unreadable), size=10.5, fill=WARNING
        )
        cursor += 16
    if node.zones:
        svg.text(
            pad,
            cursor + 11,
            "NUMA zones: DRA device capacity vs claims",
            size=10.5,
            fill=MUTED,
            weight="bold",
        )
        cursor += 18
        zone_w, label_w, figure_w = 48.0, 140.0, 104.0
        previous = None
        for zone in node.zones:
            free = zone.capacity - zone.claims
            if zone.zone != previous:
                svg.text(pad, cursor + 9, _fit(f"zone {zone.zone}", zone_w - 4, 10), size=10, weight="bold")
                previous = zone.zone
            svg.text(pad + zone_w, cursor + 9, _fit(zone.resource, label_w - zone_w - 4, 10), size=10)
            tooltip = (
                f"NUMA zone {zone.zone} {zone.resource}: claims {zone.claims} of capacity "
                f"{zone.capacity}, free {free}"
            )
            _bar(
                svg,
                pad + label_w,
                cursor + 2,
                inner - label_w - figure_w,
                8,
                [(zone.claims, CLAIMS, "seg-claims")],
                zone.capacity,
                tooltip,
                "numa-bar",
            )
            svg.text(
                width - pad,
                cursor + 9,
                f"{zone.claims} of {zone.capacity}",
                size=10,
                anchor="end",
                fill=WARNING if free.value < 0 else TEXT,
            )
            cursor += 16
    if node.problems:
        svg.text(
            pad,
            cursor + 12,
            _fit(_problem_summary(node.problems), inner, 10.5),
            size=10.5,
            fill="#9a6700",
            cls="problems",
        )
    svg.add("</g>")


def _panel_compact(svg: _Svg, node: _Node, x: float, y: float, height: float) -> None:
    pad, width = 8.0, COMPACT_WIDTH
    stroke, stroke_extra = _outline(node)
    svg.add(f'<g class="panel compact" transform="translate({_n(x)},{_n(y)})">')
    svg.title(node.name)
    svg.rect(
        0, 0, width, height, "#ffffff", cls="panel-box", extra=f' rx="4" stroke="{stroke}"{stroke_extra}'
    )
    badge_w = svg.badge(width - pad, pad - 2, node.phase, 9)
    svg.text(
        pad,
        pad + 9,
        _fit(node.name, width - 2 * pad - badge_w - 6, 11),
        size=11,
        weight="bold",
        cls="node-name",
    )
    cursor = 28.0
    label_w, figure_w = 56.0, 86.0
    for line in node.lines:
        label = SHORT_NAMES.get(line.name, line.name.replace("hugepages-", "hp-"))
        svg.text(pad, cursor + 8, _fit(label, label_w - 12, 9.5), size=9.5)
        if line.diverges:
            svg.add('<g class="divergence-note">')
            svg.title(f"{line.name}: ledger claims {line.claims} ≠ schedulerCharged {line.charged}")
            svg.diamond(pad + label_w - 7, cursor + 5, 4)
            svg.add("</g>")
        _bar(
            svg,
            pad + label_w,
            cursor + 1,
            width - 2 * pad - label_w - figure_w,
            8,
            _segments(line),
            line.allocatable,
            _line_tooltip(line),
            f"bar resource-{_token(line.name)}",
        )
        over = line.free.value < 0
        svg.text(
            width - pad,
            cursor + 8,
            f"{line.requested}/{line.allocatable}",
            size=9,
            anchor="end",
            fill=WARNING if over else TEXT,
            weight="bold" if over else "",
        )
        cursor += 14
    if node.unreadable or not node.lines:
        svg.text(
            pad,
            cursor + 8,
            "unreadable figures" if node.unreadable else "no resources",
            size=9,
            fill=WARNING if node.unreadable else MUTED,
        )
    svg.add("</g>")


# --- the page ---------------------------------------------------------------------------------------


def _legend(svg: _Svg, x: float, y: float, width: float) -> float:
    """Swatches, then phase badges; wraps to ``width``. Returns the height used."""
    items: list[tuple[str, str]] = [
        ("ordinary", "ordinary requests (requested − claims)"),
        ("claims", "DRA claims"),
        ("free", "free"),
        ("over", "overcommit (past allocatable)"),
        ("line", "allocatable"),
        ("divergence", "claims ≠ schedulerCharged (dashed tick: the scheduler's total)"),
    ]
    svg.add('<g class="legend">')
    cx, cy = x, y
    for kind, label in items:
        item_w = 18 + _text_width(label, 11) * 0.85 + 18
        if cx + item_w > x + width and cx > x:
            cx, cy = x, cy + 18
        if kind == "line":
            svg.rect(cx, cy, 12, 10, FREE)
            svg.add(
                f'<line x1="{_n(cx + 6)}" y1="{_n(cy - 2)}" x2="{_n(cx + 6)}" y2="{_n(cy + 12)}" '
                f'stroke="{ALLOC_LINE}" stroke-width="1.5"/>'
            )
        elif kind == "divergence":
            svg.add(
                f'<polygon points="{_n(cx + 6)},{_n(cy - 1)} {_n(cx + 12)},{_n(cy + 5)} {_n(cx + 6)},'
                f'{_n(cy + 11)} {_n(cx)},{_n(cy + 5)}" fill="{DIVERGENCE}"/>'
            )
        else:
            colour = {"ordinary": ORDINARY, "claims": CLAIMS, "free": FREE, "over": WARNING}[kind]
            svg.rect(cx, cy, 12, 10, colour, extra=f' stroke="{BORDER}" stroke-width="0.5"')
            if kind == "over":
                svg.rect(cx, cy, 12, 10, "url(#over-hatch)")
        svg.text(cx + 18, cy + 9.5, label, size=11, fill=TEXT)
        cx += item_w
    cx, cy = x, cy + 22
    svg.text(cx, cy + 10, "phase:", size=11, fill=MUTED)
    right = cx + 44
    for phase in PHASE_COLOURS:
        w = _badge_width(phase, 10)
        if right + w > x + width:
            right, cy = x + 44, cy + 20
        svg.badge(right + w, cy - 1, phase, 10)
        right += w + 6
    svg.add("</g>")
    return cy + 20 - y


def _summary(nodes: Sequence[_Node]) -> str:
    counts: dict[str, int] = {}
    for node in nodes:
        counts[node.phase] = counts.get(node.phase, 0) + 1
    known = [p for p in PHASE_COLOURS if p in counts] + sorted(p for p in counts if p not in PHASE_COLOURS)
    parts = [f"{counts[p]} {p}" for p in known]
    diverging = sum(node.diverges for node in nodes)
    if diverging:
        parts.append(f"{diverging} diverging from the scheduler")
    noun = "node" if len(nodes) == 1 else "nodes"
    return f"{len(nodes)} {noun}: " + (", ".join(parts) if parts else "none")


def _columns(count: int, compact: bool) -> int:
    if compact:
        return 6
    if count <= 3:
        return max(count, 1)
    if count == 4:
        return 2
    return 3 if count <= 9 else 4


def render_svg(
    ledgers: Sequence[Mapping[str, Any]],
    *,
    title: str = "dra-ledger: node allocatable ledgers",
    compact: bool | None = None,
) -> str:
    """One panel per node, most pressed first; ``compact`` defaults to ``len(ledgers) > COMPACT_ABOVE``."""
    nodes = _ordered(ledgers)
    if compact is None:
        compact = len(nodes) > COMPACT_ABOVE
    margin, gap = 20.0, 14.0
    panel_w = COMPACT_WIDTH if compact else NORMAL_WIDTH
    columns = _columns(len(nodes), compact)
    grid_w = columns * panel_w + (columns - 1) * gap
    page_w = max(grid_w, 720.0) + 2 * margin
    body = _Svg()
    body.text(margin, margin + 18, title, size=20, weight="bold", cls="title")
    body.text(margin, margin + 38, _summary(nodes), size=12, fill=MUTED, cls="summary")
    order = "sorted by pressure (peak requested/allocatable), overcommitted and stale first"
    if compact:
        order += "; compact view: NUMA zones omitted, hover a bar for its figures"
    body.text(margin, margin + 54, order, size=11, fill=MUTED)
    y = margin + 70
    y += _legend(body, margin, y, page_w - 2 * margin) + 12
    heights = [_panel_height(node, compact) for node in nodes]
    for row_start in range(0, len(nodes), columns):
        row = range(row_start, min(row_start + columns, len(nodes)))
        row_h = max(heights[i] for i in row)
        for column, index in enumerate(row):
            x = margin + column * (panel_w + gap)
            if compact:
                _panel_compact(body, nodes[index], x, y, row_h)
            else:
                _panel_normal(body, nodes[index], x, y, row_h)
        y += row_h + gap
    if not nodes:
        body.text(margin, y + 14, "No ledgers.", size=13, fill=MUTED)
        y += 30
    page_h = y + margin - gap
    head = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{_n(page_w)}" height="{_n(page_h)}" '
        f'viewBox="0 0 {_n(page_w)} {_n(page_h)}" font-family={_attr(FONT)}>\n'
        f"<title>{_text_safe(title)}</title>\n"
        "<defs>"
        '<pattern id="over-hatch" patternUnits="userSpaceOnUse" width="6" height="6" '
        'patternTransform="rotate(45)"><rect width="2.5" height="6" fill="#ffffff" fill-opacity="0.45"/>'
        "</pattern></defs>\n"
        f'<rect class="background" x="0" y="0" width="{_n(page_w)}" height="{_n(page_h)}" fill="#f6f8fa"/>\n'
    )
    return head + "\n".join(body.parts) + "\n</svg>\n"


def write_svg(
    path: str | os.PathLike[str],
    ledgers: Sequence[Mapping[str, Any]],
    *,
    title: str = "dra-ledger: node allocatable ledgers",
    compact: bool | None = None,
) -> None:
    """Render and write ``path`` (UTF-8)."""
    Path(path).write_text(render_svg(ledgers, title=title, compact=compact), encoding="utf-8")
