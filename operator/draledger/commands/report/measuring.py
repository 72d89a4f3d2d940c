"""How wide a line of text will be, without font files: a per-character table of the widest font we name.

Rules:
1. Widths are in em, taken from DejaVu Sans (the widest sans-serif in ``palette.FONT``: Helvetica, Arial and
   Liberation Sans are narrower), rounded up; bold adds 10 %. A character the table does not know counts
   as a full em. So an estimate may run long, never short: text laid out by it never collides.
2. Exact arithmetic: widths are Fractions of a pixel, like every coordinate in the report.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Final

Px = int | Fraction

_EM: Final = 1000
_BOLD: Final = Fraction(11, 10)
_WIDTHS: Final = {  # thousandths of an em
    **dict.fromkeys("0123456789", 637),
    **dict.fromkeys("il.,:;'!|", 280),
    **dict.fromkeys("jI", 300),
    **dict.fromkeys("frt()[]{}/\\ ", 420),
    **dict.fromkeys("abcdeghknopqsuvxyz", 640),
    **dict.fromkeys("mw", 980),
    **dict.fromkeys("ABCDEFGHJKLNOPQRSTUVXYZ", 780),
    **dict.fromkeys("MW", 1000),
    **dict.fromkeys("-_·", 460),
    **dict.fromkeys("%", 960),
    **dict.fromkeys("<>=+−×≠∞*#?\"", 840),
    **dict.fromkeys("…", 1000),
}


def text_width(text: str, size: Px, *, bold: bool = False) -> Fraction:
    """The width of ``text`` at font ``size`` pixels: never less than any font of ``palette.FONT`` draws."""
    width = Fraction(sum(_WIDTHS.get(char, _EM) for char in text), _EM) * size
    return width * _BOLD if bold else width


def fit(text: str, width: Px, size: Px, *, bold: bool = False) -> str:
    """``text``, cut with an ellipsis if it is wider than ``width`` pixels (empty if not even "…" fits)."""
    if text_width(text, size, bold=bold) <= width:
        return text
    while text and text_width(text + "…", size, bold=bold) > width:
        text = text[:-1]
    return text + "…" if text_width("…", size, bold=bold) <= width else ""
