"""Gating and release for real (issue 12, item 5): the operator's patch as kube-apiserver stores it, then binding.

Two nodes of the test's own, each with four cores that map to 2 cpu; the second node's ledger is frozen, so the
operator may vouch only for the first. A claim pod, gated at admission by the MutatingAdmissionPolicy and
carrying another controller's gate too, is released by the real operator process: only its own gate goes, and
every node-affinity term gains ``metadata.name NotIn [frozen node]`` (KEP-3838 allows tightening while gated).
The real scheduler then binds it to the first node and writes its node-allocatable status, and the ledger
counts it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from draledger.core.records import ANNOTATION as RECORD
from tests.realcluster.cluster import JSON_PATCH, wait_until
from tests.realcluster.launcher import ControlPlane
from tests.realcluster.operating import (
    GATE,
    LEDGERS,
    Installation,
    Operators,
    Site,
    audit_events,
    audit_offset,
    bound_with_status,
    condition,
    converge,
    from_operator,
    gates_of,
    ledger,
    managers_of,
    refusals,
)

FOREIGN_GATE = "example.com/quota"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
WITHIN = 60.0


def affinity_terms(pod: dict[str, Any]) -> list[dict[str, Any]]:
    terms: list[dict[str, Any]] = pod["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"]
    return terms


class TestRelease:
    def test_the_operator_releases_only_its_gate_tightens_affinity_and_the_scheduler_binds(
            self, control_plane: ControlPlane, installation: Installation, operators: Operators, site: Site,
            tmp_path: Path) -> None:
        """Gate removed alone, each affinity term narrowed to the vouched node, bound there, counted there."""
        api = site.api
        site.setup(2)
        site.template()
        vouched, frozen = site.nodes
        offset = audit_offset(control_plane)
        operators.start("--node-selector", site.label, "--coalesce-window", "0.1")
        wait_until(lambda: ledger(api, frozen), within=WITHIN, what="the ledger of the second node")
        api.patch(f"{LEDGERS}/{frozen}", {"spec": {"frozen": True, "reason": "realcluster: not vouched for"}})
        wait_until(lambda: (ledger(api, frozen) or {}).get("status", {}).get("phase") == "Frozen", within=WITHIN,
                   what="the second node's ledger to be Frozen")
        terms = [{"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]},
                 {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": site.nodes}]}]

        created = site.claim_pod("app", gates=[FOREIGN_GATE], affinity={"nodeAffinity": {REQUIRED: {
            "nodeSelectorTerms": terms}}})
        released = wait_until(lambda: (lambda pod: pod if GATE not in gates_of(pod) else None)(
            api.get(site.pod_path("app"))), within=WITHIN, what="the operator to remove its gate")

        assert [FOREIGN_GATE, GATE] == gates_of(created)  # the policy appended ours to the pod's own
        assert [FOREIGN_GATE] == gates_of(released)
        keep_out = {"key": "metadata.name", "operator": "NotIn", "values": [frozen]}
        assert [{**term, "matchFields": [keep_out]} for term in terms] == affinity_terms(released)
        unchanged = {key: value for key, value in released["spec"].items()
                     if key not in ("schedulingGates", "affinity")}
        assert {key: value for key, value in created["spec"].items()
                if key not in ("schedulingGates", "affinity")} == unchanged
        for field in ("labels", "finalizers", "ownerReferences"):
            assert created["metadata"].get(field) == released["metadata"].get(field), field
        record = released["metadata"]["annotations"].pop(RECORD)
        assert (created["metadata"].get("annotations") or {}) == released["metadata"]["annotations"]
        assert record.startswith("*@resourceVersion=")  # placed by the scheduler, on ledgers stored Ready
        assert not released["spec"].get("nodeName")  # still held by the other controller's gate

        api.patch(site.pod_path("app"), [{"op": "remove", "path": "/spec/schedulingGates/0"}], JSON_PATCH)
        scheduled = wait_until(lambda: bound_with_status(api, site.pod_path("app")), within=WITHIN,
                               what="the scheduler to bind the pod and write its status")
        claim = scheduled["status"]["resourceClaimStatuses"][0]["resourceClaimName"]

        assert vouched == scheduled["spec"]["nodeName"]
        assert [site.release.claim_status(claim, ["app"], {"cpu": "2"})] == \
            scheduled["status"]["nodeAllocatableResourceClaimStatuses"]
        assert "kube-scheduler" in managers_of(scheduled, "nodeAllocatableResourceClaimStatuses")

        def counted() -> dict[str, Any] | None:
            status: dict[str, Any] = (ledger(api, vouched) or {}).get("status") or {}
            return status if status.get("claimCount") == 1 and status["resources"]["cpu"]["schedulerCharged"] == "2" \
                else None

        status = wait_until(counted, within=WITHIN, what="the ledger to count the claim")
        assert {"cpu": "2"} == status["claims"][0]["resources"] == status["claims"][0]["schedulerCharged"]
        assert [f"{site.namespace}/app"] == status["claims"][0]["pods"]
        assert "2" == status["resources"]["cpu"]["claims"]
        assert "True" == condition({"status": status}, "SchedulerInSync")["status"]
        assert 0 == (ledger(api, frozen) or {})["status"]["claimCount"]
        converge(control_plane, [vouched], tmp_path)  # the frozen one differs: the audit knows no spec.frozen
        assert [] == refusals(from_operator(audit_events(control_plane, offset)))
