"""The Helm chart installed as platform teams install it (issue 27), on a cluster of the real control plane.

``helm install`` (the pinned helm v4) into a namespace of its own, ``platform-ledger``; the install's operator then
runs and writes ledgers; ``helm upgrade`` changes a value and nothing else; ``helm uninstall`` removes every
object of the release but the CRD, which Helm keeps.

The cluster is the test's own (a second control plane of the release): the chart's cluster-scoped objects have
the names the session's installation holds. The operator is the install's Deployment, run by the kubelet
stand-in of podless.py: its container's configuration, its ServiceAccount's token, so every request meets the
install's RBAC and guardrail, whose namespace the chart templated.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.manifests.charted import CHART, RELEASE
from tests.realcluster.cluster import JSON_PATCH, Api, ApiError, Credentials, kubectl, unique, wait_until
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
    request_token,
)
from tests.realcluster.podless import Pod, run_deployment

NAMESPACE = "platform-ledger"
WITHIN = 60.0
CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/nodeallocatableledgers.draledger.dev"
POLICY = "ValidatingAdmissionPolicy 'draledger-pod-writes' with binding 'draledger-pod-writes' denied request: "


@pytest.fixture
def cluster(control_plane: ControlPlane, tmp_path: Path) -> Iterator[ControlPlane]:
    """A control plane of the same release for this test alone (module docstring)."""
    with ControlPlane(control_plane.release, tmp_path / "cluster") as plane:
        yield plane


class Helm:
    """The pinned helm against one cluster, with its own cache and configuration directories."""

    def __init__(self, binary: Path, plane: ControlPlane, home: Path) -> None:
        self.binary = binary
        self.plane = plane
        self.env = {**os.environ, "HELM_CACHE_HOME": str(home / "cache"), "HELM_CONFIG_HOME": str(home / "config"),
                    "HELM_DATA_HOME": str(home / "data"), "KUBECONFIG": str(plane.kubeconfig)}

    def __call__(self, *args: str) -> str:
        done = subprocess.run([str(self.binary), *args, "--namespace", NAMESPACE], capture_output=True, text=True,
                              timeout=180, check=False, env=self.env)
        assert 0 == done.returncode, f"helm {' '.join(args)} failed:\n{done.stderr}"
        return done.stdout

    def release(self) -> dict[str, Any]:
        listed = yaml.safe_load(self("list", "--output", "yaml")) or []
        (found,) = [item for item in listed if item["name"] == RELEASE]
        return dict(found)

    def manifest(self, path: Path) -> list[tuple[str, str, str]]:
        """Write the release's manifest (CRDs are not in it) to ``path``; its objects' (apiVersion, kind, name)."""
        text = self("get", "manifest", RELEASE)
        path.write_text(text, encoding="utf-8")
        return sorted((obj["apiVersion"], obj["kind"], obj["metadata"]["name"])
                      for obj in yaml.safe_load_all(text) if obj)


def remaining(plane: ControlPlane, manifest: Path) -> list[str]:
    """``kind/name`` of the objects of ``manifest`` that the cluster still holds."""
    done = kubectl(plane.kubeconfig, "get", "--filename", str(manifest), "--ignore-not-found", "--output", "name")
    return done.stdout.split()


def config_maps(api: Api) -> dict[str, dict[str, str]]:
    """The operator's ConfigMaps in the namespace: name -> data."""
    listed = api.get(f"/api/v1/namespaces/{NAMESPACE}/configmaps")["items"]
    return {item["metadata"]["name"]: item.get("data", {}) for item in listed
            if item["metadata"]["name"].startswith("draledger-config")}


def dry_run_gates(api: Api, namespace: str) -> list[str]:
    """The gates a claim pod would be created with in ``namespace`` (server-side dry run: admission runs)."""
    answer = api.request("POST", f"/api/v1/namespaces/{namespace}/pods?dryRun=All",
                         pod_body(unique("dry"), {"resourceClaimTemplateName": "one-core"}))
    return gates_of(answer)


def refusal(action: Callable[[], Any]) -> str:
    """The message of the answer refusing ``action``; empty when it was allowed."""
    try:
        action()
    except ApiError as error:
        return str(error.body.get("message", "")) if isinstance(error.body, dict) else str(error.body)
    return ""


def phase(api: Api, node: str) -> str:
    return str(((ledger(api, node) or {}).get("status") or {}).get("phase", ""))


def test_install_run_upgrade_and_uninstall(cluster: ControlPlane, helm: Path, tmp_path: Path) -> None:
    """helm install into platform-ledger runs an operator that writes ledgers and releases gates under the install's
    RBAC and guardrail; helm upgrade changes the one value; helm uninstall leaves only the CRD and its ledgers."""
    api = cluster.api()
    assert cluster.pki is not None
    run = Helm(helm, cluster, tmp_path / "helm")
    site = Site(api, cluster.release, unique("helm"))
    site.setup(2)
    site.template()
    canary = site.nodes[0]
    api.patch(f"/api/v1/nodes/{canary}", {"metadata": {"labels": {"draledger.dev/canary": "true"}}})
    elsewhere = unique("ungated")  # a namespace no label opts in
    api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": elsewhere}})
    site.cleanup.append(f"/api/v1/namespaces/{elsewhere}")
    api.create(f"/apis/resource.k8s.io/v1/namespaces/{elsewhere}/resourceclaimtemplates", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "one-core"},
        "spec": {"spec": claim_spec(site.device_class, 1)}})
    pods: list[Pod] = []
    try:
        # install, with the chart's defaults: the MutatingAdmissionPolicy, every node, every namespace but ours
        run("install", RELEASE, str(CHART), "--create-namespace")
        pods.append(run_deployment(cluster, NAMESPACE, tmp_path))
        wait_until(lambda: all(phase(api, node) == "Ready" for node in site.nodes), within=WITHIN,
                   what="the install's operator to write Ready ledgers")
        created = site.claim_pod("first")
        released = wait_until(lambda: bound_with_status(api, site.pod_path("first")), within=WITHIN,
                              what="the gated pod to be released and bound")
        converge(cluster, site.nodes, tmp_path)
        lease = api.get(f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/draledger")
        operator = Api(Credentials(cluster.server, cluster.pki.ca_cert, None, None,
                                   token=request_token(api, namespace=NAMESPACE)))
        refused = refusal(lambda: operator.patch(site.pod_path("first"), [
            {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}], JSON_PATCH))
        installed = run.manifest(tmp_path / "installed.yaml")
        configured = config_maps(api)
        (before,) = configured

        assert [GATE] == gates_of(created)
        assert [GATE] == dry_run_gates(api, elsewhere)
        assert released["spec"]["nodeName"] in site.nodes
        assert lease["spec"]["holderIdentity"].startswith(pods[0].process.log.stem)
        assert f"pods \"first\" is forbidden: {POLICY}the operator may not change metadata.labels" == refused

        # upgrade, the one value: the canary's scope (its node label and the opted-in namespaces)
        pods.pop().process.stop()
        run("upgrade", RELEASE, str(CHART), "--set", "canary.enabled=true")
        upgraded = run.release()
        (after,) = config_maps(api)
        pods.append(run_deployment(cluster, NAMESPACE, tmp_path))
        wait_until(lambda: dry_run_gates(api, elsewhere) == [], within=WITHIN,
                   what="the canary's binding to leave an unlabelled namespace ungated")

        assert ("2", "deployed") == (str(upgraded["revision"]), upgraded["status"])
        assert before != after
        assert {**configured[before], "DRALEDGER_NODE_SELECTOR": "draledger.dev/canary=true"} == \
            config_maps(api)[after]
        assert {("v1", "ConfigMap", before), ("v1", "ConfigMap", after)} == set(installed) ^ set(
            run.manifest(tmp_path / "upgraded.yaml"))  # the renamed configuration, and nothing else
        assert [GATE] == dry_run_gates(api, site.namespace)
        assert 1 == pods[0].process.metric("draledger_ledgers")

        # uninstall: every object of the release goes; the CRD and the ledgers stay
        pods.pop().process.stop()
        run("uninstall", RELEASE, "--wait")
        wait_until(lambda: not remaining(cluster, tmp_path / "upgraded.yaml"), within=WITHIN,
                   what="every object of the release to be deleted")

        assert api.get_or_none(CRD) is not None
        assert site.nodes == [node for node in site.nodes if ledger(api, node) is not None]
    finally:
        for pod in pods:  # the cluster, the test's own, goes with its fixture
            pod.process.stop()
