"""Helpers for the demo tests: how to start ``draledger`` and the real ``kubectl``."""

from __future__ import annotations

import pathlib
import shutil
import sys

BIN = pathlib.Path(sys.executable).parent


def draledger() -> list[str]:
    """The installed console script (what a user runs), or the module when it is not installed."""
    script = BIN / "draledger"
    return [str(script)] if script.exists() else [sys.executable, "-m", "draledger"]


def kubectl() -> str | None:
    beside = BIN / "kubectl"
    return str(beside) if beside.exists() else shutil.which("kubectl")
