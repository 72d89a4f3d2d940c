"""The accounting rules of docs/accounting.md: footprints, contributions, zones, phases, state."""

from __future__ import annotations

from typing import Any

import pytest

from draledger.core import loading
from draledger.core.accounting.footprints import NO_CHARGE, DraCharge, footprint
from draledger.core.accounting.ledger import Flags, Ledger
from draledger.core.accounting.statuses import planned_statuses
from draledger.core.accounting.zones import DEFAULT_NUMA_ATTRIBUTES
from draledger.core.bodies import line_figures
from draledger.core.phases import PHASES
from draledger.core.quantities import Quantity, parse_quantity
from draledger.core.resources import Entry, Resources, aggregate
from draledger.core.state import ClusterState
from draledger.core.views import read_claim, read_node, read_pod
from oracle import NaiveCatalog
from strategies import (
    CPU1,
    Raw,
    claim_obj,
    container,
    device,
    direct,
    node_obj,
    pod_obj,
    result,
    slice_obj,
    status_v136,
    status_v137,
    templated,
)


def q(text: str) -> Quantity:
    return parse_quantity(text)


def aggregate_containers(containers: list[Resources], inits: list[tuple[Resources, bool]]) -> Resources:
    """``core.resources.aggregate`` of regular containers and (requests, restartable) init containers."""
    return aggregate([*(Entry(f"c{i}", r, False, False) for i, r in enumerate(containers)),
                      *(Entry(f"i{i}", r, True, sidecar) for i, (r, sidecar) in enumerate(inits))])


def load(*items: Raw, problems: bool = False, attributes: tuple[str, ...] = DEFAULT_NUMA_ATTRIBUTES) -> ClusterState:
    """The state of ``items``, zones read by ``attributes``; without ``problems``, the input must have none."""
    loaded = loading.load(list(items), "test", attributes=attributes)
    if not problems:
        assert [] == loaded.problems
    return loaded.state


def ledger_of(*items: Raw, node: str = "n1", flags: Flags | None = None,
              attributes: tuple[str, ...] = DEFAULT_NUMA_ATTRIBUTES) -> Ledger:
    ledger = load(*items, attributes=attributes).ledger(node, flags or Flags())
    assert ledger is not None
    return ledger


def figures(ledger: Ledger, resource: str) -> dict[str, str]:
    """One resource line, in canonical text, without what the scheduler's NodeInfo charges (TestSchedulerView)."""
    out = line_figures(ledger.resources[resource])
    del out["schedulerRequested"]
    return out


def requested(ledger: Ledger) -> dict[str, str]:
    return {r: str(line.requested) for r, line in ledger.resources.items()}


def claim_of(ledger: Ledger, namespace: str, name: str) -> Any:
    return next(c for c in ledger.claims if (c.namespace, c.name) == (namespace, name))


def zone_figures(ledger: Ledger) -> dict[int, dict[str, tuple[str, str, str]]]:
    return {z: {r: (str(line.capacity), str(line.claims), str(line.free)) for r, line in lines.items()}
            for z, lines in ledger.zones.items()}


def cores(count: int = 4, multiplier: str = "2", pool: str = "n1", node: str = "n1",
          zones: tuple[int, ...] = (0, 0, 1, 1), name: str = "n1-cores", v137: bool = False, **kwargs: Any) -> Raw:
    """A slice of ``count`` cores, each charging ``multiplier`` cpu when allocated (v1.36 shape, or v1.37's)."""
    mapping: dict[str, Any] = (
        {"v137": {"cpu": {"mapping": {"deviceMultiplier": multiplier}}}} if v137
        else {"v136": {"cpu": {"allocationMultiplier": multiplier}}}
    )
    return slice_obj(name, pool=pool, node=node, devices=[
        device(f"core-{i}", attributes={"numaNode": zones[i % len(zones)]}, **mapping)
        for i in range(count)
    ], **kwargs)


def core_claim(name: str, *indexes: int, namespace: str = "t", pool: str = "n1") -> Raw:
    return claim_obj(name, namespace, results=[result(f"core-{i}", pool=pool) for i in indexes])


NODE = node_obj("n1", allocatable={"cpu": "16", "memory": "64Gi", "pods": "110"})


class TestFootprints:
    def test_containers_add_up(self) -> None:
        """Regular containers add up."""
        assert {"cpu": q("3"), "memory": q("1Gi")} == aggregate_containers(
            [{"cpu": q("1")}, {"cpu": q("2"), "memory": q("1Gi")}], [])

    def test_regular_init_container_dominates(self) -> None:
        """A regular init container larger than the containers sets the request."""
        assert {"cpu": q("4"), "memory": q("1Gi")} == aggregate_containers(
            [{"cpu": q("1"), "memory": q("1Gi")}], [({"cpu": q("4"), "memory": q("64Mi")}, False)])

    def test_sidecar_before_a_regular_init_adds_to_it(self) -> None:
        """A sidecar declared before a regular init container runs alongside it: max(1+500m+…, 4+500m)."""
        inits = [({"cpu": q("500m")}, True), ({"cpu": q("4")}, False)]
        assert {"cpu": q("4500m")} == aggregate_containers([{"cpu": q("1")}], inits)

    def test_sidecar_after_a_regular_init_does_not_add_to_it(self) -> None:
        """A sidecar declared after a regular init container starts after it: max(1+500m, 4)."""
        inits = [({"cpu": q("4")}, False), ({"cpu": q("500m")}, True)]
        assert {"cpu": q("4")} == aggregate_containers([{"cpu": q("1")}], inits)

    def test_sidecars_run_with_the_containers(self) -> None:
        """Sidecars are added to the regular containers when those dominate."""
        inits = [({"cpu": q("1")}, True), ({"cpu": q("2")}, False), ({"cpu": q("1")}, True)]
        assert {"cpu": q("5")} == aggregate_containers([{"cpu": q("3")}], inits)

    def test_sidecar_alone_is_compared_with_its_running_sum(self) -> None:
        """A resource only sidecars request is their running sum."""
        inits = [({"memory": q("1Gi")}, True), ({"memory": q("1Gi")}, True)]
        assert {"memory": q("2Gi")} == aggregate_containers([], inits)

    def test_pod_level_replaces_containers_and_claims(self) -> None:
        """Pod-level requests replace containers and DRA for that resource; others keep both; overhead is added."""
        pod = read_pod(pod_obj("p", containers=[container("a", {"cpu": "2", "memory": "1Gi"})],
                               pod_level={"cpu": "10"}, overhead={"cpu": "250m"}))
        total = footprint(pod, DraCharge({"cpu": q("8"), "memory": q("4Gi")}, {}), "v1.36")
        assert {"cpu": q("10250m"), "memory": q("5Gi")} == total

    def test_overhead_only(self) -> None:
        """A pod with nothing but overhead is charged its overhead."""
        pod = read_pod(pod_obj("p", overhead={"memory": "128Mi"}))
        assert {"memory": q("128Mi")} == footprint(pod, NO_CHARGE, "v1.36")

    def test_kep_example(self) -> None:
        """KEP-5517: ClaimA (4 cpu) used by c1 and c2, ClaimB (2 cpu) by c1, requests 1 and 2: 9 cpu."""
        ledger = ledger_of(
            NODE, cores(),
            core_claim("claim-a", 0, 1), core_claim("claim-b", 2),
            pod_obj("p", containers=[container("c1", {"cpu": "1"}, claims=["a", "b"]),
                                     container("c2", {"cpu": "2"}, claims=["a"])],
                    resource_claims=[direct("a", "claim-a"), direct("b", "claim-b")]),
        )
        assert {"allocatable": "16", "podRequests": "3", "claims": "6", "requested": "9", "free": "7",
                "schedulerCharged": "0"} == figures(ledger, "cpu")
        assert {"cpu": q("4")} == claim_of(ledger, "t", "claim-a").resources
        assert {"cpu": q("2")} == claim_of(ledger, "t", "claim-b").resources

    def test_init_sidecar_overhead_and_claims_on_a_node(self) -> None:
        """DRA and overhead go outside the init-container max: max(1+500m, 4) + 2 (claim) + 250m."""
        ledger = ledger_of(
            NODE, cores(), core_claim("c", 0),
            pod_obj("p", init_containers=[container("init", {"cpu": "4"}),
                                          container("side", {"cpu": "500m"}, restart_policy="Always")],
                    containers=[container("app", {"cpu": "1"}, claims=["x"])],
                    resource_claims=[direct("x", "c")], overhead={"cpu": "250m"}),
        )
        cpu = figures(ledger, "cpu")
        assert ("4250m", "2", "6250m") == (cpu["podRequests"], cpu["claims"], cpu["requested"])

    def test_pod_level_on_a_node(self) -> None:
        """Pod-level cpu is charged as is (its claims still count in the DRA stream); memory is containers + DRA."""
        gpu = slice_obj("gpu", pool="gpu", devices=[device("g", v136={"cpu": {"allocationMultiplier": "2"},
                                                                      "memory": {"allocationMultiplier": "4Gi"}})])
        ledger = ledger_of(
            NODE, gpu, claim_obj("c", results=[result("g", pool="gpu")]),
            pod_obj("p", containers=[container("a", {"cpu": "1", "memory": "1Gi"}, claims=["x"])],
                    resource_claims=[direct("x", "c")], pod_level={"cpu": "10"}, overhead={"cpu": "100m"}),
        )
        assert {"allocatable": "16", "podRequests": "10100m", "claims": "2", "requested": "10100m", "free": "5900m",
                "schedulerCharged": "0"} == figures(ledger, "cpu")
        memory = figures(ledger, "memory")
        assert ("1Gi", "4Gi", "5Gi") == (memory["podRequests"], memory["claims"], memory["requested"])


class TestContributions:
    def test_multiplier_once_per_result(self) -> None:
        """A device-count mapping adds its multiplier once per allocation result: 3 cores × 2 = 6."""
        ledger = ledger_of(NODE, cores(), core_claim("c", 0, 1, 2),
                           pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")]))
        assert "6" == figures(ledger, "cpu")["claims"]

    def test_a_v136_mapping_without_multiplier_or_key_is_refused(self) -> None:
        """v1.36's API refuses a mapping with neither allocationMultiplier nor capacityKey (its scheduler would
        charge 0): it is InvalidMapping and counts nothing."""
        gpu = slice_obj("s", devices=[device("g0", v136={"cpu": {}}), device("g1", v136={"cpu": {}})])
        state = load(NODE, gpu, claim_obj("c", results=[result("g0"), result("g1")]),
                     pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")]),
                     problems=True)
        ledger = state.ledger("n1")
        assert ledger is not None
        assert "0" == figures(ledger, "cpu")["claims"]
        assert ["InvalidMapping", "InvalidMapping"] == [p.reason for p in ledger.problems]

    @pytest.mark.parametrize(
        ("mapping_key", "consumed", "multiplier", "charged"),
        [
            pytest.param("size", {"size": "64Mi"}, None, "64Mi", id="hugepages-by-consumed"),
            pytest.param("cores", {"cores": "3"}, "2", "6", id="consumed-times-multiplier"),
            pytest.param("size", {"other": "4Mi"}, None, "0", id="key-not-consumed-is-skipped"),
            pytest.param("size", {"size": "16G"}, "1Gi", "15625000Ti", id="a-large-product-prints-by-its-value"),
        ],
    )
    def test_capacity_key(
        self, mapping_key: str, consumed: dict[str, str], multiplier: str | None, charged: str
    ) -> None:
        """A capacityKey mapping charges consumedCapacity[key] × multiplier."""
        entry: dict[str, str] = {"capacityKey": mapping_key}
        if multiplier is not None:
            entry["allocationMultiplier"] = multiplier
        pool = slice_obj("s", devices=[device("d", capacity={mapping_key: "1Gi"}, multi=True,
                                              v136={"hugepages-2Mi": entry})])
        ledger = ledger_of(NODE, pool, claim_obj("c", results=[result("d", consumed=consumed)]),
                           pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")]))
        line = ledger.resources.get("hugepages-2Mi")
        assert charged == (str(line.claims) if line else "0")
        assert () == claim_of(ledger, "t", "c").problems

    @pytest.mark.parametrize(("release", "charged"), [("v1.37", "0"), ("v1.38", "4Mi")])
    @pytest.mark.parametrize(
        ("mapping_key", "consumed"),
        [
            pytest.param("dra.example.com/size", {"size": "4Mi"}, id="qualified-key-unqualified-consumed"),
            pytest.param("size", {"dra.example.com/size": "4Mi"}, id="driver-renamed-its-capacity"),
        ],
    )
    def test_consumed_capacity_lookup_by_release(
        self, mapping_key: str, consumed: dict[str, str], release: str, charged: str
    ) -> None:
        """v1.36 and v1.37 look consumedCapacity up exactly; v1.38 defaults the driver domain (a v0.38 driver that
        renamed ``dra.example.com/size`` to ``size`` keeps charging the claims allocated before)."""
        entry = {"mapping": {"capacityKey": mapping_key, "capacityMultiplier": "1"}}
        pool = slice_obj("s", devices=[device("d", capacity={mapping_key: "1Gi"}, multi=True,
                                              v137={"hugepages-2Mi": entry})])
        state = load(NODE, pool, claim_obj("c", results=[result("d", consumed=consumed)]),
                     pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")]))
        state.set_release(release)  # type: ignore[arg-type]
        ledger = state.ledger("n1")
        assert ledger is not None
        line = ledger.resources.get("hugepages-2Mi")
        assert charged == (str(line.claims) if line else "0")

    def test_capacity_key_without_consumed_capacity(self) -> None:
        """No consumedCapacity on the result: CapacityKeyWithoutConsumedCapacity, nothing counted, node not Stale."""
        pool = slice_obj("s", devices=[device("d", capacity={"size": "1Gi"},
                                              v136={"hugepages-2Mi": {"capacityKey": "size"},
                                                    "cpu": {"allocationMultiplier": "1"}})])
        ledger = ledger_of(NODE, pool, claim_obj("c", results=[result("d")]),
                           pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")]))
        claim = claim_of(ledger, "t", "c")
        assert ("CapacityKeyWithoutConsumedCapacity",) == claim.problems
        assert {"cpu": q("1")} == claim.resources
        assert "hugepages-2Mi" not in ledger.resources
        assert ["CapacityKeyWithoutConsumedCapacity"] == [p.reason for p in ledger.problems]
        assert "Ready" == ledger.phase

    def test_v137_mapping(self) -> None:
        """v1.37 mapping: capacityKey × capacityMultiplier, or deviceMultiplier once per result."""
        pool = slice_obj("s", devices=[
            device("grp", capacity={"dra.cpu/cpu": "32"}, multi=True,
                   v137={"cpu": {"mapping": {"capacityKey": "dra.cpu/cpu", "capacityMultiplier": "1"}}}),
            device("core", v137={"cpu": {"mapping": {"deviceMultiplier": "2"}}}),
        ], driver="dra.cpu")
        claim = claim_obj("c", results=[result("grp", driver="dra.cpu", consumed={"dra.cpu/cpu": "6"}),
                                        result("core", driver="dra.cpu")])
        ledger = ledger_of(NODE, pool, claim,
                           pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")]))
        assert "8" == figures(ledger, "cpu")["claims"]

    def test_v137_overhead(self) -> None:
        """v1.37 overhead: perPod once per pod, perContainer × the pod's referencing containers."""
        gpu = slice_obj("s", devices=[device("g", v137={"memory": {"overhead": {"perPod": "2Gi"}},
                                                        "cpu": {"overhead": {"perContainer": "500m"}}})])
        ledger = ledger_of(
            NODE, gpu, claim_obj("c", results=[result("g")]),
            pod_obj("p", containers=[container("a", claims=["x"]), container("b", claims=["x"]), container("z")],
                    init_containers=[container("i", claims=["x"])], resource_claims=[direct("x", "c")]),
        )
        assert {"cpu": q("1500m"), "memory": q("2Gi")} == claim_of(ledger, "t", "c").resources
        assert {} == ledger.zones

    def test_v137_mapping_and_overhead_on_one_resource(self) -> None:
        """Mapping and overhead on the same resource both count."""
        gpu = slice_obj("s", devices=[device("g", v137={
            "cpu": {"mapping": {"deviceMultiplier": "2"}, "overhead": {"perPod": "1", "perContainer": "250m"}}})])
        ledger = ledger_of(NODE, gpu, claim_obj("c", results=[result("g")]),
                           pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")]))
        assert {"cpu": q("3250m")} == claim_of(ledger, "t", "c").resources

    def test_unallocated_claim_counts_nothing(self) -> None:
        """A claim that is not allocated yet is listed and charges nothing."""
        ledger = ledger_of(NODE, claim_obj("c", results=None),
                           pod_obj("p", containers=[container("a", {"cpu": "1"}, claims=["x"])],
                                   resource_claims=[direct("x", "c")]))
        assert ({}, ()) == (claim_of(ledger, "t", "c").resources, claim_of(ledger, "t", "c").problems)
        assert "1" == figures(ledger, "cpu")["requested"]

    def test_device_without_mappings_counts_nothing(self) -> None:
        """A device with no node-allocatable mapping charges nothing (an ordinary DRA device)."""
        ledger = ledger_of(NODE, slice_obj("s", devices=[device("nic")]), claim_obj("c", results=[result("nic")]),
                           pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")]))
        assert {} == claim_of(ledger, "t", "c").resources
        assert "Ready" == ledger.phase


class TestClaimsOnce:
    def test_many_containers_one_claim(self) -> None:
        """A claim referenced by every container enters the ledger once."""
        ledger = ledger_of(NODE, cores(), core_claim("c", 0, 1),
                           pod_obj("p", containers=[container(n, claims=["x"]) for n in "abc"],
                                   resource_claims=[direct("x", "c")]))
        assert ("4", 1) == (figures(ledger, "cpu")["claims"], len(ledger.claims))
        assert ("t/p",) == ledger.claims[0].pods

    def test_two_pod_claim_entries_for_one_claim(self) -> None:
        """Two spec.resourceClaims entries naming one ResourceClaim count it once."""
        ledger = ledger_of(NODE, cores(), core_claim("c", 0, 1),
                           pod_obj("p", containers=[container("a", claims=["x"]), container("b", claims=["y"])],
                                   resource_claims=[direct("x", "c"), direct("y", "c")]))
        assert "4" == figures(ledger, "cpu")["claims"]

    def test_shared_across_pods_charged_to_the_first_by_name(self) -> None:
        """A mapped claim consumed by two pods is charged once, to the first by namespace/name."""
        second = pod_obj("b-pod", containers=[container("a", {"cpu": "1"}, claims=["x"])],
                         resource_claims=[direct("x", "c")])
        first = pod_obj("a-pod", containers=[container("a", {"cpu": "1"}, claims=["x"])],
                        resource_claims=[direct("x", "c")])
        ledger = ledger_of(NODE, cores(), core_claim("c", 0, 1), second, first)
        claim = claim_of(ledger, "t", "c")
        assert (("t/a-pod", "t/b-pod"), ("SharedAcrossPods",), {"cpu": q("4")}) == (
            claim.pods, claim.problems, claim.resources)
        assert ("4", "6") == (figures(ledger, "cpu")["claims"], figures(ledger, "cpu")["requested"])
        assert {0: {"cpu": ("4", "4", "0")}, 1: {"cpu": ("4", "0", "4")}} == zone_figures(ledger)

    def test_shared_across_nodes(self) -> None:
        """When the owning pod is on another node, this node's pod pays nothing for the mapping."""
        state = load(
            NODE, node_obj("n2"), cores(), core_claim("c", 0),
            pod_obj("a-pod", node="n2", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")]),
            pod_obj("b-pod", node="n1", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")]),
        )
        n1, n2 = state.ledger("n1"), state.ledger("n2")
        assert n1 is not None
        assert n2 is not None
        assert ({}, ("SharedAcrossPods",)) == (claim_of(n1, "t", "c").resources, claim_of(n1, "t", "c").problems)
        assert {"cpu": q("2")} == claim_of(n2, "t", "c").resources
        assert "0" == figures(n1, "cpu")["claims"]
        assert {0: {"cpu": ("4", "0", "4")}, 1: {"cpu": ("4", "0", "4")}} == zone_figures(n1)

    def test_overhead_only_claim_shared_by_pods(self) -> None:
        """A v1.37 overhead-only claim may be shared: every pod pays its overhead, and there is no problem."""
        gpu = slice_obj("s", devices=[device("g", v137={"memory": {"overhead": {"perPod": "2Gi"}},
                                                        "cpu": {"overhead": {"perContainer": "500m"}}})])
        ledger = ledger_of(
            NODE, gpu, claim_obj("g", results=[result("g")]),
            pod_obj("p1", containers=[container("a", claims=["x"]), container("b", claims=["x"])],
                    resource_claims=[direct("x", "g")]),
            pod_obj("p2", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "g")]),
        )
        claim = claim_of(ledger, "t", "g")
        assert (("t/p1", "t/p2"), (), {"cpu": q("1500m"), "memory": q("4Gi")}) == (
            claim.pods, claim.problems, claim.resources)

    def test_unreferenced_claim(self) -> None:
        """A claim no container references is still counted once, with UnreferencedClaim."""
        ledger = ledger_of(NODE, cores(), core_claim("c", 0),
                           pod_obj("p", containers=[container("a", {"cpu": "1"})], resource_claims=[direct("x", "c")]))
        claim = claim_of(ledger, "t", "c")
        assert (("UnreferencedClaim",), {"cpu": q("2")}) == (claim.problems, claim.resources)
        assert "3" == figures(ledger, "cpu")["requested"]

    def test_claim_referenced_only_by_an_init_container(self) -> None:
        """An init container's reference is a reference."""
        ledger = ledger_of(NODE, cores(), core_claim("c", 0),
                           pod_obj("p", init_containers=[container("i", claims=["x"])], containers=[container("a")],
                                   resource_claims=[direct("x", "c")]))
        assert () == claim_of(ledger, "t", "c").problems

    @pytest.mark.parametrize(
        ("node", "phase"),
        [
            pytest.param("n1", "Succeeded", id="succeeded"),
            pytest.param("n1", "Failed", id="failed"),
            pytest.param(None, "Pending", id="unbound"),
            pytest.param("n2", "Running", id="other-node"),
        ],
    )
    def test_claims_of_pods_not_counted_here_are_absent(self, node: str | None, phase: str) -> None:
        """A claim held only by a terminal, unbound or elsewhere-bound pod is not in this ledger."""
        ledger = ledger_of(NODE, cores(), core_claim("c", 0),
                           pod_obj("p", node=node, phase=phase, containers=[container("a", {"cpu": "1"}, claims=["x"])],
                                   resource_claims=[direct("x", "c")]))
        assert () == ledger.claims
        assert "0" == figures(ledger, "cpu")["requested"]

    def test_terminal_pod_does_not_own_a_shared_claim(self) -> None:
        """A Succeeded pod first by name does not take the claim's charge from the running pod."""
        ledger = ledger_of(
            NODE, cores(), core_claim("c", 0),
            pod_obj("a-done", phase="Succeeded", containers=[container("a", claims=["x"])],
                    resource_claims=[direct("x", "c")]),
            pod_obj("b-run", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")]),
        )
        assert ((), {"cpu": q("2")}) == (claim_of(ledger, "t", "c").problems, claim_of(ledger, "t", "c").resources)


class TestTemplateClaims:
    def test_resolved_through_pod_status(self) -> None:
        """A template claim is found through status.resourceClaimStatuses and counted."""
        ledger = ledger_of(NODE, cores(), core_claim("p-x-abcde", 0, 1),
                           pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[templated("x")],
                                   generated={"x": "p-x-abcde"}))
        assert ("4", ()) == (figures(ledger, "cpu")["claims"], claim_of(ledger, "t", "p-x-abcde").problems)

    def test_not_generated_yet(self) -> None:
        """A template claim not generated yet is a node problem and counts nothing."""
        ledger = ledger_of(NODE, cores(),
                           pod_obj("p", containers=[container("a", {"cpu": "1"}, claims=["x"])],
                                   resource_claims=[templated("x")], generated={"x": None}))
        assert () == ledger.claims
        assert [("UnresolvedTemplateClaim", "Pod t/p")] == [(p.reason, str(p.obj)) for p in ledger.problems]
        assert "1" == figures(ledger, "cpu")["requested"]


class TestUnresolved:
    def test_missing_slice_with_and_without_pod_status(self) -> None:
        """Missing slice: counted from the pod status when there is one, else not at all; node Stale."""
        ledger = ledger_of(
            NODE,
            claim_obj("c1", results=[result("gpu-0", pool="gone")]),
            claim_obj("c2", results=[result("gpu-1", pool="gone")]),
            pod_obj("p1", containers=[container("a", {"cpu": "1"}, claims=["x"])], resource_claims=[direct("x", "c1")],
                    claim_statuses=[status_v136("c1", ["a"], {"cpu": "1", "memory": "4Gi"})]),
            pod_obj("p2", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c2")]),
        )
        assert ({"cpu": q("1"), "memory": q("4Gi")}, ("MissingResourceSlice",)) == (
            claim_of(ledger, "t", "c1").resources, claim_of(ledger, "t", "c1").problems)
        assert ({}, ("MissingResourceSlice",)) == (
            claim_of(ledger, "t", "c2").resources, claim_of(ledger, "t", "c2").problems)
        assert "2" == figures(ledger, "cpu")["requested"]
        assert "Stale" == ledger.phase
        assert ("False", "MissingResourceSlice") == (ledger.condition("MappingsComplete").status,
                                                     ledger.condition("MappingsComplete").reason)
        assert "t/c1: MissingResourceSlice" in ledger.condition("MappingsComplete").message

    def test_missing_device(self) -> None:
        """A device the pool's newest generation does not publish is MissingDevice; the node is Stale."""
        ledger = ledger_of(NODE, cores(count=1), core_claim("c", 0, 7),
                           pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")],
                                   claim_statuses=[status_v136("c", ["a"], {"cpu": "4"})]))
        claim = claim_of(ledger, "t", "c")
        assert (("MissingDevice",), {"cpu": q("4")}) == (claim.problems, claim.resources)
        assert "Stale" == ledger.phase

    def test_device_only_in_an_older_generation(self) -> None:
        """A device published only by an older generation of its pool is missing."""
        ledger = ledger_of(NODE, cores(count=2, name="new", generation=2), cores(count=4, name="old", generation=1),
                           core_claim("c", 3),
                           pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")]))
        assert ("MissingDevice",) == claim_of(ledger, "t", "c").problems
        assert {0: {"cpu": ("4", "0", "4")}} == zone_figures(ledger)  # only the newest generation's two cores

    def test_missing_claim(self) -> None:
        """A claim that does not exist: counted from the pod status when there is one; node Stale."""
        ledger = ledger_of(NODE, pod_obj("p", containers=[container("a", claims=["x", "y"])],
                                         resource_claims=[direct("x", "gone"), direct("y", "gone-too")],
                                         claim_statuses=[status_v136("gone", ["a"], {"cpu": "2"})]))
        assert ({"cpu": q("2")}, "", ("MissingResourceClaim",)) == (
            claim_of(ledger, "t", "gone").resources, claim_of(ledger, "t", "gone").uid,
            claim_of(ledger, "t", "gone").problems)
        assert {} == claim_of(ledger, "t", "gone-too").resources
        assert "Stale" == ledger.phase
        assert 2 == sum(p.reason == "MissingResourceClaim" for p in ledger.problems)

    def test_many_broken_claims_are_summarised(self) -> None:
        """The MappingsComplete message names five broken claims and counts the rest."""
        names = [f"c{i}" for i in range(7)]
        ledger = ledger_of(NODE, pod_obj("p", containers=[container("a", claims=names)],
                                         resource_claims=[direct(n, n) for n in names]))
        assert ledger.condition("MappingsComplete").message.endswith("(+2 more)")


class TestStale:
    def test_node_not_ready(self) -> None:
        """A Node that is not Ready makes its ledger Stale (Fresh False, NodeNotReady)."""
        ledger = ledger_of(node_obj("n1", ready=False, reason="KubeletNotReady"))
        fresh = ledger.condition("Fresh")
        assert ("Stale", "False", "NodeNotReady") == (ledger.phase, fresh.status, fresh.reason)
        assert "KubeletNotReady" in fresh.message

    def test_incomplete_pool(self) -> None:
        """Fewer slices of the newest generation than resourceSliceCount: Stale, and what resolves still counts."""
        ledger = ledger_of(NODE,
                           slice_obj("s1", generation=2, count=2, devices=[
                               device("core-0", v136={"cpu": {"allocationMultiplier": "2"}})]),
                           cores(count=4, name="old", generation=1),
                           core_claim("c", 0),
                           pod_obj("p", containers=[container("a", {"cpu": "1"}, claims=["x"])],
                                   resource_claims=[direct("x", "c")]))
        mappings = ledger.condition("MappingsComplete")
        assert ("Stale", "False", "IncompletePool", "a pool is incomplete") == (
            ledger.phase, mappings.status, mappings.reason, mappings.message)
        assert ("2", "3") == (figures(ledger, "cpu")["claims"], figures(ledger, "cpu")["requested"])
        assert ["IncompletePool"] == [p.reason for p in ledger.problems]

    def test_incomplete_pool_and_missing_device(self) -> None:
        """Both reasons are reported together."""
        ledger = ledger_of(NODE, slice_obj("s1", count=2, devices=[device("core-0", v136=CPU1)]),
                           core_claim("c", 5),
                           pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")]))
        mappings = ledger.condition("MappingsComplete")
        assert "IncompletePool" == mappings.reason
        assert mappings.message.startswith("a pool is incomplete; t/c: MissingDevice")

    def test_incomplete_pool_of_a_claim_published_for_another_node(self) -> None:
        """A claim's device in an incomplete pool makes the consuming node Stale, wherever the pool is."""
        ledger = ledger_of(NODE, slice_obj("net", pool="fabric", node=None, count=3,
                                           devices=[device("nic-0", v136=CPU1)]),
                           claim_obj("c", results=[result("nic-0", pool="fabric")]),
                           pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")]))
        assert ("Stale", "1") == (ledger.phase, figures(ledger, "cpu")["claims"])

    def test_watch_stale_flag(self) -> None:
        """Operator data older than the freshness window makes the ledger Stale (Fresh False, WatchStale)."""
        ledger = ledger_of(NODE, flags=Flags(watch_stale="no events for 300s"))
        fresh = ledger.condition("Fresh")
        assert ("Stale", "WatchStale", "no events for 300s") == (ledger.phase, fresh.reason, fresh.message)


class TestNumaZones:
    def test_capacity_claims_free(self) -> None:
        """Per zone: capacity if wholly allocated, mapping claims of results in the zone, and free."""
        hp = slice_obj("hp", pool="hp", devices=[
            device("hp-0", attributes={"numaNode": 0}, capacity={"size": "1Gi"}, multi=True,
                   v136={"hugepages-2Mi": {"capacityKey": "size"}}),
            device("hp-1", attributes={"numaNode": 1}, capacity={"size": "1Gi"}, multi=True,
                   v136={"hugepages-2Mi": {"capacityKey": "size", "allocationMultiplier": "2"}}),
        ])
        ledger = ledger_of(
            NODE, cores(), hp, core_claim("c", 0, 1, 2),
            claim_obj("h", results=[result("hp-0", pool="hp", consumed={"size": "4Mi"}),
                                    result("hp-1", pool="hp", consumed={"size": "50Mi"})]),
            pod_obj("p", containers=[container("a", claims=["x", "y"])],
                    resource_claims=[direct("x", "c"), direct("y", "h")]),
        )
        assert {
            0: {"cpu": ("4", "4", "0"), "hugepages-2Mi": ("1Gi", "4Mi", "1020Mi")},
            1: {"cpu": ("4", "2", "2"), "hugepages-2Mi": ("2Gi", "100Mi", "1948Mi")},
        } == zone_figures(ledger)
        assert frozenset({0, 1}) == claim_of(ledger, "t", "c").zones

    @pytest.mark.parametrize(
        ("attribute", "zone"),
        [
            pytest.param("numaNode", 1, id="unqualified"),
            pytest.param("dra.example.com/numaNode", 1, id="qualified-in-the-drivers-domain"),
            pytest.param("other.example.com/numaNode", None, id="another-drivers-domain"),
            pytest.param("resource.kubernetes.io/numaNode", 1, id="standard"),
            pytest.param("dra.cpu/numaNodeID", 1, id="dra-cpu"),
            pytest.param("dra.net/numaNode", 1, id="dra-net"),
            pytest.param("numaNodeID", 1, id="unqualified-id"),
            pytest.param("socket", None, id="not-a-numa-attribute"),
        ],
    )
    def test_zone_attribute(self, attribute: str, zone: int | None) -> None:
        """A device's zone comes from the known attributes; unqualified names belong to the driver's domain."""
        pool = slice_obj("s", devices=[device("d", attributes={attribute: 1}, v136=CPU1)])
        ledger = ledger_of(NODE, pool, claim_obj("c", results=[result("d")]),
                           pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")]))
        assert zone == claim_of(ledger, "t", "c").devices[0].zone
        assert ({1: {"cpu": ("1", "1", "0")}} if zone is not None else {}) == zone_figures(ledger)
        assert "1" == figures(ledger, "cpu")["claims"]  # zoned or not, the node total counts it

    @pytest.mark.parametrize(
        ("attributes", "zone"),
        [
            pytest.param((), 0, id="default-order"),
            pytest.param(("dra.cpu/numaNodeID",), 1, id="configured-first"),
            pytest.param(("missing", "numaNode"), 2, id="configured-fallback"),
            pytest.param(("missing",), None, id="configured-none"),
        ],
    )
    def test_configurable_attribute_order(self, attributes: tuple[str, ...], zone: int | None) -> None:
        """The first configured attribute the device carries names its zone."""
        pool = slice_obj("s", devices=[device("d", attributes={
            "resource.kubernetes.io/numaNode": 0, "dra.cpu/numaNodeID": 1, "numaNode": 2}, v136=CPU1)])
        ledger = ledger_of(NODE, pool, claim_obj("c", results=[result("d")]),
                           pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")]),
                           attributes=attributes or DEFAULT_NUMA_ATTRIBUTES)
        assert zone == claim_of(ledger, "t", "c").devices[0].zone
        assert ([zone] if zone is not None else []) == list(ledger.zones)

    def test_overhead_and_ordinary_requests_have_no_zone(self) -> None:
        """v1.37 overhead and ordinary requests appear in node totals only."""
        gpu = slice_obj("s", devices=[device("g", attributes={"numaNode": 0}, v137={
            "cpu": {"mapping": {"deviceMultiplier": "1"}, "overhead": {"perPod": "2"}}})])
        ledger = ledger_of(NODE, gpu, claim_obj("c", results=[result("g")]),
                           pod_obj("p", containers=[container("a", {"cpu": "4"}, claims=["x"])],
                                   resource_claims=[direct("x", "c")]))
        assert {0: {"cpu": ("1", "1", "0")}} == zone_figures(ledger)
        assert ("3", "7") == (figures(ledger, "cpu")["claims"], figures(ledger, "cpu")["requested"])

    def test_capacity_unknown_when_the_key_names_no_capacity(self) -> None:
        """A capacityKey absent from the device adds no zone capacity (and is reported by the slice)."""
        pool = slice_obj("s", devices=[device("d", attributes={"numaNode": 0}, capacity={"size": "1Gi"}, multi=True,
                                              v136={"hugepages-2Mi": {"capacityKey": "bytes"},
                                                    "cpu": {"allocationMultiplier": "1"}})])
        ledger = ledger_of(NODE, pool)
        assert {0: {"cpu": ("1", "0", "1")}} == zone_figures(ledger)
        assert ["InvalidMapping"] == [p.reason for p in ledger.problems]

    def test_claims_in_a_zone_without_capacity(self) -> None:
        """Results on devices of a zone with no node-local capacity still show their claims (free negative)."""
        remote = slice_obj("remote", pool="remote", node="n9", devices=[
            device("d", attributes={"numaNode": 3}, v136=CPU1)])
        ledger = ledger_of(NODE, remote, claim_obj("c", results=[result("d", pool="remote")]),
                           pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")]))
        assert {3: {"cpu": ("0", "1", "-1")}} == zone_figures(ledger)


class TestScheduler:
    def test_in_sync(self) -> None:
        """schedulerCharged sums the pods' statuses; equal to claims: SchedulerInSync True."""
        ledger = ledger_of(NODE, cores(), core_claim("c", 0, 1),
                           pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")],
                                   claim_statuses=[status_v136("c", ["a"], {"cpu": "4"})]))
        assert ("4", "4") == (figures(ledger, "cpu")["claims"], figures(ledger, "cpu")["schedulerCharged"])
        assert ("True", "Matched") == (ledger.condition("SchedulerInSync").status,
                                       ledger.condition("SchedulerInSync").reason)
        assert {"cpu": q("4")} == claim_of(ledger, "t", "c").scheduler_charged

    def test_diverged(self) -> None:
        """A pod bound while the gate was off has no status: the scheduler charged 0, the ledger 8."""
        ledger = ledger_of(NODE, cores(), core_claim("c", 0, 1, 2, 3),
                           pod_obj("p", containers=[container("a", {"cpu": "1"}, claims=["x"])],
                                   resource_claims=[direct("x", "c")]))
        sync = ledger.condition("SchedulerInSync")
        assert ("Ready", "False", "Diverged", "cpu: ledger 8, scheduler 0") == (
            ledger.phase, sync.status, sync.reason, sync.message)

    def test_v137_statuses(self) -> None:
        """v1.37 statuses are charged as mapping + perPod + perContainer × containers."""
        gpu = slice_obj("s", devices=[device("g", v137={"memory": {"overhead": {"perPod": "2Gi"}},
                                                        "cpu": {"overhead": {"perContainer": "500m"}}})])
        ledger = ledger_of(
            NODE, gpu, claim_obj("g", results=[result("g")]),
            pod_obj("p", containers=[container("a", claims=["x"]), container("b", claims=["x"])],
                    resource_claims=[direct("x", "g")],
                    claim_statuses=[status_v137("g", ["a", "b"], None,
                                                {"cpu": {"perContainer": "500m"}, "memory": {"perPod": "2Gi"}})]),
        )
        assert "True" == ledger.condition("SchedulerInSync").status
        charged = (figures(ledger, "cpu")["schedulerCharged"], figures(ledger, "memory")["schedulerCharged"])
        assert ("1", "2Gi") == charged

    def test_status_for_a_claim_the_pod_does_not_have(self) -> None:
        """A status entry for no claim of the pod still counts in schedulerCharged (that is what was charged)."""
        ledger = ledger_of(NODE, pod_obj("p", containers=[container("a")],
                                         claim_statuses=[status_v136("ghost", ["a"], {"cpu": "2"})]))
        assert ("0", "2", "False") == (figures(ledger, "cpu")["claims"], figures(ledger, "cpu")["schedulerCharged"],
                                       ledger.condition("SchedulerInSync").status)


class TestFitsAndPhase:
    def test_overcommitted(self) -> None:
        """requested > allocatable: free is negative, Fits False, phase Overcommitted."""
        ledger = ledger_of(node_obj("n1", allocatable={"cpu": "4"}), cores(), core_claim("c", 0),
                           pod_obj("p", containers=[container("a", {"cpu": "3"}, claims=["x"])],
                                   resource_claims=[direct("x", "c")]))
        fits = ledger.condition("Fits")
        assert ("Overcommitted", "-1", "False", "Overcommitted") == (
            ledger.phase, figures(ledger, "cpu")["free"], fits.status, fits.reason)
        assert "cpu: requested 5 > allocatable 4" == fits.message

    def test_exactly_full_fits(self) -> None:
        """free == 0 fits."""
        ledger = ledger_of(node_obj("n1", allocatable={"cpu": "4"}),
                           pod_obj("p", containers=[container("a", {"cpu": "4"})]))
        assert ("Ready", "0", "True") == (ledger.phase, figures(ledger, "cpu")["free"], ledger.condition("Fits").status)

    @pytest.mark.parametrize(
        ("flags", "ready", "overcommitted", "phase"),
        [
            pytest.param(Flags(rebuilding=True, frozen=True), False, True, "Rebuilding", id="rebuilding-first"),
            pytest.param(Flags(frozen=True), False, True, "Frozen", id="frozen-before-stale"),
            pytest.param(Flags(), False, True, "Stale", id="stale-before-overcommitted"),
            pytest.param(Flags(), True, True, "Overcommitted", id="overcommitted-before-ready"),
            pytest.param(Flags(), True, False, "Ready", id="ready"),
            pytest.param(Flags(frozen=True), True, False, "Frozen", id="frozen-alone"),
            pytest.param(Flags(rebuilding=True), True, False, "Rebuilding", id="rebuilding-alone"),
        ],
    )
    def test_phase_order(self, flags: Flags, ready: bool, overcommitted: bool, phase: str) -> None:
        """The phase is the first that applies: Rebuilding, Frozen, Stale, Overcommitted, Ready."""
        node = node_obj("n1", allocatable={"cpu": "1"}, ready=ready)
        pod = pod_obj("p", containers=[container("a", {"cpu": "2" if overcommitted else "1"})])
        ledger = ledger_of(node, pod, flags=flags)
        assert phase == ledger.phase
        assert phase in PHASES

    def test_backfill_condition(self) -> None:
        """The operator's pod-status backfill state is a fifth condition."""
        ledger = ledger_of(NODE, flags=Flags(pod_status=("True", "Backfilled", "2 pods")))
        assert ["Fresh", "MappingsComplete", "SchedulerInSync", "Fits", "PodStatusBackfill"] == [
            c.type for c in ledger.conditions]
        assert ("True", "Backfilled", "2 pods") == (ledger.condition("PodStatusBackfill").status,
                                                    ledger.condition("PodStatusBackfill").reason,
                                                    ledger.condition("PodStatusBackfill").message)


class TestSchedulerUnits:
    def test_each_pod_is_rounded_up_on_its_own(self) -> None:
        """Three pods of 1.5m cpu: the scheduler charges 2m each, so 5m of cpu does not hold them (6m)."""
        pods = [pod_obj(f"p{i}", containers=[container("a", {"cpu": "1500u"})]) for i in range(3)]
        ledger = ledger_of(node_obj("n1", allocatable={"cpu": "5m"}), *pods)
        line = ledger.resources["cpu"]
        assert ("500u", 6, 5, -1) == (str(line.free), line.requested_units, line.allocatable_units, line.free_units)
        fits = ledger.condition("Fits")
        assert ("Overcommitted", "False") == (ledger.phase, fits.status)
        assert "rounded up pod by pod as the scheduler charges it, is 6m > allocatable 5m" in fits.message

    def test_memory_units_are_bytes(self) -> None:
        """Memory is charged in whole bytes, rounded up: 1.5 bytes is 2."""
        ledger = ledger_of(node_obj("n1", allocatable={"memory": "2"}),
                           pod_obj("p", containers=[container("a", {"memory": "1500m"})]))
        assert (2, 2, 0) == (ledger.resources["memory"].requested_units, ledger.resources["memory"].allocatable_units,
                             ledger.resources["memory"].free_units)

    def test_the_sums_and_a_full_pass_agree_on_units(self) -> None:
        """The running sums give the units a pass over every pod gives (claims included)."""
        items = [node_obj("n1", allocatable={"cpu": "8"}), cores(), core_claim("c", 0),
                 pod_obj("p", containers=[container("a", {"cpu": "100500u"}, claims=["x"])],
                         resource_claims=[direct("x", "c")]),
                 pod_obj("q", containers=[container("a", {"cpu": "1500u"})])]
        state = load(*items)
        full = NaiveCatalog(list(state.nodes.values()), list(state.pods.values()), list(state.claims.values()),
                            list(state.slices.values()), state.release).ledger(state.nodes["n1"])
        incremental = state.ledger("n1")
        assert incremental is not None
        assert (2103, 2103) == (full.resources["cpu"].requested_units, incremental.resources["cpu"].requested_units)


class TestResourceLines:
    def test_which_resources_are_listed(self) -> None:
        """Node-allocatable resources of the node and of the streams are listed; pods and extended ones are not."""
        node = node_obj("n1", allocatable={"cpu": "8", "memory": "16Gi", "pods": "110", "nvidia.com/gpu": "8",
                                           "hugepages-1Gi": "0"})
        hp = slice_obj("s", devices=[device("d", v136={"hugepages-2Mi": {"allocationMultiplier": "2Mi"}})])
        ledger = ledger_of(node, hp, claim_obj("c", results=[result("d")]),
                           pod_obj("p", containers=[container("a", {"cpu": "1", "nvidia.com/gpu": "1",
                                                                    "ephemeral-storage": "1Gi"}, claims=["x"])],
                                   resource_claims=[direct("x", "c")]))
        assert ["cpu", "ephemeral-storage", "hugepages-1Gi", "hugepages-2Mi", "memory"] == list(ledger.resources)
        assert {"allocatable": "0", "podRequests": "0", "claims": "2Mi", "requested": "2Mi", "free": "-2Mi",
                "schedulerCharged": "0"} == figures(ledger, "hugepages-2Mi")
        assert "Overcommitted" == ledger.phase

    def test_empty_node(self) -> None:
        """A node with no pods: requested 0, free = allocatable, Ready."""
        ledger = ledger_of(NODE)
        assert {"allocatable": "64Gi", "podRequests": "0", "claims": "0", "requested": "0", "free": "64Gi",
                "schedulerCharged": "0"} == figures(ledger, "memory")
        assert ("Ready", ()) == (ledger.phase, ledger.claims)

    def test_node_problems_are_listed(self) -> None:
        """A malformed allocatable is the node's own problem, and the rest is still computed."""
        ledger = ledger_of(node_obj("n1", allocatable={"cpu": "12x", "memory": "1Gi"}),
                           pod_obj("p", containers=[container("a", {"cpu": "1", "memory": "1Gi"})]))
        assert [("MalformedField", "status.allocatable.cpu")] == [(p.reason, p.field) for p in ledger.problems]
        assert ("0", "1", "-1") == tuple(figures(ledger, "cpu")[k] for k in ("allocatable", "requested", "free"))
        assert "0" == figures(ledger, "memory")["free"]


class TestMappingFingerprint:
    def test_changes_with_mappings_only(self) -> None:
        """The fingerprint changes when a device mapping changes, not when pods come and go."""
        before = ledger_of(NODE, cores()).mapping_fingerprint
        same = ledger_of(NODE, cores(), pod_obj("p", containers=[container("a", {"cpu": "1"})])).mapping_fingerprint
        after = ledger_of(NODE, cores(multiplier="3")).mapping_fingerprint
        assert (True, False) == (before == same, before == after)


class TestClusterState:
    def test_generation_regression(self) -> None:
        """An older generation of a stored slice is refused (``Applied.refused``) and changes nothing."""
        state = ClusterState()
        state.apply("nodes", None, NODE)
        assert {"n1"} == state.apply("resourceslices", None, cores(generation=2)).dirty
        refused = state.apply("resourceslices", None, cores(count=1, generation=1))
        assert (("n1-cores", 2, 1), set()) == ((refused.refused.name, refused.refused.generation,
                                                refused.refused.rejected), refused.dirty)
        assert 4 == len(state.slices["n1-cores"].devices)
        assert {"n1"} == state.apply("resourceslices", None, cores(count=1, generation=2)).dirty
        assert {"n1"} == state.apply("resourceslices", None, cores(count=1, generation=3)).dirty

    def test_a_slice_moved_to_another_pool_is_no_regression(self) -> None:
        """The same slice name in another pool may have any generation."""
        state = ClusterState()
        state.apply("resourceslices", None, cores(generation=5))
        assert state.apply("resourceslices", None, cores(pool="other", generation=1)).refused is None
        assert ("other", 1) == (state.slices["n1-cores"].pool, state.slices["n1-cores"].generation)
        assert ("dra.example.com", "n1") not in state.objects.pools

    def test_dirty_sets(self) -> None:
        """Each change names the nodes whose ledgers it can change."""
        state = ClusterState()
        for name in ("n1", "n2", "n3"):
            assert {name} == state.upsert_node(read_node(node_obj(name)))
        assert {"n1"} == state.apply("resourceslices", None, cores()).dirty
        pod = pod_obj("p", node="n2", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")])
        assert {"n2"} == state.upsert_pod(read_pod(pod))
        assert {"n2"} == state.upsert_claim(read_claim(core_claim("c", 0)))
        assert {"n1", "n2"} == state.apply("resourceslices", None, cores(multiplier="3")).dirty  # the claim's pool
        moved = pod_obj("p", node="n3", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")])
        assert {"n2", "n3"} == state.upsert_pod(read_pod(moved))
        done = pod_obj("p", node="n3", phase="Succeeded", containers=[container("a")])
        assert {"n3"} == state.upsert_pod(read_pod(done))
        assert set() == state.upsert_pod(read_pod(done))  # an uncounted pod touches no ledger
        assert set() == state.delete_pod(("t", "p"))
        assert set() == state.delete_pod(("t", "never"))
        assert set() == state.delete_slice("never")
        assert set() == state.delete_claim(("t", "c"))  # no consumer left
        assert {"n1"} == state.delete_slice("n1-cores")
        fabric = slice_obj("fabric", pool="fabric", node=None, devices=[device("nic", v136=CPU1)])
        assert set() == state.apply("resourceslices", None, fabric).dirty  # published for no node, consumed by nobody
        state.upsert_pod(read_pod(moved))
        state.upsert_claim(read_claim(claim_obj("c", results=[result("nic", pool="fabric")])))
        assert {"n3"} == state.delete_slice("fabric")  # its consumers' ledgers change
        assert {"n1"} == state.delete_node("n1")
        assert state.ledger("n1") is None

    def test_consumers_are_sorted_and_cached_consistently(self) -> None:
        """consumers() lists the counted consumers sorted by namespace/name, and follows changes."""
        state = ClusterState()
        for name in ("zeta", "alpha", "mid"):
            state.upsert_pod(read_pod(pod_obj(name, containers=[container("a", claims=["x"])],
                                              resource_claims=[direct("x", "c")])))
        consumers = state.objects.consumers
        assert [("t", "alpha"), ("t", "mid"), ("t", "zeta")] == list(consumers(("t", "c")))
        state.delete_pod(("t", "alpha"))
        assert [("t", "mid"), ("t", "zeta")] == list(consumers(("t", "c")))
        assert [] == list(consumers(("t", "other")))

    def test_pool_completeness(self) -> None:
        """A pool is complete when its newest generation has resourceSliceCount slices."""
        state = ClusterState()
        pools = state.objects.pools
        key = ("dra.example.com", "n1")
        state.apply("resourceslices", None, slice_obj("a", count=2, generation=1))
        assert not pools[key].complete
        state.apply("resourceslices", None, slice_obj("b", count=2, generation=1))
        assert pools[key].complete
        state.apply("resourceslices", None, slice_obj("a", count=2, generation=2))
        assert not pools[key].complete
        state.delete_slice("b")
        state.delete_slice("a")
        assert key not in pools

    def test_a_device_name_published_twice_makes_its_pool_invalid(self) -> None:
        """A device name published twice in the newest generation makes the pool invalid, as the allocator calls it:
        its devices resolve to nothing (Stale, InvalidPool), whatever the order the slices arrived in."""
        first = slice_obj("s-a", devices=[device("d", v136={"cpu": {"allocationMultiplier": "2"}})], count=2)
        second = slice_obj("s-b", devices=[device("d", v136={"cpu": {"allocationMultiplier": "3"}})], count=2)
        consumer = [claim_obj("c", results=[result("d")]),
                    pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")])]
        one = ledger_of(NODE, first, second, *consumer)
        other = ledger_of(NODE, second, first, *consumer)
        assert "0" == figures(one, "cpu")["claims"] == figures(other, "cpu")["claims"]
        assert ("Stale", ("InvalidPool",)) == (one.phase, claim_of(one, "t", "c").problems)
        assert {} == one.zones == other.zones

    def test_node_devices_skip_older_generations(self) -> None:
        """Only the newest generation's devices are the node's devices."""
        state = load(cores(count=2, name="new", generation=2), cores(count=3, name="old", generation=1))
        assert ["core-0", "core-1"] == [d.name for _, d in state.objects.node_devices("n1")]
        assert {("dra.example.com", "n1")} == set(state.objects.node_pools("n1"))


def _a5_cluster(shape: str) -> list[Raw]:
    """The reference document's A5 example: a GPU (8Gi + 1 cpu), 2Mi hugepages by consumed capacity, 4 cores."""
    if shape == "v1.36":
        gpu = {"memory": {"allocationMultiplier": "8Gi"}, "cpu": {"allocationMultiplier": "1"}}
        hp = {"hugepages-2Mi": {"capacityKey": "size"}}
        core = {"cpu": {"allocationMultiplier": "2"}}
    else:
        gpu = {"memory": {"overhead": {"perPod": "8Gi"}}, "cpu": {"overhead": {"perContainer": "1"}}}
        hp = {"hugepages-2Mi": {"mapping": {"capacityKey": "size", "capacityMultiplier": "1"}}}
        core = {"cpu": {"mapping": {"deviceMultiplier": "2"}}}
    devices = [device("gpu-0", **{("v136" if shape == "v1.36" else "v137"): gpu}),
               device("hp-0", capacity={"size": "1Gi"}, multi=True, **{("v136" if shape == "v1.36" else "v137"): hp})]
    devices += [device(f"core-{i}", **{("v136" if shape == "v1.36" else "v137"): core}) for i in range(4)]
    return [
        NODE, slice_obj("n1-dra", devices=[*devices, device("nic")]),
        claim_obj("app-accel", "team-a", results=[result("gpu-0"), result("hp-0", consumed={"size": "64Mi"})]),
        claim_obj("app-cpus", "team-a", results=[result(f"core-{i}") for i in range(4)]),
        claim_obj("app-nic", "team-a", results=[result("nic")]),
        pod_obj("app", "team-a",
                init_containers=[container("init", claims=["cpus"])],
                containers=[container("app", {"cpu": "500m"}, claims=["accel", "cpus", "nic"]),
                            container("sidecar", {"cpu": "100m"}, claims=["cpus"])],
                resource_claims=[direct("accel", "app-accel"), direct("cpus", "app-cpus"), direct("nic", "app-nic")]),
    ]


def _planned(items: list[Raw], shape: str, pod: tuple[str, str] = ("team-a", "app")) -> Any:
    state = load(*items)
    state.set_release(shape)  # type: ignore[arg-type]
    return planned_statuses(state.pods[pod], state.uses(state.pods[pod]), state.release)


class TestPlannedStatuses:
    def test_v136_shape(self) -> None:
        """v1.36: one entry per claim with mapped devices, sorted by name, init containers first, resources."""
        assert [
            {"resourceClaimName": "app-accel", "containers": ["app"],
             "resources": {"cpu": "1", "hugepages-2Mi": "64Mi", "memory": "8Gi"}},
            {"resourceClaimName": "app-cpus", "containers": ["init", "app", "sidecar"], "resources": {"cpu": "8"}},
        ] == _planned(_a5_cluster("v1.36"), "v1.36")

    def test_v137_shape(self) -> None:
        """v1.37: mapping and overhead lists, each sorted by resource name."""
        assert [
            {"resourceClaimName": "app-accel", "containers": ["app"],
             "mapping": [{"name": "hugepages-2Mi", "quantity": "64Mi"}],
             "overhead": [{"name": "cpu", "perContainer": "1"}, {"name": "memory", "perPod": "8Gi"}]},
            {"resourceClaimName": "app-cpus", "containers": ["init", "app", "sidecar"],
             "mapping": [{"name": "cpu", "quantity": "8"}]},
        ] == _planned(_a5_cluster("v1.37"), "v1.37")

    def test_the_plan_is_what_the_ledger_counts(self) -> None:
        """Written back as the pod's status, the plan puts the ledger in sync with the scheduler."""
        items = _a5_cluster("v1.36")
        items[-1]["status"]["nodeAllocatableResourceClaimStatuses"] = _planned(items, "v1.36")
        ledger = ledger_of(*items)
        assert ("True", "9") == (ledger.condition("SchedulerInSync").status, figures(ledger, "cpu")["claims"])

    def test_no_mapped_claims(self) -> None:
        """A pod whose claims map nothing gets an empty list (the scheduler writes no entry)."""
        items = [NODE, slice_obj("s", devices=[device("nic")]), claim_obj("c", results=[result("nic")]),
                 pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")])]
        assert [] == _planned(items, "v1.36", ("t", "p"))

    def test_overhead_only_claim_may_be_shared(self) -> None:
        """A v1.37 overhead-only claim shared by two pods still has a plan for each."""
        gpu = slice_obj("s", devices=[device("g", v137={"memory": {"overhead": {"perPod": "2Gi"}}})])
        items = [NODE, gpu, claim_obj("g", results=[result("g")]),
                 *(pod_obj(n, containers=[container("a", claims=["x"])], resource_claims=[direct("x", "g")])
                   for n in ("p1", "p2"))]
        assert [{"resourceClaimName": "g", "containers": ["a"], "overhead": [{"name": "memory", "perPod": "2Gi"}]}] \
            == _planned(items, "v1.37", ("t", "p2"))

    @pytest.mark.parametrize(
        "case",
        [
            pytest.param("template-not-generated", id="template-not-generated"),
            pytest.param("claim-missing", id="claim-missing"),
            pytest.param("claim-unallocated", id="claim-unallocated"),
            pytest.param("device-missing", id="device-missing"),
            pytest.param("capacity-key-without-consumed", id="capacity-key-without-consumed"),
            pytest.param("mapped-claim-shared", id="mapped-claim-shared"),
        ],
    )
    def test_unsure_means_none(self, case: str) -> None:
        """Whenever there is no single right answer, the plan is None (nothing is written)."""
        hp = device("hp", capacity={"size": "1Gi"}, v136={"memory": {"capacityKey": "size"}})
        pool = slice_obj("s", devices=[device("d", v136=CPU1), hp])
        claim = {
            "claim-unallocated": claim_obj("c", results=None),
            "device-missing": claim_obj("c", results=[result("gone")]),
            "capacity-key-without-consumed": claim_obj("c", results=[result("hp")]),
        }.get(case, claim_obj("c", results=[result("d")]))
        entry = templated("x") if case == "template-not-generated" else direct("x", "c")
        items = [NODE, pool, pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[entry])]
        if case != "claim-missing":
            items.append(claim)
        if case == "mapped-claim-shared":
            items.append(pod_obj("q", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")]))
        assert _planned(items, "v1.36", ("t", "p")) is None


def _resized(containers: list[Raw], statuses: list[Raw], *, infeasible: bool = False,
             claim: bool = False) -> list[Raw]:
    """A node, a 2-cpu core claim (when ``claim``) and a pod resized in place: its container statuses as a
    kubelet writes them."""
    items: list[Raw] = [node_obj("n1", allocatable={"cpu": "16"})]
    pod = pod_obj("p", containers=containers, resource_claims=[direct("x", "c")] if claim else ())
    pod["status"]["containerStatuses"] = statuses
    if infeasible:
        pod["status"]["conditions"] = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]
    if claim:
        items += [cores(), core_claim("c", 0)]
    return [*items, pod]


def _status(name: str, actuated: str | None, allocated: str | None) -> Raw:
    out: Raw = {"name": name}
    if actuated is not None:
        out["resources"] = {"requests": {"cpu": actuated}}
    if allocated is not None:
        out["allocatedResources"] = {"cpu": allocated}
    return out


def _requested(items: list[Raw], api: str) -> str:
    state = load(*items)
    state.set_release(api)  # type: ignore[arg-type]
    ledger = state.ledger("n1")
    assert ledger is not None
    return figures(ledger, "cpu")["requested"]


class TestInPlaceResize:
    @pytest.mark.parametrize("api", ["v1.36", "v1.37"])
    def test_a_shrink_not_yet_actuated_still_charges_the_old_size(self, api: str) -> None:
        """Spec 1 cpu, allocated 1, still running with 4: the scheduler charges 4 until the kubelet actuates."""
        items = _resized([container("a", {"cpu": "1"})], [_status("a", "4", "1")])
        assert "4" == _requested(items, api)

    @pytest.mark.parametrize("api", ["v1.36", "v1.37"])
    def test_a_growth_counts_at_once(self, api: str) -> None:
        """Spec 3 (resized up), allocated 3, actuated 1: 3."""
        assert "3" == _requested(_resized([container("a", {"cpu": "3"})], [_status("a", "1", "3")]), api)

    @pytest.mark.parametrize("api", ["v1.36", "v1.37"])
    def test_an_infeasible_resize_leaves_the_spec_out(self, api: str) -> None:
        """PodResizePending=Infeasible: max(actuated, allocated) only; the spec's 8 does not count."""
        items = _resized([container("a", {"cpu": "8"})], [_status("a", "1", "2")], infeasible=True)
        assert "2" == _requested(items, api)

    @pytest.mark.parametrize(("api", "expected"), [("v1.36", "6"), ("v1.37", "4")])
    def test_the_claims_are_added_per_release(self, api: str, expected: str) -> None:
        """Shrunk from 4 to 1 with a 2-cpu claim: v1.36 adds the claim to max(1, 4, 1) = 6; v1.37 takes
        max(1 + 2, 4, 1 + 2) = 4 (the actuated aggregate holds no claim)."""
        items = _resized([container("a", {"cpu": "1"}, claims=["x"])], [_status("a", "4", "1")], claim=True)
        assert expected == _requested(items, api)

    @pytest.mark.parametrize(("api", "expected"), [("v1.36", "6"), ("v1.37", "4")])
    def test_two_containers_resized_apart_differ_by_release(self, api: str, expected: str) -> None:
        """a: 3 → 1 (actuated 3), b: 1 → 3 (actuated 1, allocated 2). v1.36 takes each container's max: 3 + 3;
        v1.37 the max of the aggregates: spec 4, actuated 4, allocated 3."""
        items = _resized([container("a", {"cpu": "1"}), container("b", {"cpu": "3"})],
                         [_status("a", "3", "1"), _status("b", "1", "2")])
        assert expected == _requested(items, api)

    def test_a_dump_without_kubelet_versions_follows_its_shapes(self) -> None:
        """A dump with a v1.37-shaped slice follows v1.37's rules; one without, v1.36's (no kubelet says more)."""
        items = _resized([container("a", {"cpu": "1"}, claims=["x"])], [_status("a", "4", "1")], claim=True)
        assert "v1.36" == loading.load(items, "dump").state.release
        overhead = slice_obj("o", devices=[device("o", v137={"memory": {"overhead": {"perPod": "1Mi"}}})])
        assert "v1.37" == loading.load([*items, overhead], "dump").state.release


class TestClaimReferences:
    def test_a_container_naming_a_claim_twice_is_listed_twice_in_v136(self) -> None:
        """scheduler v1.36 lists a container once per reference; v1.37's API refuses that, so once there."""
        pod = pod_obj("p", resource_claims=[direct("x", "c")], containers=[
            {"name": "a", "image": "x", "resources": {"claims": [{"name": "x", "request": "r0"},
                                                                 {"name": "x", "request": "r1"}]}},
            container("b", claims=["x"])])
        items = [NODE, cores(), core_claim("c", 0, 1), pod]
        assert ["a", "a", "b"] == _planned(items, "v1.36", ("t", "p"))[0]["containers"]
        items = [NODE, cores(v137=True), core_claim("c", 0, 1), pod]
        assert ["a", "b"] == _planned(items, "v1.37", ("t", "p"))[0]["containers"]
