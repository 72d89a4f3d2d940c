"""The benchmarks stay runnable: each one's ``--help`` works (its imports of the package are current).

Nothing here times anything (benchmarks/results/ holds the figures); a benchmark broken by a change of the
package's layout fails here instead of on the day someone needs its figures.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[2] / "benchmarks").glob("bench_*.py"))


@pytest.mark.parametrize("script", BENCHMARKS, ids=[p.stem for p in BENCHMARKS])
def test_the_benchmark_starts(script: Path) -> None:
    result = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert 0 == result.returncode, result.stderr[-2000:]
    assert "usage" in result.stdout.lower()
