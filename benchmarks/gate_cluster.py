"""The gate benchmark's cluster: a real control plane, the operator's manifests and identity, kubelet-less nodes
with DRA devices, and the operator processes.

Rules:
1. Everything real comes from tests/realcluster: the launcher's control plane (``--release``), the manifests the
   suite applies (canary + admission-policy: the MutatingAdmissionPolicy gates namespaces labelled
   ``draledger.dev/gating=enabled``), the operator's ServiceAccount token, and ``draledger run`` as the suite
   starts it (``OperatorProcess``).
2. One namespace per configuration: ``NAMESPACES["none"]`` is selected by no gate, ``["policy"]``, ``["floor"]``
   and ``["kopf-floor"]`` by the policy's binding only (labelled ``draledger.dev/gating=enabled``: the same gate,
   released by dra-ledger or by a floor's releaser), ``["webhook"]`` by the base's MutatingWebhookConfiguration
   only (registered with a loopback ``url`` and a CA of its own, as test_operator_admission.py does).
3. kube-scheduler and kube-controller-manager get ``--kube-api-qps``/``--kube-api-burst`` raised unless
   ``client_qps`` is 0 (their defaults, 50 and 20, make the resourceclaim controller the bottleneck at about ten
   pods a second, and the benchmark would measure a client-side rate limiter instead of the components).
4. Nodes and slices are created by a few threads with the suite's own helpers (``create_node``, which also
   takes the not-ready taint off, and ``publish_slice``, which sends again a slice refused because kube-apiserver's
   view of its Node lags a burst of creates: tests/realcluster/cluster.py rule 3).
"""

from __future__ import annotations

import base64
import copy
import os
import signal
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate_plan import KINDS, MAPPED, MAPPED_CPU, POD_CPU_MILLI, POD_MEMORY, Plan
from tests.realcluster import pki
from tests.realcluster.cluster import (
    RESOURCE_API,
    ApiError,
    create_node,
    ensure_namespace,
    publish_device_class,
    publish_slice,
    wait_until,
)
from tests.realcluster.launcher import ControlPlane, free_port
from tests.realcluster.operating import (
    GATE,
    GATING_LABEL,
    IMAGE,
    Installation,
    OperatorProcess,
    gates_of,
    install,
    render,
)
from tests.realcluster.releases import Release

NAMESPACES = {"none": "gate-none", "policy": "gate-policy", "webhook": "gate-webhook", "floor": "gate-floor",
              "kopf-floor": "gate-kopf-floor"}
POLICY_GATED = ("policy", "floor", "kopf-floor")  # the configurations whose namespace the policy's binding selects
WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
BURST_LABEL = "bench.draledger.dev/burst"
SETUP_THREADS = 8
TICK = os.sysconf("SC_CLK_TCK")


def driver(device_class: str) -> str:
    return f"{device_class}.bench.draledger.dev"


def class_name(device_class: str) -> str:
    return f"bench-{device_class}"


def start_plane(release: Release, workdir: Path, client_qps: int) -> ControlPlane:
    """The control plane of ``release`` in ``workdir``, its clients' rate limits raised (rule 3)."""
    extra: dict[str, list[str]] = {}
    if client_qps:
        flags = [f"--kube-api-qps={client_qps}", f"--kube-api-burst={2 * client_qps}"]
        extra = {"kube-scheduler": flags, "kube-controller-manager": list(flags)}
    plane = ControlPlane(release, workdir, extra_args=extra)
    plane.start()
    return plane


def secure_port(plane: ControlPlane, component: str) -> int:
    """The ``--secure-port`` a component was started with."""
    for arg in plane.components[component].args:
        if arg.startswith("--secure-port="):
            return int(arg.split("=", 1)[1])
    raise LookupError(f"{component} has no --secure-port")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


# ------------------------------------------------------------------ the cluster


def template_spec(kind: str) -> dict[str, Any]:
    requests = [{"name": device_class, "exactly": {"deviceClassName": class_name(device_class),
                                                   "allocationMode": "ExactCount", "count": 1}}
                for device_class in KINDS[kind]]
    return {"spec": {"devices": {"requests": requests}}}


def pod_body(name: str, kind: str, burst: str) -> dict[str, Any]:
    """A claim pod with one claim from the ``kind`` template, labelled with its burst."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {BURST_LABEL: burst, "bench.draledger.dev/kind": kind}},
        "spec": {
            "containers": [{"name": "app", "image": IMAGE, "resources": {
                "requests": {"cpu": f"{POD_CPU_MILLI}m", "memory": POD_MEMORY}, "claims": [{"name": "devices"}]}}],
            "resourceClaims": [{"name": "devices", "resourceClaimTemplateName": kind}],
            "terminationGracePeriodSeconds": 0,
        },
    }


def _node(plane: ControlPlane, plan: Plan, index: int) -> None:
    api, release = plane.api(), plane.release
    name = f"gate-n{index:05d}"
    create_node(api, name, release=release, capacity={"cpu": str(plan.node_cpu), "memory": "256Gi", "pods": "110"})
    for device_class, count in plan.node_devices(index).items():
        mapping = release.device_mapping("cpu", str(MAPPED_CPU)) if device_class in MAPPED else {}
        devices = [{"name": f"{device_class}-{i}", "attributes": {"index": {"int": i}}, **mapping}
                   for i in range(count)]
        publish_slice(api, f"{name}-{device_class}", driver=driver(device_class), node=name, devices=devices)


@dataclass
class Cluster:
    """The running control plane with everything the bursts need, and the webhook's serving certificate."""

    plane: ControlPlane
    installation: Installation
    plan: Plan
    webhook_port: int
    webhook_certs: Path
    workdir: Path

    def operator(self, name: str, *args: str) -> OperatorProcess:
        """An operator process (not started) as the manifests' ServiceAccount, with a metrics port of its own."""
        return OperatorProcess(self.installation.kubeconfig, self.workdir, ["--metrics-port", str(free_port()),
                                                                           *args], name)

    def webhook_args(self) -> list[str]:
        return ["--webhook", "--webhook-host", "127.0.0.1", "--webhook-port", str(self.webhook_port),
                "--webhook-cert-dir", str(self.webhook_certs)]


def build(plane: ControlPlane, plan: Plan, workdir: Path) -> Cluster:
    """Install the manifests, create the nodes and their slices, the classes, namespaces and templates (rule 2)."""
    installation = install(plane, workdir / "install")
    api = plane.api()
    for device_class in ("cores", "gpus", "scarce"):
        publish_device_class(api, class_name(device_class), driver(device_class))
    with ThreadPoolExecutor(SETUP_THREADS) as pool:
        for done in [pool.submit(_node, plane, plan, index) for index in range(plan.nodes)]:
            done.result()
    for config, namespace in NAMESPACES.items():
        ensure_namespace(api, namespace, GATING_LABEL if config in POLICY_GATED else None)
        for kind in KINDS:
            api.create(f"{RESOURCE_API}/namespaces/{namespace}/resourceclaimtemplates",
                       {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                        "metadata": {"name": kind}, "spec": template_spec(kind)})
    certificates = pki.serving_certificate(workdir / "webhook-tls")
    port = free_port()
    register_webhook(plane, workdir, port, certificates.ca_cert)
    for config in POLICY_GATED:
        namespace = NAMESPACES[config]

        def gated(namespace: str = namespace) -> bool:
            return dry_run_gates(plane, namespace) == [GATE]

        wait_until(gated, within=60, what=f"the MutatingAdmissionPolicy to gate pods in namespace {namespace}")
    return Cluster(plane, installation, plan, port, certificates.cert.parent, workdir)


def register_webhook(plane: ControlPlane, workdir: Path, port: int, ca_cert: Path) -> None:
    """The base's MutatingWebhookConfiguration, calling ``https://127.0.0.1:port``, for the webhook namespace."""
    config = copy.deepcopy(next(item for item in render("base", workdir / "kustomize")
                                if item["kind"] == "MutatingWebhookConfiguration"))
    hook = config["webhooks"][0]
    hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{hook['clientConfig']['service']['path']}",
                            "caBundle": base64.b64encode(ca_cert.read_bytes()).decode()}
    hook["namespaceSelector"]["matchExpressions"].append(
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": [NAMESPACES["webhook"]]})
    plane.api().create(WEBHOOKS, config)


def dry_run_gates(plane: ControlPlane, namespace: str) -> list[str] | None:
    """The gates a claim pod would be created with in ``namespace`` (server-side dry run: admission runs)."""
    try:
        answer = plane.api().request("POST", f"/api/v1/namespaces/{namespace}/pods?dryRun=All",
                                     pod_body("dry-run", "core", "dry-run"))
    except ApiError:
        return None
    return gates_of(answer)


def stop(process: OperatorProcess, signum: signal.Signals = signal.SIGTERM) -> None:
    """Stop an operator process if it runs (SIGKILL after the suite's grace)."""
    if process.running():
        process.stop(signum)
