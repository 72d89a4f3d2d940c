"""One path from a pod to its claims' charge (accounting.uses): the ledger, the gate's room check and the planned
statuses see a claim named by two ``spec.resourceClaims`` entries as one use, with each referencing container once."""

from __future__ import annotations

from typing import Any

import pytest

from draledger.core import loading
from draledger.core.accounting.release import NodeStanding, Standings, decide
from draledger.core.accounting.statuses import planned_statuses
from draledger.core.releases import Release
from draledger.core.views.pods import GATE
from strategies import claim_obj, container, device, direct, node_obj, pod_obj, result, slice_obj

NODE = node_obj("n1", allocatable={"cpu": "16", "memory": "64Gi"})
# mapping 2 cpu, perPod 250m, perContainer 500m
GPU = {"cpu": {"mapping": {"deviceMultiplier": "2"}, "overhead": {"perPod": "250m", "perContainer": "500m"}}}


def pod(bound: bool) -> dict[str, Any]:
    """Container ``a`` references entries ``x`` and ``y``, container ``b`` entry ``y``; both entries name claim
    ``c``. So ``c`` is one use, referenced by the two distinct containers ``a`` and ``b``."""
    body = pod_obj("p", node="n1" if bound else None, phase="Running" if bound else "Pending",
                   containers=[container("a", {"cpu": "1"}, claims=["x", "y"]),
                               container("b", {"cpu": "1"}, claims=["y"])],
                   resource_claims=[direct("x", "c"), direct("y", "c")])
    if not bound:
        body["spec"]["schedulingGates"] = [{"name": GATE}]
    return body


def items(bound: bool) -> list[dict[str, Any]]:
    return [NODE, slice_obj("s", devices=[device("g0", v137=GPU)]), claim_obj("c", results=[result("g0")]),
            pod(bound)]


def gate_reason(release: Release, free: int) -> str:
    """What the gate decides for the held pod on node n1 with ``free`` millicores free (Ready, stored, current)."""
    state = loading.load(items(False), "test", release).state
    standing = NodeStanding("Ready", {"cpu": free, "memory": 1 << 40}, None, "Ready", 1, True)
    pod = state.pods[("t", "p")]
    return decide(pod, Standings.of({"n1": standing}), state.uses(pod), state.release, rebuilt=True,
                  cluster_frozen=False).reason


@pytest.mark.parametrize("release", ["v1.37", "v1.38"])
def test_the_ledger_charges_per_container_once_per_distinct_container(release: Release) -> None:
    """Claim ``c`` charges its mapping (2) and perPod (250m) once and perContainer (500m) for ``a`` and ``b``
    once each: 3250m of claims, 5250m requested with the containers' 2 cpu."""
    ledger = loading.load(items(True), "test", release).state.ledger("n1")
    assert ledger is not None
    cpu = ledger.resources["cpu"]
    assert (["c"], "3250m", 5250) == ([c.name for c in ledger.claims], str(cpu.claims), cpu.requested_units)


@pytest.mark.parametrize("release", ["v1.37", "v1.38"])
def test_the_gate_needs_exactly_what_the_ledger_charges(release: Release) -> None:
    """The gate's room check needs the ledger's 5250m for the same pod: released with exactly that much free,
    held (NoRoom) with one millicore less."""
    assert ("Released", "NoRoom") == (gate_reason(release, 5250), gate_reason(release, 5249))


def test_the_planned_status_lists_each_container_once() -> None:
    """The status the scheduler would write has one entry for ``c``, naming ``a`` and ``b`` once each."""
    state = loading.load(items(True), "test", "v1.37").state
    pod = state.pods[("t", "p")]
    planned = planned_statuses(pod, state.uses(pod), state.release)
    assert [{"resourceClaimName": "c", "containers": ["a", "b"], "mapping": [{"name": "cpu", "quantity": "2"}],
             "overhead": [{"name": "cpu", "perPod": "250m", "perContainer": "500m"}]}] == planned
