"""Writing the report to a file (``commands.errors.writable`` checks the path before any work)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from draledger.commands.report.rendering import TITLE, render_svg


def write_svg(
    path: str | os.PathLike[str], ledgers: Sequence[Mapping[str, Any]], *, title: str = TITLE
) -> None:
    """Render and write ``path`` (UTF-8; a name that is no valid Unicode, a lone surrogate, written escaped)."""
    Path(path).write_text(render_svg(ledgers, title=title), encoding="utf-8", errors="backslashreplace")
