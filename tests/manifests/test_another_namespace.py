"""docs/gitops.md's kustomization for another namespace works as written, on every kustomize and every overlay.

Rendered over each overlay, it leaves no draledger-system anywhere, every kustomize renders the same objects, and
those are the objects the Helm chart renders for the overlay's values in the same namespace (charted.DIFFERENCES
aside): the two ways to install elsewhere agree.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.manifests import pinned
from tests.manifests.charted import OVERLAY_VALUES, normalised, rendered, values
from tests.manifests.documented import ROOT, blocks, section
from tests.manifests.kustomized import MANIFESTS, Objects, kubectl_binary
from tests.manifests.test_chart import strings

GITOPS = ROOT / "docs" / "gitops.md"
NAMESPACE = "platform-ledger"


def recipe() -> dict[str, Any]:
    """The one kustomization of the section, parsed."""
    (block,) = blocks(section(GITOPS, "Another namespace"), "yaml")
    document: dict[str, Any] = yaml.safe_load(block)
    return document


def kustomization(directory: Path, overlay: str) -> Path:
    """The recipe over ``overlay``, its one resource pointed at this repository's overlay."""
    document = recipe()
    (resource,) = document["resources"]
    assert resource.endswith("/manifests/overlays/production")
    document["resources"] = [os.path.relpath(MANIFESTS / "overlays" / overlay, directory)]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return directory


def build(command: list[str], directory: Path) -> Objects:
    done = subprocess.run([*command, str(directory)], capture_output=True, text=True, timeout=60, check=False)
    assert 0 == done.returncode, f"{' '.join(command)} {directory} failed:\n{done.stderr}"
    return [obj for obj in yaml.safe_load_all(done.stdout) if obj]


def test_the_recipe_names_its_namespace_once() -> None:
    """The section's kustomization names platform-ledger in one place only, the Namespace's new name."""
    (block,) = blocks(section(GITOPS, "Another namespace"), "yaml")
    assert 1 == block.count(NAMESPACE)


@pytest.mark.parametrize("overlay", OVERLAY_VALUES)
class TestAnotherNamespace:
    def test_nothing_names_draledger_system(self, tmp_path: Path, overlay: str) -> None:
        """Rendered by kubectl, the recipe leaves draledger-system in no field, name, annotation or string."""
        kubectl = kubectl_binary()
        assert kubectl is not None
        objects = build([kubectl, "kustomize"], kustomization(tmp_path / overlay, overlay))

        assert [] == [(o["kind"], text) for o in objects for text in strings(o) if "draledger-system" in text]

    @pytest.mark.parametrize("kustomize_version", pinned.KUSTOMIZE_VERSIONS)
    def test_every_kustomize_renders_it_alike(self, tmp_path: Path, overlay: str, kustomize_version: str) -> None:
        """Each pinned kustomize renders the recipe to kubectl's objects."""
        kustomize = pinned.binary("kustomize", kustomize_version)
        kubectl = kubectl_binary()
        assert kubectl is not None
        directory = kustomization(tmp_path / overlay, overlay)

        assert build([kubectl, "kustomize"], directory) == build([str(kustomize), "build"], directory)

    def test_the_objects_are_the_charts_in_that_namespace(self, helm: Path, tmp_path: Path, overlay: str) -> None:
        """The recipe over the overlay and the chart with its values, both in platform-ledger, are the same objects."""
        kubectl = kubectl_binary()
        assert kubectl is not None
        kustomized = normalised(build([kubectl, "kustomize"], kustomization(tmp_path / overlay, overlay)))
        chart = normalised(rendered(helm, *values(OVERLAY_VALUES[overlay]), namespace=NAMESPACE))

        assert sorted(kustomized) == sorted(chart)
        assert [] == [key for key in kustomized if kustomized[key] != chart[key]]
