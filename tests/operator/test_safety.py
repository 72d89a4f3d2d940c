"""Regression tests for the safety defects of issue 13, items 1 to 7: each failed on the code before the fix.

The release decisions and the writer are driven here without Kopf, against a recording fake API; the
behaviours that depend on the API server's answers (404s, relists, restarts, injected errors) run the real
operator against the emulator.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from draledger.core.accounting.release import GATE
from draledger.demo.emulator import ClusterEmulator, serve_emulator
from draledger.operator.config import OperatorConfig
from draledger.operator.kubeapi import ApiError, NotFound
from draledger.operator.metrics import Metrics
from draledger.operator.runtime import RECONNECT_GRACE, Runtime
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
        return self.answer(method, path, body)

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
        api = FakeApi()
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await writer.releaser.release_pass()
        await writer.releaser.release_pass()
        assert 1 == len(api.released())
        assert [] == writer.releaser.waiting()
        released = gated_pod("g")
        released["spec"]["schedulingGates"] = []
        released["metadata"]["resourceVersion"] = "8"
        runtime.event("pods", "MODIFIED", released)
        assert ([], {}) == (writer.releaser.waiting(), writer.releaser.released)


class TestReleaseAfterRebuild:
    async def test_a_rebuild_completing_mid_pass_releases_nothing_in_that_pass(self) -> None:
        """Pods decided after the rebuild completed during the pass wait for the next pass (item 1)."""
        items = case_items("v08")
        not_ready(items, "n3")
        runtime, _ = loaded([*items, gated_pod("a"), gated_pod("b")],
                            complete=("nodes", "pods", "resourceslices"))

        def answer(method: str, path: str, body: Any) -> Any:
            if method == "POST" and path.endswith("/events"):  # the first pod's Event: the rebuild completes
                runtime.listing_done("resourceclaims")
            return {}

        api = FakeApi(answer)
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await writer.releaser.release_pass()
        assert runtime.rebuilt.is_set()
        assert [] == api.released()

    async def test_the_first_pass_keeps_pods_off_a_stale_node_before_any_ledger_is_written(self) -> None:
        """With the rebuild done and no ledger written yet, a NotReady node is still excluded (item 1)."""
        items = case_items("v08")
        not_ready(items, "n3")
        runtime, _ = loaded([*items, gated_pod("g")])
        api = FakeApi()
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await writer.releaser.release_pass()
        ((path, patch),) = api.released()
        assert "/api/v1/namespaces/t/pods/g" == path
        requirement = {"key": "metadata.name", "operator": "NotIn", "values": ["n3"]}
        assert [{"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchFields": [requirement]}]}}}] == (
            node_terms(patch))

    async def test_an_overcommitted_node_is_not_vouched_for(self) -> None:
        """Only Ready ledgers take new claim pods: an Overcommitted node is kept away too."""
        items = case_items("v08")
        for item in items:
            if item["kind"] == "Node" and item["metadata"]["name"] == "n2":
                item["status"]["allocatable"]["cpu"] = "100m"
        runtime, _ = loaded([*items, gated_pod("g")])
        api = FakeApi()
        await Writer(runtime, api).releaser.release_pass()  # type: ignore[arg-type]
        ((_, patch),) = api.released()
        assert ["n2"] == node_terms(patch)[0]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"][0][
            "matchFields"][0]["values"]


class TestReleaseNeedsEvidence:
    async def test_a_claim_on_unpublished_devices_holds_the_pod(self) -> None:
        """A pod whose allocated claim names a device no slice publishes is held, not pinned (item 2)."""
        runtime, _ = loaded([*case_items("v08"), allocated_claim("gone", "n1", "a9"), gated_pod("g", "gone")])
        api = FakeApi()
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await writer.releaser.release_pass()
        assert [] == api.released()
        assert 1 == runtime.metrics.gated.labels("ClaimUnresolved")._value.get()

    async def test_a_claim_in_an_incomplete_pool_holds_the_pod(self) -> None:
        """A claim allocated from a pool missing some of its slices is held (item 2)."""
        items = case_items("v08")
        for item in items:
            if item["kind"] == "ResourceSlice" and item["metadata"]["name"] == "n1-cpu":
                item["spec"]["pool"]["resourceSliceCount"] = 2
        runtime, _ = loaded([*items, allocated_claim("pre", "n1", "a1"), gated_pod("g", "pre")])
        api = FakeApi()
        await Writer(runtime, api).releaser.release_pass()  # type: ignore[arg-type]
        assert [] == api.released()
        assert 1 == runtime.metrics.gated.labels("ClaimUnresolved")._value.get()

    @pytest.mark.parametrize("kind", ["resourceslices", "pods", "nodes", "resourceclaims",
                                      "nodeallocatableledgers"])
    async def test_a_broken_stream_holds_releases_at_once(self, kind: str) -> None:
        """No release while any stream is broken, long before the freshness window runs out (item 2)."""
        runtime, _ = loaded([*case_items("v08"), gated_pod("g")])
        runtime.broken(kind, "watch failed: ClientConnectionError")
        api = FakeApi()
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await writer.releaser.release_pass()
        assert [] == api.released()
        assert 1 == runtime.metrics.gated.labels("WatchUnhealthy")._value.get()
        runtime.contact(kind)
        await writer.releaser.release_pass()
        assert 1 == len(api.released())

    async def test_a_renewal_holds_releases_quietly_and_its_answer_lets_them_go(self) -> None:
        """A stream being renewed, however briefly, lacks the changes made meanwhile: nothing is released,
        and nothing is said (no Event, no WatchUnhealthy count) for an ordinary renewal; one that lasts the
        grace is reported."""
        runtime, clock = loaded([*case_items("v08"), gated_pod("g"), gated_pod("h")])
        api = FakeApi()
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        runtime.connecting("nodeallocatableledgers")
        await writer.releaser.release_pass()
        assert ([], [], True) == (api.released(), api.calls, writer.releaser.retry_soon)
        assert runtime.metrics.gated.labels("WatchUnhealthy")._value.get() == 0
        clock.now += RECONNECT_GRACE
        await writer.releaser.release_pass()
        assert [] == api.released()
        assert 2 == runtime.metrics.gated.labels("WatchUnhealthy")._value.get()
        runtime.contact("nodeallocatableledgers")
        await writer.releaser.release_pass()
        assert 2 == len(api.released())

    async def test_a_relist_under_way_holds_releases(self) -> None:
        """Between a relist's first object and its end, the stream's picture is incomplete: hold."""
        runtime, _ = loaded([*case_items("v08"), gated_pod("g")])
        runtime.listed_object("resourceslices", "uid-3")
        api = FakeApi()
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await writer.releaser.release_pass()
        assert [] == api.released()
        runtime.listing_done("resourceslices")
        await writer.releaser.release_pass()
        assert 1 == len(api.released())

    async def test_a_silent_stream_holds_releases(self) -> None:
        """No contact within the freshness window is no evidence either."""
        runtime, clock = loaded([*case_items("v08"), gated_pod("g")], freshness_window=60)
        clock.now += 61
        for kind in ("nodes", "pods", "resourceclaims", "nodeallocatableledgers"):
            runtime.contact(kind)
        api = FakeApi()
        await Writer(runtime, api).releaser.release_pass()  # type: ignore[arg-type]
        assert [] == api.released()

    async def test_pinned_to_a_node_never_seen_holds_the_pod(self) -> None:
        """A claim allocated on a node the operator has not seen holds the pod; outside the canary it goes."""
        runtime, _ = loaded([*case_items("v08"), allocated_claim("far", "n7", "a0", pool="n1"),
                             gated_pod("g", "far")])
        api = FakeApi()
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        await writer.releaser.release_pass()
        assert [] == api.released()
        assert 1 == runtime.metrics.gated.labels("NodeUnavailable")._value.get()
        runtime.outside.add("n7")
        await writer.releaser.release_pass()
        ((_, patch),) = api.released()
        assert ["n7"] == node_terms(patch)[0]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"][0][
            "matchFields"][0]["values"]


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
