"""Shared fixtures for the accounting-core tests: the conformance cases and a way to run the real command.

No autouse fixtures here: the emulator and device-metadata suites share this directory's conftest.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

CONFORMANCE = Path(__file__).resolve().parent / "conformance"

@pytest.fixture(scope="session")
def conformance_cases() -> dict[str, dict[str, Any]]:
    """Every conformance case by file stem: ``{name, description, dump, expect}``."""
    return {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(CONFORMANCE.glob("*.json"))}


@pytest.fixture
def run_audit() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``draledger audit ARGS...`` as a subprocess of this interpreter; returns the completed process."""

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "draledger", "audit", *args],
            input=stdin, capture_output=True, text=True, timeout=60, check=False,
        )

    return run


@pytest.fixture
def write_dump(tmp_path: Path) -> Callable[..., Path]:
    """Write a dump (a dict as JSON, a str as is) to a fresh file and return its path."""
    counter = iter(range(1000))

    def write(content: dict[str, Any] | Sequence[Any] | str, suffix: str = ".json") -> Path:
        path = tmp_path / f"dump-{next(counter)}{suffix}"
        path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
        return path

    return write
