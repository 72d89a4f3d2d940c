"""The commands and snippets the docs give, read out of the docs, so that the tests that run them run what users read.

Rules:
1. A snippet is a fenced block of a section (the text under a Markdown heading, up to the next heading of the
   same or a higher level); ``blocks`` returns them in order, for one language.
2. ``commands`` splits an ``sh`` block into its lines; a comment line is kept (it stands for a step no command does,
   e.g. "repair the driver here"), blank lines are dropped, nothing is rewritten.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def section(document: Path, heading: str) -> str:
    """The text under ``heading`` (its title, without the #s); AssertionError naming both when there is none.

    A line of a fenced block is never a heading, though a shell comment looks like one."""
    lines = document.read_text(encoding="utf-8").splitlines(keepends=True)
    fenced = False
    start, level = -1, 0
    for index, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
            continue
        found = None if fenced else re.match(r"(#+) (.*)\n?$", line)
        if found is None:
            continue
        if start < 0 and found[2] == heading:
            start, level = index + 1, len(found[1])
        elif start >= 0 and len(found[1]) <= level:
            return "".join(lines[start:index])
    assert start >= 0, f"{document.relative_to(ROOT)} has no section {heading!r}"
    return "".join(lines[start:])


def blocks(text: str, language: str) -> list[str]:
    """The fenced blocks of ``language`` in ``text``, in order."""
    return re.findall(rf"^```{re.escape(language)}\n(.*?)^```$", text, re.S | re.M)


def commands(block: str) -> list[str]:
    """The lines of an ``sh`` block: each a command or a comment (rule 2)."""
    return [line for line in block.splitlines() if line.strip()]
