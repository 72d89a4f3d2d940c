"""Leader election for real (issue 15): two operators as the manifests' ServiceAccount share one Lease.

kube-apiserver validates what the emulator does not: the Lease's schema (``MicroTime`` renew and acquire
times, a positive ``leaseDurationSeconds``) and the manifests' Role, which grants ``create`` on leases and
``get``/``update`` on the Lease ``draledger`` only. The audit log must show every Lease request of the
operators answered, none refused.
"""

from __future__ import annotations

import signal
from typing import Any

from tests.realcluster.cluster import wait_until
from tests.realcluster.launcher import ControlPlane
from tests.realcluster.operating import (
    NAMESPACE,
    Installation,
    OperatorProcess,
    Operators,
    Site,
    audit_events,
    audit_offset,
    from_operator,
    ledger,
    refusals,
)

LEASE = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/draledger"
ELECTION = ("--leader-election", "--leader-election-lease-duration", "4s", "--leader-election-renew-deadline",
            "3s", "--leader-election-retry-period", "0.5s")
WITHIN = 60.0


def role(process: OperatorProcess) -> str:
    status, body = process.get("/readyz")
    return body.strip() if status == 200 else ""


def lease_spec(site: Site) -> dict[str, Any]:
    spec: dict[str, Any] = site.api.get(LEASE).get("spec") or {}
    return spec


class TestLeaderLease:
    def test_two_replicas_share_the_lease_under_the_manifests_rbac(
            self, control_plane: ControlPlane, installation: Installation, operators: Operators, site: Site) -> None:
        """The first replica creates the Lease and writes the ledger, the second stays a standby; SIGTERM on
        the leader gives the Lease up and the standby takes it; no Lease request is refused."""
        site.setup(1, gated=False)
        node = site.nodes[0]
        offset = audit_offset(control_plane)
        args = ("--node-selector", site.label, *ELECTION)
        leader = operators.start(*args)
        wait_until(lambda: role(leader) == "ready: leader", within=WITHIN, what="the first replica to lead")
        standby = operators.start(*args)
        wait_until(lambda: role(standby) == "ready: standby", within=WITHIN, what="the second to be a standby")
        wait_until(lambda: ((ledger(site.api, node) or {}).get("status") or {}).get("phase") == "Ready",
                   within=WITHIN, what="the leader to write the ledger")
        before = lease_spec(site)
        assert before["holderIdentity"]
        assert 4 == before["leaseDurationSeconds"]

        assert 0 == leader.stop(signal.SIGTERM)
        wait_until(lambda: role(standby) == "ready: leader", within=WITHIN, what="the standby to take over")

        after = lease_spec(site)
        assert before["holderIdentity"] != after["holderIdentity"]
        assert before["leaseTransitions"] < after["leaseTransitions"]
        seen = from_operator(audit_events(control_plane, offset))
        leases = {(event["verb"], event["responseStatus"].get("code")) for event in seen
                  if (event.get("objectRef") or {}).get("resource") == "leases"}
        assert {("create", 201), ("get", 200), ("update", 200)} <= leases
        assert [] == refusals(seen)
