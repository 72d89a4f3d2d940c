"""Fixtures of the fault suite: the record of every scenario run, printed (and written) as a table at the end.

The table is printed at the end of the session, and written as Markdown to ``DRALEDGER_FAULT_REPORT`` when
that names a file (tests/faults/report.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.faults.report import RUNS, Run, table


@pytest.fixture
def record() -> list[Run]:
    return RUNS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not RUNS:
        return
    text = table(RUNS)
    terminalreporter.write_sep("=", "fault suite")
    terminalreporter.write_line(text)
    target = os.environ.get("DRALEDGER_FAULT_REPORT")
    if target:
        Path(target).write_text(text, encoding="utf-8")
