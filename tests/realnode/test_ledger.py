"""The real node's ledger against what the others compute: the offline audit, kube-scheduler, the kubelet.

The operator (one process per release, site.py) keeps the ledger of the real node. Pods hold claims of every
mapping kind the release has (cores without a capacity key, memory through a capacity key, from v1.37 a GPU with
a per-pod memory overhead), and run for real.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from draledger.core.quantities import ZERO, Quantity, parse_quantity, scheduler_units
from tests.realcluster.cluster import wait_until
from tests.realcluster.operating import condition, converge
from tests.realnode import world
from tests.realnode.site import NodeSite, Scratch

WITHIN = 60.0


def units(status: dict[str, Any], resource: str, figure: str) -> int:
    """A figure of the ledger's ``status.resources`` in the scheduler's integer unit (millicores, bytes)."""
    return scheduler_units(resource, parse_quantity(status["resources"][resource][figure]))


def settled(site: NodeSite, scratch: Path) -> dict[str, Any]:
    """The node's ledger once it equals ``draledger audit`` of a dump of the cluster."""
    converge(site.plane, [site.name], scratch, within=WITHIN)
    return site.ledger()


def pod_charges(entry: dict[str, Any]) -> list[tuple[str, Quantity]]:
    """What one entry of a pod's ``nodeAllocatableResourceClaimStatuses`` charges, in either release's shape."""
    out = [(name, parse_quantity(value)) for name, value in entry.get("resources", {}).items()]  # v1.36
    out += [(item["name"], parse_quantity(item["quantity"])) for item in entry.get("mapping", [])]
    for item in entry.get("overhead", []):
        per_pod = parse_quantity(item.get("perPod", "0"))
        per_container = parse_quantity(item.get("perContainer", "0"))
        out.append((item["name"], per_pod + Quantity(per_container.nanos * len(entry.get("containers", [])))))
    return out


def holders(ns: Scratch, release_shape: str) -> dict[str, str]:
    """Pods holding a claim of each kind of mapping; returns the charge each one's claim must bring."""
    ns.template("cores", "core", 2)
    ns.template("mem", "mem", capacity="256Mi")
    ns.create(world.pod("cores", claims=[{"name": "c", "resourceClaimTemplateName": "cores"}],
                        requests={"cpu": "100m", "memory": "32Mi"}))
    ns.create(world.pod("mem", claims=[{"name": "m", "resourceClaimTemplateName": "mem"}]))
    charges = {"cpu": "500m", "memory": "256Mi"}
    if release_shape == "resources":
        ns.template("gpu", "gpu")
        ns.create(world.pod("gpu", claims=[{"name": "g", "resourceClaimTemplateName": "gpu"}]))
        charges["memory"] = "320Mi"  # 256Mi mapped + 64Mi overhead of the GPU's pod
    for pod in ns.pods:
        ns.running(pod)
    return charges


def test_ledger_equals_the_audit_and_the_schedulers_charge(realnode: NodeSite, ns: Scratch, tmp_path: Path) -> None:
    """With real pods holding mapped claims, the ledger equals `draledger audit` and what kube-scheduler charged."""
    charges = holders(ns, realnode.release.shape)
    status = settled(realnode, tmp_path)["status"]

    for resource, charge in charges.items():
        figures = status["resources"][resource]
        assert (parse_quantity(charge), parse_quantity(charge)) == (
            parse_quantity(figures["claims"]), parse_quantity(figures["schedulerCharged"])), resource
    assert "True" == condition({"status": status}, "SchedulerInSync").get("status")
    charged_by_pods: dict[str, Quantity] = {}
    for pod in ns.pods:
        for entry in ns.get(pod)["status"].get("nodeAllocatableResourceClaimStatuses", []):
            for name, quantity in pod_charges(entry):
                charged_by_pods[name] = charged_by_pods.get(name, ZERO) + quantity
    assert {name: parse_quantity(charge) for name, charge in charges.items()} == charged_by_pods
    assert "Ready" == status["phase"]


@pytest.mark.parametrize("resource", ["cpu", "memory"])
def test_kubelet_admission_agrees_with_the_ledgers_free(realnode: NodeSite, ns: Scratch, tmp_path: Path,
                                                        resource: str) -> None:
    """A pod bound by nodeName asking one unit over the ledger's free is refused by the kubelet; exactly free runs."""
    holders(ns, realnode.release.shape)
    status = settled(realnode, tmp_path)["status"]
    free = units(status, resource, "free")
    assert units(status, resource, "claims") > 0  # free is what other pods' DRA charges left
    unit = "m" if resource == "cpu" else ""

    ns.create(world.pod("over", node=realnode.name, restart="Never", requests={resource: f"{free + 1}{unit}"}))
    refused = wait_until(lambda: (pod := ns.get("over"))["status"].get("phase") == "Failed" and pod, within=WITHIN,
                         what="the kubelet to refuse the pod")
    assert f"OutOf{resource}" == refused["status"].get("reason")
    ns.create(world.pod("exact", node=realnode.name, requests={resource: f"{free}{unit}"}))
    ns.running("exact")
    after = settled(realnode, tmp_path)["status"]
    assert 0 == units(after, resource, "free")
    assert "Ready" == after["phase"]


def test_finished_pods_leave_the_ledger(realnode: NodeSite, ns: Scratch, tmp_path: Path) -> None:
    """Pods that succeed and fail stop counting: their requests and their claims' charges leave the ledger."""
    before = settled(realnode, tmp_path)["status"]
    ns.template("cores", "core", 1)
    for name, script in (("succeeds", "sleep 3; true"), ("fails", "sleep 3; false")):
        ns.create(world.pod(name, script=script, restart="Never", requests={"cpu": "200m"},
                            claims=[{"name": "c", "resourceClaimTemplateName": "cores"}]))
    wait_until(lambda: units(realnode.ledger()["status"], "cpu", "claims") == 2 * scheduler_units(
        "cpu", parse_quantity(world.CORE_CPU)), within=WITHIN, what="both pods' claims to be counted")

    assert ("Succeeded", "Failed") == (ns.ended("succeeds"), ns.ended("fails"))
    after = settled(realnode, tmp_path)["status"]
    for figure in ("claims", "podRequests", "requested", "free"):
        assert units(before, "cpu", figure) == units(after, "cpu", figure), figure
    assert [] == [claim["name"] for claim in after.get("claims", [])]
