"""Running the real operator (real Kopf, real HTTP) against the emulator, inside a test body.

Kopf cancels every task created after it started when it stops, so the operator is started and stopped
inside the test (an ``async with`` block), never from a fixture's teardown.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import pathlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

from draledger.commands.audit import ledgers_of
from draledger.core.accounting.ledger import Flags
from draledger.core.loading import load
from draledger.demo.emulator import ClusterEmulator
from draledger.operator.config import OperatorConfig
from draledger.operator.running import Operator
from draledger.operator.writing import VOLATILE

LEDGERS = "draledger.dev/v1alpha1/nodeallocatableledgers"
PODS = "v1/pods"
NODES = "v1/nodes"
SLICES = "resource.k8s.io/v1/resourceslices"
CLAIMS = "resource.k8s.io/v1/resourceclaims"
CASES = pathlib.Path(__file__).parent.parent / "conformance"
T = TypeVar("T")

FAST = OperatorConfig(
    metrics_port=0,
    metrics_host="127.0.0.1",
    coalesce_window=0.05,
    freshness_window=30.0,
    watch_timeout=5,
    events=True,
)


def emulating(items: Iterable[Mapping[str, Any]]) -> ClusterEmulator:
    """An emulator whose /version is the release the objects are audited with (a v1.37-shaped object cannot be
    stored by a v1.36 server)."""
    release = load(copy.deepcopy(list(items)), "test").state.release
    return ClusterEmulator(server_version=(1, int(release.split(".")[1])))


def case_items(name: str) -> list[dict[str, Any]]:
    path = next(CASES.glob(f"{name}*.json"))
    return copy.deepcopy(json.loads(path.read_text())["dump"]["items"])


@contextlib.asynccontextmanager
async def running(url: str, **overrides: Any) -> AsyncIterator[Operator]:
    stop = asyncio.Event()
    operator = Operator(replace(FAST, server=url, **overrides), stop)
    task = asyncio.create_task(operator.run())
    try:
        await eventually(lambda: operator.port != 0 or task.done(), what="the operator to start")
        if task.done():
            task.result()
        yield operator
    finally:
        stop.set()
        await asyncio.wait_for(task, timeout=20)


async def eventually(check: Callable[[], T | Awaitable[T]], *, within: float = 15.0, what: str = "") -> T:
    """Poll ``check`` until it returns something truthy; fail with the last value after ``within`` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    last: Any = None
    while True:
        last = check()
        if asyncio.iscoroutine(last):
            last = await last
        if last:
            return last  # type: ignore[no-any-return]
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}: last value {last!r}")
        await asyncio.sleep(0.02)


def ledger(emulator: ClusterEmulator, node: str) -> dict[str, Any] | None:
    return emulator.get_object(LEDGERS, node)


def status(emulator: ClusterEmulator, node: str) -> dict[str, Any]:
    obj = ledger(emulator, node)
    return (obj or {}).get("status") or {}


def phase_is(emulator: ClusterEmulator, node: str, phase: str) -> Callable[[], bool]:
    return lambda: status(emulator, node).get("phase") == phase


def semantic(status: Mapping[str, Any]) -> dict[str, Any]:
    """A status without versions, timestamps and the operator-only backfill condition."""
    out = {k: v for k, v in status.items() if k not in VOLATILE}
    out["conditions"] = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"}
        for c in status.get("conditions", [])
        if c.get("type") != "PodStatusBackfill"
    ]
    return out


def audited(items: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    loaded = load(list(items), "test")
    return {
        obj["metadata"]["name"]: semantic(obj["status"])
        for obj in ledgers_of(loaded, Flags(), "2026-01-01T00:00:00Z")
    }


def writes(emulator: ClusterEmulator, plural: str = "nodeallocatableledgers") -> list[Any]:
    """The PATCH and POST requests the emulator served for a resource, in order."""
    return [
        request
        for verb in ("patch", "post")
        for request in emulator[verb]
        if request.resource is not None and request.resource.plural == plural
    ]
