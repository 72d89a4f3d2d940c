"""Colour for people: a phase at a glance in a table, and never an escape code where a program reads.

Rules: colour only when the stream is a terminal, and never when ``NO_COLOR`` is set to anything
(https://no-color.org); only a cell's text is coloured, never its padding, so columns stay aligned.
"""

from __future__ import annotations

import os
from typing import TextIO

from draledger.core.phases import Phase

RESET = "\033[0m"
PHASES: dict[str, str] = {Phase.OVERCOMMITTED: "\033[31m", Phase.STALE: "\033[33m", Phase.REBUILDING: "\033[33m",
          Phase.FROZEN: "\033[36m"}


def wanted(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not os.environ.get("NO_COLOR")


def phase(text: str) -> str:
    """``text`` (a phase) in its colour; Ready and anything unknown stay plain."""
    code = PHASES.get(text)
    return f"{code}{text}{RESET}" if code else text
