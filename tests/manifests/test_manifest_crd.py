"""The CRD that manifests/ deploys is the generated one in crds/, unchanged."""

from __future__ import annotations

from collections.abc import Callable

import yaml

from tests.manifests.kustomized import BASE, ROOT, Objects, one

GENERATED = ROOT / "crds" / "nodeallocatableledgers.yaml"
COPY = BASE / "crd.yaml"
ARGO_ANNOTATIONS = {
    "argocd.argoproj.io/sync-wave": "-1",
    "argocd.argoproj.io/sync-options": "ServerSideApply=true",
}


class TestCrd:
    def test_base_copy_is_byte_equal(self) -> None:
        """manifests/base/crd.yaml is a byte-for-byte copy of crds/nodeallocatableledgers.yaml (refresh it with cp)."""
        assert GENERATED.read_bytes() == COPY.read_bytes()

    def test_rendered_crd_equals_generated(self, render: Callable[[str], Objects]) -> None:
        """The CRD in the rendered base equals crds/nodeallocatableledgers.yaml, apart from the Argo CD annotations."""
        rendered = one(render("base"), "CustomResourceDefinition")
        expected = yaml.safe_load(GENERATED.read_text(encoding="utf-8"))
        annotations = rendered["metadata"].pop("annotations")
        assert expected == rendered
        assert ARGO_ANNOTATIONS == annotations

    def test_every_variant_ships_the_same_crd(self, render: Callable[[str], Objects]) -> None:
        """No overlay or component alters the CRD."""
        base = one(render("base"), "CustomResourceDefinition")
        for variant in ("canary", "production", "production+admission-policy"):
            assert base == one(render(variant), "CustomResourceDefinition")
