"""Views: typed records read from raw Nodes, Pods, ResourceSlices and ResourceClaims (v1.36 and v1.37 shapes)."""

from __future__ import annotations

import copy
import sys
from enum import Enum
from typing import Any

import pytest
from hypothesis import given

from draledger.core.quantities import Quantity, parse_quantity
from draledger.core.views import ObjectRef, Problem, read_claim, read_node, read_pod, read_slice, sharing
from draledger.core.views.mappings import is_node_allocatable
from draledger.core.views.problems import ref_of, show
from draledger.core.views.slices import DeviceView
from strategies import (
    CPU1,
    claim_obj,
    container,
    device,
    direct,
    json_values,
    nested,
    node_obj,
    pod_obj,
    result,
    slice_obj,
    status_v136,
    status_v137,
    templated,
)


def q(text: str) -> Any:
    return parse_quantity(text)


def only_problem(problems: tuple[Problem, ...]) -> Problem:
    assert 1 == len(problems), problems
    return problems[0]


class TestNodeView:
    def test_reads_allocatable_and_readiness(self) -> None:
        """A Ready node: name, uid, allocatable and labels."""
        raw = node_obj("n1", allocatable={"cpu": "16", "memory": "64Gi", "pods": 110}, reason="KubeletReady")
        view = read_node(raw)
        assert "n1" == view.name
        assert {"cpu": q("16"), "memory": q("64Gi"), "pods": q("110")} == view.allocatable
        assert view.ready
        assert "KubeletReady" == view.ready_reason
        assert {"kubernetes.io/hostname": "n1"} == view.labels
        assert () == view.problems

    @pytest.mark.parametrize(
        ("ready", "reason", "expected_ready", "expected_reason"),
        [
            pytest.param(False, "KubeletNotReady", False, "KubeletNotReady", id="not-ready-with-reason"),
            pytest.param(False, None, False, "NotReady", id="not-ready-without-reason"),
            pytest.param(True, None, True, "Ready", id="ready-without-reason"),
            pytest.param(None, None, False, "NoReadyCondition", id="no-ready-condition"),
        ],
    )
    def test_readiness(
        self, ready: bool | None, reason: str | None, expected_ready: bool, expected_reason: str
    ) -> None:
        """Only a Ready condition with status True makes the node ready; the reason says why not."""
        view = read_node(node_obj("n1", ready=ready, reason=reason))
        assert expected_ready == view.ready
        assert expected_reason == view.ready_reason

    def test_other_conditions_do_not_matter(self) -> None:
        """Only the Ready condition decides readiness, wherever it is in the list."""
        raw = node_obj("n1", ready=True)
        raw["status"]["conditions"].insert(0, {"type": "MemoryPressure", "status": "True"})
        raw["status"]["conditions"].append({"type": "DiskPressure", "status": "False"})
        assert (True, "Ready") == (read_node(raw).ready, read_node(raw).ready_reason)

    def test_ignores_unknown_fields_and_non_string_labels(self) -> None:
        """Unknown fields are ignored; non-string label values are dropped."""
        raw = node_obj("n1")
        raw["spec"] = {"podCIDR": "10.0.0.0/24", "future": {"x": 1}}
        raw["status"]["nodeInfo"] = {"kubeletVersion": "v1.36.0"}
        raw["metadata"]["labels"]["weird"] = 3
        view = read_node(raw)
        assert {"kubernetes.io/hostname": "n1"} == view.labels
        assert () == view.problems

    def test_bad_allocatable_quantity(self) -> None:
        """cpu: "12x" is named (kind, name, field, value); memory is still read."""
        view = read_node(node_obj("n1", allocatable={"cpu": "12x", "memory": "8Gi"}))
        problem = only_problem(view.problems)
        assert ("MalformedField", ObjectRef("Node", "n1"), "status.allocatable.cpu", "'12x'") == (
            problem.reason, problem.obj, problem.field, problem.value)
        assert {"memory": q("8Gi")} == view.allocatable

    def test_conditions_not_a_list(self) -> None:
        """A non-list status.conditions is a problem, and the node reads as not Ready."""
        raw = node_obj("n1")
        raw["status"]["conditions"] = {"type": "Ready"}
        view = read_node(raw)
        problem = only_problem(view.problems)
        assert "status.conditions" == problem.field
        assert "expected a list" in problem.message
        assert not view.ready
        assert {"cpu": q("16"), "memory": q("64Gi")} == view.allocatable


class TestPodView:
    def test_reads_the_v136_example(self) -> None:
        """The A5 example pod: containers, claims with their referencing containers, v1.36 statuses."""
        raw = pod_obj(
            "app", "team-a",
            containers=[
                container("app", {"cpu": "500m", "memory": "1Gi"}, claims=["accel", "cpus"]),
                container("sidecar", {"cpu": "100m", "memory": "128Mi"}, claims=["cpus"]),
            ],
            resource_claims=[direct("accel", "app-accel"), direct("cpus", "app-cpus")],
            claim_statuses=[
                status_v136("app-accel", ["app"], {"cpu": "1", "hugepages-2Mi": "64Mi", "memory": "8Gi"}),
                status_v136("app-cpus", ["app", "sidecar"], {"cpu": "8"}),
            ],
        )
        view = read_pod(raw)
        assert ("team-a", "app") == view.key
        assert "n1" == view.node_name
        assert view.counted
        assert {"cpu": q("600m"), "memory": q("1152Mi")} == view.ordinary
        assert [("accel", "app-accel", False, ("app",)), ("cpus", "app-cpus", False, ("app", "sidecar"))] == [
            (c.name, c.claim_name, c.from_template, c.containers) for c in view.claims]
        assert view.claim_statuses is not None
        accel, cpus = view.claim_statuses
        assert "v1.36" == accel.shape
        assert {"cpu": q("1"), "hugepages-2Mi": q("64Mi"), "memory": q("8Gi")} == accel.charged()
        assert {"cpu": q("8")} == cpus.charged()
        assert () == view.problems

    def test_reads_the_v137_status(self) -> None:
        """A v1.37 status charges mapping + perPod + perContainer × its containers."""
        raw = pod_obj(
            "app", containers=[container("a", claims=["g"]), container("b", claims=["g"])],
            resource_claims=[direct("g", "gpu")],
            claim_statuses=[status_v137("gpu", ["a", "b"], {"cpu": "2"},
                                        {"cpu": {"perContainer": "500m"}, "memory": {"perPod": "2Gi"}})],
        )
        (status,) = read_pod(raw).claim_statuses or ()
        assert "v1.37" == status.shape
        assert {"cpu": q("2")} == status.mapping
        assert {"memory": q("2Gi")} == status.per_pod
        assert {"cpu": q("500m")} == status.per_container
        assert {"cpu": q("3"), "memory": q("2Gi")} == status.charged()

    def test_v137_overhead_only_status(self) -> None:
        """A v1.37 status with only overhead (no mapping) charges the overhead alone."""
        raw = pod_obj("app", containers=[container("a", claims=["g"])], resource_claims=[direct("g", "gpu")],
                      claim_statuses=[status_v137("gpu", ["a"], None, {"cpu": {"perPod": "1", "perContainer": "1"}})])
        (status,) = read_pod(raw).claim_statuses or ()
        assert "v1.37" == status.shape
        assert {"cpu": q("2")} == status.charged()

    def test_absent_status_is_none_and_empty_status_is_empty(self) -> None:
        """No nodeAllocatableResourceClaimStatuses is None (never charged); an empty list is ()."""
        assert read_pod(pod_obj("p", containers=[container("a")])).claim_statuses is None
        assert () == read_pod(pod_obj("p", containers=[container("a")], claim_statuses=[])).claim_statuses

    def test_template_claims_resolve_through_status(self) -> None:
        """A template claim's ResourceClaim name comes from status.resourceClaimStatuses; until then it is None."""
        raw = pod_obj(
            "p", containers=[container("a", claims=["gen", "pending"])],
            resource_claims=[templated("gen"), templated("pending")],
            generated={"gen": "p-gen-x7k2q", "pending": None},
        )
        gen, pending = read_pod(raw).claims
        assert ("p-gen-x7k2q", True) == (gen.claim_name, gen.from_template)
        assert (None, True) == (pending.claim_name, pending.from_template)

    def test_a_container_naming_a_claim_twice(self) -> None:
        """A container that lists one claim twice is one referencing container."""
        raw = pod_obj("p", containers=[container("a", claims=["x", "x"]), container("b", claims=["x"])],
                      resource_claims=[direct("x", "c")])
        assert ("a", "b") == read_pod(raw).claims[0].containers

    def test_init_containers_and_sidecars(self) -> None:
        """Ordinary requests follow the scheduler's init-container and sidecar rule."""
        raw = pod_obj(
            "p",
            init_containers=[container("init", {"cpu": "4", "memory": "64Mi"}),
                             container("sidecar", {"cpu": "500m", "memory": "128Mi"}, restart_policy="Always")],
            containers=[container("app", {"cpu": "2500m", "memory": "1Gi"})],
        )
        assert {"cpu": q("4"), "memory": q("1152Mi")} == read_pod(raw).ordinary

    def test_limits_default_requests(self) -> None:
        """A container with only a limit requests its limit (API defaulting); a request is never overridden."""
        raw = pod_obj("p", containers=[container("a", {"cpu": "1"}, limits={"cpu": "2", "memory": "1Gi"})])
        assert {"cpu": q("1"), "memory": q("1Gi")} == read_pod(raw).ordinary

    def test_pod_level_resources_and_overhead(self) -> None:
        """spec.resources.requests and spec.overhead are kept apart from the ordinary requests."""
        raw = pod_obj("p", containers=[container("a", {"cpu": "1"})], pod_level={"cpu": "10"},
                      overhead={"cpu": "250m", "memory": "128Mi"})
        view = read_pod(raw)
        assert {"cpu": q("10")} == view.pod_level
        assert {"cpu": q("250m"), "memory": q("128Mi")} == view.overhead
        assert {"cpu": q("1")} == view.ordinary

    @pytest.mark.parametrize(
        ("node", "phase", "counted"),
        [
            pytest.param("n1", "Running", True, id="running"),
            pytest.param("n1", "Pending", True, id="bound-pending"),
            pytest.param("n1", None, True, id="no-phase"),
            pytest.param("n1", "Succeeded", False, id="succeeded"),
            pytest.param("n1", "Failed", False, id="failed"),
            pytest.param(None, "Pending", False, id="unbound"),
        ],
    )
    def test_counted(self, node: str | None, phase: str | None, counted: bool) -> None:
        """A pod counts when bound and neither Succeeded nor Failed."""
        assert counted == read_pod(pod_obj("p", node=node, phase=phase, containers=[container("a")])).counted

    def test_scheduling_gates(self) -> None:
        """Gated pods keep their gates, creation time and node affinity; others keep nothing of it."""
        raw = pod_obj("p", node=None, containers=[container("a")])
        raw["spec"]["schedulingGates"] = [{"name": "draledger.dev/ledger-ready"}, {"name": 3}]
        raw["spec"]["affinity"] = {"nodeAffinity": {"x": 1}}
        raw["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
        view = read_pod(raw)
        assert ("draledger.dev/ledger-ready",) == view.scheduling_gates
        assert view.gate_info is not None
        assert ("2026-01-01T00:00:00Z", True, {"x": 1}) == (
            view.gate_info.created, view.gate_info.has_affinity, view.gate_info.node_affinity)
        assert read_pod(pod_obj("p", containers=[container("a")])).gate_info is None

    def test_ignores_unknown_fields(self) -> None:
        """Fields the ledger does not know (future API fields included) are ignored without problems."""
        raw = pod_obj("p", containers=[container("a", {"cpu": "1"})])
        raw["spec"]["futureField"] = {"deep": [1, 2]}
        raw["spec"]["containers"][0]["futureField"] = "x"
        raw["status"]["additionalNodeAllocatableResources"] = [{"source": {"name": "x"}}]
        view = read_pod(raw)
        assert () == view.problems
        assert {"cpu": q("1")} == view.ordinary

    def test_bad_quantity(self) -> None:
        """cpu: "12x" is named with kind, namespace/name, field and value; the rest of the pod is read."""
        raw = pod_obj("p", "team-a", containers=[container("a", {"cpu": "12x", "memory": "1Gi"}),
                                                  container("b", {"cpu": "1"})])
        view = read_pod(raw)
        problem = only_problem(view.problems)
        assert ("MalformedField", ObjectRef("Pod", "p", "team-a"), "spec.containers[0].resources.requests.cpu",
                "'12x'") == (problem.reason, problem.obj, problem.field, problem.value)
        assert {"cpu": q("1"), "memory": q("1Gi")} == view.ordinary
        assert "MalformedField: Pod team-a/p field spec.containers[0].resources.requests.cpu = '12x': " in str(problem)

    def test_pod_without_spec(self) -> None:
        """A Pod without spec is named and reads as requesting nothing, bound nowhere."""
        raw = pod_obj("p", containers=[container("a")])
        del raw["spec"]
        view = read_pod(raw)
        problem = only_problem(view.problems)
        assert ("Pod", "t/p", "spec") == (problem.obj.kind if problem.obj else None,
                                          f"{view.namespace}/{view.name}", problem.field)
        assert "None" == problem.value
        assert {} == view.ordinary
        assert not view.counted

    @pytest.mark.parametrize(
        ("path", "value", "field"),
        [
            pytest.param(("spec", "containers"), {"name": "a"}, "spec.containers", id="containers"),
            pytest.param(("spec", "resourceClaims"), "claim", "spec.resourceClaims", id="resourceClaims"),
            pytest.param(("status", "nodeAllocatableResourceClaimStatuses"), {"x": 1},
                         "status.nodeAllocatableResourceClaimStatuses", id="claimStatuses"),
            pytest.param(("status", "resourceClaimStatuses"), 7, "status.resourceClaimStatuses", id="claimNames"),
        ],
    )
    def test_non_list_where_a_list_is_expected(self, path: tuple[str, str], value: object, field: str) -> None:
        """A non-list where a list belongs is named; the rest of the pod is still read."""
        raw = pod_obj("p", containers=[container("a", {"cpu": "1"})], overhead={"cpu": "100m"})
        raw[path[0]][path[1]] = value
        view = read_pod(raw)
        problem = only_problem(view.problems)
        assert (field, "expected a list") == (problem.field, problem.message)
        assert {"cpu": q("100m")} == view.overhead
        assert "n1" == view.node_name

    def test_non_object_where_an_object_is_expected(self) -> None:
        """A container that is not an object is named; its siblings are still read."""
        raw = pod_obj("p", containers=[container("a", {"cpu": "1"})])
        raw["spec"]["containers"].append("oops")
        view = read_pod(raw)
        problem = only_problem(view.problems)
        assert ("spec.containers[1]", "expected an object", "'oops'") == (problem.field, problem.message, problem.value)
        assert {"cpu": q("1")} == view.ordinary

    def test_claim_entry_without_a_source(self) -> None:
        """A spec.resourceClaims entry naming neither a claim nor a template is named."""
        raw = pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[{"name": "x"}])
        view = read_pod(raw)
        problem = only_problem(view.problems)
        assert "spec.resourceClaims[0]" == problem.field
        assert (None, False) == (view.claims[0].claim_name, view.claims[0].from_template)

    def test_bad_status_entries(self) -> None:
        """Malformed claim-status quantities and names are named; the good entries are still read."""
        raw = pod_obj("p", containers=[container("a")], claim_statuses=[
            status_v136("c1", ["a"], {"cpu": "1", "memory": "bad"}),
            {"resourceClaimName": "c2", "containers": ["a", 3], "mapping": [{"name": "cpu", "quantity": "x"}],
             "overhead": [{"name": "cpu", "perPod": "-"}, {"name": 5, "perContainer": "1"}]},
        ])
        view = read_pod(raw)
        fields = sorted(p.field for p in view.problems)
        assert [
            "status.nodeAllocatableResourceClaimStatuses[0].resources.memory",
            "status.nodeAllocatableResourceClaimStatuses[1].mapping[0].quantity",
            "status.nodeAllocatableResourceClaimStatuses[1].overhead[0].perPod",
            "status.nodeAllocatableResourceClaimStatuses[1].overhead[1].name",
        ] == fields
        first, second = view.claim_statuses or ()
        assert {"cpu": q("1")} == first.charged()
        assert ("a",) == second.containers
        assert {} == second.charged()

    def test_equal_requests_share_one_dict(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Rule 7 (views.sharing): pods of one template keep one requests dict; other requests keep their own, and
        past the cap nothing more is kept."""
        one = read_pod(_typical_pod("web-1"))
        two = read_pod(_typical_pod("web-2"))
        assert one.ordinary is two.ordinary
        other = pod_obj("api-1", "team-a", containers=[container("app", {"cpu": "3"})])
        assert read_pod(other).ordinary == {"cpu": q("3")}
        assert read_pod(other).ordinary is not one.ordinary
        monkeypatch.setattr(sharing, "_SHARED", {})
        monkeypatch.setattr(sharing, "SHARED_CAP", 1)
        assert read_pod(other).ordinary is read_pod(other).ordinary
        assert read_pod(_typical_pod("web-3")).ordinary is not read_pod(_typical_pod("web-4")).ordinary
        assert read_pod(_typical_pod("web-5")).ordinary == one.ordinary

    def test_retained_view_is_small_and_holds_no_raw_body(self) -> None:
        """A typical pod's view retains well under 2 KiB, and none of the raw body's dicts or lists."""
        raw = _typical_pod("web-7d9f8c6b5-abcde")
        other = _typical_pod("web-7d9f8c6b5-fghij")
        view = read_pod(raw)
        assert _marginal_size(view, read_pod(other)) < 2048
        assert _deep_size(raw) > 8 * 1024  # the body it was read from is much larger
        raw_containers = _containers_of(raw)
        assert not [obj for obj in _reachable(view).values() if id(obj) in raw_containers]


def _typical_pod(name: str) -> dict[str, Any]:
    raw = pod_obj(
        name, "team-a",
        containers=[container("app", {"cpu": "500m", "memory": "1Gi"}, limits={"memory": "2Gi"}, claims=["cpus"])],
        resource_claims=[direct("cpus", "app-cpus")],
        claim_statuses=[status_v136("app-cpus", ["app"], {"cpu": "8"})],
    )
    raw["metadata"].update({
        "labels": {f"app.kubernetes.io/label-{i}": "value" * 4 for i in range(8)},
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{" + "x" * 4000 + "}"},
        "managedFields": [{"manager": "kubectl", "fieldsV1": {f"f:{i}": {} for i in range(40)}}],
        "resourceVersion": "123456",
        "creationTimestamp": "2026-01-01T00:00:00Z",
    })
    raw["spec"]["containers"][0]["env"] = [{"name": f"VAR_{i}", "value": "v" * 30} for i in range(20)]
    return copy.deepcopy(raw)


def _reachable(obj: object, seen: dict[int, object] | None = None) -> dict[int, object]:
    """Every object reachable from obj (containers, dataclass slots), by id; classes and enums excluded."""
    seen = {} if seen is None else seen
    stack = [obj]
    while stack:
        item = stack.pop()
        if id(item) in seen or item is None or isinstance(item, type | Enum | bool):
            continue
        seen[id(item)] = item
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
        else:
            for cls in type(item).__mro__:
                stack.extend(getattr(item, s) for s in getattr(cls, "__slots__", ()) if hasattr(item, s))
            if hasattr(item, "__dict__"):
                stack.append(vars(item))
    return seen


def _deep_size(obj: object) -> int:
    return sum(sys.getsizeof(o) for o in _reachable(obj).values())


def _marginal_size(view: object, twin: object) -> int:
    """What ``view`` alone keeps alive: its objects not shared with a twin view (the quantity parse cache and
    interned names are shared by every pod)."""
    shared = _reachable(twin)
    return sum(sys.getsizeof(o) for i, o in _reachable(view).items() if i not in shared)


def _containers_of(raw: object) -> set[int]:
    return {i for i, o in _reachable(raw).items() if isinstance(o, dict | list)}


def M(key: str | None, multiplier: Quantity | None, per_pod: Quantity | None = None,
      per_container: Quantity | None = None) -> tuple[str | None, Quantity | None, Quantity | None, Quantity | None]:
    """A mapping as counted: capacity key, multiplier, perPod, perContainer."""
    return (key, multiplier, per_pod, per_container)


def counted(dev: DeviceView, release: str = "v1.36") -> dict[str, tuple[Any, ...]]:
    """What the device's mappings count under ``release``."""
    return {r: M(m.capacity_key, m.multiplier, m.per_pod, m.per_container) for r, m in dev.mappings_in(release).items()}


class TestSliceView:
    def test_v136_mappings(self) -> None:
        """v1.36 nodeAllocatableResourceMappings: capacityKey and multiplier; with a key the multiplier defaults
        to 1."""
        raw = slice_obj("s", devices=[
            device("core-0", attributes={"numaNode": 0}, v136={"cpu": {"allocationMultiplier": "2"}}),
            device("hp", capacity={"size": "1Gi"}, multi=True, v136={"hugepages-2Mi": {"capacityKey": "size"}}),
        ])
        view = read_slice(raw)
        core, hp = view.devices
        assert {"cpu": M(None, q("2"))} == counted(core)
        assert {"numaNode": 0} == core.attributes
        assert {"hugepages-2Mi": M("size", q("1"))} == counted(hp)
        assert {"size": q("1Gi")} == hp.capacity
        assert ("v1.36", "dra.example.com", "n1", 1, 1, "n1") == (
            view.shape, view.driver, view.pool, view.generation, view.slice_count, view.node_name)
        assert [] == [p for p in view.problems if p.applies("v1.36")]

    def test_v137_mapping_and_overhead(self) -> None:
        """v1.37 nodeAllocatableResources: mapping (capacity or device multiplier) and overhead."""
        raw = slice_obj("s", devices=[device("gpu", capacity={"mem": "80Gi"}, multi=True, v137={
            "memory": {"overhead": {"perPod": "8Gi"}},
            "cpu": {"mapping": {"deviceMultiplier": "1"}, "overhead": {"perContainer": "500m"}},
            "hugepages-1Gi": {"mapping": {"capacityKey": "mem", "capacityMultiplier": "2"}},
        })])
        view = read_slice(raw)
        assert {
            "memory": M(None, None, q("8Gi"), None),
            "cpu": M(None, q("1"), None, q("500m")),
            "hugepages-1Gi": M("mem", q("2")),
        } == counted(view.devices[0], "v1.37") == counted(view.devices[0], "v1.38")
        assert "v1.37" == view.shape
        assert [] == [p for p in view.problems if p.applies("v1.37")]

    @pytest.mark.parametrize("api_version", [
        pytest.param("resource.k8s.io/v1", id="v1"),
        pytest.param("resource.k8s.io/v1beta2", id="v1beta2"),
        pytest.param("resource.k8s.io/v1beta1", id="v1beta1-basic"),
    ])
    def test_api_versions(self, api_version: str) -> None:
        """v1, v1beta2 and v1beta1 (device fields under basic) read to the same devices."""
        raw = slice_obj("s", api_version=api_version, devices=[
            device("d", attributes={"dra.example.com/numaNode": 1}, capacity={"size": "4"},
                   v136={"cpu": {"capacityKey": "size", "allocationMultiplier": "2"}}),
        ])
        if api_version.endswith("v1beta1"):
            assert "basic" in raw["spec"]["devices"][0]
        (dev,) = read_slice(raw).devices
        assert ("d", {"dra.example.com/numaNode": 1}, {"size": q("4")}, {"cpu": M("size", q("2"))}) == (
            dev.name, dev.attributes, dev.capacity, counted(dev))

    def test_each_release_counts_the_field_it_knows(self) -> None:
        """A device carrying both shapes is read in both: v1.36 counts nodeAllocatableResourceMappings, v1.37 and
        v1.38 nodeAllocatableResources; each field is named once as unknown to the other releases."""
        raw = slice_obj("s", devices=[device("d", v136={"cpu": {"allocationMultiplier": "2"}},
                                             v137={"cpu": {"mapping": {"deviceMultiplier": "3"}}})])
        view = read_slice(raw)
        (dev,) = view.devices
        assert ({"cpu": M(None, q("2"))}, {"cpu": M(None, q("3"))}) == (counted(dev, "v1.36"), counted(dev, "v1.37"))
        assert [("UnknownField", frozenset({"v1.37", "v1.38"})), ("UnknownField", frozenset({"v1.36"}))] == [
            (p.reason, p.releases) for p in view.problems]

    def test_only_integer_attributes_are_kept(self) -> None:
        """NUMA attributes are integers: string, bool and version attributes are not kept."""
        raw = slice_obj("s", devices=[device("d", attributes={"numaNode": 1, "model": "x"})])
        raw["spec"]["devices"][0]["attributes"]["flag"] = {"bool": True}
        raw["spec"]["devices"][0]["attributes"]["odd"] = {"int": True}
        assert {"numaNode": 1} == read_slice(raw).devices[0].attributes

    def test_keep_only_the_attributes_zones_are_asked_by(self) -> None:
        """With ``keep`` (rule 6), a device keeps the named integer attributes and the unqualified ones in its
        driver's domain; the others are still checked, and devices of one NUMA node share one table."""
        attributes = {"numaNode": 1, "coreID": 7, "dra.cpu/numaNodeID": 0, "other.io/numaNode": 3, "big": 1}
        raw = slice_obj("s", driver="dra.cpu", devices=[device("d", attributes=attributes),
                                                        device("e", attributes={**attributes, "coreID": 8})])
        raw["spec"]["devices"][0]["attributes"]["big"] = {"int": 1 << 64}
        keep = ("numaNode", "numaNodeID")
        view = read_slice(raw, keep=keep)
        assert {"numaNode": 1, "dra.cpu/numaNodeID": 0} == view.devices[0].attributes
        assert view.devices[0].attributes is view.devices[1].attributes
        assert ["spec.devices[0].attributes.big.int"] == [p.field for p in view.problems]
        assert {"numaNode", "coreID", "dra.cpu/numaNodeID", "other.io/numaNode"} <= set(
            read_slice(raw).devices[0].attributes)

    def test_device_names_are_interned(self) -> None:
        first = read_slice(slice_obj("a", devices=[device("core-" + "17")])).devices[0].name
        second = read_slice(slice_obj("b", devices=[device("core-1" + "7")])).devices[0].name
        assert first is second

    def test_ignores_unknown_fields(self) -> None:
        """Unknown slice and device fields are ignored without problems."""
        raw = slice_obj("s", devices=[device("d", v136=CPU1)])
        raw["spec"]["sharedCounters"] = [{"name": "x"}]
        raw["spec"]["devices"][0]["consumesCounters"] = [{"counterSet": "x"}]
        raw["spec"]["devices"][0]["nodeAllocatableResourceMappings"]["cpu"]["futureKnob"] = True
        view = read_slice(raw)
        assert [] == [p for p in view.problems if p.applies("v1.36")]
        assert {"cpu": M(None, q("1"))} == counted(view.devices[0])

    @pytest.mark.parametrize("value", ["-1", "0"])
    def test_v136_multiplier_must_be_positive(self, value: str) -> None:
        """v1.36's API refuses a multiplier that is not positive (0 too): an InvalidMapping naming the slice,
        field and value, for v1.36; the device's other mappings count."""
        raw = slice_obj("gpu-slice", devices=[device("gpu", v136={
            "cpu": {"allocationMultiplier": value}, "memory": {"allocationMultiplier": "8Gi"}})])
        view = read_slice(raw)
        (problem,) = [p for p in view.problems if p.applies("v1.36")]
        assert ("InvalidMapping", ObjectRef("ResourceSlice", "gpu-slice"),
                "spec.devices[0].nodeAllocatableResourceMappings.cpu.allocationMultiplier", repr(value),
                frozenset({"v1.36"})) == (problem.reason, problem.obj, problem.field, problem.value, problem.releases)
        assert {"memory": M(None, q("8Gi"))} == counted(view.devices[0])

    def test_capacity_key_absent_from_device(self) -> None:
        """A capacityKey that names no capacity of the device is refused by the API: named, and not counted."""
        raw = slice_obj("s", devices=[device("hp", capacity={"size": "1Gi"}, multi=True,
                                              v136={"hugepages-2Mi": {"capacityKey": "bytes"}})])
        view = read_slice(raw)
        problem = only_problem([p for p in view.problems if p.applies("v1.36")])
        assert ("InvalidMapping", ObjectRef("ResourceSlice", "s"), "'bytes'") == (
            problem.reason, problem.obj, problem.value)
        assert problem.field.endswith("hugepages-2Mi.capacityKey")
        assert "capacityKey 'bytes'" in problem.message
        assert {} == counted(view.devices[0])

    @pytest.mark.parametrize("release", ["v1.37", "v1.38"])
    def test_capacity_keys_are_matched_exactly(self, release: str) -> None:
        """Validation looks a capacityKey up exactly in every release (it does not default the driver domain):
        ``dra.cpu/cpu`` names no capacity ``cpu``, and ``cpu`` none ``dra.cpu/cpu``."""
        raw = slice_obj("s", driver="dra.cpu", devices=[
            device("a", capacity={"cpu": "4"}, multi=True,
                   v137={"cpu": {"mapping": {"capacityKey": "dra.cpu/cpu", "capacityMultiplier": "1"}}}),
            device("b", capacity={"dra.cpu/cpu": "4"}, multi=True,
                   v137={"cpu": {"mapping": {"capacityKey": "cpu", "capacityMultiplier": "1"}}}),
        ])
        view = read_slice(raw)
        assert ["InvalidMapping", "InvalidMapping"] == [p.reason for p in view.problems if p.applies(release)]
        assert [{}, {}] == [counted(d, release) for d in view.devices]

    def test_v138_refuses_a_capacity_key_with_two_slashes(self) -> None:
        """v1.38 checks a capacityKey is a qualified name first (at most one slash); v1.37 only looks it up."""
        raw = slice_obj("s", devices=[device("a", capacity={"a/b/c": "4"}, multi=True,
                                             v137={"cpu": {"mapping": {"capacityKey": "a/b/c",
                                                                       "capacityMultiplier": "1"}}})])
        view = read_slice(raw)
        assert ({"cpu": M("a/b/c", q("1"))}, {}) == (counted(view.devices[0], "v1.37"),
                                                     counted(view.devices[0], "v1.38"))
        (problem,) = [p for p in view.problems if p.applies("v1.38") and p.reason == "InvalidMapping"]
        assert "more than one slash" in problem.message

    @pytest.mark.parametrize(
        ("key", "reason"),
        [
            pytest.param("nvidia.com/gpu", "InvalidMapping", id="extended-resource"),
            pytest.param("pods", "NotNodeAllocatable", id="pods"),
            pytest.param("hugepages-", "NotNodeAllocatable", id="hugepages-without-size"),
            pytest.param("hugepages-x", "NotNodeAllocatable", id="hugepages-bad-size"),
            pytest.param("hugepages-0", "NotNodeAllocatable", id="hugepages-zero-size"),
        ],
    )
    def test_v136_non_node_allocatable_key(self, key: str, reason: str) -> None:
        """v1.36's API refuses a key that is no native resource name, and accepts native ones the ledger does not
        count (it names them NotNodeAllocatable); neither counts."""
        raw = slice_obj("s", devices=[device("d", v136={key: {"allocationMultiplier": "1"},
                                                        "cpu": {"allocationMultiplier": "1"}})])
        view = read_slice(raw)
        problem = only_problem([p for p in view.problems if p.applies("v1.36")])
        assert (reason, f"spec.devices[0].nodeAllocatableResourceMappings.{key}", repr(key)) == (
            problem.reason, problem.field, problem.value)
        assert {"cpu": M(None, q("1"))} == counted(view.devices[0])

    @pytest.mark.parametrize(
        ("name", "allowed"),
        [
            pytest.param("cpu", True, id="cpu"),
            pytest.param("memory", True, id="memory"),
            pytest.param("ephemeral-storage", True, id="ephemeral-storage"),
            pytest.param("hugepages-2Mi", True, id="hugepages-2Mi"),
            pytest.param("hugepages-1Gi", True, id="hugepages-1Gi"),
            pytest.param("nvidia.com/gpu", False, id="extended"),
            pytest.param("hugepages-2Mx", False, id="hugepages-bad"),
        ],
    )
    def test_node_allocatable_names(self, name: str, allowed: bool) -> None:
        """cpu, memory, ephemeral-storage and hugepages-<size> are the node-allocatable names the ledger shows."""
        assert allowed == is_node_allocatable(name)

    @pytest.mark.parametrize(
        ("entry", "expected"),
        [
            pytest.param({"mapping": {"capacityKey": "size"}},
                         [("mapping.capacityMultiplier", "capacityMultiplier is required when capacityKey is set")],
                         id="capacity-multiplier-missing"),
            pytest.param({"mapping": {"capacityMultiplier": "1"}},
                         [("mapping", "must specify one of: capacityKey, deviceMultiplier"),
                          ("mapping.capacityKey", "capacityKey is required when capacityMultiplier is set")],
                         id="capacity-key-missing"),
            pytest.param({"mapping": {}}, [("mapping", "must specify one of: capacityKey, deviceMultiplier")],
                         id="empty-mapping"),
            pytest.param({"mapping": {"capacityKey": "size", "capacityMultiplier": "1", "deviceMultiplier": "1"}},
                         [("mapping", "must specify exactly one of: capacityKey, deviceMultiplier")],
                         id="both-multipliers"),
            pytest.param({"mapping": {"deviceMultiplier": "0"}}, [("mapping.deviceMultiplier", "must be positive")],
                         id="device-multiplier-zero"),
            pytest.param({"mapping": {"capacityKey": "size", "capacityMultiplier": "-2"}},
                         [("mapping.capacityMultiplier", "must be positive")], id="capacity-multiplier-negative"),
            pytest.param({"overhead": {"perPod": "-1"}}, [("overhead.perPod", "must be non-negative")],
                         id="negative-per-pod"),
            pytest.param({"overhead": {}}, [("overhead", "at least one of perPod or perContainer must be set")],
                         id="empty-overhead"),
            pytest.param({}, [("", "at least one of mapping or overhead must be set")], id="empty-entry"),
        ],
    )
    def test_v137_invalid_entries(self, entry: dict[str, Any], expected: list[tuple[str, str]]) -> None:
        """Entries the v1.37 and v1.38 API refuses are InvalidMapping problems naming the field, and count nothing
        (the API refuses the slice)."""
        raw = slice_obj("s", devices=[device("d", capacity={"size": "4"}, multi=True, v137={"cpu": entry})])
        view = read_slice(raw)
        base = "spec.devices[0].nodeAllocatableResources.cpu"
        assert [(f"{base}.{field}" if field else base, message) for field, message in expected] == [
            (p.field, p.message) for p in view.problems if p.reason == "InvalidMapping"]
        assert {} == counted(view.devices[0], "v1.37") == counted(view.devices[0], "v1.38")

    def test_v137_refuses_ephemeral_storage(self) -> None:
        """v1.37 and v1.38 refuse ephemeral-storage as a key ("excluding ephemeral-storage for alpha")."""
        raw = slice_obj("s", devices=[device("d", v137={"ephemeral-storage": {"mapping": {"deviceMultiplier": "1"}}})])
        view = read_slice(raw)
        assert ["InvalidMapping"] == [p.reason for p in view.problems if p.applies("v1.37")]
        assert {} == counted(view.devices[0], "v1.37")

    def test_bad_values_are_named(self) -> None:
        """Bad capacity values, generations and a missing driver are named; the devices are still read."""
        raw = slice_obj("s", devices=[device("d", capacity={"size": "lots"},
                                             v136=CPU1)])
        raw["spec"]["driver"] = ""
        raw["spec"]["pool"]["generation"] = "1"
        raw["spec"]["pool"]["resourceSliceCount"] = True
        view = read_slice(raw)
        assert {"spec.devices[0].capacity.size.value", "spec.driver", "spec.pool.generation",
                "spec.pool.resourceSliceCount"} == {p.field for p in view.problems if p.applies("v1.36")}
        assert (0, 1) == (view.generation, view.slice_count)
        assert {"cpu": M(None, q("1"))} == counted(view.devices[0])

    def test_pool_without_generation(self) -> None:
        """A pool without generation or resourceSliceCount reads as generation 0 of one slice, silently."""
        raw = slice_obj("s")
        raw["spec"]["pool"] = {"name": "p"}
        view = read_slice(raw)
        assert (0, 1, ()) == (view.generation, view.slice_count, view.problems)

    def test_unparsable_multiplier(self) -> None:
        """A multiplier that is no quantity is named and its mapping dropped."""
        raw = slice_obj("s", devices=[device("d", v136={"cpu": {"allocationMultiplier": "two"},
                                                        "memory": {"allocationMultiplier": "1"}})])
        view = read_slice(raw)
        problem = only_problem([p for p in view.problems if p.applies("v1.36")])
        assert ("MalformedField", "spec.devices[0].nodeAllocatableResourceMappings.cpu.allocationMultiplier",
                "'two'") == (problem.reason, problem.field, problem.value)
        assert {"memory": M(None, q("1"))} == counted(view.devices[0])

    def test_v137_non_node_allocatable_key(self) -> None:
        """The v1.37 shape rejects extended resource keys too."""
        raw = slice_obj("s", devices=[device("d", v137={"nvidia.com/gpu": {"mapping": {"deviceMultiplier": "1"}},
                                                        "cpu": {"mapping": {"deviceMultiplier": "1"}}})])
        view = read_slice(raw)
        problem = only_problem([p for p in view.problems if p.applies("v1.37")])
        assert ("InvalidMapping", "spec.devices[0].nodeAllocatableResources.nvidia.com/gpu") == (
            problem.reason, problem.field)
        assert {"cpu": M(None, q("1"))} == counted(view.devices[0], "v1.37")

    def test_devices_not_a_list(self) -> None:
        """A non-list spec.devices is named; the slice reads with no devices."""
        raw = slice_obj("s")
        raw["spec"]["devices"] = {"d": {}}
        view = read_slice(raw)
        assert ["spec.devices"] == [p.field for p in view.problems]
        assert () == view.devices

class TestClaimView:
    def test_reads_allocation(self) -> None:
        """Results (with consumed capacity when present), reservations and the allocation's node."""
        raw = claim_obj("c", "t", node="n1", results=[
            result("gpu-0", request="gpu"),
            result("hp", request="hp", consumed={"size": "64Mi"}),
        ])
        raw["status"]["reservedFor"] = [{"resource": "pods", "name": "app", "uid": "u1"}, {"name": "x"}]
        view = read_claim(raw)
        assert ("t", "c") == view.key
        assert view.allocated
        gpu, hp = view.results
        assert (("dra.example.com", "n1"), "gpu-0", None) == (gpu.pool_key, gpu.device, gpu.consumed)
        assert {"size": q("64Mi")} == hp.consumed
        assert ("u1",) == view.reserved_for
        assert ("n1",) == view.allocation_nodes
        assert () == view.problems

    def test_allocation_nodes_only_from_name_selectors(self) -> None:
        """Only metadata.name In [...] terms name the allocation's nodes; other terms are ignored."""
        raw = claim_obj("c", results=[result("d")], node="n1")
        terms = raw["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"]
        terms[0]["matchFields"].insert(0, {"key": "metadata.name", "operator": "NotIn", "values": ["n9"]})
        terms.append({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]})
        terms.append("junk")
        terms.append({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2", "n1", 7]}]})
        assert ("n1", "n2") == read_claim(raw).allocation_nodes

    def test_unallocated(self) -> None:
        """A claim without status.allocation is not allocated and has no results."""
        view = read_claim(claim_obj("c", results=None))
        assert (False, (), ()) == (view.allocated, view.results, view.allocation_nodes)

    def test_bad_consumed_capacity(self) -> None:
        """A malformed consumedCapacity value is named; the result is still read."""
        view = read_claim(claim_obj("c", "t", results=[result("hp", consumed={"size": "64Mx", "n": "1"})]))
        problem = only_problem(view.problems)
        assert (ObjectRef("ResourceClaim", "c", "t"), "status.allocation.devices.results[0].consumedCapacity.size",
                "'64Mx'") == (problem.obj, problem.field, problem.value)
        assert {"n": q("1")} == view.results[0].consumed

    def test_results_not_a_list(self) -> None:
        """A non-list results field is named; the claim reads as allocated with no results."""
        raw = claim_obj("c", results=[])
        raw["status"]["allocation"]["devices"]["results"] = "r"
        view = read_claim(raw)
        assert ["status.allocation.devices.results"] == [p.field for p in view.problems]
        assert () == view.results


class TestIllTypedClaims:
    """Issue 13, item 8: ill-typed node selector terms and reservations crashed the claim reader (the operator
    would drop that event); each is now a named problem, and the rest of the claim is still read."""

    def spoiled(self, where: str, value: Any) -> dict[str, Any]:
        raw = claim_obj("c", "t", results=[result("d")], node="n1")
        raw["status"]["reservedFor"] = [{"resource": "pods", "name": "p", "uid": "u1"}]
        allocation = raw["status"]["allocation"]
        match = allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]
        if where == "values":
            match["values"] = value
        elif where == "value":
            match["values"] = ["n1", value]
        elif where == "matchFields":
            allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"] = value
        elif where == "term":
            allocation["nodeSelector"]["nodeSelectorTerms"].append(value)
        elif where == "reservedFor":
            raw["status"]["reservedFor"].append(value)
        else:
            raw["status"]["reservedFor"][0]["uid"] = value
        return raw

    TERMS = "status.allocation.nodeSelector.nodeSelectorTerms"

    @pytest.mark.parametrize(
        ("where", "value", "field"),
        [
            pytest.param("values", 5, f"{TERMS}[0].matchFields[0].values", id="values-an-int"),
            pytest.param("values", "n1", f"{TERMS}[0].matchFields[0].values", id="values-a-string"),
            pytest.param("values", {"n1": 1}, f"{TERMS}[0].matchFields[0].values", id="values-a-map"),
            pytest.param("value", ["n2"], f"{TERMS}[0].matchFields[0].values[1]", id="value-a-list"),
            pytest.param("matchFields", "x", f"{TERMS}[0].matchFields", id="matchFields-a-string"),
            pytest.param("matchFields", 5, f"{TERMS}[0].matchFields", id="matchFields-an-int"),
            pytest.param("matchFields", [7], f"{TERMS}[0].matchFields[0]", id="matchField-an-int"),
            pytest.param("term", "junk", f"{TERMS}[1]", id="term-a-string"),
            pytest.param("reservedFor", "u2", "status.reservedFor[1]", id="reservation-a-string"),
            pytest.param("uid", ["u1"], "status.reservedFor[0].uid", id="uid-a-list"),
        ],
    )
    def test_named_not_raised(self, where: str, value: Any, field: str) -> None:
        """The ill-typed value is one named problem; the results are still read."""
        raw = self.spoiled(where, value)
        view = read_claim(raw)
        problem = only_problem(view.problems)
        assert (ObjectRef("ResourceClaim", "c", "t"), field) == (problem.obj, problem.field)
        assert ["d"] == [r.device for r in view.results]


class TestIllTypedIdentity:
    @pytest.mark.parametrize("kind", ["Node", "Pod", "ResourceSlice", "ResourceClaim"])
    @pytest.mark.parametrize("field", ["name", "namespace"])
    def test_metadata_name_not_a_string(self, kind: str, field: str) -> None:
        """A name or namespace that is not a string is named (the object reads as <unnamed> or namespace-less)."""
        raw = {"Node": node_obj("n1"), "Pod": pod_obj("p", containers=[container("a")]),
               "ResourceSlice": slice_obj("s"), "ResourceClaim": claim_obj("c")}[kind]
        raw["metadata"][field] = ["x"]
        read = {"Node": read_node, "Pod": read_pod, "ResourceSlice": read_slice, "ResourceClaim": read_claim}[kind]
        problem = only_problem(read(raw).problems)
        assert (f"metadata.{field}", "expected a string", "['x']") == (problem.field, problem.message, problem.value)

    def test_slice_api_version_not_a_string(self) -> None:
        """A ResourceSlice apiVersion that is not a string is named, and the slice is read as v1."""
        raw = slice_obj("s", devices=[device("d", v136=CPU1)])
        raw["apiVersion"] = ["resource.k8s.io/v1beta1"]
        view = read_slice(raw)
        assert ["apiVersion"] == [p.field for p in view.problems if p.applies("v1.36")]
        assert ["d"] == [d.name for d in view.devices]


class TestOutOfRange:
    @pytest.mark.parametrize(
        "value",
        [
            pytest.param("9" * 2001, id="2001-digits"),
            pytest.param("1" + "0" * 1999 + "Ki", id="binary-suffix"),
            pytest.param(10**2000, id="integer"),
            pytest.param(10**5000, id="integer-too-long-to-print"),
        ],
    )
    def test_huge_quantity(self, value: Any) -> None:
        """A quantity of 10^2000 or more is named as out of range (its canonical form, or that of its product
        with a multiplier, would be an integer Python refuses to print)."""
        raw = node_obj("n1", allocatable={"cpu": value, "memory": "1Gi"})
        view = read_node(raw)
        problem = only_problem(view.problems)
        assert ("status.allocatable.cpu", "out of range: a quantity must be below 10^2000") == (
            problem.field, problem.message)
        assert 80 == len(problem.value)
        assert {"memory": q("1Gi")} == view.allocatable

    def test_largest_short_quantity_is_in_range(self) -> None:
        """The largest quantity of fewer than 64 characters is in range: the fast readers need not check them."""
        largest = "9" * 58 + "e1000"
        assert 63 == len(largest)
        assert {"cpu": q(largest)} == read_node(node_obj("n1", allocatable={"cpu": largest})).allocatable

    def test_pod_quantity_out_of_range(self) -> None:
        """A quantity text of 2,500 digits is out of range, named on its field."""
        raw = pod_obj("p", containers=[container("a", {"cpu": "9" * 2500, "memory": "1Gi"})])
        view = read_pod(raw)
        assert ["spec.containers[0].resources.requests.cpu"] == [p.field for p in view.problems]

    def test_integer_attribute_beyond_int64(self) -> None:
        """An int attribute outside int64 is named and not used as a NUMA zone."""
        raw = slice_obj("s", devices=[device("d", attributes={"numaNode": 2**63}, v136=CPU1)])
        view = read_slice(raw)
        assert ["spec.devices[0].attributes.numaNode.int"] == [p.field for p in view.problems if p.applies("v1.36")]
        assert {} == view.devices[0].attributes

    def test_generation_beyond_int64(self) -> None:
        """A pool generation outside int64 is named and read as 0."""
        raw = slice_obj("s")
        raw["spec"]["pool"]["generation"] = 2**64
        view = read_slice(raw)
        assert (["spec.pool.generation"], 0) == (
            [p.field for p in view.problems if p.applies("v1.36")], view.generation)


class TestShow:
    @given(json_values)
    def test_repr_of_any_json_value(self, value: Any) -> None:
        """show() is repr() (with no limit on the digits of an integer), cut to 80 characters with ``...``."""
        limit = sys.get_int_max_str_digits()
        sys.set_int_max_str_digits(0)
        try:
            text = repr(value)
        finally:
            sys.set_int_max_str_digits(limit)
        assert (text if len(text) <= 80 else text[:77] + "...") == show(value)

    @pytest.mark.parametrize(
        "value",
        [
            pytest.param(nested(100_000, 1, "list"), id="deep-list"),
            pytest.param(nested(100_000, 1, "dict"), id="deep-dict"),
            pytest.param(10**5000, id="integer-too-long-to-print"),
            pytest.param("x" * 10**7, id="long-string"),
            pytest.param([list(range(10**6))] * 10**3, id="a-billion-elements"),
        ],
    )
    def test_bounded(self, value: Any) -> None:
        """A value too deep to repr(), too long to print, or too big to walk is shown in 80 characters."""
        assert 80 == len(show(value))

    def test_self_containing(self) -> None:
        """A value that contains itself (YAML anchors can build one) is shown, cut."""
        loop: list[Any] = [1]
        loop.append(loop)
        assert show(loop).startswith("[1, [1, [1, ")

    def test_short_values_and_tuples(self) -> None:
        """Short values show as repr() shows them, tuples included."""
        for value in [None, True, 1.5, "a'b", (1,), (), {"a": [1, (2, 3)]}, [], {}]:
            assert repr(value) == show(value)


class TestProblems:
    def test_str_without_object(self) -> None:
        """A problem that belongs to no object says "input"."""
        assert "MalformedItem: input: items[0] is not an object" == str(
            Problem("MalformedItem", "items[0] is not an object"))

    def test_str_is_one_printable_line(self) -> None:
        """A key with a newline, a name with a lone surrogate: the problem still prints as one line, escaped
        (found by the long fuzz run: a warning spread over two lines of stderr)."""
        raw = slice_obj("s", devices=[device("d", v137={"1\n": {"mapping": {"deviceMultiplier": "1"}}})])
        raw["metadata"]["name"] = "s\ud800"
        problem = only_problem([p for p in read_slice(raw).problems if p.applies("v1.37")])
        assert ("InvalidMapping: ResourceSlice s\\ud800 field spec.devices[0].nodeAllocatableResources.1\\n"
                " = '1\\n': must be a node-allocatable resource name: cpu, memory or hugepages-<size> "
                "(ephemeral-storage is refused)") == str(problem)

    def test_cluster_scoped_ref(self) -> None:
        """A cluster-scoped object is shown as kind and name."""
        assert "Node n1" == str(ObjectRef("Node", "n1"))
        assert "Pod t/p" == str(ObjectRef("Pod", "p", "t"))

    def test_long_values_are_shortened(self) -> None:
        """A long offending value is cut to 80 characters."""
        view = read_node(node_obj("n1", allocatable={"cpu": "9" * 200 + "x"}))
        assert 80 == len(only_problem(view.problems).value)
        assert only_problem(view.problems).value.endswith("...")

    @pytest.mark.parametrize(
        ("raw", "ref"),
        [
            pytest.param({"metadata": {"name": "p", "namespace": "t"}}, ObjectRef("Pod", "p", "t"), id="named"),
            pytest.param({}, ObjectRef("Pod", "<unnamed>"), id="no-metadata"),
            pytest.param({"metadata": {"name": 3, "namespace": 4}}, ObjectRef("Pod", "<unnamed>"), id="bad-types"),
        ],
    )
    def test_ref_of(self, raw: dict[str, Any], ref: ObjectRef) -> None:
        """Objects are named by kind and namespace/name, or <unnamed> when the name is unusable."""
        assert ref == ref_of(raw, "Pod")

    def test_metadata_not_an_object(self) -> None:
        """A non-object metadata is named and the object reads as <unnamed>."""
        view = read_claim({"kind": "ResourceClaim", "metadata": "x"})
        assert "<unnamed>" == view.name
        assert ["metadata"] == [p.field for p in view.problems]


class TestV137MappingRules:
    @pytest.mark.parametrize(
        ("mapping", "field"),
        [
            pytest.param({"capacityKey": "size", "deviceMultiplier": "1", "capacityMultiplier": "1"},
                         "spec.devices[0].nodeAllocatableResources.cpu.mapping", id="both-key-and-device-multiplier"),
            pytest.param({"capacityMultiplier": "2"},
                         "spec.devices[0].nodeAllocatableResources.cpu.mapping.capacityKey",
                         id="capacity-multiplier-without-key"),
        ],
    )
    def test_refused_as_kube_apiserver_refuses(self, mapping: dict[str, Any], field: str) -> None:
        """What v1.37's validation refuses is an InvalidMapping problem, and the mapping counts nothing."""
        raw = slice_obj("s", devices=[{"name": "d", "capacity": {"size": {"value": "4"}},
                                       "nodeAllocatableResources": {"cpu": {"mapping": mapping}}}])
        view = read_slice(raw)
        assert field in [p.field for p in view.problems if p.applies("v1.37") and p.reason == "InvalidMapping"]
        assert {} == view.devices[0].mappings_in("v1.37")
