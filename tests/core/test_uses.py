"""One path from a pod to its claims (accounting.uses): two ``spec.resourceClaims`` entries naming one ResourceClaim
are one use, and the ledger and the gate's room check charge it alike."""

from __future__ import annotations

from typing import Any

import pytest

from draledger.core import loading
from draledger.core.accounting.release import NodeStanding, Standings, decide
from draledger.core.releases import Release
from draledger.core.views.pods import GATE
from strategies import claim_obj, container, device, direct, node_obj, pod_obj, result, slice_obj

NODE = node_obj("n1", allocatable={"cpu": "16", "memory": "64Gi"})
GPU = {"cpu": {"mapping": {"deviceMultiplier": "2"}, "overhead": {"perPod": "250m", "perContainer": "500m"}}}


def two_entries(bound: bool) -> dict[str, Any]:
    """Containers ``a`` (entry ``x``) and ``b`` (entry ``y``), both entries naming claim ``c``; unbound, it carries
    the gate."""
    pod = pod_obj("p", node="n1" if bound else None, phase="Running" if bound else "Pending",
                  containers=[container("a", {"cpu": "1"}, claims=["x"]), container("b", {"cpu": "1"}, claims=["y"])],
                  resource_claims=[direct("x", "c"), direct("y", "c")])
    if not bound:
        pod["spec"]["schedulingGates"] = [{"name": GATE}]
    return pod


def items(bound: bool) -> list[dict[str, Any]]:
    pool = slice_obj("s", devices=[device("g0", v137=GPU)])
    return [NODE, pool, claim_obj("c", results=[result("g0")]), two_entries(bound)]


class TestTwoEntriesOneClaim:
    @pytest.mark.parametrize("release", ["v1.37", "v1.38"])
    def test_the_ledger_charges_the_claim_once_with_each_container(self, release: Release) -> None:
        """One claim: mapping 2 and perPod 250m once, perContainer 500m for each of a and b: 3250m of claims."""
        ledger = loading.load(items(True), "test", release).state.ledger("n1")
        assert ledger is not None
        assert (["c"], "3250m", "5250m") == ([c.name for c in ledger.claims], str(ledger.resources["cpu"].claims),
                                             str(ledger.resources["cpu"].requested))

    @pytest.mark.parametrize("release", ["v1.37", "v1.38"])
    def test_the_gate_asks_for_exactly_what_the_ledger_charges(self, release: Release) -> None:
        """The gate's room check (``decide``) needs the ledger's figure for the same pod, no more and no less: it
        releases the pod onto a node with exactly that much free and holds it with one millicore less."""
        bound = loading.load(items(True), "test", release).state.ledger("n1")
        assert bound is not None
        charged = bound.resources["cpu"].requested_units
        state = loading.load(items(False), "test", release).state
        pod = state.pods[("t", "p")]

        def reason(free: int) -> str:
            stored = NodeStanding("Ready", {"cpu": free, "memory": 1 << 40}, stored_phase="Ready", current=True)
            return decide(pod, Standings.of({"n1": stored}), state, rebuilt=True, cluster_frozen=False,
                          numa_attributes=()).reason

        assert (5250, "Released", "NoRoom") == (charged, reason(charged), reason(charged - 1))
