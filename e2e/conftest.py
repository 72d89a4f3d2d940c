"""The kind end-to-end suite: a real v1.36 cluster with DRANodeAllocatableResources on.

Runs only where `kind`, `docker` and `kubectl` exist (`tox -e e2e` or `pytest -m e2e e2e`); elsewhere every
test is skipped with the reason. Set DRALEDGER_E2E_KEEP=1 to keep the cluster between runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = os.environ.get("DRALEDGER_E2E_CLUSTER", "draledger-e2e")
IMAGE = "draledger:e2e"  # the tag e2e/overlay deploys


def _missing() -> str:
    kubectl = shutil.which("kubectl") or str(Path(sys.executable).parent / "kubectl")
    for tool, path in (("kind", shutil.which("kind")), ("docker", shutil.which("docker")), ("kubectl", kubectl)):
        if not path or not Path(path).exists():
            return f"{tool} is not installed"
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        return "no Docker engine is running (the docker client alone is not enough)"
    return ""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    reason = _missing()
    for item in items:
        item.add_marker(pytest.mark.e2e)
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"kind e2e suite skipped: {reason}"))


def run(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, check=True, text=True, capture_output=True, **kwargs)  # type: ignore[call-overload]


@pytest.fixture(scope="session")
def kind_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    kubeconfig = tmp_path_factory.mktemp("kind") / "kubeconfig"
    existing = run("kind", "get", "clusters").stdout.split()
    if CLUSTER not in existing:
        run("kind", "create", "cluster", "--name", CLUSTER, "--config", str(ROOT / "e2e/kind-config.yaml"),
            "--kubeconfig", str(kubeconfig), "--wait", "120s")
    else:
        run("kind", "export", "kubeconfig", "--name", CLUSTER, "--kubeconfig", str(kubeconfig))
    run("docker", "build", "-t", IMAGE, str(ROOT))
    run("kind", "load", "docker-image", IMAGE, "--name", CLUSTER)
    yield kubeconfig
    if not os.environ.get("DRALEDGER_E2E_KEEP"):
        run("kind", "delete", "cluster", "--name", CLUSTER)
