"""Leader election on a Lease (draledger.operator.leadership and .electing), against the emulator's API.

Attempts are made one at a time with an explicit clock where the rule is about time (who may take the Lease
when); the renewal loop runs in real time with short durations where the rule is about a running leader
(it stops writing before its Lease can expire), polled with a deadline.
"""

from __future__ import annotations

import argparse
import asyncio
import math
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import kopf
import pytest

from draledger.demo.emulator import ClusterEmulator, serve_emulator
from draledger.demo.emulator.faults import WriteFault
from draledger.operator.config import OperatorConfig, add_arguments, from_args
from draledger.operator.electing import Elector, FencedApi, NotLeading
from draledger.operator.kubeapi import ApiError, KubeApi
from draledger.operator.leadership import LeaderElection, lease_spec
from draledger.operator.metrics import Metrics
from draledger.operator.options import ConfigError
from draledger.operator.runtime import Runtime
from draledger.operator.writing import Writer
from tests.operator.test_create_conflict import rebuilt_runtime

LEASES = "coordination.k8s.io/v1/leases"
ELECTION = LeaderElection(enabled=True, lease_duration=15, renew_deadline=10, retry_period=2, namespace="ops",
                          name="draledger")


def parse(*argv: str) -> OperatorConfig:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return from_args(parser.parse_args(argv))


def lease(emulator: ClusterEmulator) -> dict[str, Any]:
    obj = emulator.get_object(LEASES, "draledger", "ops")
    assert obj is not None, "no Lease stored"
    spec: dict[str, Any] = obj["spec"]
    return spec


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[ClusterEmulator, kopf.ConnectionInfo]]:
    async with serve_emulator() as (emulator, url):
        yield emulator, kopf.ConnectionInfo(server=url)


@pytest.fixture
async def candidates(
    cluster: tuple[ClusterEmulator, kopf.ConnectionInfo],
) -> AsyncIterator[Callable[..., Elector]]:
    """Electors named as asked, each with its own client (closed at the end)."""
    made: list[Elector] = []

    def make(identity: str, election: LeaderElection = ELECTION, clock: Callable[[], float] = lambda: 0.0) -> Elector:
        api = KubeApi(cluster[1], attempts=0)
        elector = Elector(LeaderElection(**{**_fields(election), "identity": identity}), api, clock)
        made.append(elector)
        return elector

    yield make
    for elector in made:
        assert elector.api is not None
        await elector.api.close()


def _fields(election: LeaderElection) -> dict[str, Any]:
    return {name: getattr(election, name) for name in election.__slots__}


class TestSettings:
    def test_off_by_default_with_kube_schedulers_durations(self) -> None:
        """Without flags a replica does not elect (it behaves as before); the durations are 15s, 10s, 2s."""
        election = parse().leader_election

        assert (False, 15.0, 10.0, 2.0) == (election.enabled, election.lease_duration, election.renew_deadline,
                                            election.retry_period)

    def test_flags_take_kube_schedulers_spelling(self) -> None:
        """``--leader-election-lease-duration 4s`` and the rest, as kube-scheduler spells them."""
        election = parse("--leader-election", "--leader-election-lease-duration", "4s",
                         "--leader-election-renew-deadline", "3", "--leader-election-retry-period", "0.5s",
                         "--leader-election-namespace", "ops", "--leader-election-id", "ledger").leader_election

        assert LeaderElection(True, 4.0, 3.0, 0.5, "ops", "ledger") == election

    @pytest.mark.parametrize(("argv", "named"), [
        pytest.param(("--leader-election-renew-deadline", "15"), "--leader-election-renew-deadline (15s) must be "
                     "shorter than --leader-election-lease-duration (15s)", id="deadline-not-below-duration"),
        pytest.param(("--leader-election-retry-period", "9"), "must exceed 1.2 x --leader-election-retry-period",
                     id="retry-too-long"),
        pytest.param(("--leader-election-id", ""), "--leader-election-id must not be empty", id="no-name"),
    ])
    def test_settings_that_cannot_work_are_refused_by_name(self, argv: tuple[str, ...], named: str) -> None:
        """A renew deadline at or past the lease duration could let two replicas write: refused at start."""
        with pytest.raises(ConfigError, match=named.replace("(", r"\(").replace(")", r"\)")):
            parse("--leader-election", *argv)

    def test_a_renewal_keeps_acquire_time_and_transitions_a_takeover_counts_one(self) -> None:
        """client-go's record: acquireTime and leaseTransitions change only when the holder does."""
        held = {"holderIdentity": "a", "acquireTime": "then", "leaseTransitions": 3}
        now = datetime(2026, 1, 2, 3, 4, 5, 600_000, tzinfo=UTC)
        renewed, taken = lease_spec("a", 15, held, now), lease_spec("b", 15, held, now)

        assert ("then", 3, "2026-01-02T03:04:05.600000Z") == (renewed["acquireTime"], renewed["leaseTransitions"],
                                                             renewed["renewTime"])
        assert ("2026-01-02T03:04:05.600000Z", 4, 15) == (taken["acquireTime"], taken["leaseTransitions"],
                                                          taken["leaseDurationSeconds"])


class TestElector:
    async def test_the_first_candidate_creates_the_lease_and_leads(
        self, cluster: tuple[ClusterEmulator, kopf.ConnectionInfo], candidates: Callable[..., Elector]
    ) -> None:
        """No Lease: the first attempt creates it, holding it, with the lease duration in whole seconds."""
        a = candidates("a")

        assert await a.try_acquire_or_renew(0.0)
        spec = lease(cluster[0])
        assert ("a", 15, 0) == (spec["holderIdentity"], spec["leaseDurationSeconds"], spec["leaseTransitions"])

    async def test_a_standby_waits_the_lease_duration_from_the_last_change_it_saw(
        self, cluster: tuple[ClusterEmulator, kopf.ConnectionInfo], candidates: Callable[..., Elector]
    ) -> None:
        """While the holder renews, the standby never takes over; once it stops, after 15 s of its own clock."""
        a, b = candidates("a"), candidates("b")
        assert await a.try_acquire_or_renew(0.0)
        assert not await b.try_acquire_or_renew(100.0)  # first seen at 100 (its clock, not the record's)
        assert await a.try_acquire_or_renew(101.0)
        assert not await b.try_acquire_or_renew(114.0)  # the renewal it saw at 114 starts its wait again
        assert not await b.try_acquire_or_renew(128.9)

        assert await b.try_acquire_or_renew(129.1)
        spec = lease(cluster[0])
        assert ("b", 1) == (spec["holderIdentity"], spec["leaseTransitions"])
        assert not await a.try_acquire_or_renew(129.2)  # the old leader finds the Lease taken

    async def test_a_standby_tries_again_the_moment_the_lease_expires(
        self, cluster: tuple[ClusterEmulator, kopf.ConnectionInfo], candidates: Callable[..., Elector]
    ) -> None:
        """The attempt after one that found another's Lease still valid is due when it expires (on this
        replica's clock), if that comes before the next retry period; otherwise, and for a leader, a retry
        period on. A failed read forgets the expiry: the loop never spins against an API server that is away."""
        a, b = candidates("a"), candidates("b")
        assert await a.try_acquire_or_renew(0.0)
        assert 2.0 == a.next_attempt(0.0)  # a leader renews every retry period
        assert not await b.try_acquire_or_renew(100.0)  # valid until 115 on b's clock
        assert 102.0 == b.next_attempt(100.0)
        assert not await b.try_acquire_or_renew(113.5)
        assert 115.0 == b.next_attempt(113.5)
        assert await b.try_acquire_or_renew(115.0)
        assert 117.0 == b.next_attempt(115.0)

        assert not await a.try_acquire_or_renew(116.0)  # valid until 131 on a's clock
        assert 118.0 == a.next_attempt(116.0)

        async def away(*_: Any, **__: Any) -> Any:
            raise ApiError(503, {"message": "away"}, "GET lease")

        assert a.api is not None
        a.api.get = away  # type: ignore[method-assign]
        with pytest.raises(ApiError):
            await a.try_acquire_or_renew(130.0)
        assert 132.0 == a.next_attempt(130.0)  # not 131: what is not read is not known

    async def test_two_candidates_at_once_never_both_win(
        self, cluster: tuple[ClusterEmulator, kopf.ConnectionInfo], candidates: Callable[..., Elector]
    ) -> None:
        """The update is guarded by the resourceVersion read: of a renewal and a takeover racing, one wins."""
        a, b = candidates("a"), candidates("b")
        assert await a.try_acquire_or_renew(0.0)
        assert not await b.try_acquire_or_renew(0.0)

        results = await asyncio.gather(a.try_acquire_or_renew(20.0), b.try_acquire_or_renew(20.0))

        assert 1 == sum(results)
        assert ("a" if results[0] else "b") == lease(cluster[0])["holderIdentity"]

    async def test_a_released_lease_is_taken_at_once(
        self, cluster: tuple[ClusterEmulator, kopf.ConnectionInfo], candidates: Callable[..., Elector]
    ) -> None:
        """A leader that stops gives the Lease up: the standby takes it without waiting the duration out."""
        a, b = candidates("a"), candidates("b")
        a._settle(await a.try_acquire_or_renew(0.0), 0.0)
        assert not await b.try_acquire_or_renew(0.0)

        await a.release()

        assert "" == lease(cluster[0])["holderIdentity"]
        assert await b.try_acquire_or_renew(0.1)
        assert ("b", 1) == (lease(cluster[0])["holderIdentity"], lease(cluster[0])["leaseTransitions"])


    async def test_a_leader_that_finds_the_lease_in_other_hands_stops_at_once(
        self, cluster: tuple[ClusterEmulator, kopf.ConnectionInfo], candidates: Callable[..., Elector]
    ) -> None:
        """Its renew deadline not yet passed, a leader that reads another holder stops writing there and then."""
        emulator, _ = cluster
        a = candidates("a")
        a._settle(await a.try_acquire_or_renew(0.0), 0.0)
        emulator.patch_object(LEASES, "draledger", {"spec": {"holderIdentity": "b"}}, namespace="ops")

        a._settle(await a.try_acquire_or_renew(1.0), 1.0)

        assert (False, "standby") == (a.leads(), a.role)


class TestFencing:
    async def test_a_leader_whose_renewals_fail_stops_writing_before_its_lease_expires(
        self, cluster: tuple[ClusterEmulator, kopf.ConnectionInfo], candidates: Callable[..., Elector]
    ) -> None:
        """Every Lease update answered 503: the write window closes at the renew deadline, counted from the
        start of the last renewal that succeeded, before anyone may count the Lease expired; later writes
        are refused without a request."""
        emulator, info = cluster
        loop = asyncio.get_running_loop()
        election = LeaderElection(True, 3.0, 1.0, 0.2, "ops", "draledger")
        a = candidates("a", election, loop.time)
        running = asyncio.create_task(a.run())
        fenced = FencedApi(info, a.write_window)
        try:
            await poll(a.leads, within=10, what="leadership")
            await poll(lambda: lease(emulator)["renewTime"] != lease(emulator)["acquireTime"], within=10,
                       what="a renewal")
            emulator.faults.arm_write(emulator.require(LEASES).resource, "update", WriteFault(503, None), 1000)
            renewed = lease(emulator)["renewTime"]
            seen_at = loop.time()  # a standby saw this renewal at the earliest now

            await poll(lambda: not a.leads(), within=10, what="the leader to stop leading")

            stopped_at = loop.time()
            assert renewed == lease(emulator)["renewTime"], "a renewal succeeded despite the 503s"
            assert stopped_at < seen_at + election.lease_duration
            writes = len(list(emulator["post"]))
            with pytest.raises(NotLeading):
                await fenced.create("/api/v1/namespaces/default/events", {"metadata": {"name": "e"}})
            assert writes == len(list(emulator["post"]))
        finally:
            running.cancel()
            await fenced.close()

    async def test_without_election_writes_are_never_fenced(self) -> None:
        """Leader election off: the window is unlimited and the writer leads from the start, as before."""
        elector = Elector(LeaderElection(), None, lambda: 0.0)
        writer = Writer(Runtime(OperatorConfig(), Metrics(), lambda: 0.0), None)  # type: ignore[arg-type]

        assert (math.inf, True, "leader", True, True) == (elector.write_window(), elector.leads(), elector.role,
                                                          elector.decided.is_set(), writer.leads())


class TestStandbyWriter:
    async def test_a_standby_writes_nothing_then_takes_over_from_the_stored_versions(self) -> None:
        """A rebuilt standby's writer plans nothing; on taking over it reads the stored ledgers again (the old
        leader's last write may not have reached the watch yet), compares every node with them and writes only
        what changed, with the version after the stored one."""
        runtime = rebuilt_runtime()
        leading = False
        writes: list[tuple[str, Any]] = []

        class Api:
            async def json_patch(self, path: str, ops: Any, **_: Any) -> Any:
                writes.append((path, ops))
                return {}

            async def create(self, path: str, body: Any, **_: Any) -> Any:
                writes.append((path, body))
                return body

            async def get(self, path: str, **_: Any) -> Any:
                return {"metadata": {"name": "n1", "uid": runtime.state.nodes["n1"].uid}}

            async def list_pages(self, path: str, decode: Any, **_: Any) -> Any:
                yield [{"metadata": {"name": "n1", "uid": "ledger-uid", "resourceVersion": "9"},
                        "status": {"ledgerVersion": 43, "mappingVersion": 5, "phase": "Ready"}}], "9"

        async def no_sleep(_: float) -> None:
            await asyncio.sleep(0)

        writer = Writer(runtime, Api(), no_sleep, leads=lambda: leading)  # type: ignore[arg-type]
        task = asyncio.create_task(writer.run())
        try:
            runtime.mark_all()
            await poll(lambda: not runtime.wakeup.is_set(), within=5, what="a standby pass")
            await asyncio.sleep(0.05)  # an absence: a few passes of the loop, nothing to poll for
            assert [] == writes
            assert runtime.dirty, "the standby dropped its dirty set"
            writer.stored.ledger_event("ADDED", {
                "metadata": {"name": "n1", "uid": "ledger-uid", "resourceVersion": "7"},
                "status": {"ledgerVersion": 41, "mappingVersion": 5, "phase": "Ready"},
            })

            leading = True
            runtime.wakeup.set()
            await poll(lambda: [w for w in writes if w[0].endswith("/n1/status")], within=5,
                       what="the first write of n1 as leader")
        finally:
            task.cancel()
        ops = next(ops for path, ops in writes if path.endswith("/n1/status"))
        assert {"op": "test", "path": "/status/ledgerVersion", "value": 43} == ops[0]
        assert 44 == ops[1]["value"]["ledgerVersion"]


async def poll(check: Callable[[], Any], *, within: float, what: str) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not (value := check()):
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {within:g}s waiting for {what}")
        await asyncio.sleep(0.02)
    return value
