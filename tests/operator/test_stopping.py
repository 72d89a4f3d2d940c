"""How ``draledger run`` stops: by signal, without Kopf's 5-second wait for a stop-flag waiter.

Found on a real control plane (tests/realcluster): with a stop flag of ours that nobody sets, Kopf 1.45.2 stopped
on SIGTERM by its own signal handling, left its "stop-flag waiter" task running, and waited 5 s for that "hung"
task before it exited. The flag now reaches Kopf only when a caller holds one.
"""

from __future__ import annotations

import asyncio
from typing import Any

import kopf
import pytest

from draledger.operator.config import OperatorConfig
from draledger.operator.metrics import Metrics
from draledger.operator.running import Operator
from draledger.operator.runtime import Runtime
from draledger.operator.writing import Writer

CONFIG = OperatorConfig(server="http://127.0.0.1:9", metrics_host="127.0.0.1", metrics_port=0)


async def kopf_flag(monkeypatch: pytest.MonkeyPatch, operator: Operator) -> Any:
    """The ``stop_flag`` that ``Operator.run`` passes to ``kopf.operator`` (Kopf and the API are stubbed)."""
    seen: dict[str, Any] = {}

    async def fake_operator(**kwargs: Any) -> None:
        seen.update(kwargs)

    async def no_api() -> None:
        return None

    monkeypatch.setattr(kopf, "operator", fake_operator)
    monkeypatch.setattr(operator, "_start_writing", no_api)
    monkeypatch.setattr(operator, "_prime", no_api)
    await operator.run()
    return seen["stop_flag"]


class TestStopFlag:
    async def test_draledger_run_leaves_stopping_to_kopf(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without a stop event from the caller (``draledger run``), Kopf gets no stop flag to wait for."""
        operator = Operator(CONFIG)

        assert None is await kopf_flag(monkeypatch, operator)

    async def test_a_callers_stop_event_reaches_kopf(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A caller that holds a stop event (the demo, tests) stops the operator through Kopf with it."""
        stop = asyncio.Event()
        operator = Operator(CONFIG, stop)

        assert stop is await kopf_flag(monkeypatch, operator)


class TestCancellation:
    """Found by bench_gate.py on a real control plane: a SIGTERM during a burst left the gate releaser running,
    and the process was SIGKILLed 15 s later. On Python 3.11 ``asyncio.wait_for`` can lose a cancellation that
    arrives while the awaited event is being set; the releaser then waited for ever."""

    async def test_the_releaser_stops_when_cancelled_as_it_is_woken(self) -> None:
        """The releaser waits to retry; it is woken and cancelled in the same moment: it stops."""
        runtime = Runtime(OperatorConfig(), Metrics(), asyncio.get_running_loop().time)
        releaser = Writer(runtime, None).releaser  # type: ignore[arg-type]
        releaser.retry_soon = True  # its next wait is the timed one
        task = asyncio.create_task(releaser.run())
        await asyncio.sleep(0)
        releaser.wake.set()
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=2)
        assert {task} == done
        assert task.cancelled()
