"""The test DRA driver of the real node: its build, one per release, and its processes.

``python -m tests.realnode.drivers [--force]`` builds the driver of every release in
``DRALEDGER_REALCLUSTER_VERSIONS`` (what ``.ci/run`` does before the suites that run it, so no test ever waits for a
build).

Rules:
1. The driver is the Go program of ``driver/shared/driver.go`` (see its rules), symlinked into one module per
   release, ``driver/v1.36/``, ``v1.37/``, ``v1.38/``, whose go.mod and go.sum pin that release's
   ``k8s.io/dynamic-resource-allocation`` (v0.36.3, v0.37.2, v0.38.0-beta.0) and whose ``release.go`` holds what
   differs between them (v1.37's and v1.38's are one file, ``driver/shared/release_v037.go``). It is built by
   tests/realcluster/building.py (``BuildSpec``: one ``go build``, the module's toolchain pin, a stamp, the
   machine's build lock) into ``<cache>/dra-ledger/realnode/driver-<release>``.
2. A ``Driver`` process runs as the ServiceAccount ``draledger-realnode/dra-driver`` (TokenRequest token): it may
   write ResourceSlices and read ResourceClaims and Nodes, as a driver's DaemonSet would, and nothing else.
3. Each process runs in its own process group and writes its log (JSON lines, see driver.go rule 6) to
   ``<workdir>/<name>-<n>.log``; ``stop`` sends SIGTERM (the helper must unregister cleanly), then SIGKILL after
   ``STOP_GRACE``. The node stops every driver it adopted before its kubelet.
4. The Python metadata writer the driver calls in ``--metadata=python`` mode is ``tests/realnode/pywriter.py``,
   run by this interpreter.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.realcluster import building
from tests.realcluster.building import BuildSpec, Built
from tests.realcluster.cluster import RESOURCE_API, Api, ensure_namespace
from tests.realcluster.launcher import ControlPlane, _kill_group, await_process, spawn
from tests.realcluster.operating import request_token, token_kubeconfig
from tests.realcluster.releases import ROOT, Release, selected, user_cache
from tests.realnode.node import RealNode

DRIVER_MODULES = Path(__file__).resolve().parent / "driver"
NAMESPACE = "draledger-realnode"
ACCOUNT = "dra-driver"
STOP_GRACE = 10.0
START_DEADLINE = 60.0


def driver_spec(release: Release) -> BuildSpec:
    """The release's driver (module rule 1)."""
    return BuildSpec(f"realnode driver {release.name}", DRIVER_MODULES / release.name, (".",), ("driver",),
                     user_cache() / "realnode" / f"driver-{release.name}",
                     facts={"release": release.name})


def ensure_driver(release: Release, *, force: bool = False) -> Built:
    return building.build(driver_spec(release), force=force)


def driver_binary(release: Release) -> Path:
    return driver_spec(release).bin / "driver"


# ------------------------------------------------------------------ identity (module rule 2)


def grant(plane: ControlPlane, workdir: Path) -> Path:
    """The driver's ServiceAccount, its RBAC, and a kubeconfig with a token for it; returns the kubeconfig."""
    api = plane.api()
    ensure_namespace(api, NAMESPACE)
    if api.get_or_none(f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{ACCOUNT}") is None:
        api.create(f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts",
                   {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": ACCOUNT}})
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": ACCOUNT},
            "rules": [{"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
                       "verbs": ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]},
                      {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get"]},
                      {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": ACCOUNT},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ACCOUNT},
               "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE}]}
    for path, body in (("/apis/rbac.authorization.k8s.io/v1/clusterroles", role),
                       ("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)):
        if api.get_or_none(f"{path}/{ACCOUNT}") is None:
            api.create(path, body)
    token = request_token(api, namespace=NAMESPACE, account=ACCOUNT)
    assert plane.pki is not None
    return token_kubeconfig(workdir / "dra-driver.kubeconfig", plane.server, plane.pki.ca_cert, token)


# ------------------------------------------------------------------ a driver process (module rule 3)


class Driver:
    """One process of the test driver on ``node``, publishing ``pools`` (the JSON of driver.go rule 2)."""

    def __init__(self, node: RealNode, kubeconfig: Path, name: str, pools: dict[str, Any], *,
                 metadata: str = "helper", rolling_update_uid: str = "", instance: str = "") -> None:
        self.node = node
        self.kubeconfig = kubeconfig
        self.name = name  # the driver name, e.g. cpu.realnode.draledger.dev
        self.pools = pools
        self.metadata = metadata
        self.rolling_update_uid = rolling_update_uid
        self.workdir = node.workdir / "drivers"
        self.instance = instance or name.split(".")[0]
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.port = 0
        self._sink: Any = None
        self._control = Path()

    @property
    def plugin_dir(self) -> Path:
        return self.node.plugin_dir(self.name)

    @property
    def log(self) -> Path:
        return self.workdir / f"{self.instance}.log"

    def start(self) -> Driver:
        """Start it (again) and wait until the kubelet has registered it; the node stops it with itself."""
        self.launch()
        return self.await_registered()

    def launch(self) -> None:
        """Start the process (again), without waiting; the node stops it with itself."""
        assert self.process is None or self.process.poll() is not None, "already running"
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        devices = self.workdir / f"{self.instance}-devices-{self.starts}.json"
        devices.write_text(json.dumps(self.pools), encoding="utf-8")
        self._control = control = self.workdir / f"{self.instance}-control-{self.starts}"
        writer = json.dumps([sys.executable, str(Path(__file__).resolve().parent / "pywriter.py"),
                             "--release", self.node.release.name])
        args = [str(driver_binary(self.node.release)), f"--driver={self.name}", f"--node={self.node.name}",
                f"--kubeconfig={self.kubeconfig}", f"--registry-dir={self.node.registry_dir}",
                f"--plugin-dir={self.plugin_dir}", f"--cdi-dir={self.node.cdi_dir}", f"--devices={devices}",
                f"--metadata={self.metadata}", f"--python-writer={writer}", f"--control={control}",
                f"--instance={self.instance}-{self.starts}"]
        if self.rolling_update_uid:
            args.append(f"--rolling-update-uid={self.rolling_update_uid}")
        self.process, self._sink = spawn(args, self.log, f"start {self.starts}", self.workdir,
                                         {**os.environ, "PYTHONPATH": str(ROOT)})
        if self not in self.node.adopted:
            self.node.adopt(self)

    def await_registered(self) -> Driver:
        """Until the driver says the kubelet registered it: it writes its control port then (driver.go rule 5)."""
        assert self.process is not None, "not launched"
        control = self._control
        await_process(f"driver {self.instance}", self.process, self.log,
                      lambda: control.exists() and control.read_text().strip(), "registered", START_DEADLINE)
        self.port = int(control.read_text())
        return self

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace: float = STOP_GRACE) -> None:
        if self.process is not None and self.process.returncode is None:
            _kill_group(self.process, grace)
        if self._sink is not None:
            self._sink.close()
            self._sink = None

    def pause(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGCONT)

    def tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def records(self) -> list[dict[str, Any]]:
        out = []
        for line in (self.log.read_text(errors="replace").splitlines() if self.log.exists() else []):
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if isinstance(record, dict) and "event" in record:
                    out.append(record)
        return out

    # -- the control server (driver.go rule 5)

    def _post(self, path: str, body: Any) -> None:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=json.dumps(body).encode(),
                                         method="POST", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            answer.read()

    def publish(self, pools: dict[str, Any]) -> None:
        """Publish ``pools`` instead (the helper's controller bumps the generation when more than one slice
        changes, or to the pool's ``generation`` when that is higher)."""
        self._post("/publish", pools)
        self.pools = pools

    def pace(self, every: float) -> None:
        """Make each of the driver's writes to the API server wait ``every`` s first (0: no wait)."""
        self._post(f"/pace?every={every:g}s", {})

    def update_metadata(self, claim: dict[str, Any], request: str, devices: list[dict[str, Any]]) -> None:
        """Rewrite ``request``'s metadata of ``claim`` (a ResourceClaim) with ``devices`` ({request, pool, device,
        attributes}): Helper.UpdateRequestMetadata, or the Python writer's update."""
        meta = claim["metadata"]
        self._post("/metadata", {"namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"],
                                 "request": request, "devices": devices})


def slices_of(api: Api, driver: str, node: str) -> list[dict[str, Any]]:
    """The driver's ResourceSlices of ``node``."""
    selector = f"fieldSelector=spec.nodeName%3D{node}"
    items: list[dict[str, Any]] = api.get(f"{RESOURCE_API}/resourceslices?{selector}")["items"]
    return [item for item in items if item["spec"]["driver"] == driver]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.realnode.drivers", description=__doc__.split("\n")[0])
    parser.add_argument("--force", action="store_true", help="rebuild even when the stamp matches")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        for release in selected():
            done = ensure_driver(release, force=args.force)
            building.say(f"realnode driver {release.name}: " + (f"built in {done.seconds:.0f} s" if done.rebuilt
                                                                else "current (stamp matches), not rebuilt"))
    except building.BuildError as error:
        building.say(str(error))
        return 1
    building.say(f"realnode drivers ready in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
