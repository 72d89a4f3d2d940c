"""In-place resizes per release (accounting.footprints rules 3 and 4): pod-level status maps and v1.38's
per-container placement during a resize."""

from __future__ import annotations

from typing import Any

import pytest

from draledger.core import loading
from draledger.core.releases import Release
from strategies import claim_obj, container, device, direct, node_obj, pod_obj, result, slice_obj

NODE = node_obj("n1", allocatable={"cpu": "16", "memory": "64Gi"})


def requested(items: list[dict[str, Any]], release: Release) -> dict[str, str]:
    ledger = loading.load(items, "test", release).state.ledger("n1")
    assert ledger is not None
    return {r: str(line.requested) for r, line in ledger.resources.items() if r in ("cpu", "memory")}


def pod_level_resized() -> list[dict[str, Any]]:
    """Pod-level cpu 2 (memory not set at pod level), a container of 500m and 512Mi that uses a claim mapping 4Gi
    of memory; the kubelet's pod-level status maps: actuated cpu 2, memory 1Gi; allocated cpu 3, memory 2Gi."""
    pool = slice_obj("s", devices=[device("m0", v136={"memory": {"allocationMultiplier": "4Gi"}},
                                          v137={"memory": {"mapping": {"deviceMultiplier": "4Gi"}}})])
    pod = pod_obj("p", containers=[container("a", {"cpu": "500m", "memory": "512Mi"}, claims=["x"])],
                  resource_claims=[direct("x", "c")], pod_level={"cpu": "2"})
    pod["status"]["resources"] = {"requests": {"cpu": "2", "memory": "1Gi"}}
    pod["status"]["allocatedResources"] = {"cpu": "3", "memory": "2Gi"}
    return [NODE, pool, claim_obj("c", results=[result("m0")]), pod]


class TestPodLevelStatusMaps:
    @pytest.mark.parametrize("release", ["v1.37", "v1.38"])
    def test_every_name_of_the_maximum_is_pod_level(self, release: Release) -> None:
        """v1.37 and v1.38 (``effectivePodLevelResources``) take max(spec, actuated, allocated) for every supported
        name of it: memory, which the spec leaves to the containers, is the maps' 2Gi, not 512Mi + the claim's 4Gi."""
        assert {"cpu": "3", "memory": "2Gi"} == requested(pod_level_resized(), release)

    def test_v136_only_for_the_names_the_spec_sets(self) -> None:
        """v1.36 (``determineEffectiveRequests``) replaces only the spec's names: cpu is max(2, 2, 3) = 3; memory is
        the container's 512Mi plus the claim's 4Gi."""
        assert {"cpu": "3", "memory": "4608Mi"} == requested(pod_level_resized(), "v1.36")


def per_container_resized() -> list[dict[str, Any]]:
    """Init ``setup`` (cpu 2) and ``app`` (cpu 3 after a resize: allocated 3, still actuated at 1) both reference a
    claim with a cpu mapping of 2 and a perContainer overhead of 500m."""
    pool = slice_obj("s", devices=[device("g0", v137={"cpu": {"mapping": {"deviceMultiplier": "2"},
                                                                "overhead": {"perContainer": "500m"}}})])
    pod = pod_obj("p", init_containers=[container("setup", {"cpu": "2"}, claims=["x"])],
                  containers=[container("app", {"cpu": "3"}, claims=["x"])], resource_claims=[direct("x", "c")])
    pod["status"]["containerStatuses"] = [{"name": "app", "resources": {"requests": {"cpu": "1"}},
                                           "allocatedResources": {"cpu": "3"}}]
    return [NODE, pool, claim_obj("c", results=[result("g0")]), pod]


class TestV138Resize:
    @pytest.mark.parametrize(("release", "cpu"), [
        pytest.param("v1.37", "6", id="v1.37-outside-the-max"),
        pytest.param("v1.38", "5500m", id="v1.38-with-each-container"),
    ])
    def test_per_container_overhead_goes_with_its_container_in_the_allocated_aggregate(
        self, release: Release, cpu: str
    ) -> None:
        """v1.37: max(spec + claims, actuated, allocated + claims) = max(3 + 3, 2, 3 + 3) = 6. v1.38: the allocated
        aggregate places each container's 500m with it, max(3 + 0.5, 2 + 0.5) = 3.5, plus the mapping's 2 = 5500m
        (the actuated aggregate, max(1, 2), gets no claim part)."""
        assert cpu == requested(per_container_resized(), release)["cpu"]

    def test_a_shrink_not_actuated_yet_still_charges_the_old_size_in_v138(self) -> None:
        """app shrunk from 4 to 1, still actuated at 4: v1.38 charges max(max(1.5, 2.5) + 2, max(4, 2)) = 4500m."""
        items = per_container_resized()
        pod = items[-1]
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
        pod["status"]["containerStatuses"] = [{"name": "app", "resources": {"requests": {"cpu": "4"}},
                                               "allocatedResources": {"cpu": "1"}}]
        assert "4500m" == requested(items, "v1.38")["cpu"]
