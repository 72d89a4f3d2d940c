"""The claim that satisfied a pod's DRA extended resources (``status.extendedResourceClaimStatus``): one of the pod's
claims, referenced by no container, in the ledger and in the status the scheduler would write."""

from __future__ import annotations

from typing import Any

import pytest

from draledger.core import loading
from draledger.core.accounting.statuses import planned_statuses
from draledger.core.releases import Release
from draledger.core.state import ClusterState
from strategies import claim_obj, container, device, node_obj, pod_obj, result, slice_obj

NODE = node_obj("n1", allocatable={"cpu": "16", "memory": "64Gi"})
GPU = {"cpu": {"mapping": {"deviceMultiplier": "2"}},
       "memory": {"overhead": {"perPod": "1Gi", "perContainer": "256Mi"}}}


def extended_pod(claim: str = "p-extended-resources-x7k2q") -> dict[str, Any]:
    """A pod whose container asks for ``example.com/gpu: 1`` and whose claim the scheduler generated."""
    pod = pod_obj("p", containers=[container("app", {"cpu": "1", "example.com/gpu": "1"})])
    pod["status"]["extendedResourceClaimStatus"] = {
        "resourceClaimName": claim,
        "requestMappings": [{"containerName": "app", "resourceName": "example.com/gpu", "requestName": "container-0"}],
    }
    return pod


def state_of(release: Release, *extra: dict[str, Any]) -> ClusterState:
    pool = slice_obj("s", devices=[device("gpu-0", v137=GPU)])
    claim = claim_obj("p-extended-resources-x7k2q", results=[result("gpu-0", request="container-0")])
    return loading.load([NODE, pool, claim, extended_pod(), *extra], "test", release).state


class TestLedger:
    @pytest.mark.parametrize("release", ["v1.37", "v1.38"])
    def test_mapping_and_per_pod_are_charged_per_container_is_not(self, release: Release) -> None:
        """The claim is the pod's: its mapping (2 cpu) and perPod (1Gi) are charged, its perContainer never (no
        container references it); the pod's own requests come on top."""
        ledger = state_of(release).ledger("n1")
        assert ledger is not None
        assert {"cpu": ("2", "3"), "memory": ("1Gi", "1Gi")} == {
            r: (str(line.claims), str(line.requested)) for r, line in ledger.resources.items()}

    def test_no_unreferenced_claim_problem(self) -> None:
        """A claim no container references is ``UnreferencedClaim``, but not the extended-resource claim."""
        ledger = state_of("v1.38").ledger("n1")
        assert ledger is not None
        line = next(c for c in ledger.claims if c.name == "p-extended-resources-x7k2q")
        assert ((), ("t/p",)) == (line.problems, line.pods)


class TestPlannedStatuses:
    def test_v138_writes_the_real_claim_name_with_no_containers(self) -> None:
        """v1.38 (``replaceSpecialClaimNameInStatus``) writes the generated claim's name and ``containers: []``."""
        state = state_of("v1.38")
        assert [{"resourceClaimName": "p-extended-resources-x7k2q", "containers": [],
                 "mapping": [{"name": "cpu", "quantity": "2"}],
                 "overhead": [{"name": "memory", "perPod": "1Gi", "perContainer": "256Mi"}]}] == planned_statuses(
            state.pods[("t", "p")], state.uses(state.pods[("t", "p")]), state.release)

    def test_v137_has_no_right_answer(self) -> None:
        """v1.37.2 writes a placeholder its API refuses (the pod never binds): nothing to plan."""
        state = state_of("v1.37")
        assert None is planned_statuses(state.pods[("t", "p")], state.uses(state.pods[("t", "p")]), state.release)

    def test_an_extended_claim_without_charge_writes_nothing(self) -> None:
        """A device without node-allocatable resources: the claim is charged nothing, and gets no entry."""
        pool = slice_obj("s", devices=[device("gpu-0")])
        claim = claim_obj("p-extended-resources-x7k2q", results=[result("gpu-0", request="container-0")])
        state = loading.load([NODE, pool, claim, extended_pod()], "test", "v1.38").state
        assert [] == planned_statuses(state.pods[("t", "p")], state.uses(state.pods[("t", "p")]), state.release)
