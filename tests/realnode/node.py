"""One real node joined to a real control plane: containerd, runc and the release's kubelet, and its teardown.

Rules:
1. Everything the node owns lives under its ``workdir`` (logs, configuration, kubeconfig, certificates, CDI
   directory, pod logs) and a short ``rundir`` (``/tmp/rn-XXXXXXXX``, linked as ``workdir/run``): containerd's
   root, state, socket and runc root, and the kubelet's root directory (``plugins_registry/``, ``plugins/``,
   pods, checkpoints). Unix sockets live there, and a socket path must fit in 108 bytes, which pytest's
   directories do not leave room for. The pods' cgroups live under a cgroup root of the node's own
   (``/draledger-rn-XXXXXXXX`` in every hierarchy, named after ``rundir``), so two nodes on one machine, even of
   two test sessions, never share one.
2. The kubelet is who it is in a real cluster: ``system:node:<name>`` in ``system:nodes`` (a client certificate
   from the control plane's CA, so the Node authorizer and NodeRestriction apply), x509 and webhook
   authentication with anonymous access off, webhook authorization, a serving certificate from the same CA on
   127.0.0.1, and the control plane's feature gates. Since v1.35 it refuses cgroup v1 unless told
   ``failCgroupV1: false``; the runtime's cgroup driver is ``cgroupfs`` (no systemd here).
3. containerd v2 (built by tests/realcluster/building.py) runs runc (Debian's, with seccomp) with
   ``restrict_oom_score_adj`` (this VM refuses lower oom_score_adj values), CDI on, the node's CDI directory
   only, and a CNI configuration that is never used: pods are ``hostNetwork``, but without a loaded network
   configuration the runtime reports NetworkReady=false and the node would never be Ready.
4. The image is tests/realnode/image.py's busybox, imported with ``ctr images import``; it is the sandbox image
   too, and pods name it with ``imagePullPolicy: Never``.
5. Teardown leaves nothing behind, in this order: the kubelet (and the drivers registered with ``adopt``), every
   task killed and deleted through ``ctr`` (containers outlive the kubelet and containerd, and their init
   processes ignore SIGTERM), containerd, any shim still serving this containerd (found by its socket path in
   its command line), the mounts under ``rundir`` and ``workdir`` (deepest first, detached), the cgroup root,
   the kubelet's links to the pod logs in /var/log/containers (hygiene.py finds and removes them), and
   ``rundir`` itself. It runs on
   ``stop``, on a failed ``start``, and on SIGINT/SIGTERM and at exit through the launcher's handlers.
6. ``restart_kubelet``/``stop_kubelet``/``start_kubelet`` stop and start the kubelet alone; its pods keep running.
   ``power_cycle`` is a node restart: everything stops and every container dies, then everything starts again.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from tests.realcluster import building, pki
from tests.realcluster.cluster import Api, wait_until
from tests.realcluster.launcher import (
    ControlPlane,
    StartError,
    Stoppable,
    _kill_group,
    await_process,
    free_port,
    spawn,
    track,
    untrack,
)
from tests.realnode import hygiene
from tests.realnode.image import IMAGE, oci_archive

NAMESPACE = "k8s.io"  # containerd's namespace of the CRI plugin
STOP_GRACE = 10.0
DEADLINES = {"containerd": 30.0, "kubelet": 120.0}
POLL = 0.2
RUNC_CANDIDATES = ("/usr/sbin/runc", "/usr/bin/runc")
LEASE_SECONDS = 8  # the kubelet renews its Lease every quarter of it: 2 s (see launcher.NODE_MONITOR_GRACE)


class Plugin(Stoppable, Protocol):
    """A process the node stops with itself and starts again after a power cycle: a DRA driver."""

    def launch(self) -> None: ...

    def await_registered(self) -> object: ...


def find_runc() -> Path | None:
    for candidate in RUNC_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


class RealNode:
    """containerd + kubelet of ``plane``'s release on this machine, registered as Node ``name``."""

    def __init__(self, plane: ControlPlane, workdir: Path, name: str, *, labels: dict[str, str] | None = None,
                 kubelet_config: dict[str, Any] | None = None) -> None:
        self.plane = plane
        self.release = plane.release
        self.workdir = workdir
        self.name = name
        self.labels = labels or {}
        self.kubelet_overrides = kubelet_config or {}
        self.logs = workdir / "logs"
        self.rundir = Path(tempfile.mkdtemp(prefix="rn-", dir="/tmp"))
        (workdir).mkdir(parents=True, exist_ok=True)
        (workdir / "run").symlink_to(self.rundir)
        self.socket = self.rundir / "containerd" / "containerd.sock"
        self.cdi_dir = workdir / "cdi"
        self.root_dir = self.rundir / "kubelet"
        self.pod_logs = workdir / "pod-logs"
        self.cgroup = f"/draledger-{self.rundir.name}"  # unique on the machine, as the short directory is
        self.kubelet_port = 0
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.started_pids: list[int] = []
        self.adopted: list[Plugin] = []  # drivers: stopped before the kubelet
        self._sinks: dict[str, Any] = {}
        self._containerd_bin = Path()

    # -- where things are

    @property
    def registry_dir(self) -> Path:
        """Where the kubelet watches for plugin registration sockets (``<root>/plugins_registry``)."""
        return self.root_dir / "plugins_registry"

    def plugin_dir(self, driver: str) -> Path:
        """A DRA driver's plugin data directory (``<root>/plugins/<driver>``, the helper's default layout)."""
        return self.root_dir / "plugins" / driver

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubelet.kubeconfig"

    def api(self) -> Api:
        return self.plane.api()

    # -- lifecycle

    def __enter__(self) -> RealNode:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def start(self) -> None:
        """containerd, the image, the kubelet; returns once the Node is Ready. Any failure tears it all down."""
        track(self)
        try:
            for directory in (self.logs, self.cdi_dir, self.root_dir, self.pod_logs, self.registry_dir,
                              self.root_dir / "plugins", self.workdir / "static-pods"):
                directory.mkdir(parents=True, exist_ok=True)
            self._containerd_bin = building.tool("containerd")
            hygiene.make_cgroup_root(self.cgroup)
            self._start_containerd()
            self.ctr("images", "import", str(oci_archive(self.workdir / "busybox.tar")))
            self._credentials()
            self.start_kubelet()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Module rule 5. Idempotent."""
        for started in reversed(self.adopted):
            with contextlib.suppress(Exception):
                started.stop()
        self.adopted.clear()
        self._stop("kubelet")
        if self._alive("containerd"):
            with contextlib.suppress(Exception):
                self._kill_tasks()
        self._stop("containerd")
        hygiene.kill_with_argument(str(self.socket))  # shims that outlived containerd
        hygiene.unmount_under(self.rundir, self.workdir)
        hygiene.remove_cgroup_root(self.cgroup)
        hygiene.remove_log_links(self.rundir, self.workdir)
        if not hygiene.mounts_under(self.rundir, self.workdir) and self.rundir.exists():  # never through a mount
            shutil.rmtree(self.rundir, ignore_errors=True)
        untrack(self)

    def adopt(self, started: Plugin) -> None:
        """Stop ``started`` (a driver) with the node, before its kubelet; ``power_cycle`` restarts it."""
        self.adopted.append(started)

    def power_cycle(self) -> None:
        """A node restart (module rule 6): the kubelet, the drivers and containerd stop and every container dies,
        as on a power loss (tasks killed; the containers' records stay, as on disk); then containerd, the drivers
        and the kubelet start again, and the kubelet recreates the pods' sandboxes."""
        plugins = list(self.adopted)
        self.stop_kubelet()
        for plugin in reversed(plugins):
            plugin.stop()
        self._kill_tasks(delete_containers=False)
        self._stop("containerd")
        hygiene.kill_with_argument(str(self.socket))
        hygiene.unmount_under(self.rundir, self.workdir)
        self._start_containerd()
        for plugin in plugins:
            plugin.launch()
        self.start_kubelet()
        for plugin in plugins:
            plugin.await_registered()

    # -- the kubelet alone

    def start_kubelet(self) -> None:
        """Start the kubelet and wait until its Node is Ready (again)."""
        config = self._kubelet_config()
        args = [str(self.release.binary("kubelet")), f"--config={config}", f"--kubeconfig={self.kubeconfig}",
                f"--root-dir={self.root_dir}", f"--hostname-override={self.name}", "--node-ip=127.0.0.1",
                "--v=2"]
        if self.labels:
            args.append("--node-labels=" + ",".join(f"{key}={value}" for key, value in sorted(self.labels.items())))
        since = time.time()
        self._spawn("kubelet", args)
        self._await("kubelet", lambda: self.ready_since(since), "Ready")
        self._write_addresses()

    def _write_addresses(self) -> None:
        """The Node's addresses, written once as a cloud controller would (module rule 2).

        The kubelet refuses a loopback node IP ("nodeIP can't be loopback address") and then writes no address
        at all; without ``--node-ip`` it would pick the default route's interface, where nothing listens.
        kube-apiserver reaches the kubelet (``kubectl logs``) at the InternalIP, and the kubelet leaves the
        field alone afterwards (its setter keeps failing before it writes).
        """
        node = self.node() or {}
        wanted = [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": self.name}]
        if node.get("status", {}).get("addresses") != wanted:
            self.api().patch(f"/api/v1/nodes/{self.name}/status", {"status": {"addresses": wanted}})

    def stop_kubelet(self) -> None:
        self._stop("kubelet")

    def restart_kubelet(self) -> None:
        self.stop_kubelet()
        self.start_kubelet()

    def kubelet_running(self) -> bool:
        return self._alive("kubelet")

    def node(self) -> dict[str, Any] | None:
        got: dict[str, Any] | None = self.api().get_or_none(f"/api/v1/nodes/{self.name}")
        return got

    def ready(self) -> bool:
        return self.ready_since(0.0)

    def ready_since(self, since: float) -> bool:
        """The Node is Ready, with a heartbeat newer than ``since`` (a Unix time) and no not-ready taints."""
        node = self.node() or {}
        for condition in node.get("status", {}).get("conditions", []):
            if condition.get("type") == "Ready":
                beat = time.mktime(time.strptime(condition.get("lastHeartbeatTime", "1970-01-01T00:00:00Z"),
                                                 "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
                taints = {taint.get("key") for taint in node.get("spec", {}).get("taints") or []}
                return (condition.get("status") == "True" and beat >= int(since)
                        and not taints & {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})
        return False

    # -- containerd

    def ctr(self, *args: str, check: bool = True, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """``ctr`` against this node's containerd, in the CRI namespace."""
        command = [str(self._containerd_bin.parent / "ctr"), "--address", str(self.socket), "--namespace",
                   NAMESPACE, *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        if check and done.returncode != 0:
            raise StartError(f"ctr {' '.join(args)} failed (exit {done.returncode}): {done.stderr.strip()}")
        return done

    def _containerd_config(self) -> Path:
        runc = find_runc()
        if runc is None:
            raise StartError("runc is not installed (apt-get install runc)")
        cni = self.workdir / "cni"
        cni.mkdir(parents=True, exist_ok=True)
        # loaded, never run: hostNetwork pods need no network plugin (module rule 3)
        (cni / "10-unused.conflist").write_text(json.dumps({
            "cniVersion": "1.0.0", "name": "unused", "plugins": [{"type": "loopback"}]}), encoding="utf-8")
        base = self.rundir / "containerd"
        runtime = 'plugins."io.containerd.cri.v1.runtime"'
        text = f"""version = 3
root = "{base / 'root'}"
state = "{base / 'state'}"
disabled_plugins = ["io.containerd.nri.v1.nri"]

[grpc]
  address = "{self.socket}"

[plugins."io.containerd.cri.v1.images".pinned_images]
  sandbox = "{IMAGE}"

[{runtime}]
  enable_cdi = true
  cdi_spec_dirs = ["{self.cdi_dir}"]
  restrict_oom_score_adj = true

[{runtime}.cni]
  bin_dirs = ["{cni}"]
  conf_dir = "{cni}"

[{runtime}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{runtime}.containerd.runtimes.runc.options]
  SystemdCgroup = false
  BinaryName = "{runc}"
  Root = "{base / 'runc'}"
"""
        path = base / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def _start_containerd(self) -> None:
        config = self._containerd_config()
        self._spawn("containerd", [str(self._containerd_bin), "--config", str(config)])
        self._await("containerd", lambda: self.ctr("version", check=False, timeout=10).returncode == 0, "serving")

    def _kill_tasks(self, *, delete_containers: bool = True) -> None:
        """SIGKILL and delete every task, then every container (module rule 5)."""
        tasks = self.ctr("tasks", "ls", "-q", check=False).stdout.split()
        for task in tasks:
            self.ctr("tasks", "kill", "--all", "--signal", "SIGKILL", task, check=False)
        for task in tasks:
            def deleted(task: str = task) -> bool:
                return (self.ctr("tasks", "delete", task, check=False).returncode == 0
                        or task not in self.ctr("tasks", "ls", "-q", check=False).stdout.split())

            with contextlib.suppress(AssertionError):
                wait_until(deleted, within=15, what=f"task {task} to be deleted")
        for container in self.ctr("containers", "ls", "-q", check=False).stdout.split() if delete_containers else []:
            self.ctr("containers", "delete", container, check=False)

    # -- the kubelet's identity and configuration

    def _credentials(self) -> None:
        keys = self.plane.pki
        assert keys is not None, "the control plane is not started"
        directory = self.workdir / "pki"
        client = pki.issue_client(keys, directory, "kubelet-client", f"system:node:{self.name}", ("system:nodes",))
        serving = pki.issue_serving(keys, directory, "kubelet-serving", self.name)
        pki.write_kubeconfig(self.kubeconfig, self.plane.server, keys.ca_cert, client, f"system:node:{self.name}")
        self._serving = serving

    def _kubelet_config(self) -> Path:
        keys = self.plane.pki
        assert keys is not None
        if not self.kubelet_port:
            self.kubelet_port = free_port()
            self._healthz_port = free_port()
        config: dict[str, Any] = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "address": "127.0.0.1", "port": self.kubelet_port, "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1", "healthzPort": self._healthz_port,
            "tlsCertFile": str(self._serving.cert), "tlsPrivateKeyFile": str(self._serving.key),
            "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                               "x509": {"clientCAFile": str(keys.ca_cert)}},
            "authorization": {"mode": "Webhook"},
            "cgroupDriver": "cgroupfs", "cgroupRoot": self.cgroup, "failCgroupV1": False, "failSwapOn": False,
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "podLogsDir": str(self.pod_logs),
            "staticPodPath": str(self.workdir / "static-pods"), "fileCheckFrequency": "2s",
            "featureGates": dict(sorted(self.plane.component_gates.get("kubelet", self.plane.feature_gates).items())),
            "nodeLeaseDurationSeconds": LEASE_SECONDS, "nodeStatusUpdateFrequency": "2s",
            "nodeStatusReportFrequency": "10s", "syncFrequency": "10s",
            "makeIPTablesUtilChains": False,
            # a shared disk never turns the node DiskPressure; the image is pinned (the sandbox) and never collected
            "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "nodefs.inodesFree": "1%",
                             "imagefs.available": "1%"},
            "imageGCHighThresholdPercent": 100,
            "serializeImagePulls": False,
            **self.kubelet_overrides,
        }
        path = self.workdir / "kubelet-config.json"
        path.write_text(json.dumps(config, indent=1), encoding="utf-8")  # JSON is YAML
        return path

    # -- processes

    def _spawn(self, name: str, args: list[str]) -> None:
        process, sink = spawn(args, self.logs / f"{name}.log", "start", self.workdir)
        self.processes[name] = process
        self._sinks[name] = sink
        self.started_pids.append(process.pid)

    def _alive(self, name: str) -> bool:
        process = self.processes.get(name)
        return process is not None and process.poll() is None

    def _stop(self, name: str) -> None:
        process = self.processes.pop(name, None)
        if process is not None:
            _kill_group(process, STOP_GRACE)
        sink = self._sinks.pop(name, None)
        if sink is not None:
            sink.close()

    def _await(self, name: str, ready: Callable[[], Any], what: str) -> None:
        await_process(f"{name} of node {self.name}", self.processes[name], self.logs / f"{name}.log", ready, what,
                      DEADLINES[name])

