"""What a cluster of the real control plane lacks to run an install, played by the test, and no more.

The suite runs the real kube-apiserver, kube-scheduler and kube-controller-manager, but no kubelet, no
cert-manager and no Service network. An install applied as users apply it (``helm install``, ``kubectl apply
-k``) creates a Deployment that nothing runs. These stand-ins run it:

1. The kubelet: ``run_deployment`` reads the Deployment as the API server stores it and runs its one container's
   command (which must be ``draledger run``) as a local process, ``python -m draledger run``, with the pod's
   environment: the ``envFrom`` ConfigMaps, then ``env`` (values, and the ``fieldRef`` s a pod gets: its
   namespace, a pod name), and the token of the pod's ServiceAccount from the TokenRequest API. A Secret
   volume is a scratch directory holding the Secret's items. Ports and mount paths are the pod's own, so on the
   host the process listens on free loopback ports and reads the scratch directory (``--metrics-*``,
   ``--webhook-host/--webhook-port`` and ``--webhook-cert-dir`` say so); every other setting is the Deployment's.
2. cert-manager: ``issue_certificates`` writes the Secret of every Certificate of a namespace (a CA of its own
   and a serving certificate for 127.0.0.1, where rule 3 makes the webhook reachable) and, as the CA injector,
   the ``caBundle`` of every webhook configuration whose ``cert-manager.io/inject-ca-from`` names it.
3. The Service network: ``webhook_routed`` points a webhook configuration's ``clientConfig`` at the process's
   loopback URL for the length of a block, and puts the Service reference back afterwards, so the next ``kubectl
   apply`` finds the object as it applied it.
4. Third-party CRDs: ``install_prerequisites`` creates schema-less CRDs for cert-manager's Issuer and Certificate
   and the Prometheus Operator's ServiceMonitor and PrometheusRule, so that overlays that create them apply; no
   controller acts on the last two.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.realcluster import pki
from tests.realcluster.cluster import JSON_PATCH, Api, ApiError, wait_until
from tests.realcluster.launcher import ControlPlane, free_port
from tests.realcluster.operating import OperatorProcess, request_token, token_kubeconfig

COMMAND = ["draledger", "run"]
WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
INJECT_CA = "cert-manager.io/inject-ca-from"
PREREQUISITES = {  # group -> (kind, plural) of the CRDs the overlays' objects need
    "cert-manager.io": [("Issuer", "issuers"), ("Certificate", "certificates")],
    "monitoring.coreos.com": [("ServiceMonitor", "servicemonitors"), ("PrometheusRule", "prometheusrules")],
}
_PODS = itertools.count(1)


# ------------------------------------------------------------------ the kubelet (rule 1)


def deployment(api: Api, namespace: str, name: str = "draledger") -> dict[str, Any]:
    found: dict[str, Any] = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")
    return found


def pod_environment(api: Api, namespace: str, spec: dict[str, Any], pod: str) -> dict[str, str]:
    """The container's environment as the kubelet builds it: envFrom ConfigMaps first, then env."""
    (container,) = spec["containers"]
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        config = api.get(f"/api/v1/namespaces/{namespace}/configmaps/{source['configMapRef']['name']}")
        env.update(config.get("data", {}))
    fields = {"metadata.namespace": namespace, "metadata.name": pod}
    for entry in container.get("env", []):
        if "value" in entry:
            env[entry["name"]] = entry["value"]
        else:
            env[entry["name"]] = fields[entry["valueFrom"]["fieldRef"]["fieldPath"]]
    return env


def mount_secrets(api: Api, namespace: str, spec: dict[str, Any], scratch: Path) -> dict[str, Path]:
    """Each Secret volume's items written under ``scratch``: mount path -> the directory that stands for it."""
    (container,) = spec["containers"]
    volumes = {volume["name"]: volume for volume in spec.get("volumes", [])}
    mounted: dict[str, Path] = {}
    for mount in container.get("volumeMounts", []):
        source = volumes[mount["name"]].get("secret")
        if source is None:
            continue
        secret = api.get(f"/api/v1/namespaces/{namespace}/secrets/{source['secretName']}")
        directory = scratch / mount["name"]
        directory.mkdir(parents=True, exist_ok=True)
        for item in source.get("items") or [{"key": key, "path": key} for key in secret["data"]]:
            (directory / item["path"]).write_bytes(base64.b64decode(secret["data"][item["key"]]))
        mounted[mount["mountPath"]] = directory
    return mounted


class Pod:
    """One replica of a Deployment, run by ``run_deployment``: the process and where its webhook listens."""

    def __init__(self, process: OperatorProcess, webhook_port: int | None) -> None:
        self.process = process
        self.webhook_port = webhook_port

    @property
    def webhook_url(self) -> str:
        assert self.webhook_port is not None, "this replica serves no webhook"
        return f"https://127.0.0.1:{self.webhook_port}"


def run_deployment(plane: ControlPlane, namespace: str, scratch: Path, *, name: str = "draledger",
                   ready: bool = True) -> Pod:
    """Start one replica of the Deployment as it is stored now (rule 1); stop it with ``pod.process.stop()``."""
    admin = plane.api()
    stored = deployment(admin, namespace, name)
    spec = stored["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert COMMAND == container.get("command", []) + container.get("args", []), container.get("command")
    pod = f"{name}-podless-{next(_PODS)}"
    workdir = scratch / pod
    workdir.mkdir(parents=True)
    env = pod_environment(admin, namespace, spec, pod)
    assert plane.pki is not None
    kubeconfig = token_kubeconfig(workdir / "kubeconfig", plane.server, plane.pki.ca_cert,
                                  request_token(admin, namespace=namespace, account=spec["serviceAccountName"]))
    args: list[str] = []
    webhook_port = None
    if env.get("DRALEDGER_WEBHOOK") == "true":
        mounted = mount_secrets(admin, namespace, spec, workdir / "volumes")
        webhook_port = free_port()
        args += ["--webhook-host", "127.0.0.1", "--webhook-port", str(webhook_port),
                 "--webhook-cert-dir", str(mounted[env["DRALEDGER_WEBHOOK_CERT_DIR"]])]
    process = OperatorProcess(kubeconfig, workdir, args, name=pod, env=env)
    process.start()
    if ready:
        process.wait_ready()
    return Pod(process, webhook_port)


# ------------------------------------------------------------------ cert-manager (rule 2)


def issue_certificates(api: Api, namespace: str, scratch: Path) -> None:
    """Write every Certificate's Secret and inject its CA where a webhook configuration asks for it."""
    for certificate in api.get(f"/apis/cert-manager.io/v1/namespaces/{namespace}/certificates")["items"]:
        name = certificate["metadata"]["name"]
        pair = pki.serving_certificate(scratch / f"certificate-{namespace}-{name}")
        data = {key: base64.b64encode(path.read_bytes()).decode()
                for key, path in (("ca.crt", pair.ca_cert), ("tls.crt", pair.cert), ("tls.key", pair.key))}
        secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                  "metadata": {"name": certificate["spec"]["secretName"], "namespace": namespace}, "data": data}
        path = f"/api/v1/namespaces/{namespace}/secrets"
        try:
            api.create(path, secret)
        except ApiError as error:
            if error.status != 409:
                raise
            api.replace(f"{path}/{secret['metadata']['name']}", secret)
        for hook in api.get(WEBHOOKS)["items"]:
            if hook["metadata"].get("annotations", {}).get(INJECT_CA) == f"{namespace}/{name}":
                api.patch(f"{WEBHOOKS}/{hook['metadata']['name']}", [
                    {"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": data["ca.crt"]}
                    for index in range(len(hook["webhooks"]))], JSON_PATCH)


# ------------------------------------------------------------------ the Service network (rule 3)


@contextlib.contextmanager
def webhook_routed(api: Api, configuration: str, pod: Pod) -> Iterator[None]:
    """Within the block, the webhooks of ``configuration`` call ``pod`` by URL; afterwards, their Service again."""
    path = f"{WEBHOOKS}/{configuration}"
    before = copy.deepcopy(api.get(path)["webhooks"])
    api.patch(path, [op for index, hook in enumerate(before) for op in (
        {"op": "remove", "path": f"/webhooks/{index}/clientConfig/service"},
        {"op": "add", "path": f"/webhooks/{index}/clientConfig/url",
         "value": pod.webhook_url + hook["clientConfig"]["service"].get("path", "/")})], JSON_PATCH)
    try:
        yield
    finally:
        api.patch(path, [op for index, hook in enumerate(before) for op in (
            {"op": "remove", "path": f"/webhooks/{index}/clientConfig/url"},
            {"op": "add", "path": f"/webhooks/{index}/clientConfig/service",
             "value": hook["clientConfig"]["service"]})], JSON_PATCH)


# ------------------------------------------------------------------ third-party CRDs (rule 4)


def install_prerequisites(api: Api) -> list[str]:
    """Schema-less CRDs for the cert-manager and Prometheus Operator kinds the overlays create; their paths."""
    paths = []
    for group, kinds in PREREQUISITES.items():
        for kind, plural in kinds:
            api.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": f"{plural}.{group}"},
                "spec": {"group": group, "scope": "Namespaced",
                         "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                         "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                             "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}})
            paths.append(f"/apis/{group}/v1/{plural}")
    for path in paths:
        wait_until(lambda path=path: _served(api, path), within=60, what=f"{path} to be served")
    return paths


def _served(api: Api, path: str) -> bool:
    try:
        api.get(path)
    except ApiError as error:
        if error.status in (404, 429, 503):  # not served yet; 429 while its storage initializes
            return False
        raise
    return True
