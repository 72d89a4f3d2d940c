"""Parts of the docs that a test generates: each sits between ``<!-- generated: NAME -->`` and
``<!-- end: NAME -->`` in its page. A test compares the part with what the code gives now and fails when the
page is stale; with ``DRALEDGER_REGENERATE_DOCS=1`` it writes the new part into the page instead, e.g.

    DRALEDGER_REGENERATE_DOCS=1 python -m pytest -p no:randomly tests/test_documentation.py tests/demo/test_demo_run.py
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

REGENERATE = "DRALEDGER_REGENERATE_DOCS"


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated: {re.escape(name)} -->\n)(.*?)(<!-- end: {re.escape(name)} -->)", re.S)


def part(page: Path, name: str) -> str:
    """The generated part ``name`` of ``page``, as the page holds it."""
    found = _pattern(name).search(page.read_text(encoding="utf-8"))
    assert found is not None, f"{page} has no part {name!r}"
    return found[2]


def check(page: Path, name: str, now: str, same: Callable[[str], str] = lambda text: text) -> None:
    """Fail when ``page``'s part ``name`` is not ``now`` (compared through ``same``, which may blank what
    changes from run to run); write ``now`` there when DRALEDGER_REGENERATE_DOCS=1 is set."""
    if os.environ.get(REGENERATE, "") not in ("", "0"):
        text = page.read_text(encoding="utf-8")
        page.write_text(_pattern(name).sub(lambda m: m[1] + now + m[3], text, count=1), encoding="utf-8")
        return
    assert same(now) == same(part(page, name)), (
        f"{page.name} is stale ({name}): regenerate it with {REGENERATE}=1 (see tests/generated_docs.py)")
