"""Progress of long audits on a person's terminal: ``reading dump.json: 312 MB ...``, ``computing 5000 ledgers``.

Rules:
1. Only on standard error, and only when it is a terminal: a pipe, a file or a CI log never gets a progress
   line, and standard output (``-o json|yaml``) never does.
2. Only for large inputs (``LARGE`` bytes read and more): a small dump is done before anyone could read it.
3. The reading line is rewritten in place (``\\r``); every step ends its own line.
"""

from __future__ import annotations

from typing import TextIO

LARGE = 32 << 20  # bytes: below this an audit takes about a second
MB = 1_000_000


class Progress:
    """What a long audit is doing, told to ``stream`` when it is a terminal (rule 1)."""

    def __init__(self, stream: TextIO) -> None:
        isatty = getattr(stream, "isatty", None)
        self.stream = stream
        self.enabled = bool(isatty and isatty())
        self.read = 0  # bytes (characters) read so far, over every file
        self.reading_line = False

    def reading(self, source: str, done: int, delta: int) -> None:
        """``done`` bytes of ``source`` read so far, ``delta`` of them just now."""
        self.read += delta
        if self.enabled and self.read >= LARGE:
            self.stream.write(f"\rreading {source}: {done // MB} MB ...")
            self.stream.flush()
            self.reading_line = True

    def step(self, text: str) -> None:
        """A new stage of the work (``computing 5000 ledgers``), on its own line, for large inputs only."""
        if not (self.enabled and self.read >= LARGE):
            return
        if self.reading_line:
            self.stream.write("\n")
            self.reading_line = False
        self.stream.write(f"{text}\n")
        self.stream.flush()
