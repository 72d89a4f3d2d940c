"""Admission for real (issue 12, item 4): the gate is added by the real kube-apiserver, by policy or by webhook.

The MutatingAdmissionPolicy of components/admission-policy is evaluated by the apiserver's own CEL; the Kopf
webhook of the real operator process is served over TLS on loopback, registered with a ``url`` clientConfig, and
called by the apiserver, which fails open when it is down or hung. The apiserver's own metrics
(``apiserver_admission_webhook_request_total``, ``apiserver_admission_webhook_fail_open_count``) say what it did.
"""

from __future__ import annotations

import base64
import copy
import json
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.realcluster import pki
from tests.realcluster.cluster import ApiError, ensure_namespace, kubectl, unique, wait_until
from tests.realcluster.launcher import ControlPlane, free_port
from tests.realcluster.operating import (
    GATE,
    Installation,
    Operators,
    Site,
    audit_events,
    audit_offset,
    from_operator,
    gates_of,
    pod_body,
    refusals,
    render,
)

FOREIGN_GATE = "example.com/quota"
WEBHOOK = "gate-pods.draledger.dev"
WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
TIMEOUT_SECONDS = 5  # the manifest's timeoutSeconds: a hung webhook holds a pod creation this long


def webhook_counter(plane: ControlPlane, name: str, **labels: str) -> float:
    """The sum of the apiserver's ``name`` samples for our webhook whose labels include ``labels``."""
    text = plane.api().get("/metrics")
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") or f'name="{WEBHOOK}"' not in line:
            continue
        if all(f'{key}="{value}"' in line for key, value in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def dry_run_gates(site: Site, namespace: str) -> list[str] | None:
    """The gates a claim pod would be created with in ``namespace`` (server-side dry run: admission runs)."""
    try:
        answer = site.api.request("POST", f"/api/v1/namespaces/{namespace}/pods?dryRun=All",
                                  pod_body(unique("dry"), {"resourceClaimTemplateName": "one-core"}))
    except ApiError:
        return None
    return gates_of(answer)


class TestMutatingAdmissionPolicy:
    def test_the_policy_gates_claim_pods_in_opted_in_namespaces_only(self, installation: Installation,
                                                                     site: Site) -> None:
        """The real CEL adds the gate to a new claim pod (after its own gates), and to nothing else."""
        site.setup(1)
        site.template()
        wait_until(lambda: dry_run_gates(site, site.namespace) == [GATE], within=60,
                   what="the MutatingAdmissionPolicy to be loaded")
        elsewhere = f"{site.namespace}-off"
        ensure_namespace(site.api, elsewhere)
        site.cleanup.append(f"/api/v1/namespaces/{elsewhere}")
        site.api.create(f"/apis/resource.k8s.io/v1/namespaces/{elsewhere}/resourceclaimtemplates",
                        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                         "metadata": {"name": "one-core"}, "spec": {"spec": {"devices": {"requests": [
                             {"name": "cores", "exactly": {"deviceClassName": site.device_class}}]}}}})

        plain = site.claim_pod("plain")
        with_own_gate = site.claim_pod("own-gate", gates=[FOREIGN_GATE])
        without_claims = pod_body("no-claims", {})
        without_claims["spec"].pop("resourceClaims")
        without_claims["spec"]["containers"][0]["resources"].pop("claims")
        no_claims = site.api.create(f"/api/v1/namespaces/{site.namespace}/pods", without_claims)
        prebound = site.claim_pod("prebound", node_name=site.nodes[0])
        other = site.api.create(f"/api/v1/namespaces/{elsewhere}/pods",
                                pod_body("other", {"resourceClaimTemplateName": "one-core"}))

        assert [GATE] == gates_of(plain)
        assert [FOREIGN_GATE, GATE] == gates_of(with_own_gate)
        assert [] == gates_of(no_claims)
        assert [] == gates_of(prebound)  # a gate on a pod created bound would fail its creation
        assert [] == gates_of(other)  # the canary binding selects draledger.dev/gating=enabled only

    def test_the_policy_compiles_cleanly_on_the_real_server(self, installation: Installation) -> None:
        """Both admission policies are stored as rendered, and the VAP's type check reports no warning."""
        api = installation.plane.api()
        policies = "/apis/admissionregistration.k8s.io/v1"
        gate = api.get(f"{policies}/mutatingadmissionpolicies/draledger-gate-pods")
        wait_until(lambda: api.get(f"{policies}/validatingadmissionpolicies/draledger-pod-writes")
                   .get("status", {}).get("observedGeneration"), within=30, what="the VAP's type check")
        guardrail = api.get(f"{policies}/validatingadmissionpolicies/draledger-pod-writes")
        rendered = {(item["kind"], item["metadata"]["name"]): item for item in installation.objects}

        assert {} == guardrail["status"].get("typeChecking", {})
        assert rendered["ValidatingAdmissionPolicy", "draledger-pod-writes"]["spec"]["validations"] == \
            guardrail["spec"]["validations"]
        assert rendered["MutatingAdmissionPolicy", "draledger-gate-pods"]["spec"]["mutations"] == \
            gate["spec"]["mutations"]


@pytest.fixture
def registered(installation: Installation, site: Site, tmp_path: Path) -> tuple[dict[str, Any], Path, int]:
    """The base's MutatingWebhookConfiguration with a loopback ``url`` and ``caBundle``, scoped to the site's
    namespace; the serving certificate directory and port for the operator."""
    certificates = pki.serving_certificate(tmp_path / "tls")
    port = free_port()
    webhook_config = next(item for item in render("base", tmp_path / "kustomize")
                          if item["kind"] == "MutatingWebhookConfiguration")
    config = copy.deepcopy(webhook_config)
    config["metadata"] = {"name": f"draledger-gate-pods-{site.name}", "labels": webhook_config["metadata"]["labels"]}
    hook = config["webhooks"][0]
    path = hook["clientConfig"]["service"]["path"]
    hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}",
                            "caBundle": base64.b64encode(certificates.ca_cert.read_bytes()).decode()}
    hook["namespaceSelector"]["matchExpressions"].append(  # and only the site's namespace, as tests share a cluster
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": [site.namespace]})
    site.api.create(WEBHOOKS, config)
    site.cleanup.insert(0, f"{WEBHOOKS}/{config['metadata']['name']}")
    return webhook_config, certificates.cert.parent, port


class TestWebhook:
    def test_the_manifest_webhook_is_valid_on_the_real_server(self, installation: Installation,
                                                              tmp_path: Path) -> None:
        """The base's configuration (service clientConfig, CEL matchConditions) passes a server-side dry run."""
        webhook_config = next(item for item in render("base", tmp_path / "kustomize")
                              if item["kind"] == "MutatingWebhookConfiguration")
        manifest = tmp_path / "webhook.json"
        manifest.write_text(json.dumps(webhook_config), encoding="utf-8")

        done = kubectl(installation.plane.kubeconfig, "apply", "--dry-run=server", "-f", str(manifest))

        assert "mutatingwebhookconfiguration.admissionregistration.k8s.io/draledger-gate-pods" in done.stdout
        assert "(server dry run)" in done.stdout

    def test_the_apiserver_calls_the_operator_over_tls_and_fails_open(
            self, installation: Installation, operators: Operators, site: Site,
            registered: tuple[dict[str, Any], Path, int]) -> None:
        """The real apiserver calls /gate-pods over TLS; down or hung, pod creation still succeeds, ungated."""
        plane = installation.plane
        site.setup(1, gated=False)  # no policy binding here: only the webhook can add the gate
        site.template()
        webhook_config, cert_dir, port = registered
        offset = audit_offset(plane)
        operator = operators.start("--node-selector", site.label, "--webhook", "--webhook-host", "127.0.0.1",
                                   "--webhook-port", str(port), "--webhook-cert-dir", str(cert_dir))
        wait_until(lambda: dry_run_gates(site, site.namespace) == [GATE], within=60,
                   what="the apiserver to reach the operator's webhook")
        answered = webhook_counter(plane, "apiserver_admission_webhook_request_total", code="200")
        failed_open = webhook_counter(plane, "apiserver_admission_webhook_fail_open_count")

        served = site.claim_pod("served", gates=[FOREIGN_GATE])
        assert [FOREIGN_GATE, GATE] == gates_of(served)
        assert answered + 1 == webhook_counter(plane, "apiserver_admission_webhook_request_total", code="200")

        operator.send(signal.SIGSTOP)  # hung: the apiserver waits timeoutSeconds, then lets the pod in
        try:
            hung = site.claim_pod("hung")
        finally:
            operator.send(signal.SIGCONT)
        assert [] == gates_of(hung)
        assert failed_open + 1 == webhook_counter(plane, "apiserver_admission_webhook_fail_open_count")

        operator.stop()  # down: connection refused, the pod is let in at once
        down = site.claim_pod("down")
        assert [] == gates_of(down)
        assert failed_open + 2 == webhook_counter(plane, "apiserver_admission_webhook_fail_open_count")
        assert TIMEOUT_SECONDS == webhook_config["webhooks"][0]["timeoutSeconds"]
        assert "Ignore" == webhook_config["webhooks"][0]["failurePolicy"]
        assert [] == refusals(from_operator(audit_events(plane, offset)))

