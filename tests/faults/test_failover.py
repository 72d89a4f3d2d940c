"""A warm standby (issue 15): two real operator processes with leader election against the emulator.

- ``test_the_standby_takes_over_when_the_leader_is_killed``: a leader and a standby, both Ready; churn; the
  leader is SIGKILLed; the standby takes the Lease within the lease duration plus one retry period (it sees
  the leader's last renewal up to one retry period late, counts the duration from there on its own clock, and
  tries the moment it has passed), plus a margin of one more retry period for a loaded machine (the attempt's
  GET and PUT, the event loop's lag under churn, the test's polling of ``/readyz``), and carries on without
  marking any ledger Rebuilding, its versions continuing from the stored ones. Then the fault suite's
  judgement (tests/faults/checks.py): no wrong release, no version back, the ledgers equal to ``audit`` of the
  store, no write in a quiet window (the Lease's renewals aside: a leader renews every retry period by
  design), no pod held for a transient reason.
- ``test_a_leader_stopped_by_sigterm_hands_over_at_once``: the leader gives its Lease up when it stops.
- ``test_a_standby_writes_nothing``: the Lease held by another replica that keeps it; the standby is Ready
  (it says so: ``ready: standby``) through churn, and the emulator's request log holds no write at all.

Short durations keep the scenario quick: a 3 s lease, 2 s renew deadline, 0.5 s retry period.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

from draledger.demo.emulator import ClusterEmulator
from tests.faults import checks
from tests.faults.process import OperatorProcess
from tests.faults.timeline import OPERATOR
from tests.faults.world import CONVERGE_WITHIN, QUIET, SETTLE, World, poll

LEASE, RENEW, RETRY = 3.0, 2.0, 0.5
TAKEOVER = LEASE + RETRY  # the rules' bound, from the kill (electing.Elector.next_attempt)
LATENCY = RETRY  # two cores shared by the emulator, the churn, two operators and the test
ELECTION = (
    "--leader-election",
    "--leader-election-lease-duration", f"{LEASE:g}s",
    "--leader-election-renew-deadline", f"{RENEW:g}s",
    "--leader-election-retry-period", f"{RETRY:g}s",
)
LEASES = "coordination.k8s.io/v1/leases"
NAMESPACE, NAME = "draledger-system", "draledger"


def start(world: World, name: str) -> OperatorProcess:
    """One more replica (the fault suite's Operators runs one at a time; these run side by side)."""
    process = OperatorProcess(world.server.url, world.logs / f"{name}.log", ELECTION)
    world.ops.started.append(process)  # killed with the others at the end, whatever happens
    return process


async def role(process: OperatorProcess, wanted: str, within: float) -> None:
    """Until ``/readyz`` answers 200 naming ``wanted`` (``leader`` or ``standby``)."""

    async def says() -> bool:
        if not process.alive:
            raise AssertionError(f"{process.log.name} exited with {process.process.returncode}")
        return await process.get("/readyz") == (200, f"ready: {wanted}\n")

    await poll(says, within=within, what=f"{process.log.name} to be Ready as {wanted}", every=0.1)


def holder(emulator: ClusterEmulator) -> str:
    lease = emulator.get_object(LEASES, NAME, NAMESPACE) or {}
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def writes_but_leases(emulator: ClusterEmulator) -> int:
    """PATCH, POST, PUT and DELETE requests served so far, other than on Leases."""
    return sum(1 for verb in ("patch", "post", "put", "delete") for request in emulator[verb]
               if request.resource is None or request.resource.plural != "leases")


async def judged(world: World, survivor: OperatorProcess) -> list[str]:
    """The fault suite's end of a scenario (World.finish), with the Lease's renewals left out of the quiet
    window; the problems found."""
    emulator, problems = world.emulator, []
    regressed = checks.regressions(world.timeline.entries, emulator, survivor.started)

    def differences() -> list[str]:
        return checks.differences(checks.expected_ledgers(emulator, regressed), checks.stored_ledgers(emulator))

    try:
        await poll(lambda: not differences(), within=CONVERGE_WITHIN, what="the ledgers to equal audit", every=0.2)
    except AssertionError:
        problems.append("no convergence: " + "; ".join(differences()[:8]))

    def but_leases() -> list[Any]:
        return [entry for entry in world.timeline.entries if entry.plural != "leases"]

    def changes() -> int:
        return len(but_leases())

    async def settled() -> bool:
        before = (writes_but_leases(emulator), changes())
        await asyncio.sleep(SETTLE)  # as long without a write ends a backlog (an absence, observed; world.SETTLE)
        return before == (writes_but_leases(emulator), changes()) and not await world.held_for_nothing(survivor)

    await poll(settled, within=30, what="the leader's writes to stop, and no pod held for a reason that passes")
    before = (writes_but_leases(emulator), changes())
    await asyncio.sleep(QUIET)  # an absence is observed over a window; nothing to poll for
    if (writes_but_leases(emulator), changes()) != before:
        extra = [f"{e.plural}/{e.change.obj['metadata']['name']} {e.change.type}" for e in but_leases()[before[1]:]][:8]
        problems.append(f"request loop: {writes_but_leases(emulator) - before[0]} writes in a {QUIET:g}s quiet "
                        f"window after convergence ({extra})")
    stuck = await world.held_for_nothing(survivor)
    if stuck:
        problems.append(f"pods held for a transient reason after convergence: {stuck}; "
                        f"why, as the operator last told: {world.last_told()}")
    judgement = checks.judge(world.timeline.entries, sent=checks.sent_times(world.logs.glob("*.log")))
    problems += [f"{r.pod} at {r.at:.3f}: unsafe {sorted(r.wrong)} ({r.why})" for r in judgement.wrong]
    problems += [f"by the record: {wrong}" for wrong in judgement.by_record]
    return problems + judgement.version_errors + judgement.foreign_edits


async def test_the_standby_takes_over_when_the_leader_is_killed(tmp_path: Path) -> None:
    """SIGKILL of the leader during churn: the standby leads within the lease duration (plus two retry
    periods), marks nothing Rebuilding, and the end state passes the fault suite's checks."""
    async with World(seed=15, logs=tmp_path) as world:
        try:
            leader = start(world, "replica-a")
            await role(leader, "leader", within=40)
            first = holder(world.emulator)
            standby = start(world, "replica-b")
            await role(standby, "standby", within=40)
            assert {"": 0.0} == await standby.gauge("draledger_leader")
            async with world.churning():
                await world.pause(2.0)
                leader.kill()
                killed_at = time.monotonic()
                await role(standby, "leader", within=TAKEOVER + LATENCY + 5)
                took = time.monotonic() - killed_at
                await world.pause(2.0)
            assert took <= TAKEOVER + LATENCY, f"the standby took {took:.2f}s to take over"
            assert first != holder(world.emulator) != ""
            rebuilding = [e.change.obj["metadata"]["name"] for e in world.timeline.entries
                          if e.actor == OPERATOR and e.plural == checks.LEDGERS and e.at > killed_at
                          and (e.change.obj.get("status") or {}).get("phase") == "Rebuilding"]
            assert [] == rebuilding, "the warm standby marked ledgers Rebuilding"
            problems = await judged(world, standby)
        except BaseException:
            print(world.ops.tails())
            raise
        if problems:
            print(world.ops.tails())
        assert [] == problems, "\n".join(problems)


async def test_a_leader_stopped_by_sigterm_hands_over_at_once(tmp_path: Path) -> None:
    """SIGTERM (a rolling update, an eviction): the leader gives the Lease up on the way out, and the standby
    takes it at its next attempt rather than after the lease duration."""
    async with World(seed=17, logs=tmp_path) as world:
        try:
            leader = start(world, "replica-a")
            await role(leader, "leader", within=40)
            standby = start(world, "replica-b")
            await role(standby, "standby", within=40)
            os.killpg(leader.process.pid, signal.SIGTERM)
            stopped_at = time.monotonic()
            await role(standby, "leader", within=LEASE + 2 * RETRY + 5)
            took = time.monotonic() - stopped_at
            assert 0 == leader.process.wait(timeout=10)
        except BaseException:
            print(world.ops.tails())
            raise
        released = [e for e in world.timeline.entries
                    if e.plural == "leases" and e.change.obj["spec"].get("holderIdentity") == ""]
        assert 1 == len(released), "the stopping leader did not give the Lease up"
        assert took < LEASE, f"the standby waited {took:.2f}s for a Lease given up"


async def test_a_standby_writes_nothing(tmp_path: Path) -> None:
    """With the Lease held (and renewed) by another replica, a Ready standby makes no write request."""
    async with World(seed=16, logs=tmp_path) as world:
        emulator = world.emulator

        def hold() -> None:
            now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
            spec = {"holderIdentity": "elsewhere", "leaseDurationSeconds": int(LEASE), "renewTime": now}
            with world.timeline.acting("another replica"):
                if emulator.get_object(LEASES, NAME, NAMESPACE) is None:
                    emulator.load_objects([{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                            "metadata": {"name": NAME, "namespace": NAMESPACE}, "spec": spec}])
                else:
                    emulator.patch_object(LEASES, NAME, {"spec": spec}, namespace=NAMESPACE)

        async def keep() -> None:
            while True:
                hold()
                await asyncio.sleep(RETRY)  # the other replica's renewals, every retry period

        hold()
        keeping = asyncio.create_task(keep())
        try:
            standby = start(world, "standby")
            await role(standby, "standby", within=40)
            async with world.churning():
                await world.pause(3.0)
            await world.pause(1.0)
            assert "elsewhere" == holder(emulator)
            assert 0 == checks.write_requests(emulator)
            assert [] == [e for e in world.timeline.entries if e.actor == OPERATOR]
            assert {"": 0.0} == await standby.gauge("draledger_leader")
        except BaseException:
            print(world.ops.tails())
            raise
        finally:
            keeping.cancel()
