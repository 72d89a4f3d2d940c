"""Where things go: the page frame, and cards in rows of equal height.

Rules: the page is as wide as its widest row and as tall as its content (the viewBox is the page, so
nothing drawn inside the computed box is ever cut); rows take the height of their tallest card.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from draledger.commands.report.drawing import Svg, attr, num, text_safe
from draledger.commands.report.measuring import Px
from draledger.commands.report.nodes import Node
from draledger.commands.report.palette import FONT, PAGE

MARGIN: Final = 20
GAP: Final = 14

DrawCard = Callable[[Svg, Node, Px, Px, Px], None]


def grid(svg: Svg, nodes: Sequence[Node], *, x: Px, y: Px, columns: int, card_width: int,
         height: Callable[[Node], int], draw: DrawCard) -> Px:
    """Cards left to right, top to bottom; returns the y just below the last row."""
    for start in range(0, len(nodes), columns):
        row = nodes[start : start + columns]
        row_h = max(height(node) for node in row)
        for column, node in enumerate(row):
            draw(svg, node, x + column * (card_width + GAP), y, row_h)
        y += row_h + GAP
    return y


def grid_width(columns: int, card_width: int) -> int:
    return columns * card_width + (columns - 1) * GAP


def page(body: Svg, title: str, width: Px, height: Px) -> str:
    """The document: head, shared patterns, background, then ``body``."""
    head = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{num(width)}" height="{num(height)}" '
        f'viewBox="0 0 {num(width)} {num(height)}" font-family={attr(FONT)}>\n'
        f"<title>{text_safe(title)}</title>\n"
        "<defs>"
        '<pattern id="over-hatch" patternUnits="userSpaceOnUse" width="6" height="6" '
        'patternTransform="rotate(45)"><rect width="2.5" height="6" fill="#ffffff" fill-opacity="0.45"/>'
        "</pattern></defs>\n"
        f'<rect class="background" x="0" y="0" width="{num(width)}" height="{num(height)}" fill="{PAGE}"/>\n'
    )
    return head + "\n".join(body.parts) + "\n</svg>\n"
