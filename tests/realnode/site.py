"""What the realnode suite shares per release: a control plane, one real node, its two drivers and one operator.

Rules:
1. One ``NodeSite`` per release for the whole suite (the ``realnode`` session fixture): its own ``ControlPlane``
   with ``real_nodes`` (the node lifecycle controller on, kubelet client certificates), one ``RealNode`` (with the
   static CPU manager policy, so that a Guaranteed pod's CPU resize is Infeasible), the test driver twice
   (``world.DRIVER`` with the Go helper's metadata and rolling updates on, so that an upgrade can start a second
   instance beside it; ``world.META_DRIVER`` with the Python writer's metadata), the DeviceClasses, the
   operator's manifests (tests/realcluster/operating.py) and ONE operator process that keeps ledgers for the real
   node only (``--node-selector`` on the label its kubelet registers).
2. Each test works in its own namespace (``Scratch``), labelled for gating; at its end the namespace is
   deleted and the test waits until the kubelet has removed its pods (the next test starts from an empty node).
   A test that stops the kubelet, a driver or the operator starts it again before it returns, also on failure.
3. Waiting is ``wait_until`` with a deadline; nothing sleeps to wait for state.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.realcluster.cluster import RESOURCE_API, Api, ApiError, ensure_namespace, kubectl, unique, wait_until
from tests.realcluster.launcher import ControlPlane
from tests.realcluster.operating import GATING_LABEL, Installation, OperatorProcess, install, ledger
from tests.realcluster.releases import Release
from tests.realnode import world
from tests.realnode.drivers import Driver, grant
from tests.realnode.node import RealNode

NODE = "realnode-0"
LABEL = ("realnode.draledger.dev/site", "realnode")
WITHIN = 60.0
KUBELET = {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"}


@dataclass
class NodeSite:
    """Module rule 1."""

    plane: ControlPlane
    node: RealNode
    installation: Installation
    operator: OperatorProcess
    cpu: Driver
    meta: Driver
    workdir: Path

    @property
    def release(self) -> Release:
        return self.plane.release

    @property
    def name(self) -> str:
        return self.node.name

    def api(self) -> Api:
        return self.plane.api()

    def ledger(self) -> dict[str, Any]:
        got = ledger(self.api(), self.name)
        assert got is not None, f"no ledger for {self.name}"
        return got

    def events(self, namespace: str, pod: str) -> list[str]:
        """The reasons of the Events about ``pod``, oldest first."""
        items = self.api().get(f"/api/v1/namespaces/{namespace}/events?fieldSelector=involvedObject.name%3D{pod}")
        return [event["reason"] for event in sorted(items["items"], key=lambda e: e["metadata"]["creationTimestamp"])]

    def stop(self) -> None:
        self.operator.stop()
        self.node.stop()
        self.plane.stop()


def start_site(release: Release, workdir: Path) -> NodeSite:
    """Module rule 1; on failure everything started so far is stopped."""
    plane = ControlPlane(release, workdir / "plane", real_nodes=True)
    plane.start()
    node = RealNode(plane, workdir / "node", NODE, labels={LABEL[0]: LABEL[1]}, kubelet_config=KUBELET)
    operator: OperatorProcess | None = None
    try:
        node.start()
        api = plane.api()
        for kind in world.CLASSES:
            api.create(f"{RESOURCE_API}/deviceclasses", world.device_class(kind))
        kubeconfig = grant(plane, workdir)
        cpu = Driver(node, kubeconfig, world.DRIVER, world.cpu_pools(release, NODE),
                     rolling_update_uid=uuid.uuid4().hex[:8]).start()
        meta = Driver(node, kubeconfig, world.META_DRIVER, world.meta_pools(NODE), metadata="python").start()
        installation = install(plane, workdir / "install")
        operator = OperatorProcess(installation.kubeconfig, workdir, ["--node-selector", "=".join(LABEL),
                                                                      "--coalesce-window", "0.1"])
        operator.start()
        operator.wait_ready()
        site = NodeSite(plane, node, installation, operator, cpu, meta, workdir)
        wait_until(lambda: (ledger(api, NODE) or {}).get("status", {}).get("phase") == "Ready", within=WITHIN,
                   what=f"the ledger of {NODE} to be Ready")
        return site
    except BaseException:
        if operator is not None:
            operator.stop()
        node.stop()
        plane.stop()
        raise


# ------------------------------------------------------------------ a test's namespace (module rule 2)


@dataclass
class Scratch:
    """One test's namespace on the site's node, and the pods and claims it made there."""

    site: NodeSite
    namespace: str
    pods: list[str] = field(default_factory=list)

    @property
    def api(self) -> Api:
        return self.site.api()

    def path(self, pod: str) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods/{pod}"

    def template(self, name: str, kind: str, count: int = 1, *, capacity: str = "") -> str:
        self.api.create(f"{RESOURCE_API}/namespaces/{self.namespace}/resourceclaimtemplates",
                        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                         "metadata": {"name": name},
                         "spec": {"spec": world.claim_spec(kind, count, capacity=capacity)}})
        return name

    def claim(self, name: str, kind: str, count: int = 1, *, capacity: str = "") -> dict[str, Any]:
        created: dict[str, Any] = self.api.create(
            f"{RESOURCE_API}/namespaces/{self.namespace}/resourceclaims",
            {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
             "spec": world.claim_spec(kind, count, capacity=capacity)})
        return created

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        created: dict[str, Any] = self.api.create(f"/api/v1/namespaces/{self.namespace}/pods", body)
        self.pods.append(body["metadata"]["name"])
        return created

    def get(self, pod: str) -> dict[str, Any]:
        got: dict[str, Any] = self.api.get(self.path(pod))
        return got

    def phase(self, pod: str) -> str:
        return str(self.get(pod).get("status", {}).get("phase", ""))

    def running(self, pod: str, within: float = WITHIN) -> dict[str, Any]:
        """Until every container of ``pod`` runs; fails at once when the pod ends, with its status."""
        def check() -> dict[str, Any] | None:
            got = self.get(pod)
            status = got.get("status", {})
            if status.get("phase") in ("Succeeded", "Failed"):
                raise AssertionError(f"{pod} ended: {json.dumps(status)[:2000]}")
            states = [entry.get("state", {}) for entry in status.get("containerStatuses", [])]
            return got if status.get("phase") == "Running" and states and all("running" in s for s in states) else None

        return wait_until(check, within=within, what=f"{self.namespace}/{pod} to run")

    def ended(self, pod: str, within: float = WITHIN) -> str:
        return wait_until(lambda: self.phase(pod) if self.phase(pod) in ("Succeeded", "Failed") else None,
                          within=within, what=f"{self.namespace}/{pod} to end")

    def logs(self, pod: str) -> str:
        return kubectl(self.site.plane.kubeconfig, "logs", "-n", self.namespace, pod).stdout

    def log_until(self, pod: str, marker: str, within: float = WITHIN) -> str:
        """``kubectl logs`` of ``pod`` once it holds ``marker`` (the container writes it when it is done)."""
        return wait_until(lambda: text if marker in (text := self.logs(pod)) else None, within=within,
                          what=f"{marker!r} in the log of {self.namespace}/{pod}")

    def claim_of(self, pod: str, pod_claim: str) -> dict[str, Any]:
        """The ResourceClaim behind ``pod``'s claim ``pod_claim`` (generated from a template, or named)."""
        got = self.get(pod)
        names = {entry["name"]: entry.get("resourceClaimName")
                 for entry in got.get("status", {}).get("resourceClaimStatuses", [])}
        for entry in got["spec"].get("resourceClaims", []):
            if entry["name"] == pod_claim:
                name = entry.get("resourceClaimName") or names.get(pod_claim)
                assert name, f"{pod} has no claim generated for {pod_claim} yet"
                claim: dict[str, Any] = self.api.get(
                    f"{RESOURCE_API}/namespaces/{self.namespace}/resourceclaims/{name}")
                return claim
        raise AssertionError(f"{pod} has no claim {pod_claim}")

    def delete(self, pod: str, within: float = WITHIN) -> None:
        """Delete ``pod`` and wait until the kubelet has removed it (it is gone from the API)."""
        with contextlib.suppress(ApiError):
            self.api.delete(self.path(pod))
        wait_until(lambda: self.api.get_or_none(self.path(pod)) is None, within=within,
                   what=f"{self.namespace}/{pod} to be gone")

    def close(self) -> None:
        """Module rule 2: every pod gone (deleted by the kubelet), then the namespace."""
        for pod in self.api.get(f"/api/v1/namespaces/{self.namespace}/pods")["items"]:
            with contextlib.suppress(ApiError):
                self.api.delete(self.path(pod["metadata"]["name"]))
        wait_until(lambda: not self.api.get(f"/api/v1/namespaces/{self.namespace}/pods")["items"], within=WITHIN,
                   what=f"the pods of {self.namespace} to be gone")
        with contextlib.suppress(ApiError):
            self.api.delete(f"/api/v1/namespaces/{self.namespace}")


@contextlib.contextmanager
def scratch(site: NodeSite, prefix: str) -> Iterator[Scratch]:
    made = Scratch(site, unique(prefix))
    ensure_namespace(site.api(), made.namespace, GATING_LABEL)
    try:
        yield made
    finally:
        made.close()
