"""Every command and code example in docs/device-metadata.md really runs and prints what it shows."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from draledger.devicemetadata import model
from tests.devicemetadata.helpers import GOLDEN

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "device-metadata.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(DOC.read_text())]


def python_examples() -> list[tuple[str, str | None]]:
    """(code, expected output from a directly following ```text block, if any)."""
    found = blocks()
    out = []
    for i, (lang, body) in enumerate(found):
        if lang == "python":
            following = found[i + 1] if i + 1 < len(found) else None
            out.append((body, following[1] if following and following[0] == "text" else None))
    return out


def console_commands() -> list[tuple[str, str]]:
    """(command, expected combined output) for each `$ ` line of the console blocks."""
    out: list[tuple[str, str]] = []
    for lang, body in blocks():
        if lang != "console":
            continue
        for chunk in re.split(r"^\$ ", body, flags=re.MULTILINE)[1:]:
            command, _, expected = chunk.partition("\n")
            out.append((command, expected))
    return out


def test_the_doc_has_examples() -> None:
    """The doc keeps its runnable examples (so the tests below cannot silently pass on nothing)."""
    assert len(python_examples()) >= 4
    assert len(console_commands()) >= 4


@pytest.mark.parametrize(("code", "expected"), python_examples())
def test_python_examples_run(
    code: str, expected: str | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each Python example runs against the golden tree and prints the output shown after it."""
    # The examples use the in-container default root; point it at the golden tree.
    monkeypatch.setattr(model, "DEFAULT_ROOT", GOLDEN / "container")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the writer example's mkdtemp()
    monkeypatch.delenv("GPU_PCI_BUS_ID", raising=False)
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        exec(compile(code, str(DOC), "exec"), {"__name__": "__doc_example__"})
    if expected is not None:
        assert stdout.getvalue() == expected


@pytest.mark.parametrize(("command", "expected"), console_commands())
def test_console_commands_run(command: str, expected: str) -> None:
    """Each shell command runs from the repository root and prints exactly what the doc shows."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(
        ["bash", "-c", command],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.stdout == expected
