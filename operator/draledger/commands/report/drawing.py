"""SVG primitives: shapes and text with escaped content and exact coordinates.

Rules: every coordinate is an int or a Fraction and is printed with at most two decimals; every piece of
text is escaped for XML and stripped of the control characters XML 1.0 cannot carry; a node name or a
title never reaches the markup unescaped. Nothing here decides where things go (that is ``layout`` and the
views); it only draws what it is told.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from xml.sax.saxutils import escape, quoteattr

from draledger.commands.report.measuring import Px, text_width
from draledger.commands.report.palette import ALLOC_LINE, DIVERGENCE, TEXT, phase_colours


def token(text: str) -> str:
    """A class-name token: letters, digits, ``-`` and ``_`` only."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def text_safe(text: str) -> str:
    """Escape for XML and drop the control characters XML 1.0 cannot carry at all."""
    return escape("".join(c for c in text if c in "\t\n" or ord(c) >= 0x20))


def attr(value: str) -> str:
    return quoteattr("".join(c for c in value if ord(c) >= 0x20))


def num(value: Px) -> str:
    """A coordinate: two decimals, no trailing zeros."""
    fraction = Fraction(value)
    exact = Decimal(fraction.numerator) / Decimal(fraction.denominator)
    text = f"{exact.quantize(Decimal('0.01'), rounding=ROUND_HALF_UP):f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def badge_width(phase: str, size: int) -> Fraction:
    return text_width(phase, size, bold=True) + size


class Svg:
    """The markup of one picture, in drawing order."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def add(self, markup: str) -> None:
        self.parts.append(markup)

    def open(self, cls: str, *, at: tuple[Px, Px] | None = None, title: str = "") -> None:
        """Start a group (close it with ``close``); ``at`` translates it, ``title`` is its tooltip."""
        move = f' transform="translate({num(at[0])},{num(at[1])})"' if at else ""
        self.add(f'<g class="{cls}"{move}>')
        if title:
            self.add(f"<title>{text_safe(title)}</title>")

    def close(self) -> None:
        self.add("</g>")

    def rect(self, x: Px, y: Px, w: Px, h: Px, fill: str, *, cls: str = "", extra: str = "") -> None:
        attrs = f' class="{cls}"' if cls else ""
        self.add(
            f'<rect{attrs} x="{num(x)}" y="{num(y)}" width="{num(max(w, 0))}" height="{num(max(h, 0))}" '
            f'fill="{fill}"{extra}/>'
        )

    def line(self, x1: Px, y1: Px, x2: Px, y2: Px, stroke: str, *, cls: str = "", extra: str = "") -> None:
        attrs = f' class="{cls}"' if cls else ""
        self.add(
            f'<line{attrs} x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" stroke="{stroke}"{extra}/>'
        )

    def text(
        self,
        x: Px,
        y: Px,
        content: str,
        *,
        size: int = 12,
        fill: str = TEXT,
        bold: bool = False,
        anchor: str = "",
        cls: str = "",
    ) -> None:
        """One line of text whose baseline is at ``y``."""
        attrs = f' class="{cls}"' if cls else ""
        attrs += f' font-size="{size}" fill="{fill}"'
        if bold:
            attrs += ' font-weight="bold"'
        if anchor:
            attrs += f' text-anchor="{anchor}"'
        self.add(f'<text{attrs} x="{num(x)}" y="{num(y)}">{text_safe(content)}</text>')

    def spans(self, x: Px, y: Px, parts: Sequence[tuple[str, str]], *, size: int) -> None:
        """One line of text in several colours: (content, fill) pairs."""
        inner = "".join(f'<tspan fill="{fill}">{text_safe(content)}</tspan>' for content, fill in parts)
        self.add(f'<text xml:space="preserve" font-size="{size}" x="{num(x)}" y="{num(y)}">{inner}</text>')

    def badge(self, x_right: Px, y: Px, phase: str, size: int, *, label: str = "") -> Fraction:
        """A phase badge (text ``label`` or the phase) whose right edge is at ``x_right``; returns its width."""
        fill, ink = phase_colours(phase)
        content = label or phase
        width = badge_width(content, size)
        height = Fraction(8, 5) * size
        self.open(f"badge phase-{token(phase)}")
        self.rect(x_right - width, y, width, height, fill, extra=f' rx="{num(height / 2)}"')
        self.text(x_right - width / 2, y + height * Fraction(18, 25), content, size=size, fill=ink, bold=True,
                  anchor="middle")
        self.close()
        return width

    def diamond(self, cx: Px, cy: Px, r: Px, *, cls: str = "divergence") -> None:
        points = f"{num(cx)},{num(cy - r)} {num(cx + r)},{num(cy)} {num(cx)},{num(cy + r)} {num(cx - r)},{num(cy)}"
        self.add(f'<polygon class="{cls}" points="{points}" fill="{DIVERGENCE}"/>')

    def allocatable_mark(self, x: Px, y: Px, h: Px) -> None:
        self.line(x, y, x, y + h, ALLOC_LINE, cls="alloc-line", extra=' stroke-width="1.5"')
