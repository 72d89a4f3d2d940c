"""overlays/minimal installs with nothing but Kubernetes: no cert-manager, no Prometheus Operator.

The README offers it to anyone without those operators, so it must render with the real `kubectl kustomize`
into objects the API server knows without any third-party CRD, each valid against the official schemas.
"""

from __future__ import annotations

from collections.abc import Callable

import kubernetes_validate
import pytest

from tests.manifests import schemas
from tests.manifests.kustomized import MANIFESTS, Objects, find, one
from tests.realcluster.releases import RELEASES

VARIANT = "minimal+admission-policy"  # overlays/minimal (see kustomized.VARIANTS)
KUBERNETES = "1.36.0"
THIRD_PARTY_GROUPS = ("cert-manager.io", "monitoring.coreos.com")


def _group(obj: dict[str, str]) -> str:
    return obj["apiVersion"].rpartition("/")[0]


class TestMinimalOverlay:
    def test_is_a_deployable_variant(self) -> None:
        """The variant the other manifest tests render is the overlay directory itself, not a generated one."""
        assert (MANIFESTS / "overlays" / "minimal" / "kustomization.yaml").is_file()

    def test_needs_no_third_party_crds(self, render: Callable[[str], Objects]) -> None:
        """No cert-manager.io or monitoring.coreos.com object is rendered."""
        assert [] == [f"{o['apiVersion']} {o['kind']}" for o in render(VARIANT) if _group(o) in THIRD_PARTY_GROUPS]

    def test_nothing_refers_to_cert_manager(self, render: Callable[[str], Objects]) -> None:
        """No annotation or reference is left for cert-manager's CA injector to act on."""
        assert [] == [o["kind"] for o in render(VARIANT) if "cert-manager.io" in str(o)]

    @pytest.mark.parametrize("schema_release", list(RELEASES))
    def test_every_object_is_valid_for_kubernetes(self, render: Callable[[str], Objects], schema_release: str) -> None:
        """Every object validates strictly against the release's official schemas (none needs a custom check)."""
        validate = schemas.validator(schema_release)
        for obj in render(VARIANT):
            validate(obj)

    def test_gates_with_the_admission_policy(self, render: Callable[[str], Objects]) -> None:
        """Pods are gated by the MutatingAdmissionPolicy and its binding; the webhook is off and gone."""
        objects = render(VARIANT)
        binding = one(objects, "MutatingAdmissionPolicyBinding", "draledger-gate-pods")
        one(objects, "MutatingAdmissionPolicy", binding["spec"]["policyName"])
        assert not find(objects, "MutatingWebhookConfiguration")
        config = next(m for m in find(objects, "ConfigMap") if m["metadata"]["name"].startswith("draledger-config-"))
        assert "false" == config["data"]["DRALEDGER_WEBHOOK"]


def test_the_validator_knows_no_third_party_kinds() -> None:
    """kubernetes-validate has no schema for a ServiceMonitor, so the strict check above would fail on one."""
    monitor = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "x"},
               "spec": {}}
    with pytest.raises(kubernetes_validate.SchemaNotFoundError):
        kubernetes_validate.validate(monitor, KUBERNETES, strict=True)
