"""The demo scheduler charges what the core's rule says (``accounting.statuses.planned_statuses``).

Each case binds pods with :func:`draledger.demo.scheduler.bind` and compares the status it wrote with the rule
applied to the cluster that results: the demo cluster as built, a claim shared by two pods, and the same
drivers publishing v1.37 mappings (the demo cluster itself has none).
"""

from __future__ import annotations

import copy
import datetime
from typing import Any

from draledger.core.accounting.statuses import planned_statuses
from draledger.core.loading import load
from draledger.demo import cluster, objects, scheduler

NOW = datetime.datetime(2026, 12, 2, 10, 0, 0, tzinfo=datetime.UTC)
STARTED = "2026-12-02T10:00:00Z"
FIELD = "nodeAllocatableResourceClaimStatuses"
Raw = dict[str, Any]


def core_rule(items: list[Raw], namespace: str, name: str) -> list[Raw] | None:
    """What the core says the scheduler writes for the pod, from the objects alone."""
    loaded = load(copy.deepcopy(items), "test")
    state = loaded.state
    pod = state.pods[(namespace, name)]
    return planned_statuses(pod, state.uses(pod), state.release)


def of_kind(items: list[Raw], kind: str) -> list[Raw]:
    return [obj for obj in items if obj["kind"] == kind]


class Cluster:
    """Slices, claims and pods; :meth:`bind` applies the demo scheduler's writes as the story does."""

    def __init__(self, slices: list[Raw], claims: list[Raw]) -> None:
        self.slices = slices
        self.claims = {obj["metadata"]["name"]: obj for obj in claims}
        self.pods: list[Raw] = []

    def items(self) -> list[Raw]:
        return [*self.slices, *self.claims.values(), *self.pods]

    def bind(self, obj: Raw, node: str) -> Raw:
        binding = scheduler.bind(obj, node, self.claims, self.slices, STARTED, pods=self.pods)
        assert binding is not None, f"{obj['metadata']['name']} does not fit on {node}"
        for name, status in binding.claims.items():
            self.claims[name] = {**self.claims[name], "status": status}
        bound = {**obj, "spec": {**obj["spec"], "nodeName": node}, "status": binding.pod_status}
        self.pods.append(bound)
        return bound


def demo_slices() -> list[Raw]:
    return [s for node in objects.NODES for s in objects.resource_slices(node, NOW)]


def v137(slice_obj: Raw, gpu_overhead: bool) -> Raw:
    """The slice with v1.37 ``nodeAllocatableResources``; the GPU's host costs as overhead if ``gpu_overhead``."""
    out = copy.deepcopy(slice_obj)
    for device in out["spec"]["devices"]:
        resources: Raw = {}
        for resource, old in device.pop("nodeAllocatableResourceMappings").items():
            if "capacityKey" in old:
                resources[resource] = {"mapping": {"capacityKey": old["capacityKey"], "capacityMultiplier": "1"}}
            elif gpu_overhead and out["spec"]["driver"] == objects.GPU_DRIVER:
                resources[resource] = {"overhead": {"perPod": old["allocationMultiplier"]}}
            else:
                resources[resource] = {"mapping": {"deviceMultiplier": old["allocationMultiplier"]}}
        device["nodeAllocatableResources"] = resources
    return out


def claim_pod(name: str, wants: list[objects.Want], *containers: str) -> tuple[Raw, Raw]:
    """A claim and a pod whose containers all reference it."""
    claim = objects.claim("ml", f"{name}-claim", wants, NOW)
    boxes = [objects.Box(container, "100m", "1Gi", ("c",)) for container in containers or ("main",)]
    return claim, objects.pod("ml", name, boxes, NOW, claims={"c": f"{name}-claim"})


def sharing(claim: Raw, name: str) -> Raw:
    """Another pod that references the same claim."""
    return objects.pod("ml", name, [objects.Box("main", "100m", "1Gi", ("c",))], NOW,
                       claims={"c": claim["metadata"]["name"]})


class TestCharges:
    def test_every_pod_of_the_demo_cluster_follows_the_rule(self) -> None:
        """Each bound claim pod of the built cluster carries exactly what the core's rule plans for it."""
        items = cluster.build_cluster(NOW)
        checked = 0
        for obj in of_kind(items, "Pod"):
            written = (obj.get("status") or {}).get(FIELD)
            if written is None:
                continue
            meta = obj["metadata"]
            assert core_rule(items, meta["namespace"], meta["name"]) == written
            checked += 1
        assert 3 == checked  # trainer-0 (from a template), inference-0, postgres-0

    def test_gpu_cores_and_hugepages(self) -> None:
        """A GPU (16Gi, 2 cpu), 4 cores (2 cpu each) and 256Mi of hugepages, for each referencing container."""
        demo = Cluster(demo_slices(), [])
        claim, pod = claim_pod("trainer", [objects.gpus(), objects.cores(4), objects.hugepages("256Mi")],
                               "trainer", "sidecar")
        demo.claims[claim["metadata"]["name"]] = claim
        bound = demo.bind(pod, "worker-1")
        assert [{"resourceClaimName": "trainer-claim", "containers": ["trainer", "sidecar"],
                 "resources": {"cpu": "10", "hugepages-2Mi": "256Mi", "memory": "16Gi"}}] == bound["status"][FIELD]
        assert core_rule(demo.items(), "ml", "trainer") == bound["status"][FIELD]

    def test_a_mapped_claim_shared_by_two_pods(self) -> None:
        """The second consumer of a mapped claim gets no status: the rule has no single answer for it."""
        demo = Cluster(demo_slices(), [])
        claim, first = claim_pod("first", [objects.cores(2)])
        demo.claims[claim["metadata"]["name"]] = claim
        assert [{"resourceClaimName": "first-claim", "containers": ["main"], "resources": {"cpu": "4"}}] == \
            demo.bind(first, "worker-2")["status"][FIELD]
        second = demo.bind(sharing(claim, "second"), "worker-2")
        assert FIELD not in second["status"]
        assert core_rule(demo.items(), "ml", "second") is None
        assert ["first", "second"] == [r["name"] for r in demo.claims["first-claim"]["status"]["reservedFor"]]

    def test_v137_mappings(self) -> None:
        """With v1.37 slices the scheduler writes the v1.37 shape: mapping and overhead lists."""
        demo = Cluster([v137(s, gpu_overhead=True) for s in demo_slices()], [])
        claim, pod = claim_pod("trainer", [objects.gpus(), objects.cores(2), objects.hugepages("64Mi")],
                               "trainer", "sidecar")
        demo.claims[claim["metadata"]["name"]] = claim
        bound = demo.bind(pod, "worker-3")
        assert [{"resourceClaimName": "trainer-claim", "containers": ["trainer", "sidecar"],
                 "mapping": [{"name": "cpu", "quantity": "4"}, {"name": "hugepages-2Mi", "quantity": "64Mi"}],
                 "overhead": [{"name": "cpu", "perPod": "2"}, {"name": "memory", "perPod": "16Gi"}]}] == \
            bound["status"][FIELD]
        assert core_rule(demo.items(), "ml", "trainer") == bound["status"][FIELD]

    def test_v137_overhead_only_claim_shared_by_two_pods(self) -> None:
        """A v1.37 claim with overhead only may be shared: each consumer is charged its own overhead."""
        demo = Cluster([v137(s, gpu_overhead=True) for s in demo_slices()], [])
        claim, first = claim_pod("first", [objects.gpus()])
        demo.claims[claim["metadata"]["name"]] = claim
        demo.bind(first, "worker-1")
        second = demo.bind(sharing(claim, "second"), "worker-1")
        expected = [{"resourceClaimName": "first-claim", "containers": ["main"],
                     "overhead": [{"name": "cpu", "perPod": "2"}, {"name": "memory", "perPod": "16Gi"}]}]
        assert expected == second["status"][FIELD]
        assert core_rule(demo.items(), "ml", "second") == second["status"][FIELD]
        assert core_rule(demo.items(), "ml", "first") == demo.pods[0]["status"][FIELD]
