"""In-place pod resize for real: the kubelet writes the statuses, and the ledger charges what kube-scheduler charges.

The kubelet runs the static CPU manager policy (site.py), so that a Guaranteed pod's CPU resize is Infeasible on
every release; a resize that does not fit next to the other pods is Deferred; with containerd paused, the kubelet
has allocated a resize it cannot actuate yet: it stays InProgress (an attempt whose pause catches the kubelet's sync
loop inside a runtime call is undone and made anew). At each stage the ledger equals `draledger
audit` of a dump, and kube-scheduler itself is asked what is free on the node: a probe pod asking one millicore
more than the ledger's ``free`` stays unschedulable, one asking exactly ``free`` is bound.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from draledger.core.quantities import parse_quantity, scheduler_units
from tests.realcluster.cluster import STRATEGIC, ApiError, wait_until
from tests.realcluster.operating import converge
from tests.realnode import world
from tests.realnode.site import NodeSite, Scratch

WITHIN = 60.0


def free_cpu(site: NodeSite, scratch: Path) -> int:
    """The ledger's free cpu in millicores, once it equals the offline audit."""
    converge(site.plane, [site.name], scratch, within=WITHIN)
    return scheduler_units("cpu", parse_quantity(site.ledger()["status"]["resources"]["cpu"]["free"]))


def probe(site: NodeSite, ns: Scratch, name: str, millicores: int) -> bool:
    """Whether kube-scheduler binds a claim-free pod asking ``millicores`` to the node; the probe is removed."""
    ns.create(world.pod(name, requests={"cpu": f"{millicores}m"},
                        node_selector={"kubernetes.io/hostname": site.name}))

    def decided() -> str:
        pod = ns.get(name)
        if pod["spec"].get("nodeName"):
            return "bound"
        for condition in pod["status"].get("conditions", []):
            if condition["type"] == "PodScheduled" and condition.get("reason") == "Unschedulable":
                return "unschedulable"
        return ""

    verdict = wait_until(decided, within=WITHIN, what=f"kube-scheduler to decide on probe {name}")
    ns.api.request("DELETE", ns.path(name) + "?gracePeriodSeconds=0")  # the kubelet may be unable to confirm
    wait_until(lambda: ns.api.get_or_none(ns.path(name)) is None, within=WITHIN, what=f"probe {name} to be gone")
    return verdict == "bound"


def agree(site: NodeSite, ns: Scratch, scratch: Path, stage: str) -> int:
    """Module rule: ledger == audit, and the scheduler's free is the ledger's; returns it (millicores)."""
    free = free_cpu(site, scratch)
    assert not probe(site, ns, f"{stage}-over", max(free, 0) + 1), f"{stage}: the scheduler has more than {free}m"
    if free > 0:
        assert probe(site, ns, f"{stage}-exact", free), f"{stage}: the scheduler has less than {free}m"
    return free


def resize(ns: Scratch, pod: str, body: dict[str, Any]) -> None:
    ns.api.patch(ns.path(pod) + "/resize", {"spec": body}, STRATEGIC)


def container_cpu(cpu: str, *, guaranteed: bool = False) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": "32Mi"}}
    if guaranteed:
        resources["limits"] = dict(resources["requests"])
    return {"containers": [{"name": "app", "resources": resources}]}


def resize_condition(ns: Scratch, pod: str) -> tuple[str, str] | None:
    """The pending or in-progress resize condition of ``pod``, as (type, reason)."""
    for condition in ns.get(pod)["status"].get("conditions", []):
        if condition["type"] in ("PodResizePending", "PodResizeInProgress") and condition["status"] == "True":
            return condition["type"], condition.get("reason", "")
    return None


def actual_cpu(ns: Scratch, pod: str) -> tuple[str, str, str]:
    """What the kubelet wrote: the container's allocated and actual cpu, and the pod-level requested cpu."""
    status = ns.get(pod)["status"]
    (container,) = status["containerStatuses"]
    return (container.get("allocatedResources", {}).get("cpu", ""),
            container.get("resources", {}).get("requests", {}).get("cpu", ""),
            status.get("resources", {}).get("requests", {}).get("cpu", ""))


@contextlib.contextmanager
def runtime_paused(site: NodeSite) -> Iterator[None]:
    """containerd stopped (SIGSTOP) for the block: the kubelet can allocate but not actuate."""
    pid = site.node.processes["containerd"].pid
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def resized(ns: Scratch, pod: str, cpu: str) -> bool:
    return resize_condition(ns, pod) is None and actual_cpu(ns, pod)[:2] == (cpu, cpu)


@contextlib.contextmanager
def resize_in_progress(site: NodeSite, ns: Scratch, pod: str, cpu: str, *, back: str,
                       attempts: int = 3) -> Iterator[None]:
    """containerd paused with ``pod``'s resize to ``cpu`` allocated by the kubelet and not actuated, for the block.

    The kubelet's sync loop admits resizes, and every 2 s it also lists the runtime's pods (housekeeping). A pause
    that lands during such a call holds the loop for the whole CRI timeout (2 minutes), resize and all. Such an
    attempt is seen through with the runtime running again, undone (back to ``back``), and made anew.
    """
    for attempt in range(1, attempts + 1):
        with runtime_paused(site):
            resize(ns, pod, container_cpu(cpu))
            try:
                wait_until(lambda: resize_condition(ns, pod) == ("PodResizeInProgress", ""), within=20.0,
                           what=f"the resize of {pod} to be in progress (attempt {attempt})")
            except AssertionError:
                if attempt == attempts:
                    raise
            else:
                yield
                return
        wait_until(lambda: resized(ns, pod, cpu), within=WITHIN, what=f"the resize of {pod} to {cpu} to be done")
        resize(ns, pod, container_cpu(back))
        wait_until(lambda: resized(ns, pod, back), within=WITHIN, what=f"the resize of {pod} back to {back}")


def test_resize_statuses_and_charges_follow_the_scheduler(realnode: NodeSite, ns: Scratch, tmp_path: Path) -> None:
    """Pending (Deferred), in progress, done (container and pod level) and Infeasible: the ledger is the scheduler's."""
    ns.template("core", "core")
    core = [{"name": "c", "resourceClaimTemplateName": "core"}]
    # v1.36's kube-apiserver refuses to resize a pod whose status has node-allocatable claim charges (KEP-5517's
    # TODO in ValidatePodResize); from v1.37 the resized pod holds the claim itself
    claims_resize = realnode.release.name != "v1.36"
    ns.create(world.pod("app", claims=core if claims_resize else None, requests={"cpu": "100m", "memory": "32Mi"}))
    if not claims_resize:
        ns.create(world.pod("holder", claims=core))
        ns.running("holder")
        with pytest.raises(ApiError) as refused:
            resize(ns, "holder", container_cpu("100m"))
        assert 422 == refused.value.status
        assert "pods with node allocatable resource claims cannot be resized" in str(refused.value)
    ns.create(world.pod("fixed", requests={"cpu": "100m", "memory": "32Mi"},
                        limits={"cpu": "100m", "memory": "32Mi"}))
    ns.create(world.pod("plevel", requests={"cpu": "50m"}, pod_resources={"requests": {"cpu": "100m"}}))
    for pod in ("app", "fixed", "plevel"):
        ns.running(pod)
    free = agree(realnode, ns, tmp_path, "start")

    # pending: another pod takes all but 50m, and app asks for 100m more
    ns.create(world.pod("filler", node=realnode.name, requests={"cpu": f"{free - 50}m"}))
    ns.running("filler")
    resize(ns, "app", container_cpu("200m"))
    assert ("PodResizePending", "Deferred") == wait_until(lambda: resize_condition(ns, "app"), within=WITHIN,
                                                          what="the resize to be Deferred")
    assert -50 == agree(realnode, ns, tmp_path, "pending")  # the scheduler charges the desired size already
    assert "Overcommitted" == realnode.ledger()["status"]["phase"]

    # done: room is made, the kubelet resizes app; a pod-level resize of plevel goes through as well
    ns.delete("filler")
    resize(ns, "plevel", {"resources": {"requests": {"cpu": "150m"}}})
    wait_until(lambda: resized(ns, "app", "200m") and actual_cpu(ns, "plevel")[2] == "150m", within=WITHIN,
               what="both resizes to be done")
    assert free - 150 == agree(realnode, ns, tmp_path, "done")

    # in progress: allocated by the kubelet, not yet actuated by the runtime
    with resize_in_progress(realnode, ns, "app", "300m", back="200m"):
        assert ("300m", "200m") == actual_cpu(ns, "app")[:2]
        assert free - 250 == agree(realnode, ns, tmp_path, "progress")
    wait_until(lambda: resized(ns, "app", "300m"), within=WITHIN, what="the resize to be done with the runtime running")

    # Infeasible: a Guaranteed pod's cpu under the static CPU manager policy; the scheduler keeps the allocated size
    resize(ns, "fixed", container_cpu("200m", guaranteed=True))
    assert ("PodResizePending", "Infeasible") == wait_until(lambda: resize_condition(ns, "fixed"), within=WITHIN,
                                                            what="the resize to be Infeasible")
    assert free - 250 == agree(realnode, ns, tmp_path, "infeasible")
    assert "Ready" == realnode.ledger()["status"]["phase"]
