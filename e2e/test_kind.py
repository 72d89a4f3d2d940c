"""Deploy the canary overlay to kind and watch the ledgers appear (needs kind and Docker)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from conftest import ROOT, run


def kubectl(kubeconfig: Path, *args: str) -> str:
    return run("kubectl", "--kubeconfig", str(kubeconfig), *args).stdout


def wait_for(check: object, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():  # type: ignore[operator]
                return
        except subprocess.CalledProcessError:
            pass
        time.sleep(2)  # polling a real cluster: there is no event to await here
    raise AssertionError("timed out")


def test_canary_overlay_gives_the_canary_node_a_ready_ledger(kind_cluster: Path) -> None:
    """The canary overlay deploys, becomes ready, and writes a Ready ledger for the labelled node only."""
    rendered = run("kubectl", "kustomize", str(ROOT / "e2e/overlay")).stdout
    kubectl(kind_cluster, "apply", "--server-side", "-f", "-", input=rendered)
    kubectl(kind_cluster, "-n", "draledger-system", "rollout", "status", "deploy/draledger", "--timeout=180s")

    def ledgers() -> bool:
        items = json.loads(kubectl(kind_cluster, "get", "nal", "-o", "json"))["items"]
        return [i["metadata"]["name"] for i in items if i["status"]["phase"] == "Ready"] == ["draledger-e2e-worker"]

    wait_for(ledgers)
