"""``.ci/run``'s clean-up: its EXIT trap never changes the status the script exits with.

The trap kills the background builds and part 1 of pytest; they are usually gone by then, and under ``set -e``
a failing ``kill`` in the trap would end the script with 1 (a run that passed everything once exited 1 so).
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

RUN = Path(__file__).parent.parent / ".ci" / "run"


def trap() -> str:
    (line,) = [line for line in RUN.read_text().splitlines() if re.match(r"trap '.*' EXIT$", line)]
    return line


def gone() -> int:
    """The pid of a process that has ended and been reaped."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


@pytest.mark.parametrize("status", [0, 3])
def test_the_exit_trap_keeps_the_scripts_status_when_the_parts_are_gone(status: int) -> None:
    script = f"set -euo pipefail\npart1={gone()}\nbuilds={gone()}\n{trap()}\nexit {status}\n"
    assert status == subprocess.run(["bash", "-c", script], timeout=30).returncode


def test_the_exit_trap_stops_parts_still_running() -> None:
    script = (f"set -euo pipefail\nsleep 60 & part1=$!\nbuilds={gone()}\n{trap()}\necho $part1\nexit 0\n")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert 0 == done.returncode
    pid = int(done.stdout.strip())
    deadline = time.monotonic() + 10
    while running(pid):
        assert time.monotonic() < deadline, f"part 1 (pid {pid}) still runs after the script ended"
        time.sleep(0.05)


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (not gone, not a zombie waiting to be reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False
