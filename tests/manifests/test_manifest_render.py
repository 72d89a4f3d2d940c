"""Every deployable variant renders with the real `kubectl kustomize`, and every object is valid for every release of
the matrix."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import kubernetes_validate
import pytest

from tests.manifests import schemas
from tests.manifests.kustomized import VARIANTS, Objects, find
from tests.realcluster.releases import RELEASES

KUBERNETES = "1.36.0"
NAMESPACE = "draledger-system"

# Argo CD sync waves: the CRD (and its namespace) first, then RBAC and configuration (the pod-write
# guardrail with them, so it is active before the operator starts), then the workload and admission.
WAVES = {
    "Namespace": "-1", "CustomResourceDefinition": "-1",
    "ServiceAccount": "0", "ClusterRole": "0", "ClusterRoleBinding": "0", "ConfigMap": "0", "Service": "0",
    "Role": "0", "RoleBinding": "0",
    "NetworkPolicy": "0", "Issuer": "0", "Certificate": "0",
    "ValidatingAdmissionPolicy": "0", "ValidatingAdmissionPolicyBinding": "0",
    "Deployment": "1", "PodDisruptionBudget": "1", "MutatingWebhookConfiguration": "1",
    "MutatingAdmissionPolicy": "1", "MutatingAdmissionPolicyBinding": "1",
    "ServiceMonitor": "1", "PrometheusRule": "1",
}
# Objects whose wave differs from their kind's: the Grafana dashboard (components/dashboard) comes with the operator.
NAMED_WAVES = {("ConfigMap", "draledger-dashboard"): "1"}
CLUSTER_SCOPED = {"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
                  "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingWebhookConfiguration",
                  "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}
_VALIDATED: set[str] = set()  # objects identical across variants are validated once (the validator is slow)
DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def _metadata(obj: dict[str, Any]) -> dict[str, Any]:
    metadata = obj.get("metadata")
    assert isinstance(metadata, dict), f"{obj.get('kind')}: no metadata"
    assert DNS_NAME.match(metadata.get("name", "")), f"{obj['kind']}: bad name {metadata.get('name')!r}"
    return metadata


def _check_service_monitor(obj: dict[str, Any], objects: Objects) -> None:
    spec = obj["spec"]
    labels = spec["selector"]["matchLabels"]
    services = [s for s in find(objects, "Service")
                if labels.items() <= s["metadata"].get("labels", {}).items()]
    assert [s["metadata"]["name"] for s in services] == ["draledger"]
    port_names = {p["name"] for p in services[0]["spec"]["ports"]}
    assert spec["endpoints"], "a ServiceMonitor needs endpoints"
    for endpoint in spec["endpoints"]:
        assert endpoint["port"] in port_names
        assert endpoint["path"] == "/metrics"
    assert spec["namespaceSelector"]["matchNames"] == [NAMESPACE]


def _check_prometheus_rule(obj: dict[str, Any], objects: Objects) -> None:
    groups = obj["spec"]["groups"]
    assert groups
    for group in groups:
        assert isinstance(group["name"], str)
        assert group["rules"]
        for rule in group["rules"]:
            assert set(rule) <= {"alert", "record", "expr", "for", "labels", "annotations", "keep_firing_for"}
            assert ("alert" in rule) != ("record" in rule)
            assert isinstance(rule["expr"], str)
            assert rule["expr"].strip()
            if "for" in rule:
                assert re.fullmatch(r"\d+[smh]", rule["for"]), rule["for"]


def _check_issuer(obj: dict[str, Any], objects: Objects) -> None:
    kinds = {"selfSigned", "ca", "acme", "vault", "venafi"}
    assert len(kinds & set(obj["spec"])) == 1, "an Issuer has exactly one issuer type"


def _check_certificate(obj: dict[str, Any], objects: Objects) -> None:
    spec = obj["spec"]
    reference = spec["issuerRef"]
    assert reference.get("group", "cert-manager.io") == "cert-manager.io"
    assert find(objects, reference["kind"], reference["name"]), "the Certificate's issuer is rendered"
    assert spec["secretName"]
    assert spec["dnsNames"]
    assert set(spec.get("usages", [])) <= {"server auth", "client auth", "digital signature", "key encipherment"}


def _check_ledger(obj: dict[str, Any], objects: Objects) -> None:
    raise AssertionError("NodeAllocatableLedgers are written by the operator and never belong in manifests/")


# Kinds whose schema kubernetes-validate does not ship (they come from CRDs): a structural check of ours.
CUSTOM_CHECKS: dict[tuple[str, str], Callable[[dict[str, Any], Objects], None]] = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): _check_service_monitor,
    ("monitoring.coreos.com/v1", "PrometheusRule"): _check_prometheus_rule,
    ("cert-manager.io/v1", "Issuer"): _check_issuer,
    ("cert-manager.io/v1", "Certificate"): _check_certificate,
    ("draledger.dev/v1alpha1", "NodeAllocatableLedger"): _check_ledger,
}


@pytest.mark.parametrize("variant", VARIANTS)
class TestRenderedVariant:
    @pytest.mark.parametrize("schema_release", list(RELEASES))
    def test_every_object_is_valid(self, render: Callable[[str], Objects], variant: str, schema_release: str) -> None:
        """Built-in kinds pass the release's official schemas, strictly (tests/manifests/schemas.py); CRD kinds they
        lack pass our structural checks."""
        objects = render(variant)
        validate = schemas.validator(schema_release)
        assert objects
        for obj in objects:
            _metadata(obj)
            check = CUSTOM_CHECKS.get((obj["apiVersion"], obj["kind"]))
            if check is not None:
                check(obj, objects)
            else:
                key = schema_release + json.dumps(obj, sort_keys=True)
                if key not in _VALIDATED:
                    validate(obj)
                    _VALIDATED.add(key)

    def test_objects_are_unique(self, render: Callable[[str], Objects], variant: str) -> None:
        """No two rendered objects share kind, namespace and name."""
        keys = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in render(variant)]
        assert sorted(set(keys)) == sorted(keys)

    def test_namespaces(self, render: Callable[[str], Objects], variant: str) -> None:
        """Namespaced objects live in draledger-system; cluster-scoped ones carry no namespace."""
        for obj in render(variant):
            expected = None if obj["kind"] in CLUSTER_SCOPED else NAMESPACE
            assert obj["metadata"].get("namespace") == expected, obj["kind"]

    def test_sync_waves(self, render: Callable[[str], Objects], variant: str) -> None:
        """Every object carries the Argo CD sync wave of its kind."""
        for obj in render(variant):
            annotations = obj["metadata"].get("annotations", {})
            wave = NAMED_WAVES.get((obj["kind"], obj["metadata"]["name"]), WAVES[obj["kind"]])
            assert annotations.get("argocd.argoproj.io/sync-wave") == wave, obj["kind"]

    def test_part_of_label(self, render: Callable[[str], Objects], variant: str) -> None:
        """Every object is labelled app.kubernetes.io/part-of=dra-ledger."""
        for obj in render(variant):
            assert obj["metadata"].get("labels", {}).get("app.kubernetes.io/part-of") == "dra-ledger", obj["kind"]


def test_validator_ships_the_admission_policy_schemas() -> None:
    """kubernetes-validate 1.36.0 has strict schemas for the v1 admission policies (not structural-only)."""
    for kind in ("MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
                 "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
        bogus = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": "x"},
                 "spec": {"bogus": True}}
        with pytest.raises(kubernetes_validate.ValidationError):  # not SchemaNotFoundError
            kubernetes_validate.validate(bogus, KUBERNETES, strict=True)


def test_validator_rejects_unknown_fields() -> None:
    """Strict validation catches a misspelt field, so a passing render means something."""
    bad = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}, "spec": {"prots": []}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, KUBERNETES, strict=True)
