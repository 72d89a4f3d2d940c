"""The numbers the state keeps per object (core.kept): each dropped when an input its row of the table names changes
(accounting.inputs), and only then.

Every ledger the state computes from what it keeps must equal the same ledger computed from scratch: by the naive
oracle over the same views, and by loading the same objects afresh.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from draledger.core.accounting.fingerprints import mapping_fingerprint
from draledger.core.accounting.inputs import KEPT, PARAMETERS, Input
from draledger.core.accounting.ledger import Flags, Ledger
from draledger.core.bodies import dump_objects
from draledger.core.loading import READERS, load
from draledger.core.models import status_json, status_of
from draledger.core.releases import from_dump
from draledger.core.state import ClusterState
from draledger.core.views import PodView, read_claim, read_node, read_pod, read_slice
from oracle import NaiveCatalog
from strategies import (
    CPU1,
    Raw,
    claim_obj,
    container,
    device,
    direct,
    event_streams,
    identity,
    node_obj,
    pod_obj,
    result,
    slice_obj,
)

NOW = "2026-12-02T10:00:00Z"


def cores(count: int, *, multiplier: str = "1", numa: int = 0) -> list[Raw]:
    return [
        device(f"core-{i}", attributes={"numaNode": numa}, v136={"cpu": {"allocationMultiplier": multiplier}})
        for i in range(count)
    ]


def printed(ledger: Ledger) -> dict[str, Any]:
    """The status as written (canonical quantities, formats included)."""
    return status_json(status_of(ledger, ledger_version=1, mapping_version=1, now=NOW))


def from_scratch(state: ClusterState, node: str, flags: Flags) -> Ledger:
    """The node's ledger over the naive catalog of the same views: no index, no sum, no cache."""
    catalog = NaiveCatalog(list(state.nodes.values()), list(state.pods.values()), list(state.claims.values()),
                           list(state.slices.values()), state.release, state.attributes)
    return catalog.ledger(state.nodes[node], flags)


def cached(state: ClusterState, node: str, flags: Flags | None = None) -> Ledger:
    ledger = state.ledger(node, flags)
    assert ledger is not None
    return ledger


def zone_cpu(ledger: Ledger) -> dict[int, str]:
    return {zone: str(lines["cpu"].capacity) for zone, lines in ledger.zones.items() if "cpu" in lines}


class TestTable:
    """Each row of ``accounting.inputs.KEPT`` names the inputs its rule reads: its parameters, and the inputs of the
    kept values it reads."""

    @pytest.mark.parametrize("name", sorted(KEPT), ids=sorted(KEPT))
    def test_a_rules_parameters_are_its_rows_inputs(self, name: str) -> None:
        """Every parameter of the rule stands for an input of its row or a kept value whose inputs are in it; and
        every input of its row is read so."""
        row = KEPT[name]
        read: set[Input] = set()
        for parameter in inspect.signature(row.rule).parameters:
            meaning = PARAMETERS[parameter]
            read |= {meaning} if isinstance(meaning, Input) else KEPT[meaning].inputs
        assert row.inputs == read


class TestInvalidation:
    def test_slice_update_changes_fingerprint_and_zone_capacity(self) -> None:
        state = ClusterState()
        state.upsert_node(read_node(node_obj("n1")))
        state.upsert_slice(read_slice(slice_obj("s1", devices=cores(4), generation=1)))
        first = cached(state, "n1")
        assert {0: "4"} == zone_cpu(first)
        assert cached(state, "n1").mapping_fingerprint == first.mapping_fingerprint  # served from the cache

        state.upsert_slice(read_slice(slice_obj("s1", devices=cores(4, multiplier="2"), generation=2)))
        second = cached(state, "n1")
        assert second.mapping_fingerprint != first.mapping_fingerprint
        assert {0: "8"} == zone_cpu(second)
        assert printed(second) == printed(from_scratch(state, "n1", Flags()))

    def test_republish_with_same_devices_keeps_fingerprint(self) -> None:
        state = ClusterState()
        state.upsert_node(read_node(node_obj("n1")))
        state.upsert_slice(read_slice(slice_obj("s1", devices=cores(2), generation=1)))
        first = cached(state, "n1")
        state.upsert_slice(read_slice(slice_obj("s1", devices=cores(2), generation=2)))
        assert cached(state, "n1").mapping_fingerprint == first.mapping_fingerprint

    def test_slice_delete_and_readd(self) -> None:
        state = ClusterState()
        state.upsert_node(read_node(node_obj("n1")))
        empty = cached(state, "n1")
        state.upsert_slice(read_slice(slice_obj("s1", devices=cores(2, numa=1))))
        with_slice = cached(state, "n1")
        assert {1: "2"} == zone_cpu(with_slice)
        assert with_slice.mapping_fingerprint != empty.mapping_fingerprint

        state.delete_slice("s1")
        gone = cached(state, "n1")
        assert gone.mapping_fingerprint == empty.mapping_fingerprint
        assert {} == gone.zones

        state.upsert_slice(read_slice(slice_obj("s1", devices=cores(3, numa=1))))
        assert {1: "3"} == zone_cpu(cached(state, "n1"))

    def test_slice_moving_between_nodes(self) -> None:
        state = ClusterState()
        for name in ("n1", "n2"):
            state.upsert_node(read_node(node_obj(name)))
        state.upsert_slice(read_slice(slice_obj("s1", pool="p", node="n1", devices=cores(2))))
        assert {0: "2"} == zone_cpu(cached(state, "n1"))
        assert {} == zone_cpu(cached(state, "n2"))
        state.upsert_slice(read_slice(slice_obj("s1", pool="p", node="n2", devices=cores(2), generation=2)))
        assert {} == zone_cpu(cached(state, "n1"))
        assert {0: "2"} == zone_cpu(cached(state, "n2"))

    def test_newer_generation_on_another_node_reaches_the_pool(self) -> None:
        """A slice of the same pool, published for another node, can retire this node's devices: the pool's
        newest generation moved, and this node's cache must be dropped too."""
        state = ClusterState()
        for name in ("n1", "n2"):
            state.upsert_node(read_node(node_obj(name)))
        state.upsert_slice(read_slice(slice_obj("a", pool="p", node="n1", devices=cores(2), count=2)))
        assert {0: "2"} == zone_cpu(cached(state, "n1"))
        state.upsert_slice(read_slice(slice_obj("b", pool="p", node="n2", devices=cores(1), generation=2)))
        after = cached(state, "n1")
        assert {} == zone_cpu(after)
        assert printed(after) == printed(from_scratch(state, "n1", Flags()))
        state.delete_slice("b")  # generation 1 is the newest again
        assert {0: "2"} == zone_cpu(cached(state, "n1"))

    def test_a_refused_regression_keeps_every_value(self) -> None:
        """A slice whose pool generation went back changes nothing: the kept values stay, the node is not dirty."""
        state = ClusterState()
        state.upsert_node(read_node(node_obj("n1")))
        state.apply("resourceslices", None, slice_obj("s1", devices=cores(2), generation=5))
        before = printed(cached(state, "n1"))
        kept = state.kept.fingerprint["n1"]
        applied = state.apply("resourceslices", None, slice_obj("s1", devices=cores(9), generation=4))
        assert ((5, 4), set()) == ((applied.refused.generation, applied.refused.rejected), applied.dirty)
        assert kept is state.kept.fingerprint["n1"]
        assert before == printed(cached(state, "n1"))

    @pytest.mark.parametrize(("attributes", "zones"), [
        pytest.param(("numaNode",), {0: "2"}, id="numaNode"),
        pytest.param(("socket",), {1: "1", 2: "1"}, id="socket"),
    ])
    def test_the_zones_read_the_states_attributes(self, attributes: tuple[str, ...], zones: dict[int, str]) -> None:
        """Zones are read by the NUMA attributes the state was made with (accounting.inputs, rule 4)."""
        state = ClusterState(attributes=attributes)
        state.apply("nodes", None, node_obj("n1"))
        devices = [
            device("c0", attributes={"numaNode": 0, "socket": 1}, v136=CPU1),
            device("c1", attributes={"numaNode": 0, "socket": 2}, v136=CPU1),
        ]
        state.apply("resourceslices", None, slice_obj("s1", devices=devices))
        assert zones == zone_cpu(cached(state, "n1"))

    def test_node_delete_drops_its_entry(self) -> None:
        state = ClusterState()
        state.upsert_node(read_node(node_obj("n1")))
        state.upsert_slice(read_slice(slice_obj("s1", devices=cores(2))))
        cached(state, "n1")
        state.delete_node("n1")
        assert state.ledger("n1") is None
        state.upsert_node(read_node(node_obj("n1")))
        assert {0: "2"} == zone_cpu(cached(state, "n1"))


def gpu_node(state: ClusterState, memory: str, *, generation: int = 1, pool: str = "n1") -> None:
    gpu = device("gpu-0", attributes={"numaNode": 1}, v136={"memory": {"allocationMultiplier": memory}})
    state.upsert_slice(read_slice(slice_obj("s1", pool=pool, devices=[gpu], generation=generation)))


def claim_memory(ledger: Ledger) -> str:
    return str(ledger.resources["memory"].claims)


class TestContributionCache:
    """A claim's contribution is cached per claim: a change of the claim or of its pool must reach it."""

    def claimed(self, attributes: tuple[str, ...] = ("numaNode",)) -> ClusterState:
        state = ClusterState(attributes=attributes)
        state.upsert_node(read_node(node_obj("n1")))
        gpu_node(state, "8Gi")
        state.upsert_claim(read_claim(claim_obj("c1", results=[result("gpu-0")])))
        state.upsert_pod(read_pod(pod_obj("p1", containers=[container("app", claims=["gpu"])],
                                          resource_claims=[direct("gpu", "c1")])))
        assert claim_memory(cached(state, "n1")) == "8Gi"
        return state

    def test_a_republished_mapping_reaches_the_claim(self) -> None:
        state = self.claimed()
        gpu_node(state, "16Gi", generation=2)
        assert claim_memory(cached(state, "n1")) == "16Gi"
        assert printed(cached(state, "n1")) == printed(from_scratch(state, "n1", Flags()))

    def test_a_deleted_pool_leaves_the_claim_unresolved(self) -> None:
        state = self.claimed()
        state.delete_slice("s1")
        ledger = cached(state, "n1")
        assert "MissingResourceSlice" in ledger.claims[0].problems
        assert printed(ledger) == printed(from_scratch(state, "n1", Flags()))

    def test_a_reallocated_claim_is_read_again(self) -> None:
        state = self.claimed()
        state.upsert_claim(read_claim(claim_obj("c1", results=[result("gpu-9")])))
        assert "MissingDevice" in cached(state, "n1").claims[0].problems
        state.upsert_claim(read_claim(claim_obj("c1", results=[result("gpu-0")])))
        assert claim_memory(cached(state, "n1")) == "8Gi"

    @pytest.mark.parametrize(("attributes", "zones"), [
        pytest.param(("numaNode",), [1], id="numaNode"), pytest.param(("other",), [None], id="other")])
    def test_a_claims_devices_are_zoned_by_the_states_attributes(
        self, attributes: tuple[str, ...], zones: list[int | None]
    ) -> None:
        """A claim's devices take their zones from the state's NUMA attributes."""
        state = self.claimed(attributes)
        assert zones == [d.zone for d in cached(state, "n1").claims[0].devices]


class TestPodChargeCache:
    """A claim-using pod's charge is kept: reused while nothing it was computed from changes, computed again when
    its claim, the claim's pool, the claim's consumers or the release do (its row of accounting.inputs)."""

    def claimed(self) -> tuple[ClusterState, PodView]:
        state = TestContributionCache().claimed()
        return state, state.pods[("t", "p1")]

    def test_an_unchanged_pod_keeps_its_charge(self) -> None:
        """Another pod on the node, with no claim, changes none of the charge's inputs."""
        state, pod = self.claimed()
        first = state.kept.charge_of(pod)
        state.upsert_pod(read_pod(pod_obj("p2", node="n1", containers=[container("app", {"cpu": "1"})])))
        assert state.kept.charge_of(pod) is first

    def test_what_the_charge_depends_on(self) -> None:
        """Each input of the charge's row drops it; the ledger then equals the naive recompute."""
        changes = {
            "the claim": lambda s: s.upsert_claim(read_claim(claim_obj("c1", results=[result("gpu-0")]))),
            "its pool": lambda s: gpu_node(s, "16Gi", generation=2),
            "its consumers": lambda s: s.upsert_pod(read_pod(pod_obj(
                "p0", node="n1", containers=[container("app", claims=["gpu"])],
                resource_claims=[direct("gpu", "c1")]))),
            "the release": lambda s: s.set_release("v1.37"),
        }
        for what, change in changes.items():
            state, pod = self.claimed()
            first = state.kept.charge_of(pod)
            change(state)
            assert state.kept.charge_of(pod) is not first, what
            assert printed(cached(state, "n1")) == printed(from_scratch(state, "n1", Flags())), what

    def test_a_pod_gone_leaves_no_charge_behind(self) -> None:
        """A deleted pod's charge goes with it."""
        state, pod = self.claimed()
        state.kept.charge_of(pod)
        state.delete_pod(pod.key)
        assert {} == state.kept.charge


class TestCachedEqualsScratch:
    @settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow,
                                                                      HealthCheck.data_too_large])
    @given(event_streams())
    def test_after_every_event(self, stream: list[tuple[str, Raw]]) -> None:
        """Random upserts, updates, deletes and relists: after every event, every node's cached ledger
        equals ``compute`` without the cache; at the end, also ``audit`` over the objects the state holds."""
        state = ClusterState()
        state.set_release(from_dump((read_node(raw).kubelet_version for op, raw in stream if raw.get("kind") == "Node"),
                                    False)[0])
        current: dict[tuple[str, str, str], Raw] = {}

        def apply(op: str, raw: Raw) -> None:
            kind, namespace, name = identity(raw)
            if op == "delete":
                state.apply(READERS[kind], "DELETED", raw)
                current.pop((kind, namespace, name), None)
                return
            if state.apply(READERS[kind], None, raw).refused is None:
                current[(kind, namespace, name)] = raw

        for op, raw in stream:
            if op == "relist":
                for item in list(current.values()):
                    apply("upsert", item)
            else:
                apply(op, raw)
            for node in sorted(state.nodes):  # fill (or read) the kept values after every event
                ledger = cached(state, node)
                assert printed(ledger) == printed(from_scratch(state, node, Flags()))
                assert mapping_fingerprint(state.kept.objects.node_devices(node), state.release) == (
                    ledger.mapping_fingerprint)

        fresh = load(list(current.values()), "generated").state
        audited = {item["metadata"]["name"]: item["status"]
                   for item in dump_objects((cached(fresh, n) for n in sorted(fresh.nodes)), NOW)}
        incremental = {node: status_json(status_of(cached(state, node), ledger_version=1, mapping_version=1,
                                                   now=NOW)) for node in state.nodes}
        assert audited == incremental


def memory_figures(ledger: Ledger) -> tuple[str, str]:
    line = ledger.resources["memory"]
    return str(line.pod_requests), str(line.requested)


class TestRunningSums:
    """The per-node sums (accounting.sums) stand for the pods the ledger no longer visits: the figures equal
    a pass over every pod."""

    def state_with(self, *pods: tuple[str, str]) -> ClusterState:
        state = ClusterState()
        state.upsert_node(read_node(node_obj("n1")))
        for name, memory in pods:
            state.upsert_pod(read_pod(pod_obj(name, containers=[container("app", {"memory": memory})])))
        return state

    def agrees(self, state: ClusterState) -> Ledger:
        ledger = cached(state, "n1")
        assert printed(ledger) == printed(from_scratch(state, "n1", Flags()))
        return ledger

    def test_one_notation(self) -> None:
        state = self.state_with(("p1", "1Gi"), ("p2", "512Mi"))
        assert memory_figures(self.agrees(state)) == ("1536Mi", "1536Mi")

    def test_mixed_notations_print_by_their_sum(self) -> None:
        state = self.state_with(("p1", "1024M"), ("p2", "1Gi"))
        assert memory_figures(self.agrees(state)) == ("2048576Ki", "2048576Ki")
        state.delete_pod(("t", "p1"))
        assert memory_figures(self.agrees(state)) == ("1Gi", "1Gi")
        state.upsert_pod(read_pod(pod_obj("p0", containers=[container("app", {"memory": "512Mi"})])))
        assert memory_figures(self.agrees(state)) == ("1536Mi", "1536Mi")
        state.upsert_pod(read_pod(pod_obj("p0", containers=[container("app", {"memory": "1024M"})])))  # resize
        assert memory_figures(self.agrees(state)) == ("2048576Ki", "2048576Ki")
        state.upsert_pod(read_pod(pod_obj("p3", containers=[container("app", {"memory": "1024M"})])))
        state.delete_pod(("t", "p0"))  # p2 (binary) is first again, p3's decimal term stays
        assert memory_figures(self.agrees(state)) == ("2048576Ki", "2048576Ki")

    def test_a_claim_pods_footprint_is_summed(self) -> None:
        state = self.state_with(("p2", "1024M"))
        gpu_node(state, "8Gi")
        state.upsert_claim(read_claim(claim_obj("c1", results=[result("gpu-0")])))
        state.upsert_pod(read_pod(pod_obj("p1", containers=[container("app", {"memory": "1Gi"}, claims=["gpu"])],
                                          resource_claims=[direct("gpu", "c1")])))
        # p1 (first by name): 1Gi without its claim, 9Gi with it, both binary; p2's 1024M is decimal
        assert memory_figures(self.agrees(state)) == ("2048576Ki", "10437184Ki")
        state.delete_pod(("t", "p1"))
        assert memory_figures(self.agrees(state)) == ("1024M", "1024M")

    def test_a_claim_pod_resized_in_place(self) -> None:
        """A pod that keeps its node and claims moves its sum by the difference; the claim's indexes stand."""
        state = self.state_with(("p2", "1Gi"))
        gpu_node(state, "8Gi")
        state.upsert_claim(read_claim(claim_obj("c1", results=[result("gpu-0")])))

        def claim_pod(memory: str) -> PodView:
            return read_pod(pod_obj("p1", containers=[container("app", {"memory": memory}, claims=["gpu"])],
                                    resource_claims=[direct("gpu", "c1")]))

        state.upsert_pod(claim_pod("1Gi"))
        assert memory_figures(self.agrees(state)) == ("2Gi", "10Gi")
        assert state.upsert_pod(claim_pod("3Gi")) == {"n1"}
        assert memory_figures(self.agrees(state)) == ("4Gi", "12Gi")
        assert state.kept.objects.consumers(("t", "c1")) == (("t", "p1"),)
        state.upsert_pod(read_pod(pod_obj("p1", containers=[container("app", {"memory": "3Gi"})])))  # claim gone
        assert memory_figures(self.agrees(state)) == ("4Gi", "4Gi")
        assert state.kept.objects.consumers(("t", "c1")) == ()

    def test_the_last_pod_gone_leaves_no_line_behind(self) -> None:
        state = self.state_with(("p1", "1Gi"))
        state.upsert_pod(read_pod(pod_obj("p1", containers=[container("app", {"cpu": "1"})])))
        assert memory_figures(self.agrees(state)) == ("0", "0")  # the node's allocatable keeps the line
        assert 0 == state.kept.node_sums("n1").claimless.get("memory", 0)
        state.delete_pod(("t", "p1"))
        assert str(self.agrees(state).resources["cpu"].requested) == "0"
