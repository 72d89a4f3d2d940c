"""Backfill for real (issue 12, item 6): pods the scheduler did not charge, and an apiserver that drops the field.

A. kube-scheduler restarted with DRANodeAllocatableResources off binds claim pods without
   ``status.nodeAllocatableResourceClaimStatuses``; restarted with it on again, it never goes back to them. The
   operator in ``--pod-status observe`` only reports the gap; in ``backfill`` it writes the field through
   ``pods/status``, kube-apiserver keeps it, and the ledger turns SchedulerInSync.
B. kube-apiserver restarted with the gate off drops the field from every write, the scheduler's and the
   operator's alike. The operator sees its answer without the field and stops backfilling for good, as
   docs/operations.md says: one log line, ``draledger_pod_status_backfill_disabled`` 1, and the ledgers'
   ``PodStatusBackfill`` condition False with reason ServerDropsField.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.realcluster.cluster import RESOURCE_API, publish_slice, wait_until
from tests.realcluster.launcher import ControlPlane
from tests.realcluster.operating import (
    Installation,
    Operators,
    Site,
    audit_events,
    audit_offset,
    bound_with_status,
    condition,
    converge,
    from_operator,
    ledger,
    managers_of,
    refusals,
    restarted,
)

FIELD = "nodeAllocatableResourceClaimStatuses"
GATE_OFF = {"DRANodeAllocatableResources": False}
WITHIN = 60.0


def bound(site: Site, name: str) -> dict[str, Any] | None:
    pod: dict[str, Any] = site.api.get(site.pod_path(name))
    return pod if pod["spec"].get("nodeName") else None


def claim_of(pod: dict[str, Any]) -> str:
    return str(pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"])


def ledger_status(site: Site) -> dict[str, Any]:
    return dict((ledger(site.api, site.nodes[0]) or {}).get("status") or {})


class TestSchedulerWithoutTheGate:
    def test_pods_the_scheduler_did_not_charge_are_backfilled_and_kept(
            self, control_plane: ControlPlane, installation: Installation, operators: Operators, site: Site,
            tmp_path: Path) -> None:
        """Observe reports the gap, backfill closes it; the apiserver keeps the field; the scheduler's stays its."""
        api = site.api
        site.setup(1, gated=False)
        site.template()
        with restarted(control_plane, "kube-scheduler", feature_gates=GATE_OFF):
            for name in ("first", "second"):
                site.claim_pod(name)
            uncharged = [wait_until(lambda name=name: bound(site, name), within=WITHIN,
                                    what=f"the scheduler (gate off) to bind {name}") for name in ("first", "second")]
        assert [None, None] == [pod["status"].get(FIELD) for pod in uncharged]
        offset = audit_offset(control_plane)

        observer = operators.start("--node-selector", site.label, "--coalesce-window", "0.1",
                                   "--pod-status", "observe")
        observed = wait_until(lambda: (lambda status: status if status.get("claimCount") == 2 else None)(
            ledger_status(site)), within=WITHIN, what="the ledger to count both claims")
        assert {"status": "False", "reason": "Diverged", "message": "cpu: ledger 4, scheduler 0"} == {
            key: condition({"status": observed}, "SchedulerInSync")[key] for key in ("status", "reason", "message")}
        assert ("False", "Observe") == tuple(condition({"status": observed}, "PodStatusBackfill")[key]
                                             for key in ("status", "reason"))
        assert 0 == observer.metric("draledger_status_writes_total", target="pod-status")
        observer.stop()
        assert [None, None] == [api.get(site.pod_path(name))["status"].get(FIELD) for name in ("first", "second")]

        filler = operators.start("--node-selector", site.label, "--coalesce-window", "0.1")
        filled = [wait_until(lambda name=name: bound_with_status(api, site.pod_path(name)), within=WITHIN,
                             what=f"the operator to backfill {name}") for name in ("first", "second")]

        assert [[site.release.claim_status(claim_of(pod), ["app"], {"cpu": "2"})] for pod in uncharged] == \
            [pod["status"][FIELD] for pod in filled]
        assert [[]] * 2 == [[name for name in managers_of(pod, FIELD) if name == "kube-scheduler"] for pod in filled]
        assert 2 == filler.metric("draledger_status_writes_total", target="pod-status")
        assert 2 == len(filler.logged("pod status backfilled"))
        in_sync = wait_until(lambda: (lambda status: status if condition(
            {"status": status}, "SchedulerInSync").get("status") == "True" else None)(ledger_status(site)),
            within=WITHIN, what="the ledger to turn SchedulerInSync")
        assert "4" == in_sync["resources"]["cpu"]["schedulerCharged"] == in_sync["resources"]["cpu"]["claims"]
        assert ("True", "Backfill") == tuple(condition({"status": in_sync}, "PodStatusBackfill")[key]
                                             for key in ("status", "reason"))

        site.claim_pod("third")  # the scheduler has its gate again: it writes the field, the operator does not
        third = wait_until(lambda: bound_with_status(api, site.pod_path("third")), within=WITHIN,
                           what="the scheduler to bind and charge a new pod")
        assert "kube-scheduler" in managers_of(third, FIELD)
        converge(control_plane, site.nodes, tmp_path)
        assert 2 == filler.metric("draledger_status_writes_total", target="pod-status")
        assert [pod["status"][FIELD] for pod in filled] == \
            [api.get(site.pod_path(name))["status"][FIELD] for name in ("first", "second")]  # the apiserver kept it
        assert [] == refusals(from_operator(audit_events(control_plane, offset)))


class TestApiserverWithoutTheGate:
    def test_an_apiserver_that_drops_the_field_stops_the_backfill(
            self, control_plane: ControlPlane, installation: Installation, operators: Operators, site: Site) -> None:
        """The field vanishes from every write; the operator notices its answer lacks it and stops, once."""
        api = site.api
        site.setup(1, gated=False)  # its slice is stored with the mapping while the gate is still on
        site.template()
        node = site.nodes[0]
        with restarted(control_plane, "kube-apiserver", feature_gates=GATE_OFF):
            offset = audit_offset(control_plane)
            stored = api.get(f"{RESOURCE_API}/resourceslices/{node}-cores")["spec"]["devices"][0]
            late = publish_slice(api, f"{node}-late", driver=site.driver, node=node, pool=f"{node}-late",
                                 devices=[{"name": "late", **site.release.device_mapping("cpu", "2")}])
            api.delete(f"{RESOURCE_API}/resourceslices/{node}-late")
            site.claim_pod("first")
            first = wait_until(lambda: bound(site, "first"), within=WITHIN, what="the scheduler to bind the pod")

            operator = operators.start("--node-selector", site.label, "--coalesce-window", "0.1")
            wait_until(lambda: operator.metric("draledger_pod_status_backfill_disabled") == 1, within=WITHIN,
                       what="the operator to stop backfilling")
            status = wait_until(lambda: (lambda status: status if condition({"status": status}, "PodStatusBackfill")
                                         .get("reason") == "ServerDropsField" else None)(ledger_status(site)),
                                within=WITHIN, what="the ledger's PodStatusBackfill condition")
            site.claim_pod("second")
            wait_until(lambda: bound(site, "second"), within=WITHIN, what="the scheduler to bind a second pod")
            wait_until(lambda: ledger_status(site).get("claimCount") == 2, within=WITHIN,
                       what="the ledger to count the second claim")
            pods = [api.get(site.pod_path(name)) for name in ("first", "second")]
            writes = operator.metric("draledger_status_writes_total", target="pod-status")
            stopped = operator.logged("pod status backfill stopped")
            operator.stop()  # before the apiserver restarts: its RBAC caches refuse a moment after a start
            seen = from_operator(audit_events(control_plane, offset))

        assert site.release.device_mapping("cpu", "2").items() <= stored.items()  # stored before: served as is
        assert [{"name": "late"}] == late["spec"]["devices"]  # written now: the mapping is dropped, silently
        assert [None, None] == [pod["status"].get(FIELD) for pod in pods]  # the scheduler's write lost it too
        assert first["status"].get(FIELD) is None
        assert 1 == writes  # one answer without the field, then never again
        assert 1 == len(stopped)
        assert f"from pod {site.namespace}/first" in stopped[0]["reason"]
        backfill = condition({"status": status}, "PodStatusBackfill")
        assert ("False", "ServerDropsField") == (backfill["status"], backfill["reason"])
        assert "the DRANodeAllocatableResources gate is off in kube-apiserver" in backfill["message"]
        assert ("False", "Diverged") == tuple(condition({"status": status}, "SchedulerInSync")[key]
                                              for key in ("status", "reason"))
        assert [] == refusals(seen)
