"""docs/rollout.md's stages, run as written on a cluster of the real control plane (issue 27).

Observe only, then the canary with gating, then production, then the rollback drill: each stage's ``sh`` block is
read out of rollout.md (tests/manifests/documented.py) and every line runs in bash, as a user would run it, with
the cluster's admin kubeconfig, the test extra's kubectl and this draledger on PATH, in a copy of the repository's
manifests/. A comment line is a step no command does; the drill's ("repair the driver here") is done by the test.

The cluster is the test's own (the stages own draledger-system), with the nodes and namespaces the doc names,
a DRA driver on every node, and the stand-ins of podless.py for what the control plane lacks: after each
``kubectl apply`` the install's Deployment is rolled out (the old replica stopped, the new one run from the
Deployment as stored), its Certificate issued and its webhook reached. After each stage the test checks what
the stage says it does.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.manifests.documented import ROOT, blocks, commands, section
from tests.realcluster.cluster import (
    RESOURCE_API,
    Api,
    ensure_namespace,
    kubectl_binary,
    publish_device_class,
    unique,
    wait_until,
)
from tests.realcluster.launcher import ControlPlane
from tests.realcluster.operating import (
    GATE,
    Site,
    bound_with_status,
    claim_spec,
    converge,
    gates_of,
    ledger,
    pod_body,
    restarted,
)
from tests.realcluster.podless import Pod, install_prerequisites, issue_certificates, run_deployment, webhook_routed

ROLLOUT = ROOT / "docs" / "rollout.md"
STAGES = ("Stage 0: observe only (no gating, no writes to pods)", "Stage 1: canary", "Stage 2: production",
          "Rollback drill")
NAMESPACE = "draledger-system"
CANARY = ("worker-7", "worker-8")
NODES = (*CANARY, "worker-9")
WITHIN = 60.0


def stage(heading: str) -> list[str]:
    """The commands of the one ``sh`` block of the stage's section."""
    (block,) = blocks(section(ROLLOUT, heading), "sh")
    return commands(block)


@pytest.fixture
def cluster(control_plane: ControlPlane, tmp_path: Path) -> Iterator[ControlPlane]:
    """A control plane of the same release for this test alone (module docstring)."""
    with ControlPlane(control_plane.release, tmp_path / "cluster") as plane:
        yield plane


class Rollout:
    """The doc's reader at a shell, and the cluster's reaction to what they apply (module docstring)."""

    def __init__(self, plane: ControlPlane, scratch: Path) -> None:
        self.plane = plane
        self.api = plane.api()
        self.scratch = scratch
        self.workdir = scratch / "repository"
        shutil.copytree(ROOT / "manifests", self.workdir / "manifests")
        path = os.pathsep.join([str(Path(kubectl_binary()).parent), str(Path(sys.executable).parent),
                                os.environ.get("PATH", "")])
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith("DRALEDGER_")},
                    "KUBECONFIG": str(plane.kubeconfig), "PATH": path}
        self.pod: Pod | None = None
        self.route: contextlib.ExitStack = contextlib.ExitStack()
        self.outputs: dict[str, str] = {}

    def run(self, line: str) -> str:
        """One line of the doc in bash; it must succeed. Its output is kept by line."""
        if line.startswith("kubectl apply"):
            self.route.close()  # the webhook configuration as the last apply left it (podless rule 3)
        done = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=self.workdir, env=self.env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert 0 == done.returncode, f"`{line}` failed (exit {done.returncode}):\n{done.stderr}{done.stdout}"
        self.outputs[line] = done.stdout
        if line.startswith("kubectl apply"):
            self.roll_out()
        return done.stdout

    def roll_out(self) -> None:
        """What the cluster does after an apply: a new replica of the Deployment as stored, serving its webhook."""
        if self.pod is not None:
            self.pod.process.stop()
        if self.api.get_or_none(f"/apis/cert-manager.io/v1/namespaces/{NAMESPACE}/certificates/draledger-webhook"):
            issue_certificates(self.api, NAMESPACE, self.scratch)
        self.pod = run_deployment(self.plane, NAMESPACE, self.scratch)
        hook = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/draledger-gate-pods"
        if self.pod.webhook_port is not None and self.api.get_or_none(hook) is not None:
            self.route = contextlib.ExitStack()
            self.route.enter_context(webhook_routed(self.api, "draledger-gate-pods", self.pod))

    def stop(self) -> None:
        self.route.close()
        if self.pod is not None:
            self.pod.process.stop()


def prepare(plane: ControlPlane) -> Site:
    """The cluster the doc speaks of: worker-7..9 with a driver's cores, team-a and team-b, the third-party CRDs."""
    api = plane.api()
    install_prerequisites(api)
    site = Site(api, plane.release, unique("rollout"))
    publish_device_class(api, site.device_class, site.driver)
    for node in NODES:
        site.add_node(node)
    for namespace in ("team-a", "team-b"):
        ensure_namespace(api, namespace)
        api.create(f"{RESOURCE_API}/namespaces/{namespace}/resourceclaimtemplates", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "one-core"},
            "spec": {"spec": claim_spec(site.device_class, 1)}})
    return site


def claim_pod(api: Api, namespace: str, name: str, *, node: str = "") -> dict[str, Any]:
    """A pod with one claim of a core, on ``node`` if given (by required node affinity: the scheduler binds it)."""
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}} if node else None
    created: dict[str, Any] = api.create(f"/api/v1/namespaces/{namespace}/pods",
                                         pod_body(name, {"resourceClaimTemplateName": "one-core"}, affinity=affinity))
    return created


def pod(api: Api, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    return found


def status(api: Api, node: str) -> dict[str, Any]:
    return dict((ledger(api, node) or {}).get("status") or {})


def condition(api: Api, node: str, kind: str) -> str:
    return next((entry["status"] for entry in status(api, node).get("conditions", []) if entry["type"] == kind), "")


def repair(api: Api, site: Site, multiplier: str) -> None:
    """The driver repaired: every node's slice republished, a generation later, with other mappings."""
    for node in NODES:
        devices = [{"name": f"core-{index}", "attributes": {"index": {"int": index}},
                    **site.release.device_mapping("cpu", multiplier)} for index in range(4)]
        api.patch(f"{RESOURCE_API}/resourceslices/{node}-cores", {"spec": {"pool": {"generation": 2},
                                                                            "devices": devices}})


def repaired(api: Api, site: Site) -> None:
    """The drill's comment line, once every ledger is Frozen: a new pod arrives and stays gated, and the driver is
    repaired, which moves every node's mappingVersion."""
    wait_until(lambda: all(status(api, node).get("phase") == "Frozen" for node in NODES), within=WITHIN,
               what="every ledger to be Frozen")
    versions = {node: int(status(api, node)["mappingVersion"]) for node in NODES}
    claim_pod(api, "team-b", "held")
    repair(api, site, multiplier="3")
    wait_until(lambda: all(int(status(api, node)["mappingVersion"]) > versions[node] for node in NODES),
               within=WITHIN, what="every node's mappingVersion to move")
    assert [GATE] == gates_of(pod(api, "team-b", "held"))
    assert None is pod(api, "team-b", "held")["spec"].get("nodeName")


def test_the_stages_run_as_written(cluster: ControlPlane, tmp_path: Path) -> None:
    """Stage 0 observes the canary nodes and writes no pod; Stage 1 gates and backfills there only; Stage 2
    everywhere; the drill freezes, exports, and resumes every node whose mappings the repair moved."""
    api = cluster.api()
    site = prepare(cluster)
    reader = Rollout(cluster, tmp_path)
    try:
        # Stage 0: a pod bound by a scheduler that writes no status, so that there is something to backfill
        bound = CANARY[0]  # a canary node, for Stage 1 to backfill it
        with restarted(cluster, "kube-scheduler", feature_gates={"DRANodeAllocatableResources": False}):
            claim_pod(api, "team-a", "unbacked", node=bound)
            wait_until(lambda: pod(api, "team-a", "unbacked")["spec"].get("nodeName"), within=WITHIN,
                       what="the pod to be bound without its node-allocatable status")
        for line in stage(STAGES[0]):
            reader.run(line)
        wait_until(lambda: condition(api, bound, "SchedulerInSync") == "False", within=WITHIN,
                   what="the observed ledger to count the pod the scheduler did not charge")
        converge(cluster, list(CANARY), tmp_path)
        observed = claim_pod(api, "team-a", "observed")

        assert [] == gates_of(observed)
        assert [None] == [ledger(api, "worker-9")]
        assert "nodeAllocatableResourceClaimStatuses" not in pod(api, "team-a", "unbacked")["status"]
        assert all(node in reader.outputs["kubectl get nal"] for node in CANARY)

        # Stage 1: the canary gates team-a on its nodes, and backfills
        for line in stage(STAGES[1]):
            reader.run(line)
        backfilled = wait_until(lambda: bound_with_status(api, "/api/v1/namespaces/team-a/pods/unbacked"),
                                within=WITHIN, what="the canary to backfill the pod's status")
        gated = claim_pod(api, "team-a", "gated")
        wait_until(lambda: bound_with_status(api, "/api/v1/namespaces/team-a/pods/gated"), within=WITHIN,
                   what="the gated pod to be released and bound")
        ungated = claim_pod(api, "team-b", "ungated")

        assert [GATE] == gates_of(gated)
        assert [] == gates_of(ungated)
        assert bound == backfilled["spec"]["nodeName"]
        assert [None] == [ledger(api, "worker-9")]

        # Stage 2: production, every node and every namespace
        for line in stage(STAGES[2]):
            reader.run(line)
        wait_until(lambda: status(api, "worker-9").get("phase") == "Ready", within=WITHIN,
                   what="worker-9's ledger")
        everywhere = claim_pod(api, "team-b", "everywhere")
        wait_until(lambda: bound_with_status(api, "/api/v1/namespaces/team-b/pods/everywhere"), within=WITHIN,
                   what="the team-b pod to be released")

        assert [GATE] == gates_of(everywhere)

        # the rollback drill: freeze, export, repair the driver (the comment line), resume by mapping version
        for line in stage(STAGES[3]):
            if line.startswith("#"):
                assert "repair the driver" in line
                repaired(api, site)
            else:
                reader.run(line)
        wait_until(lambda: bound_with_status(api, "/api/v1/namespaces/team-b/pods/held"), within=WITHIN,
                   what="the held pod to be released once its nodes resumed")

        assert (tmp_path / "repository" / "ledgers.yaml").is_file()
        assert {node: False for node in NODES} == {
            node: bool(((ledger(api, node) or {}).get("spec") or {}).get("frozen")) for node in NODES}
    finally:
        reader.stop()  # the cluster, the test's own, goes with its fixture
