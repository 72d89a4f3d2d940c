"""The operator's Deployment is a hardened leader and warm standby, and its Services, PDB and NetworkPolicy fit it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.manifests.kustomized import VARIANTS, Objects, find, one, webhook

IMAGE = "ghcr.io/dra-ledger/draledger:0.1.0"
WEBHOOK_VARIANTS = [v for v in VARIANTS if webhook(v)]
UNHOOKED_VARIANTS = [v for v in VARIANTS if not webhook(v)]


def _deployment(objects: Objects) -> dict[str, Any]:
    return one(objects, "Deployment", "draledger")


def _container(objects: Objects) -> dict[str, Any]:
    containers = _deployment(objects)["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["draledger"]
    return dict(containers[0])


def _config(objects: Objects) -> dict[str, str]:
    maps = [m for m in find(objects, "ConfigMap") if m["metadata"]["name"].startswith("draledger-config-")]
    assert len(maps) == 1
    container = _container(objects)
    assert [{"configMapRef": {"name": maps[0]["metadata"]["name"]}}] == container["envFrom"]
    return dict(maps[0]["data"])


@pytest.mark.parametrize("variant", VARIANTS)
class TestDeployment:
    def test_leader_and_standby(self, render: Callable[[str], Objects], variant: str) -> None:
        """Two replicas, rolled one at a time without ever going below two Ready (maxUnavailable 0, maxSurge 1),
        spread over nodes where possible (preferred anti-affinity: a required one could hang the rollout)."""
        spec = _deployment(render(variant))["spec"]
        assert spec["replicas"] == 2
        assert {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}} == spec["strategy"]
        anti = spec["template"]["spec"]["affinity"]["podAntiAffinity"]
        assert "requiredDuringSchedulingIgnoredDuringExecution" not in anti
        [term] = anti["preferredDuringSchedulingIgnoredDuringExecution"]
        assert "kubernetes.io/hostname" == term["podAffinityTerm"]["topologyKey"]
        assert spec["selector"] == term["podAffinityTerm"]["labelSelector"]

    def test_leader_election(self, render: Callable[[str], Objects], variant: str) -> None:
        """Leader election on (it is off in code), the Lease in the pod's namespace, the pod's name as identity."""
        env = {e["name"]: e for e in _container(render(variant))["env"]}
        assert "true" == env["DRALEDGER_LEADER_ELECTION"]["value"]
        assert {"fieldRef": {"fieldPath": "metadata.namespace"}} == \
            env["DRALEDGER_LEADER_ELECTION_NAMESPACE"]["valueFrom"]
        assert {"fieldRef": {"fieldPath": "metadata.name"}} == env["POD_NAME"]["valueFrom"]

    def test_image_and_command(self, render: Callable[[str], Objects], variant: str) -> None:
        """The container runs `draledger run` from the release image."""
        container = _container(render(variant))
        assert container["image"] == IMAGE
        assert ["draledger", "run"] == container["command"]

    def test_security_context(self, render: Callable[[str], Objects], variant: str) -> None:
        """Non-root, read-only root filesystem, no capabilities, RuntimeDefault seccomp, no privilege escalation."""
        objects = render(variant)
        pod = _deployment(objects)["spec"]["template"]["spec"]
        container = _container(objects)
        context = container["securityContext"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert {"type": "RuntimeDefault"} == pod["securityContext"]["seccompProfile"]
        assert context["runAsNonRoot"] is True
        assert isinstance(context["runAsUser"], int)
        assert context["runAsUser"] > 0
        assert context["readOnlyRootFilesystem"] is True
        assert context["allowPrivilegeEscalation"] is False
        assert context.get("privileged", False) is False
        assert {"drop": ["ALL"]} == context["capabilities"]
        assert {"type": "RuntimeDefault"} == context["seccompProfile"]
        assert not pod.get("hostNetwork")
        assert not pod.get("hostPID")
        assert not pod.get("hostIPC")

    def test_service_account_token(self, render: Callable[[str], Objects], variant: str) -> None:
        """The pod runs as draledger and mounts its token; the ServiceAccount does not hand tokens to others."""
        objects = render(variant)
        pod = _deployment(objects)["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == "draledger"
        assert pod["automountServiceAccountToken"] is True
        assert one(objects, "ServiceAccount", "draledger")["automountServiceAccountToken"] is False

    def test_probes(self, render: Callable[[str], Objects], variant: str) -> None:
        """Liveness is /healthz and readiness /readyz, both on the metrics port 8080."""
        container = _container(render(variant))
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports["metrics"] == 8080
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            get = container[probe]["httpGet"]
            assert get["path"] == path
            assert ports.get(get["port"], get["port"]) == 8080

    def test_resources(self, render: Callable[[str], Objects], variant: str) -> None:
        """CPU and memory have requests and limits."""
        resources = _container(render(variant))["resources"]
        for kind in ("requests", "limits"):
            assert set(resources[kind]) == {"cpu", "memory"}

    def test_writable_paths(self, render: Callable[[str], Objects], variant: str) -> None:
        """With a read-only root, /tmp is a size-limited emptyDir; no hostPath volumes."""
        objects = render(variant)
        volumes = {v["name"]: v for v in _deployment(objects)["spec"]["template"]["spec"]["volumes"]}
        mounts = {m["mountPath"]: m["name"] for m in _container(objects)["volumeMounts"]}
        assert volumes[mounts["/tmp"]]["emptyDir"]["sizeLimit"]
        assert not any("hostPath" in v for v in volumes.values())

    def test_configuration(self, render: Callable[[str], Objects], variant: str) -> None:
        """The operator is configured through DRALEDGER_* variables with the lead's fixed values."""
        config = _config(render(variant))
        observe = variant.startswith("observe")
        assert config["DRALEDGER_POD_STATUS"] == ("observe" if observe else "backfill")
        assert config["DRALEDGER_LOG_FORMAT"] == "json"
        assert config["DRALEDGER_METRICS_PORT"] == "8080"
        assert config["DRALEDGER_WEBHOOK_PORT"] == "9443"
        assert config["DRALEDGER_WEBHOOK_CERT_DIR"] == "/etc/draledger/tls"
        assert config["DRALEDGER_WEBHOOK"] == ("true" if webhook(variant) else "false")
        assert config["DRALEDGER_GATE_EXCLUDE_NAMESPACES"] == "kube-system,draledger-system"
        canary = variant.startswith(("canary", "observe"))
        assert config["DRALEDGER_NODE_SELECTOR"] == ("draledger.dev/canary=true" if canary else "")

    def test_disruption_budget(self, render: Callable[[str], Objects], variant: str) -> None:
        """The PDB keeps one replica through voluntary disruptions (minAvailable 1); unhealthy pods are always
        evictable, so a crash-looping replica never blocks a drain."""
        objects = render(variant)
        budget = one(objects, "PodDisruptionBudget", "draledger")["spec"]
        assert budget["minAvailable"] == 1
        assert "maxUnavailable" not in budget
        assert budget["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
        assert budget["selector"] == _deployment(objects)["spec"]["selector"]


@pytest.mark.parametrize("variant", WEBHOOK_VARIANTS)
class TestWebhookServing:
    def test_tls_from_mounted_secret(self, render: Callable[[str], Objects], variant: str) -> None:
        """tls.crt and tls.key come from Secret draledger-webhook-tls mounted read-only at /etc/draledger/tls."""
        objects = render(variant)
        volumes = {v["name"]: v for v in _deployment(objects)["spec"]["template"]["spec"]["volumes"]}
        mounts = {m["mountPath"]: m for m in _container(objects)["volumeMounts"]}
        mount = mounts["/etc/draledger/tls"]
        assert mount["readOnly"] is True
        secret = volumes[mount["name"]]["secret"]
        assert secret["secretName"] == "draledger-webhook-tls"
        assert {"tls.crt", "tls.key"} == {item["path"] for item in secret["items"]}
        assert not secret.get("optional", False)

    def test_webhook_service(self, render: Callable[[str], Objects], variant: str) -> None:
        """Service draledger-webhook maps 443 to the container's 9443 and also serves a pod that is still rebuilding."""
        objects = render(variant)
        service = one(objects, "Service", "draledger-webhook")["spec"]
        ports = {p["name"]: p["containerPort"] for p in _container(objects)["ports"]}
        assert [(443, 9443)] == [(p["port"], ports[p["targetPort"]]) for p in service["ports"]]
        assert service["publishNotReadyAddresses"] is True
        template = _deployment(objects)["spec"]["template"]["metadata"]["labels"]
        assert service["selector"].items() <= template.items()


@pytest.mark.parametrize("variant", UNHOOKED_VARIANTS)
def test_variant_without_webhook_drops_its_plumbing(render: Callable[[str], Objects], variant: str) -> None:
    """With components/no-webhook (alone or in admission-policy): no webhook, its Service, TLS volume, port 9443."""
    objects = render(variant)
    assert not find(objects, "MutatingWebhookConfiguration")
    assert not find(objects, "Service", "draledger-webhook")
    container = _container(objects)
    assert [8080] == [p["containerPort"] for p in container["ports"]]
    assert ["/tmp"] == [m["mountPath"] for m in container["volumeMounts"]]
    policy = one(objects, "NetworkPolicy", "draledger")["spec"]
    assert [[8080]] == [[p["port"] for p in rule["ports"]] for rule in policy["ingress"]]


@pytest.mark.parametrize("variant", VARIANTS)
class TestNetworkPolicy:
    def test_ingress(self, render: Callable[[str], Objects], variant: str) -> None:
        """Ingress: 8080 only from the monitoring namespace, 9443 only when the webhook is served."""
        objects = render(variant)
        policy = one(objects, "NetworkPolicy", "draledger")["spec"]
        assert ["Ingress", "Egress"] == policy["policyTypes"]
        assert policy["podSelector"] == _deployment(objects)["spec"]["selector"]
        by_port = {rule["ports"][0]["port"]: rule for rule in policy["ingress"]}
        assert all(len(rule["ports"]) == 1 for rule in policy["ingress"])
        expected = {8080, 9443} if webhook(variant) else {8080}
        assert expected == set(by_port)
        assert [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}] == \
            by_port[8080]["from"]

    def test_egress(self, render: Callable[[str], Objects], variant: str) -> None:
        """Egress: DNS to kube-dns, and the API server's ports; nothing else."""
        policy = one(render(variant), "NetworkPolicy", "draledger")["spec"]
        ports = sorted((p["port"], p["protocol"]) for rule in policy["egress"] for p in rule["ports"])
        assert [(53, "TCP"), (53, "UDP"), (443, "TCP"), (6443, "TCP")] == ports
        dns = next(rule for rule in policy["egress"] if rule["ports"][0]["port"] == 53)
        assert dns["to"][0]["podSelector"] == {"matchLabels": {"k8s-app": "kube-dns"}}
