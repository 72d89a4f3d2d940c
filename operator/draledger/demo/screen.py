"""The demo's output: a live, redrawn frame on a terminal; plain sequential snapshots in a pipe or in CI.

Rules:
1. A *frame* is the current picture of a step (its header, the ledgers, the held pods, a progress line).
   On a TTY, :meth:`Screen.live` redraws the frame in place (cursor up, clear to the end of the screen) and
   :meth:`Screen.commit` leaves the last version on screen; lines are cut to the terminal's width so that the
   cursor arithmetic holds.
2. Without a TTY, :meth:`Screen.live` writes nothing and :meth:`Screen.commit` writes the frame once: the
   output is a readable log of snapshots, with no control characters.
3. Colour (phases, bold headers) only where :func:`colour_wanted` says: on a terminal, unless ``NO_COLOR``
   is set to anything non-empty (https://no-color.org); ``FORCE_COLOR`` (non-empty) asks for it even in a
   pipe, and ``NO_COLOR`` wins over it. Colour never moves the cursor: that is rule 1's, a TTY's only.
4. Every write is flushed: a reader at the other end of a pipe sees each step when it happens.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from typing import Final, TextIO

from draledger.core.phases import Phase

__all__ = ["Screen", "colour_wanted"]

_COLOURS: Final[dict[str, str]] = {
    Phase.READY: "32",
    Phase.STALE: "33",
    Phase.OVERCOMMITTED: "31",
    Phase.FROZEN: "34",
    Phase.REBUILDING: "90",
    "InSync": "32",
    "Diverged": "35",
}
_PHASE_WORD: Final = re.compile(r"(?<=\s)(" + "|".join(_COLOURS) + r")(?=\s|$)")
BOLD: Final = "\x1b[1m"
RESET: Final = "\x1b[0m"


def colour_wanted(tty: bool, environ: Mapping[str, str]) -> bool:
    """Rule 3: whether to colour an output that is (or is not) a terminal, given the environment."""
    if environ.get("NO_COLOR"):
        return False
    return bool(environ.get("FORCE_COLOR")) or tty


def _painted(line: str) -> str:
    if line.startswith("== "):
        return f"{BOLD}{line}{RESET}"
    return _PHASE_WORD.sub(lambda m: f"\x1b[{_COLOURS[m[1]]}m{m[1]}{RESET}", line)


class Screen:
    def __init__(self, out: TextIO, tty: bool | None = None, colour: bool | None = None) -> None:
        self.out = out
        self.tty = out.isatty() if tty is None else tty
        self.colour = colour_wanted(self.tty, os.environ) if colour is None else colour
        self._drawn = 0  # lines of the live frame currently on screen

    def _width(self) -> int:
        return max(40, shutil.get_terminal_size((120, 40)).columns)

    def _styled(self, frame: str) -> str:
        """The frame as written: cut to the terminal's width (TTY), coloured (if wanted)."""
        lines = frame.rstrip("\n").split("\n")
        if self.tty:
            width = self._width()
            lines = [line[: width - 1] for line in lines]
        if self.colour:
            lines = [_painted(line) for line in lines]
        return "\n".join(lines) + "\n"

    def _erase(self) -> None:
        if self._drawn:
            self.out.write(f"\x1b[{self._drawn}F\x1b[J")
            self._drawn = 0

    def live(self, frame: str) -> None:
        """Redraw the frame in place (TTY only)."""
        if not self.tty:
            return
        styled = self._styled(frame)
        if styled.count("\n") >= shutil.get_terminal_size((120, 40)).lines - 1:
            return  # taller than the terminal: the cursor could not get back up; commit() will show it
        self._erase()
        self.out.write(styled)
        self._drawn = styled.count("\n")
        self.out.flush()

    def commit(self, frame: str) -> None:
        """Leave the frame on screen (TTY) or write it once (pipe)."""
        self._erase()
        self.out.write(self._styled(frame))
        self.out.write("\n")
        self._drawn = 0
        self.out.flush()

    def say(self, text: str) -> None:
        """Permanent text below whatever was committed."""
        self._erase()
        self.out.write(text.rstrip("\n") + "\n")
        self.out.flush()

    def start(self) -> None:
        if self.tty:
            self.out.write("\x1b[?25l")  # hide the cursor while frames are redrawn
            self.out.flush()

    def stop(self) -> None:
        if self.tty:
            self._erase()
            self.out.write("\x1b[?25h")
            self.out.flush()
