"""One scenario's world: the emulator (in this process, on a port that survives restarts), its timeline, the
churn, the operator processes, and the steps every scenario ends with.

The pytest event loop serves the emulator, so everything here awaits often; waiting for a state is always a
poll with a deadline. The churn runs as a task next to the scenario's script (:meth:`World.churning`), one
burst every 40 to 120 ms unless the scenario asks for another pace.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from draledger.demo.emulator import ClusterEmulator, EmulatorServer
from draledger.demo.emulator.discovery import register_cluster_resources
from draledger.operator import gating
from tests.faults import checks
from tests.faults.churn import Churn
from tests.faults.objects import gate_names
from tests.faults.process import OperatorProcess, Operators
from tests.faults.timeline import Entry, Timeline

T = TypeVar("T")
QUIET = 3.0  # seconds without any write after convergence
# Seconds without a change that end a backlog: longer than the operator's longest deliberate pause before a write.
# A pod's Event comes EVENT_AFTER (0.5 s) after its hold reason starts, from a pass that may be waiting out a retry
# (RELEASE_RETRY, 1 s) meanwhile; at 1 s, such an Event landed in the quiet window (watch-errors, seed 2).
SETTLE = gating.EVENT_AFTER + gating.RELEASE_RETRY + 0.5
SETTLE_WITHIN = 30.0
CONVERGE_WITHIN = 45.0
HELD_FOR_NOTHING = ('reason="Conflict"', 'reason="WatchUnhealthy"', 'reason="Rebuilding"')


async def poll(check: Callable[[], T | Awaitable[T]], *, within: float, what: str, every: float = 0.05) -> T:
    """``check()``'s first truthy value; fails naming ``what`` and the last value after ``within`` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {within:g}s waiting for {what}; last: {value!r}")
        await asyncio.sleep(every)


@dataclass
class Outcome:
    """What one scenario did and found; the report sums these per fault."""

    faults: Counter[str] = field(default_factory=Counter)  # fault label -> times it fired
    releases: int = 0
    wrong: list[str] = field(default_factory=list)
    wrong_by_record: list[str] = field(default_factory=list)  # the second judge's (checks.Record)
    problems: list[str] = field(default_factory=list)  # versions, edits, convergence, loops, liveness

    @property
    def survived(self) -> bool:
        return not self.wrong and not self.wrong_by_record and not self.problems


def held_event(entry: Entry) -> tuple[str, str] | None:
    """(pod, reason) of an Event saying why a pod is held (``LedgerGate*``, not its release), else None."""
    if entry.plural != "events":
        return None
    reason = str(entry.change.obj.get("reason") or "")
    if not reason.startswith("LedgerGate") or reason == "LedgerGateReleased":
        return None
    return str((entry.change.obj.get("involvedObject") or {}).get("name")), reason


def looping(before: list[Entry], window: list[Entry]) -> list[Entry]:
    """The changes of a quiet window a request loop would explain: all but one Event a held pod may still get,
    the end of a backlog: its first in the window, for a reason other than the last it was told (gating rule 6
    never tells a reason twice in a row). ``before``: every change until the window."""
    last: dict[str, str] = {}
    for entry in before:
        if (held := held_event(entry)) is not None:
            last[held[0]] = held[1]
    loop, seen = [], set()
    for entry in window:
        held = held_event(entry)
        if held is not None and held[0] not in seen and last.get(held[0]) != held[1]:
            seen.add(held[0])
        else:
            loop.append(entry)
    return loop


class World:
    def __init__(self, seed: int, logs: Path, nodes: int = 4, *, journal_limit: int = 5000,
                 pace: tuple[float, float] = (0.04, 0.12)) -> None:
        """``journal_limit``: the changes per kind a watch can resume from (fewer: more 410s); ``pace``: the
        churn's pause between bursts, in seconds."""
        self.seed = seed
        self.rng = random.Random(seed * 7919)
        self.pace = pace
        self.emulator = ClusterEmulator(journal_limit=journal_limit, bookmark_interval=None)
        register_cluster_resources(self.emulator)
        self.server = EmulatorServer(self.emulator)
        self.timeline = Timeline(self.emulator)
        self.churn = Churn(self.emulator, self.timeline, seed, nodes)
        self.logs = logs
        self.operators: Operators | None = None
        self.outcome = Outcome()
        self._churning: asyncio.Task[None] | None = None
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> World:
        await self._stack.enter_async_context(self.emulator)
        await self._stack.enter_async_context(self.server)
        self.operators = Operators(self.server.url, self.logs)
        self._stack.callback(self.operators.kill_all)
        self._stack.callback(self.timeline.close)
        self.churn.populate()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._churning is not None:
            self._churning.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._churning
        await self._stack.aclose()

    # ----- the operator -----
    @property
    def ops(self) -> Operators:
        assert self.operators is not None
        return self.operators

    def start(self) -> OperatorProcess:
        return self.ops.start()

    def kill(self) -> None:
        self.ops.current.kill()

    async def ready(self, within: float = 40.0) -> None:
        process = self.ops.current

        async def ready() -> bool:
            if not process.alive:
                raise AssertionError(f"the operator exited with {process.process.returncode}")
            return await process.readyz() == 200

        await poll(ready, within=within, what="/readyz 200", every=0.1)

    def fault(self, label: str, count: int = 1) -> None:
        self.outcome.faults[label] += count

    # ----- the churn -----
    @contextlib.asynccontextmanager
    async def churning(self) -> AsyncIterator[None]:
        async def run() -> None:
            loop = asyncio.get_running_loop()
            while True:
                self.churn.step(loop.time())
                await asyncio.sleep(self.rng.uniform(*self.pace))

        self._churning = asyncio.create_task(run(), name="churn")
        try:
            yield
        finally:
            task, self._churning = self._churning, None
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            self.churn.settle()

    async def pause(self, seconds: float) -> None:
        """Let the churn (and the operator) run; a churn that crashed fails the scenario here."""
        await asyncio.sleep(seconds)
        if self._churning is not None and self._churning.done():
            self._churning.result()

    # ----- the end of every scenario -----
    def _settled(self) -> bool:
        entries = self.timeline.entries
        return not entries or time.monotonic() - entries[-1].at > SETTLE

    async def held_for_nothing(self, process: OperatorProcess) -> dict[str, float]:
        """The pods the operator holds now for a reason that passes, by reason (its gauge)."""
        held = await process.gauge("draledger_gated_pods")
        return {labels: value for labels, value in held.items() if labels in HELD_FOR_NOTHING and value}

    async def _worked_off(self, process: OperatorProcess) -> bool:
        """Whether the backlog is over: no write for ``SETTLE`` seconds, and no pod held for a reason that passes
        (a loaded server's slow watch renewals hold releases until a pass finds every stream healthy)."""
        return self._settled() and not await self.held_for_nothing(process)

    def last_told(self) -> list[str]:
        """The last Event's message about each pod still gated, for a failure's text."""
        told: dict[str, str] = {}
        for entry in self.timeline.entries:
            if entry.plural == "events":
                pod = str((entry.change.obj.get("involvedObject") or {}).get("name", ""))
                told[pod] = f"{pod}: {entry.change.obj.get('reason')}: {entry.change.obj.get('message')}"
        pods = self.emulator.store.live(self.emulator.require("v1/pods").resource)
        gated = [pod["metadata"]["name"] for pod in pods if gating.GATE in gate_names(pod)]
        return [told.get(name, f"{name}: no Event") for name in sorted(gated)][:8]

    async def finish(self) -> Outcome:
        """Every fault disarmed, the ledgers converged, a quiet window, then the timeline judged."""
        outcome = self.outcome
        left = self.emulator.faults.clear()
        if left:
            outcome.problems.append(f"{left} armed faults never fired")
        process = self.ops.current
        if not process.alive:
            outcome.problems.append(f"the operator exited: {process.process.returncode}")
            return outcome
        await self.ready()
        regressed = checks.regressions(self.timeline.entries, self.emulator, process.started)
        try:
            await poll(lambda: not checks.differences(checks.expected_ledgers(self.emulator, regressed),
                                                      checks.stored_ledgers(self.emulator)),
                       within=CONVERGE_WITHIN, what="the ledgers to equal audit", every=0.2)
        except AssertionError:
            diff = checks.differences(checks.expected_ledgers(self.emulator, regressed),
                                      checks.stored_ledgers(self.emulator))
            outcome.problems.append("no convergence: " + "; ".join(diff[:8]))
        # The operator may still be working off a backlog (releases held during a restart, their Events, pods held
        # while a loaded server renews the watches): that ends. A loop does not: it never lets SETTLE seconds pass
        # without a write.
        try:
            await poll(lambda: self._worked_off(process), within=SETTLE_WITHIN, what="the backlog's end", every=0.1)
        except AssertionError:
            if not self._settled():
                outcome.problems.append(
                    f"request loop: writes never stopped for {SETTLE:g}s within {SETTLE_WITHIN:g}s")
        writes = checks.write_requests(self.emulator)
        changes = len(self.timeline.entries)
        await asyncio.sleep(QUIET)  # an absence is observed over a window; nothing to poll for
        # A held pod's first Event for its reason ends a backlog (gating rule 6: one a pod and reason, posted when
        # a pass finds it held that long); a loop writes again what it wrote. Anything else in the window is one.
        loop = looping(self.timeline.entries[:changes], self.timeline.entries[changes:])
        backlog = len(self.timeline.entries) - changes - len(loop)
        if checks.write_requests(self.emulator) - writes > backlog or loop:
            extra = [f"{e.plural}/{e.change.obj['metadata']['name']} {e.change.type}" + (
                f" ({e.change.obj.get('reason')}: {e.change.obj.get('message')})" if e.plural == "events" else "")
                for e in self.timeline.entries[changes:]][:8]
            outcome.problems.append(f"request loop: {checks.write_requests(self.emulator) - writes} writes in "
                                    f"a {QUIET:g}s quiet window after convergence ({extra})")
        stuck = await self.held_for_nothing(process)
        if stuck:
            outcome.problems.append(f"pods held for a transient reason after convergence: {stuck}; "
                                    f"why, as the operator last told: {self.last_told()}")
        judgement = checks.judge(self.timeline.entries, sent=checks.sent_times(self.logs.glob("*.log")))
        outcome.releases = len(judgement.releases)
        outcome.wrong = [f"{r.pod} at {r.at:.3f}: unsafe {sorted(r.wrong)} ({r.why})" for r in judgement.wrong]
        outcome.wrong_by_record = judgement.by_record
        outcome.problems += judgement.version_errors + judgement.foreign_edits
        return outcome

