"""Regression tests for the safety defects of issue 13, items 1 to 7: each failed on the code before the fix.

The release decisions and the writer are driven here without Kopf, against a recording fake API; the
behaviours that depend on the API server's answers (404s, relists, restarts, injected errors) run the real
operator against the emulator.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest
import structlog.testing
from aiohttp.client_reqrep import ConnectionKey

from draledger.core.accounting.release import ANNOTATION, GATE
from draledger.demo.emulator import ClusterEmulator, serve_emulator
from draledger.operator import gating
from draledger.operator.config import OperatorConfig
from draledger.operator.health import RENEWAL_PATIENCE
from draledger.operator.kubeapi import ApiError, NotFound
from draledger.operator.metrics import Metrics
from draledger.operator.runtime import Runtime
from draledger.operator.stored import Stored
from draledger.operator.writing import Writer
from tests.integration.harness import (
    CLAIMS,
    LEDGERS,
    NODES,
    PODS,
    SLICES,
    audited,
    case_items,
    eventually,
    phase_is,
    running,
    status,
)

KIND = {"Node": "nodes", "Pod": "pods", "ResourceSlice": "resourceslices", "ResourceClaim": "resourceclaims"}
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class FakeApi:
    """Records every call; ``answer(method, path, body)`` decides each answer (raise to fail it)."""

    def __init__(self, answer: Callable[[str, str, Any], Any] | None = None) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.answer = answer or (lambda method, path, body: {})

    async def _call(self, method: str, path: str, body: Any = None) -> Any:
        self.calls.append((method, path, body))
        await asyncio.sleep(0)
        answer = self.answer(method, path, body)
        return await answer if inspect.isawaitable(answer) else answer

    async def get(self, path: str, **_: Any) -> Any:
        return await self._call("GET", path)

    async def create(self, path: str, body: Any, **_: Any) -> Any:
        return await self._call("POST", path, body)

    async def json_patch(self, path: str, ops: Any, **_: Any) -> Any:
        return await self._call("PATCH", path, ops)

    async def merge_patch(self, path: str, patch: Any, **_: Any) -> Any:
        return await self._call("MERGE", path, patch)

    async def list_all(self, path: str, **_: Any) -> Any:
        return await self._call("LIST", path) or []

    async def list_pages(self, path: str, decode: Any, **_: Any) -> Any:
        listed = await self._call("LIST", path)
        yield (listed if isinstance(listed, list) else []), ""

    def released(self) -> list[tuple[str, Any]]:
        """(pod path, JSON patch) of every gate release sent."""
        return [(path, body) for method, path, body in self.calls if method == "PATCH" and "/pods/" in path]


def gated_pod(name: str, claim: str | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}
    spec: dict[str, Any] = {"containers": [container], "schedulingGates": [{"name": GATE}]}
    if claim:
        container["resources"]["claims"] = [{"name": "x"}]
        spec["resourceClaims"] = [{"name": "x", "resourceClaimName": claim}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "t", "uid": f"uid-{name}",
                                                           "resourceVersion": "7"},
            "spec": spec, "status": {"phase": "Pending"}}


def allocated_claim(name: str, node: str, device: str, pool: str | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "t", "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": [{"name": "c", "exactly": {"deviceClassName": "example"}}]}},
        "status": {"allocation": {
            "devices": {"results": [{"request": "c", "driver": "cpu.example.com", "pool": pool or node,
                                     "device": device}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}},
    }


def not_ready(items: list[dict[str, Any]], node: str) -> None:
    for item in items:
        if item["kind"] == "Node" and item["metadata"]["name"] == node:
            item["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletDown"}]


def loaded(items: list[dict[str, Any]], *, complete: tuple[str, ...] = tuple(KIND.values()),
           **config: Any) -> tuple[Runtime, Clock]:
    """A runtime that has listed ``items``; the kinds in ``complete`` have finished their initial LIST."""
    clock = Clock()
    runtime = Runtime(OperatorConfig(**config), Metrics(), clock)
    for index, item in enumerate(items):
        item.setdefault("metadata", {}).setdefault("uid", f"uid-{index}")
        runtime.listed_object(KIND[item["kind"]], item["metadata"]["uid"])
    for item in items:
        runtime.event(KIND[item["kind"]], None, item)
    for kind in complete:
        runtime.listing_done(kind)
    runtime.contact("nodeallocatableledgers")  # the ledgers' stream has spoken
    runtime.listing_done("nodeallocatableledgers")
    return runtime, clock


def node_terms(patch: list[dict[str, Any]]) -> list[Any]:
    """The node selector requirements a release patch adds (empty: released with no restriction)."""
    return [op["value"] for op in patch if op["op"] == "add"]


def ledger_answers(runtime: Runtime) -> Callable[[str, str, Any], Any]:
    """The API's answers to the writer: each Node read back as the runtime knows it, every write accepted with
    a newer resourceVersion."""
    versions = iter(range(100, 10_000))

    def answer(method: str, path: str, body: Any) -> Any:
        if method == "GET" and "/api/v1/nodes/" in path:
            name = path.rsplit("/", 1)[-1]
            return {"metadata": {"name": name, "uid": runtime.state.nodes[name].uid}}
        if method == "POST" and path.endswith("/nodeallocatableledgers"):
            name = body["metadata"]["name"]
            return {"metadata": {"name": name, "uid": f"ledger-{name}", "resourceVersion": str(next(versions))}}
        return {"metadata": {"resourceVersion": str(next(versions))}}

    return answer


async def written(writer: Writer) -> None:
    """The writer's term: take the lead, plan every node, wait for every write's answer."""
    await writer.take_lead()
    writer.write_round()
    await writer.drain()
    assert writer.releaser.ready.is_set()


async def released_now(writer: Writer) -> None:
    """One release pass, and every patch and Event it started answered."""
    await writer.releaser.release_pass()
    await writer.releaser.settle()


def annotation(patch: list[dict[str, Any]]) -> str:
    """The ``draledger.dev/released-on`` a release patch records."""
    (op,) = [op for op in patch if op["path"].startswith("/metadata/annotations")]
    return str(op["value"] if isinstance(op["value"], str) else op["value"][ANNOTATION])


def requirement(patch: list[dict[str, Any]]) -> dict[str, Any]:
    """The one node requirement a release patch adds (to a pod with no affinity)."""
    (op,) = [op for op in patch if op["path"] == "/spec/affinity"]
    (term,) = op["value"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"]
    (found,) = term["matchFields"]
    return dict(found)


class TestHeldPods:
    def test_the_state_indexes_the_pods_our_gate_holds(self) -> None:
        """``state.held``: pods with our gate, whatever else they carry; not another product's gate alone."""
        runtime, _ = loaded(case_items("v08"))
        other = gated_pod("other")
        other["spec"]["schedulingGates"] = [{"name": "example.com/queue"}]
        both = gated_pod("both")
        both["spec"]["schedulingGates"] = [{"name": "example.com/queue"}, {"name": GATE}]
        for pod in (gated_pod("g"), other, both):
            runtime.event("pods", "ADDED", pod)
        assert {("t", "g"), ("t", "both")} == runtime.state.held
        released = gated_pod("g")
        released["spec"]["schedulingGates"] = []
        runtime.event("pods", "MODIFIED", released)
        runtime.event("pods", "DELETED", both)
        assert set() == runtime.state.held

    async def test_a_released_pod_is_not_patched_again_before_its_event_comes_back(self) -> None:
        """The release's own event ends the pod's wait; until then later passes leave it alone."""
        runtime, _ = loaded([*case_items("v08"), gated_pod("g")])
        api = FakeApi(ledger_answers(runtime))
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await written(writer)
        await released_now(writer)
        await released_now(writer)
        assert 1 == len(api.released())
        assert [] == writer.releaser.waiting()
        released = gated_pod("g")
        released["spec"]["schedulingGates"] = []
        released["metadata"]["resourceVersion"] = "8"
        runtime.event("pods", "MODIFIED", released)
        assert ([], {}) == (writer.releaser.waiting(), writer.releaser.released)


    async def test_a_pass_with_every_slot_taken_decides_no_more(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Slots full, a pass decides no pod (a burst's passes cost what they release, not every held pod), a
        pod held for a reason keeps counting for it, and each answer lets the next pods be decided and go."""
        waiting = [gated_pod(f"g{n:02}") for n in range(gating.RELEASE_CONCURRENCY + 4)]
        runtime, _ = loaded([*case_items("v08"), *waiting, gated_pod("z-unseen", "later")])
        answers = ledger_answers(runtime)
        answered = asyncio.Event()

        async def slow(method: str, path: str, body: Any) -> Any:
            if "/pods/" in path:
                await answered.wait()
            return answers(method, path, body)

        api = FakeApi(answers)
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await written(writer)
        decided: list[str] = []
        real = gating.decide
        monkeypatch.setattr(gating, "decide", lambda pod, *args, **kwargs: (decided.append(pod.name),
                                                                             real(pod, *args, **kwargs))[1])
        api.answer = slow  # type: ignore[assignment]
        await writer.releaser.release_pass()  # z-unseen comes last in order: held for its unseen claim
        await writer.releaser.release_pass()
        assert [f"g{n:02}" for n in range(gating.RELEASE_CONCURRENCY)] == decided
        assert 0 == runtime.metrics.gated.labels("ClaimNotSeen")._value.get()  # never decided yet: not counted
        answered.set()
        await writer.releaser.settle()
        await released_now(writer)
        assert len(waiting) == len(api.released())
        assert 1 == runtime.metrics.gated.labels("ClaimNotSeen")._value.get()
        decided.clear()
        answered.clear()
        more = [f"h{n:02}" for n in range(gating.RELEASE_CONCURRENCY)]
        for name in more:
            runtime.event("pods", "ADDED", gated_pod(name))
        await writer.releaser.release_pass()  # the slots fill before z-unseen's turn: it keeps its reason
        assert (more, 1) == (decided, runtime.metrics.gated.labels("ClaimNotSeen")._value.get())
        answered.set()
        await writer.releaser.settle()


class TestWriteThenRelease:
    """Issue 24: a release relies on ledgers already stored Ready, and says which."""

    async def test_nothing_is_released_before_the_term_is_written(self) -> None:
        """Rebuilt in memory, nothing stored yet: the pod is held as Rebuilding; once every ledger is written,
        it goes, kept away from the node whose stored ledger is Stale."""
        items = case_items("v08")
        not_ready(items, "n3")
        runtime, _ = loaded([*items, gated_pod("g")])
        api = FakeApi(ledger_answers(runtime))
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await writer.take_lead()
        await released_now(writer)
        assert ([], 1) == (api.released(), runtime.metrics.gated.labels("Rebuilding")._value.get())
        writer.write_round()
        await writer.drain()
        await released_now(writer)
        ((path, patch),) = api.released()
        assert "/api/v1/namespaces/t/pods/g" == path
        assert {"key": "metadata.name", "operator": "NotIn", "values": ["n3"]} == requirement(patch)

    async def test_a_node_whose_ledger_is_not_stored_is_kept_away(self) -> None:
        """A ledger never written (its create keeps failing) vouches for nothing, whatever memory says."""
        runtime, _ = loaded([*case_items("v08"), gated_pod("g")])
        answers = ledger_answers(runtime)

        def answer(method: str, path: str, body: Any) -> Any:
            if method == "POST" and path.endswith("/nodeallocatableledgers") and body["metadata"]["name"] == "n2":
                raise ApiError(503, {"message": "unavailable"}, path)
            return answers(method, path, body)

        api = FakeApi(answer)
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await written(writer)
        await released_now(writer)
        ((_, patch),) = api.released()
        assert "Ready" == writer.releaser.computed["n2"].phase
        assert {"key": "metadata.name", "operator": "NotIn", "values": ["n2"]} == requirement(patch)

    async def test_a_node_stored_ready_but_stale_now_is_kept_away(self) -> None:
        """Stored Ready, computed Stale since (its write not answered yet): the computation wins."""
        runtime, _ = loaded([*case_items("v08"), gated_pod("g")])
        api = FakeApi(ledger_answers(runtime))
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await written(writer)
        node = next(item for item in case_items("v08") if item["kind"] == "Node" and item["metadata"]["name"] == "n1")
        node["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletDown"}]
        runtime.event("nodes", "MODIFIED", node)
        await released_now(writer)
        ((_, patch),) = api.released()
        assert "Ready" == writer.stored.of("n1").phase
        assert {"key": "metadata.name", "operator": "NotIn", "values": ["n1"]} == requirement(patch)

    async def test_a_release_names_the_ledgers_it_relied_on(self) -> None:
        """Unpinned: ``*@resourceVersion=R``, the newest stored ledger; pinned: ``node@ledgerVersion=N``, the
        version stored; both in the patch that removes the gate, and in the log line (released at once, neither
        gets an Event: none said why it was held)."""
        runtime, _ = loaded([*case_items("v08"), allocated_claim("pre", "n1", "a1"), gated_pod("pinned", "pre"),
                             gated_pod("free")])
        api = FakeApi(ledger_answers(runtime))
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await written(writer)
        with structlog.testing.capture_logs() as logs:
            await released_now(writer)
        patches = dict(api.released())
        newest = max(int(writer.stored.of(n).resource_version) for n in ("n1", "n2", "n3"))
        version = writer.stored.of("n1").ledger_version
        assert f"*@resourceVersion={newest}" == annotation(patches["/api/v1/namespaces/t/pods/free"])
        assert f"n1@ledgerVersion={version}" == annotation(patches["/api/v1/namespaces/t/pods/pinned"])
        assert {"t/free": f"*@resourceVersion={newest}", "t/pinned": f"n1@ledgerVersion={version}"} == {
            log["pod"]: log["released_on"] for log in logs if log["event"] == "gate released"}
        assert [] == [body for method, path, body in api.calls
                      if path.endswith("/events") and body["involvedObject"]["kind"] == "Pod"]

    async def test_a_pinned_pod_waits_for_its_nodes_newest_ledger_and_has_it_written_first(self) -> None:
        """Its node changed since the last write: held (LedgerPending) and the node is written at once, without
        the writer's round; then released on the new version."""
        runtime, _ = loaded([*case_items("v08"), allocated_claim("pre", "n1", "a1")])
        api = FakeApi(ledger_answers(runtime))
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await written(writer)
        before = writer.stored.of("n1").ledger_version
        bound = gated_pod("bound")
        bound["spec"].pop("schedulingGates")
        bound["spec"]["nodeName"] = "n1"
        runtime.event("pods", "ADDED", bound)  # n1's ledger changes: its stored one is older now
        runtime.event("pods", "ADDED", gated_pod("g", "pre"))
        await released_now(writer)
        assert [] == api.released()
        assert 1 == runtime.metrics.gated.labels("LedgerPending")._value.get()
        await writer.drain()
        assert before + 1 == writer.stored.of("n1").ledger_version  # expedited: no writer's round ran
        await released_now(writer)
        ((_, patch),) = api.released()
        assert f"n1@ledgerVersion={before + 1}" == annotation(patch)

    async def test_a_ledger_that_stops_vouching_is_stored_after_the_releases_relying_on_it(self) -> None:
        """A release in flight relies on n1's stored Ready; n1 turns Stale meanwhile: its write waits for the
        release's answer, and the pass that comes meanwhile keeps the next pod away from n1."""
        runtime, _ = loaded([*case_items("v08"), gated_pod("first")])
        answers = ledger_answers(runtime)
        answered = asyncio.Event()
        order: list[str] = []

        async def held(method: str, path: str, body: Any) -> Any:
            if "/pods/first" in path:
                await answered.wait()
            order.append(path.rsplit("/", 2)[-2] if path.endswith("/status") else path.rsplit("/", 1)[-1])
            return answers(method, path, body)

        api = FakeApi(answers)
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await written(writer)
        api.answer = held  # type: ignore[assignment]
        await writer.releaser.release_pass()  # "first" in flight, relying on every Ready node
        node = next(item for item in case_items("v08") if item["kind"] == "Node" and item["metadata"]["name"] == "n1")
        node["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletDown"}]
        runtime.event("nodes", "MODIFIED", node)
        writer.write_round()
        runtime.event("pods", "ADDED", gated_pod("second"))
        await writer.releaser.release_pass()
        await asyncio.sleep(0)
        assert ["n1"] == sorted(writer.releaser.demoting)
        assert [] == order  # the Stale ledger waits for the release in flight
        answered.set()
        await writer.drain()
        await writer.releaser.settle()
        assert ["first", "second", "n1"] == [o for o in order if o in ("first", "second", "n1")]
        second = dict(api.released())["/api/v1/namespaces/t/pods/second"]
        assert {"key": "metadata.name", "operator": "NotIn", "values": ["n1"]} == requirement(second)


class TestDecidingOnEverythingDelivered:
    async def test_a_pass_waits_for_the_events_delivered_before_it(self) -> None:
        """An event the nodes stream delivered (n1 NotReady) waits in Kopf's worker queue: the pass waits for it
        to be applied, and keeps the pod away from n1; it would otherwise decide from the picture before it."""
        runtime, _ = loaded([*case_items("v08"), gated_pod("g")])
        api = FakeApi(ledger_answers(runtime))
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await written(writer)
        runtime.delivered("nodes")  # the stream has it; the worker has not handed it over yet
        deciding = asyncio.create_task(released_now(writer))
        for _ in range(20):  # an absence over a few turns of the loop: nothing to poll for
            await asyncio.sleep(0)
        assert [] == api.released()
        node = next(item for item in case_items("v08") if item["kind"] == "Node" and item["metadata"]["name"] == "n1")
        node["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletDown"}]
        runtime.event("nodes", "MODIFIED", node)
        runtime.applied("nodes")
        await deciding
        ((_, patch),) = api.released()
        assert {"key": "metadata.name", "operator": "NotIn", "values": ["n1"]} == requirement(patch)

    async def test_an_event_never_applied_holds_releases_for_a_bounded_time(self, monkeypatch: pytest.MonkeyPatch,
                                                                              ) -> None:
        """A delivered event Kopf never hands over (a bug, a dropped object) must not hold releases for ever: after
        the bound the pass decides, says so, and the counts are even again."""
        monkeypatch.setattr("draledger.operator.gating.APPLIED_WITHIN", 0.05)
        runtime, _ = loaded([*case_items("v08"), gated_pod("g")])
        api = FakeApi(ledger_answers(runtime))
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await written(writer)
        runtime.delivered("pods")
        with structlog.testing.capture_logs() as logs:
            await released_now(writer)
        assert 1 == len(api.released())
        assert ["events delivered but not applied; deciding without them"] == [
            entry["event"] for entry in logs if entry["log_level"] == "warning"]
        assert not runtime.behind(dict(runtime.delivered_count))


class TestTakeover:
    async def test_a_new_leader_releases_nothing_before_its_ledgers_are_stored_under_its_lead(self) -> None:
        """A standby that takes over holds every pod (Rebuilding) until every ledger it relies on is written or
        read back since it took the Lease; what it confirmed as a standby, or in an earlier term, counts for
        nothing. It reads the stored ledgers again first."""
        runtime, _ = loaded([*case_items("v08"), gated_pod("g")])
        api = FakeApi(ledger_answers(runtime))
        leading = False
        writer = Writer(runtime, api, leads=lambda: leading)  # type: ignore[arg-type]
        writer.just_listed = True  # the start's LIST
        await writer.take_lead()  # a standby
        await released_now(writer)
        leading = True
        await writer.take_lead()
        await released_now(writer)
        lists = [path for method, path, _ in api.calls if method == "LIST"]
        assert ([], 1) == (api.released(), runtime.metrics.gated.labels("Rebuilding")._value.get())
        assert ["/apis/draledger.dev/v1alpha1/nodeallocatableledgers"] == lists
        writer.write_round()
        await writer.drain()
        await released_now(writer)
        assert 1 == len(api.released())


class TestApiServerAway:
    async def test_a_write_that_cannot_reach_the_server_is_one_warning_naming_it(self) -> None:
        """Connection refused: one warning line per node per backoff step, with the server, the cause and the
        wait, and no traceback."""
        runtime, clock = loaded(case_items("v08"))

        def refused(method: str, path: str, body: Any) -> Any:
            raise aiohttp.ClientConnectorError(
                ConnectionKey("127.0.0.1", 1, False, False, None, None, None),  # type: ignore[arg-type]
                ConnectionRefusedError(111, "Connect call failed"))

        api = FakeApi(refused)
        api.server = "https://127.0.0.1:1"  # type: ignore[attr-defined]
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        writer.just_listed = True
        await writer.take_lead()
        with structlog.testing.capture_logs() as logs:
            writer.write_round()
            await writer.drain()
            clock.now += 1.0
            writer.write_round()
            await writer.drain()
        failed = [entry for entry in logs if entry["event"] == "ledger write failed; will retry"]
        assert [("n1", 0.5), ("n2", 0.5), ("n3", 0.5), ("n1", 1.0), ("n2", 1.0), ("n3", 1.0)] == [
            (entry["node"], entry["retry_in"]) for entry in failed]
        assert {("https://127.0.0.1:1", "connection refused", "warning")} == {
            (entry["server"], entry["cause"], entry["log_level"]) for entry in failed}
        assert not [entry for entry in logs if "exc_info" in entry or entry["log_level"] in ("error", "critical")]


class TestStandingsStayCurrent:
    @staticmethod
    def rebuilt_whole(writer: Writer) -> tuple[dict[str, Any], list[str]]:
        """The standings built from nothing: what the incremental ones must equal."""
        from draledger.operator.gating import Releaser

        fresh = Releaser(writer.runtime, writer.api, writer.stored, writer.flags, writer.leads, writer.events)
        fresh.computed, fresh.confirmed, fresh.demoting = writer.releaser.computed, writer.releaser.confirmed, \
            writer.releaser.demoting
        fresh.changed = set(fresh.computed)
        standings = fresh.standings()
        return dict(standings.nodes), list(standings.unsafe)

    async def test_the_standings_built_node_by_node_equal_those_built_whole(self) -> None:
        """After a node going NotReady, a stored ledger deleted and a freeze, each before and after the writer's
        round, the standings kept node by node (only what changed is built again) equal those built from
        nothing."""
        runtime, _ = loaded([*case_items("v08"), gated_pod("g")])
        api = FakeApi(ledger_answers(runtime))
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await written(writer)
        node = next(item for item in case_items("v08") if item["kind"] == "Node" and item["metadata"]["name"] == "n1")
        steps = [
            lambda: runtime.event("nodes", "MODIFIED", {**node, "status": {**node["status"], "conditions": [
                {"type": "Ready", "status": "False", "reason": "KubeletDown"}]}}),
            lambda: writer.stored.ledger_event("DELETED", {"metadata": {
                "name": "n2", "uid": writer.stored.of("n2").uid}}),
            lambda: writer.stored.ledger_event("MODIFIED", {"metadata": {
                "name": "n3", "uid": writer.stored.of("n3").uid, "resourceVersion": "99999"},
                "spec": {"frozen": True}, "status": {}}),
        ]
        for step in steps:
            step()
            writer.releaser.refresh()
            incremental = writer.releaser.standings()
            assert self.rebuilt_whole(writer) == (dict(incremental.nodes), list(incremental.unsafe))
            writer.write_round()
            await writer.drain()
            writer.releaser.refresh()
            incremental = writer.releaser.standings()
            assert self.rebuilt_whole(writer) == (dict(incremental.nodes), list(incremental.unsafe))
        assert ["n1", "n3"] == list(writer.releaser.standings().unsafe)  # n2's ledger was written again


class TestReleaseAfterRebuild:
    async def test_an_overcommitted_node_is_not_vouched_for(self) -> None:
        """Only Ready ledgers take new claim pods: an Overcommitted node is kept away too."""
        items = case_items("v08")
        for item in items:
            if item["kind"] == "Node" and item["metadata"]["name"] == "n2":
                item["status"]["allocatable"]["cpu"] = "100m"
        runtime, _ = loaded([*items, gated_pod("g")])
        api = FakeApi(ledger_answers(runtime))
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await written(writer)
        await released_now(writer)
        ((_, patch),) = api.released()
        assert ["n2"] == requirement(patch)["values"]


class TestReleaseNeedsEvidence:
    @staticmethod
    async def ready(items: list[dict[str, Any]], **config: Any) -> tuple[Runtime, Clock, FakeApi, Writer]:
        runtime, clock = loaded(items, **config)
        api = FakeApi(ledger_answers(runtime))
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await written(writer)
        return runtime, clock, api, writer

    async def test_a_claim_on_unpublished_devices_holds_the_pod(self) -> None:
        """A pod whose allocated claim names a device no slice publishes is held, not pinned (item 2)."""
        runtime, _, api, writer = await self.ready(
            [*case_items("v08"), allocated_claim("gone", "n1", "a9"), gated_pod("g", "gone")])
        await released_now(writer)
        assert [] == api.released()
        assert 1 == runtime.metrics.gated.labels("ClaimUnresolved")._value.get()

    async def test_a_claim_in_an_incomplete_pool_holds_the_pod(self) -> None:
        """A claim allocated from a pool missing some of its slices is held (item 2)."""
        items = case_items("v08")
        for item in items:
            if item["kind"] == "ResourceSlice" and item["metadata"]["name"] == "n1-cpu":
                item["spec"]["pool"]["resourceSliceCount"] = 2
        runtime, _, api, writer = await self.ready([*items, allocated_claim("pre", "n1", "a1"), gated_pod("g", "pre")])
        await released_now(writer)
        assert [] == api.released()
        assert 1 == runtime.metrics.gated.labels("ClaimUnresolved")._value.get()

    @pytest.mark.parametrize("kind", ["resourceslices", "pods", "nodes", "resourceclaims",
                                      "nodeallocatableledgers"])
    async def test_a_broken_stream_holds_releases_at_once(self, kind: str) -> None:
        """No release while any stream is broken, long before the freshness window runs out (item 2)."""
        runtime, _, api, writer = await self.ready([*case_items("v08"), gated_pod("g")])
        runtime.broken(kind, "watch failed: ClientConnectionError")
        await released_now(writer)
        assert [] == api.released()
        assert 1 == runtime.metrics.gated.labels("WatchUnhealthy")._value.get()
        runtime.contact(kind)
        await released_now(writer)
        assert 1 == len(api.released())

    @pytest.mark.parametrize("how", ["deleted", "ungated by another hand"])
    async def test_a_counted_pod_gone_from_the_gate_is_counted_no_more(self, how: str) -> None:
        """A pod counted as held, then deleted or ungated by someone else, wakes a pass, which finds nothing held
        and counts nothing: no count and no age left behind for a pod gone (gating rule 6)."""
        pod = gated_pod("g")
        pod["metadata"]["creationTimestamp"] = "2020-01-01T00:00:00Z"
        runtime, _, api, writer = await self.ready([*case_items("v08"), pod])
        runtime.broken("pods", "watch failed: ClientConnectionError")
        await released_now(writer)
        metrics = runtime.metrics
        assert 1 == metrics.gated.labels("WatchUnhealthy")._value.get()
        assert metrics.gated_oldest._value.get() > 0
        runtime.release_wakeup.clear()
        if how == "deleted":
            runtime.event("pods", "DELETED", pod)
        else:
            pod = {**pod, "metadata": {**pod["metadata"], "resourceVersion": "8"},
                   "spec": {**pod["spec"], "schedulingGates": []}}
            runtime.event("pods", "MODIFIED", pod)
        assert runtime.release_wakeup.is_set()
        await released_now(writer)
        assert ([], 0, 0) == (api.released(), metrics.gated.labels("WatchUnhealthy")._value.get(),
                              metrics.gated_oldest._value.get())

    async def test_a_pod_is_never_told_one_reason_twice_in_a_row(self) -> None:
        """Told why it is held, a pod whose release then fails and that is held for the same reason again gets no
        second Event for it; its release gets the Event that ends the story (gating rule 6)."""
        runtime, clock, api, writer = await self.ready([*case_items("v08"), gated_pod("g")])
        failing = False
        answer = api.answer

        def maybe_failing(method: str, path: str, body: Any) -> Any:
            if failing and method == "PATCH" and "/pods/" in path:
                raise ApiError(503, {"message": "unavailable"}, path)
            return answer(method, path, body)

        def told() -> list[str]:
            return [body["reason"] for method, path, body in api.calls
                    if method == "POST" and path.endswith("/events") and body["involvedObject"]["kind"] == "Pod"]

        async def held_long_enough() -> None:
            runtime.broken("pods", "watch failed: ClientConnectionError")
            await released_now(writer)  # held: the reason starts
            clock.now += gating.EVENT_AFTER
            await released_now(writer)  # held for it long enough to be told
            runtime.contact("pods")

        api.answer = maybe_failing
        await held_long_enough()
        assert ["LedgerGateWatchUnhealthy"] == told()
        failing = True
        await released_now(writer)
        assert (1, ["LedgerGateWatchUnhealthy"]) == (len(api.released()), told())  # refused: no Event
        failing = False
        await held_long_enough()
        assert ["LedgerGateWatchUnhealthy"] == told()
        await released_now(writer)
        assert (2, ["LedgerGateWatchUnhealthy", "LedgerGateReleased"]) == (len(api.released()), told())

    async def test_our_own_release_wakes_no_pass_when_it_comes_back(self) -> None:
        """The echo of a release this replica sent is not a pod gone by another hand: no pass for it."""
        runtime, _, api, writer = await self.ready([*case_items("v08"), gated_pod("g")])
        await released_now(writer)
        assert 1 == len(api.released())
        runtime.release_wakeup.clear()
        pod = gated_pod("g")
        pod["metadata"]["resourceVersion"] = "8"
        pod["spec"]["schedulingGates"] = []
        runtime.event("pods", "MODIFIED", pod)
        assert not runtime.release_wakeup.is_set()

    async def test_a_renewal_holds_releases_quietly_and_its_answer_lets_them_go(self) -> None:
        """A stream being renewed, however briefly, lacks the changes made meanwhile: nothing is released,
        and nothing is said (no Event, no WatchUnhealthy count) for an ordinary renewal, even one a loaded API
        server answers slowly (past the quarter second a resumed watch's first event is waited for); one that
        lasts ``RENEWAL_PATIENCE`` is reported."""
        runtime, clock, api, writer = await self.ready([*case_items("v08"), gated_pod("g"), gated_pod("h")])
        calls = len(api.calls)
        runtime.connecting("nodeallocatableledgers")
        await released_now(writer)
        assert ([], calls, True) == (api.released(), len(api.calls), writer.releaser.retry_soon)
        assert runtime.metrics.gated.labels("WatchUnhealthy")._value.get() == 0
        clock.now += 0.8  # the slowest renewal the fault suite's loaded emulator answered
        await released_now(writer)
        assert ([], calls, True) == (api.released(), len(api.calls), writer.releaser.retry_soon)
        assert runtime.metrics.gated.labels("WatchUnhealthy")._value.get() == 0
        clock.now += RENEWAL_PATIENCE - 0.8
        await released_now(writer)
        assert [] == api.released()
        assert 2 == runtime.metrics.gated.labels("WatchUnhealthy")._value.get()
        runtime.contact("nodeallocatableledgers")
        await released_now(writer)
        assert 2 == len(api.released())

    async def test_a_relist_under_way_holds_releases(self) -> None:
        """Between a relist's first object and its end, the stream's picture is incomplete: hold."""
        runtime, _, api, writer = await self.ready([*case_items("v08"), gated_pod("g")])
        runtime.listed_object("resourceslices", "uid-3")
        await released_now(writer)
        assert [] == api.released()
        runtime.listing_done("resourceslices")
        await released_now(writer)
        assert [] == api.released()  # its objects are not all applied yet
        listed = next(item for item in case_items("v08") if item["kind"] == "ResourceSlice")
        runtime.event("resourceslices", None, {**listed, "metadata": {**listed["metadata"], "uid": "uid-3"}})
        await released_now(writer)
        assert 1 == len(api.released())

    async def test_a_silent_stream_holds_releases(self) -> None:
        """No contact within the freshness window is no evidence either."""
        runtime, clock, api, writer = await self.ready([*case_items("v08"), gated_pod("g")], freshness_window=60)
        clock.now += 61
        for kind in ("nodes", "pods", "resourceclaims", "nodeallocatableledgers"):
            runtime.contact(kind)
        await released_now(writer)
        assert [] == api.released()

    async def test_pinned_to_a_node_never_seen_holds_the_pod(self) -> None:
        """A claim allocated on a node the operator has not seen holds the pod; outside the canary it goes, and
        the record says the node is outside."""
        runtime, _, api, writer = await self.ready([*case_items("v08"), allocated_claim("far", "n7", "a0", pool="n1"),
                                                    gated_pod("g", "far")])
        await released_now(writer)
        assert [] == api.released()
        assert 1 == runtime.metrics.gated.labels("NodeUnavailable")._value.get()
        runtime.outside.add("n7")
        await released_now(writer)
        ((_, patch),) = api.released()
        assert ["n7"] == requirement(patch)["values"]
        assert "n7@outside" == annotation(patch)


    async def test_room_is_judged_in_what_the_scheduler_charges_too(self) -> None:
        """The scheduler charges p1's claim 6 cpu from its status (the mapping was 1 when it was bound): n1 has 6
        cpu free by the ledger's own count, but the scheduler binds only what fits in 1 (issue 23, item 7). A pod
        pinned to n1 that needs 1.1 cpu is held, not released for the scheduler to refuse."""
        items = case_items("v08")
        for item in items:
            if item["kind"] == "Pod" and item["metadata"]["name"] == "p1":
                item["status"]["nodeAllocatableResourceClaimStatuses"][0]["resources"] = {"cpu": "6"}
        runtime, _, api, writer = await self.ready([*items, allocated_claim("pre", "n1", "a1"), gated_pod("g", "pre")])
        await released_now(writer)
        line = writer.releaser.computed["n1"]
        assert ([], 1) == (api.released(), runtime.metrics.gated.labels("NoRoom")._value.get())
        assert (6000, 1000) == (line.free["cpu"], line.scheduler_free["cpu"])

    async def test_with_a_selector_a_pinned_node_never_seen_is_outside(self) -> None:
        """With ``--node-selector`` the API server never delivers the nodes outside it: a pod pinned to one the
        operator never saw goes there, recorded as outside (waiting for it to be seen would be for ever)."""
        items = case_items("v08")
        for item in items:
            if item["kind"] == "Node" and item["metadata"]["name"] == "n1":
                item["metadata"]["labels"] = {**item["metadata"].get("labels", {}), "canary": "yes"}
        items = [i for i in items if i["kind"] != "Node" or i["metadata"]["name"] == "n1"]  # as the watch has it
        _, _, api, writer = await self.ready(
            [*items, allocated_claim("far", "n7", "a0", pool="n1"), gated_pod("g", "far")],
            node_selector="canary=yes")
        await released_now(writer)
        ((_, patch),) = api.released()
        assert ["n7"] == requirement(patch)["values"]
        assert "n7@outside" == annotation(patch)


class TestWriterAnswers:
    async def test_a_404_on_a_status_write_reads_again_and_creates(self) -> None:
        """A ledger believed to exist but gone is created again after one 404, not patched for ever (item 3)."""
        runtime, _ = loaded(case_items("v08"))
        gone = {"n1"}

        def answer(method: str, path: str, body: Any) -> Any:
            if path.endswith("/nodes/n1"):
                return {"metadata": {"name": "n1", "uid": runtime.state.nodes["n1"].uid}}
            if method == "PATCH" and "/n1/status" in path and "n1" in gone:
                raise NotFound(404, {"message": "not found"}, path)
            if method == "GET" and "nodeallocatableledgers/n1" in path:
                raise NotFound(404, {"message": "not found"}, path)
            if method == "POST":
                gone.discard("n1")
                return {"metadata": {"name": "n1", "uid": "ledger-uid", "resourceVersion": "5"}}
            return {"metadata": {"resourceVersion": "6"}}

        api = FakeApi(answer)
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        writer.stored.by_node["n1"] = Stored(exists=True, has_status=True, uid="old", ledger_version=3,
                                             guard_version=3)
        for _ in range(3):
            plan = writer.plan("n1", 0.0)
            assert plan is not None
            if plan.body is None:
                break
            await writer.write_node("n1", plan)
        methods = [(m, p.rsplit("/", 2)[-2:] == ["n1", "status"]) for m, p, _ in api.calls
                   if not p.endswith("/events")]
        assert [("PATCH", True), ("GET", False), ("GET", False), ("POST", False), ("PATCH", True)] == methods
        (ops,) = [b for m, p, b in api.calls if m == "PATCH"][-1:]
        assert {"op": "test", "path": "/metadata/uid", "value": "ledger-uid"} == ops[0]
        assert "add" == ops[1]["op"]
        assert "/status" == ops[1]["path"]

    async def test_a_node_gone_from_the_api_gets_no_ledger(self) -> None:
        """Before creating a ledger the Node is read: a Node deleted during a watch gap gets none (item 6)."""
        runtime, _ = loaded(case_items("v08"))

        def answer(method: str, path: str, body: Any) -> Any:
            if path.endswith("/nodes/n3"):
                raise NotFound(404, {"message": "nodes \"n3\" not found"}, path)
            return {"metadata": {"uid": "x", "resourceVersion": "1"}}

        api = FakeApi(answer)
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        plan = writer.plan("n3", 0.0)
        assert plan is not None
        await writer.write_node("n3", plan)
        assert [] == [c for c in api.calls if c[0] == "POST"]
        assert "n3" not in runtime.state.nodes
        assert writer.plan("n3", 0.0) is None

    async def test_a_replaced_node_gets_no_ledger_with_the_old_owner(self) -> None:
        """A Node deleted and created again under the same name: no ledger owned by the old uid (item 6)."""
        runtime, _ = loaded(case_items("v08"))
        api = FakeApi(lambda m, p, b: {"metadata": {"name": "n3", "uid": "new-uid"}} if p.endswith("/nodes/n3")
                      else {})
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        plan = writer.plan("n3", 0.0)
        assert plan is not None
        with pytest.raises(ApiError):
            await writer.write_node("n3", plan)
        assert [] == [c for c in api.calls if c[0] == "POST"]


class TestStoredLedgers:
    async def test_a_ledger_deleted_during_a_watch_gap_is_created_again(self) -> None:
        """A relist of ledgers that lacks one makes the writer create it again, with no 404 loop (item 3)."""
        async with serve_emulator(emulator=ClusterEmulator(journal_limit=5)) as (emulator, url):
            emulator.load_objects(case_items("v08"))
            async with running(url, watch_timeout=1) as operator:
                await eventually(phase_is(emulator, "n1", "Ready"))
                before = status(emulator, "n1")["ledgerVersion"]
                emulator.inject_watch_error(LEDGERS, 410, times=3)
                emulator.inject_disconnect(LEDGERS)
                emulator.delete_object(LEDGERS, "n1")
                await eventually(lambda: status(emulator, "n1").get("phase") == "Ready", within=30,
                                 what="the ledger created again")
                assert status(emulator, "n1")["ledgerVersion"] > before
                failures = operator.metrics.write_failures.labels("ledger", "404")._value.get()
                assert failures <= 1

    async def test_a_resource_line_that_vanishes_leaves_the_stored_ledger(self) -> None:
        """The status is replaced whole: a line whose last pod is gone is not left behind (item 4)."""
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n9"},
                "status": {"allocatable": {"cpu": "4", "pods": "110"},
                           "conditions": [{"type": "Ready", "status": "True"}]}}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "m", "namespace": "t"},
               "spec": {"nodeName": "n9", "containers": [
                   {"name": "c", "image": "x", "resources": {"requests": {"memory": "128Mi"}}}]},
               "status": {"phase": "Running"}}
        async with serve_emulator() as (emulator, url):
            emulator.load_objects([node, pod])
            async with running(url):
                await eventually(lambda: "memory" in status(emulator, "n9").get("resources", {}))
                assert "-128Mi" == status(emulator, "n9")["resources"]["memory"]["free"]
                emulator.delete_object(PODS, "m", namespace="t")
                await eventually(lambda: "memory" not in status(emulator, "n9").get("resources", {"memory": 1}),
                                 what="the memory line gone")
                assert ["cpu"] == sorted(status(emulator, "n9")["resources"])

    async def test_a_restart_rewrites_keys_a_stored_ledger_should_not_have(self) -> None:
        """What an earlier run left behind (an extra line) is removed by the next run's first write (item 4)."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(case_items("v08"))
            async with running(url):
                await eventually(phase_is(emulator, "n1", "Ready"))
            extra = {"allocatable": "0", "podRequests": "1Gi", "claims": "0", "requested": "1Gi", "free": "-1Gi",
                     "schedulerCharged": "0"}
            emulator.patch_object(LEDGERS, "n1", {"status": {"resources": {"hugepages-1Gi": extra}}},
                                  subresource="status")
            async with running(url):
                await eventually(lambda: "hugepages-1Gi" not in status(emulator, "n1")["resources"],
                                 what="the stale line removed")
                assert "Ready" == status(emulator, "n1")["phase"]

    async def test_a_foreign_status_edit_is_written_back(self) -> None:
        """An edit of the status that keeps its ledgerVersion is noticed from the event and undone."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(case_items("v08"))
            async with running(url):
                await eventually(phase_is(emulator, "n1", "Ready"))
                version = status(emulator, "n1")["ledgerVersion"]
                emulator.patch_object(LEDGERS, "n1", {"status": {"phase": "Overcommitted"}}, subresource="status")
                await eventually(phase_is(emulator, "n1", "Ready"), what="the edit undone")
                assert status(emulator, "n1")["ledgerVersion"] == version + 1


def _slice(generation: int, multiplier: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "n1-cpu"},
            "spec": {"driver": "cpu.example.com", "nodeName": "n1",
                     "pool": {"name": "n1", "generation": generation, "resourceSliceCount": 1},
                     "devices": [{"name": "a0", "nodeAllocatableResourceMappings": {
                         "cpu": {"allocationMultiplier": multiplier}}},
                         {"name": "a1", "nodeAllocatableResourceMappings": {
                             "cpu": {"allocationMultiplier": multiplier}}}]}}


class TestRestartMarks:
    async def test_a_restart_marks_only_the_ledgers_of_the_canary(self) -> None:
        """Ledgers written by a run that kept every node; a restart with ``--node-selector`` marks Rebuilding
        (and rewrites) only the selected node's: the others are not its own, and nothing would write them
        again, so they keep what they hold."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(case_items("v08"))
            emulator.patch_object(NODES, "n1", {"metadata": {"labels": {"canary": "yes"}}})
            async with running(url):
                for node in ("n1", "n2", "n3"):
                    await eventually(phase_is(emulator, node, "Ready"))
            before = {node: status(emulator, node)["ledgerVersion"] for node in ("n2", "n3")}
            async with running(url, node_selector="canary=yes") as operator:
                await eventually(operator.runtime.rebuilt.is_set)
                await eventually(phase_is(emulator, "n1", "Ready"), what="the canary's ledger rewritten")
                assert status(emulator, "n1")["ledgerVersion"] >= 2
            assert before == {node: status(emulator, node)["ledgerVersion"] for node in ("n2", "n3")}
            assert ["Ready", "Ready"] == [status(emulator, node)["phase"] for node in ("n2", "n3")]


class TestRefusedRegression:
    async def test_a_refused_regression_is_on_the_ledger_and_survives_a_restart(self) -> None:
        """An older pool generation is refused, shown on the ledger, still refused after a restart, and
        forgotten once a newer generation is published (item 5). The restarted operator never saw the newer
        generation: it counts the stored one, as a recompute of the stored objects does (issue 23, item 8), and
        keeps the node Stale for the refusal."""

        def regressed() -> bool:
            found = status(emulator, "n1")
            return "Stale" == found.get("phase") and any(
                p["reason"] == "GenerationRegression" for p in found.get("problems", []))

        async with serve_emulator() as (emulator, url):
            emulator.load_objects(case_items("v08"))
            async with running(url):
                await eventually(phase_is(emulator, "n1", "Ready"))
                emulator.patch_object(SLICES, "n1-cpu", {"spec": _slice(5, "2")["spec"]})
                await eventually(lambda: status(emulator, "n1")["resources"]["cpu"]["claims"] == "2")
                emulator.patch_object(SLICES, "n1-cpu", {"spec": _slice(4, "3")["spec"]})
                await eventually(regressed, what="the regression on the ledger")
                assert [{"name": "n1-cpu", "driver": "cpu.example.com", "pool": "n1", "generation": 5,
                         "rejectedGeneration": 4}] == status(emulator, "n1")["rejectedSlices"]
                assert "2" == status(emulator, "n1")["resources"]["cpu"]["claims"]  # generation 5's, kept
            async with running(url) as operator:
                await eventually(operator.runtime.rebuilt.is_set)
                await eventually(lambda: status(emulator, "n1").get("phase") != "Rebuilding")
                assert regressed(), status(emulator, "n1")
                assert "3" == status(emulator, "n1")["resources"]["cpu"]["claims"]  # the stored generation 4's
                expected = audited(obj for resource in (NODES, PODS, SLICES, CLAIMS)
                                   for obj in emulator.store.live(emulator.require(resource).resource))
                assert expected["n1"]["resources"] == status(emulator, "n1")["resources"]
                emulator.patch_object(SLICES, "n1-cpu", {"spec": _slice(6, "1")["spec"]})
                await eventually(phase_is(emulator, "n1", "Ready"), what="the refusal forgotten")
                assert "rejectedSlices" not in status(emulator, "n1")
                assert "1" == status(emulator, "n1")["resources"]["cpu"]["claims"]


class TestWritesAreIndependent:
    async def test_one_nodes_failing_creates_hold_no_other_write_nor_release(self) -> None:
        """Six 503s on one ledger's create: the other ledgers and a gate release go on meanwhile (item 7)."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects([*case_items("v08"), {
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": "unallocated", "namespace": "t"},
                "spec": {"devices": {"requests": [{"name": "c", "exactly": {"deviceClassName": "example"}}]}}}])
            emulator.inject_create_error(LEDGERS, 503, times=6, name="n1")
            async with running(url, pod_status="observe"):
                await eventually(lambda: status(emulator, "n2").get("phase") == "Ready"
                                 and status(emulator, "n3").get("phase") == "Ready", within=5,
                                 what="the other ledgers, without waiting for n1")
                pod = gated_pod("g", "unallocated")
                emulator.load_objects([pod])
                await eventually(lambda: GATE not in [g["name"] for g in emulator.get_object(
                    PODS, "g", namespace="t")["spec"].get("schedulingGates") or []], within=5,
                                 what="the release, without waiting for n1")
                await eventually(phase_is(emulator, "n1", "Ready"), within=60, what="n1 in the end")
                assert 0 == emulator.faults.pending()
                assert emulator.get_object(NODES, "n1") is not None
