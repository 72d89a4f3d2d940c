"""benchmarks/profile_parts.py: py-spy's raw stacks summed into the operator's parts (its rules 1 to 3)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import profile_parts as parts

WORKER = "worker (kopf/_core/reactor/queueing.py:120)"
HANDLER = "register.<locals>.translate.<locals>.handler (draledger/operator/handlers.py:61)"
LOOP = "BaseEventLoop._run_once (asyncio/base_events.py:1922);Handle._run (asyncio/events.py:84)"


def name(start: str) -> str:
    (found,) = [part for part, _ in parts.PARTS if part.startswith(start)]
    return found


@pytest.mark.parametrize(("stack", "part"), [
    pytest.param(f"{LOOP};{WORKER};process_resource_event (kopf/_core/reactor/processing.py:88)",
                 name("Kopf's handling"), id="Kopf's worker"),
    pytest.param(f"{LOOP};{WORKER};invoke (kopf/_core/actions/invocation.py:1);{HANDLER};Runtime.event (x.py:3)",
                 name("the operator's handler"), id="the handler under the worker is the operator's"),
    pytest.param(f"{LOOP};Writer._write (draledger/operator/writing.py:300);_read_ready (asyncio/x.py:1)",
                 name("the ledger writer"), id="an answer read under the writer is the writer's"),
    pytest.param("BaseEventLoop._run_once (asyncio/base_events.py:1);EpollSelector.select (selectors.py:468)",
                 parts.WAITING, id="select is waiting"),
    pytest.param(LOOP, parts.REST, id="no marker"),
])
def test_a_stack_goes_to_the_first_part_with_a_marker_in_it(stack: str, part: str) -> None:
    assert parts.part_of(stack.split(";")) == part


def test_waiting_is_counted_apart_and_never_in_the_shares() -> None:
    tally = parts.tally([
        f"{LOOP};{WORKER} 6",
        f"{LOOP};Releaser.run (draledger/operator/gating.py:9) 2",
        "BaseEventLoop._run_once (a.py:1);EpollSelector.select (selectors.py:1) 90",
        "not a sample line",
        "",
        f"{LOOP} 2",
    ])
    assert tally[parts.WAITING] == 90
    assert parts.shares(tally) == [(name("Kopf's handling"), 0.6), (name("the releaser"), 0.2), (parts.REST, 0.2)]


def test_the_command_prints_the_shares_of_its_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text(f"{LOOP};{WORKER} 3\n", encoding="utf-8")
    second.write_text(f"{LOOP};{WORKER};{HANDLER} 1\n", encoding="utf-8")
    assert parts.main([str(first), str(second)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("4 busy samples, 0 waiting in select (not counted), 2 file(s)")
    assert f"| {name('Kopf')} | 75.0 % |" in out
    assert f"| {name('the operator')} | 25.0 % |" in out
    assert parts.main([]) == 2
