"""``.ci/run``'s clean-up: its EXIT trap never changes the status the script exits with.

The trap stops the background builds and parts 1 and 2 of pytest, children first; they are usually gone by then
(part 2 may never have started), and under ``set -e`` a failing ``kill`` in the trap would end the script with 1
(a run that passed everything once exited 1 so).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

RUN = Path(__file__).parent.parent / ".ci" / "run"


def trap() -> str:
    (line,) = [line for line in RUN.read_text().splitlines() if re.match(r"trap '.*' EXIT$", line)]
    return line


def pids(trap: str) -> str:
    """Shell assignments of an ended and reaped process's pid to every part the trap stops."""
    names = [name for name in dict.fromkeys(re.findall(r'"\$(\w+)"', trap)) if name != "pid"]
    assert {"part1", "part2", "builds"} == set(names), trap
    return "".join(f"{name}={gone()}\n" for name in names)


def gone() -> int:
    """The pid of a process that has ended and been reaped."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_the_exit_trap_keeps_the_scripts_status_when_a_part_never_started() -> None:
    script = f"set -euo pipefail\n{pids(trap())}part2=\n{trap()}\nexit 0\n"
    assert 0 == subprocess.run(["bash", "-c", script], timeout=30).returncode


@pytest.mark.parametrize("status", [0, 3])
def test_the_exit_trap_keeps_the_scripts_status_when_the_parts_are_gone(status: int) -> None:
    script = f"set -euo pipefail\n{pids(trap())}{trap()}\nexit {status}\n"
    assert status == subprocess.run(["bash", "-c", script], timeout=30).returncode


@pytest.mark.parametrize("part", ["part1", "part2", "builds"])
def test_the_exit_trap_stops_a_part_still_running_and_its_children(part: str, tmp_path: Path) -> None:
    """A part is a subshell running pytest (or a builder running go): both must go."""
    child = tmp_path / "child"
    script = (f"set -euo pipefail\n{pids(trap())}(sleep 60 & echo $! >{child}; wait) & {part}=$!\n"
              f"until [ -s {child} ]; do sleep 0.01; done\n{trap()}\necho ${part}\nexit 0\n")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert 0 == done.returncode, done.stderr
    for pid in (int(done.stdout.strip()), int(child.read_text())):
        deadline = time.monotonic() + 10
        while running(pid):
            assert time.monotonic() < deadline, f"{part}'s process {pid} still runs after the script ended"
            time.sleep(0.05)


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (not gone, not a zombie waiting to be reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_part_2_selects_exactly_the_first_releases_tests() -> None:
    """Part 2 takes the tests marked realcluster or realnode under the first release: each must be one of its runs.

    A marker on a test that runs no release (a module's ``pytestmark``) would run it in parts 2 and 3 both.
    """
    text = RUN.read_text()
    assert '-m "realcluster or realnode"' in text
    environment = {**os.environ, "DRALEDGER_REALCLUSTER_VERSIONS": "v1.36"}
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
         "tests/realcluster", "tests/realnode", "-m", "realcluster or realnode"],
        cwd=RUN.parent.parent, env=environment, capture_output=True, text=True, timeout=120)
    assert 0 == listed.returncode, listed.stdout + listed.stderr
    ids = [line for line in listed.stdout.splitlines() if "::" in line]
    assert ids, listed.stdout
    assert [] == [test for test in ids if not re.search(r"\[v1\.36(-|\])", test)]
