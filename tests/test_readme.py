"""The README's commands print what the README says they print."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_first_example_table_is_real() -> None:
    """The audit table in the README is exactly the command's output on the committed dump."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"\$ draledger audit -f (\S+).*?\n(.*?)```", readme, re.S)
    assert block is not None
    result = subprocess.run([sys.executable, "-m", "draledger", "audit", "-f", block[1]], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    assert block[2] == result.stdout


def test_example_dump_is_up_to_date(tmp_path: pathlib.Path) -> None:
    """tests/data/example-cluster.json is what tests/data/make_example.py builds from the conformance cases."""
    fresh = tmp_path / "example.json"
    subprocess.run([sys.executable, "tests/data/make_example.py", str(fresh)], cwd=ROOT, check=True)
    assert (ROOT / "tests/data/example-cluster.json").read_text() == fresh.read_text()
