"""Start etcd, kube-apiserver, kube-scheduler and kube-controller-manager on loopback, and stop them all.

Rules:
1. Everything listens on 127.0.0.1 on ports the OS picked free; a component that loses the race for its port
   ("address already in use") is started again on new ports, at most ``ATTEMPTS`` times.
2. Certificates and keys are generated per start (``pki``): client-certificate authentication, the scheduler and
   controller-manager under their own RBAC identities, ``--authorization-mode=Node,RBAC``, the production
   admission plugins plus NodeRestriction, and the same feature gates on every component.
3. No kubelet: the controller-manager runs every default controller except ``node-lifecycle-controller``
   (it would taint kubelet-less nodes); see cluster.py for how tests register Nodes. With ``real_nodes``
   (tests/realnode, whose kubelets report) it runs every controller, the node lifecycle controller with a short
   ``--node-monitor-grace-period``, and kube-apiserver gets a client certificate for kubelets (``kubectl
   logs``) and the CA to verify their serving certificates.
4. Each component runs in its own process group and writes stdout and stderr to ``<workdir>/logs/<name>.log``.
   A component that dies or is not ready by its deadline fails the start with the tail of its log and the
   log's path.
5. No orphans: ``stop`` kills every process group (SIGTERM, then SIGKILL after ``STOP_GRACE``) and reaps it.
   It runs on ``with`` exit, on exceptions during ``start``, on SIGINT/SIGTERM to this process and at
   interpreter exit; children started from the main thread also get SIGKILL from the kernel when this process
   dies (PR_SET_PDEATHSIG), even by SIGKILL. ``restart`` of one component kills its group the same way before
   it starts the new one on the same ports, so it never leaves the old process behind either.
6. kube-apiserver writes an audit log (``<workdir>/logs/audit.log``, JSON lines, Metadata level) of the requests
   of ``AUDITED_USERS`` only, so tests can count what the real server answered the operator (e.g. every 403).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any, Protocol

from tests.realcluster import pki
from tests.realcluster.cluster import Api, Credentials, wait_until
from tests.realcluster.releases import Release

SERVICE_CIDR = "10.0.0.0/24"
ATTEMPTS = 3
STOP_GRACE = 10.0
RESTART_GRACE = 2.0
POLL = 0.2
DEADLINES = {"etcd": 60.0, "kube-apiserver": 180.0, "kube-scheduler": 120.0, "kube-controller-manager": 120.0}

# The default-enabled set of a production kube-apiserver, named explicitly, plus NodeRestriction (kubeadm adds
# it); `--enable-admission-plugins` adds to the defaults, so plugins newer than this list stay on too.
ADMISSION_PLUGINS = (
    "NamespaceLifecycle", "LimitRanger", "ServiceAccount", "TaintNodesByCondition", "PodSecurity", "Priority",
    "DefaultTolerationSeconds", "DefaultStorageClass", "StorageObjectInUseProtection", "PersistentVolumeClaimResize",
    "RuntimeClass", "CertificateApproval", "CertificateSigning", "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction", "DefaultIngressClass", "NodeRestriction", "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "ResourceQuota",
)
# DRANodeAllocatableResources is alpha (off by default) in v1.36, v1.37 and v1.38 and needs DynamicResourceAllocation
# (GA, on; the gate is gone in v1.38). DRAConsumableCapacity (beta and on by default; GA in v1.38, not locked, so
# still settable) is named so capacityKey mappings never depend on a default. Neither removed v1.38 gate
# (DynamicResourceAllocation, InPlacePodVerticalScaling) is ever passed: an unknown gate stops a component.
FEATURE_GATES = {"DRANodeAllocatableResources": True, "DRAConsumableCapacity": True}
CONTROLLERS = "*,-node-lifecycle-controller"
# With real kubelets (rule 3): every controller, and a node silent for NODE_MONITOR_GRACE s turns NotReady. The
# kubelets of tests/realnode renew their Lease every 2 s (nodeLeaseDurationSeconds 8), so the grace is six renewals.
REAL_NODE_CONTROLLERS = "*"
NODE_MONITOR_GRACE = 12.0
# Whose requests the audit log records (rule 6): the operator's ServiceAccount of manifests/base.
AUDITED_USERS = ("system:serviceaccount:draledger-system:draledger",)


class StartError(RuntimeError):
    """A component did not come up; the message names it, its log and the log's tail."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# ------------------------------------------------------------------ process hygiene

_LIBC = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1
_PREVIOUS: dict[int, Any] = {}
_LOCK = threading.Lock()


class Stoppable(Protocol):
    """Anything ``stop_all`` stops: a control plane, a real node (tests/realnode)."""

    def stop(self) -> None: ...


_LIVE: dict[Stoppable, None] = {}  # in start order: stop_all stops the newest first


def track(started: Stoppable) -> None:
    """Have ``started`` stopped on SIGINT/SIGTERM and at exit (rule 5), before what was tracked earlier."""
    _install_handlers()
    _LIVE[started] = None


def untrack(started: Stoppable) -> None:
    _LIVE.pop(started, None)


def _die_with_parent() -> None:  # runs in the child between fork and exec
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def stop_all() -> None:
    """Stop every control plane (and real node) this process started and has not stopped, newest first."""
    for started in reversed(list(_LIVE)):
        started.stop()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    stop_all()
    previous = _PREVIOUS.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)  # SIGINT: Python's handler raises KeyboardInterrupt, pytest reports it
    elif previous != signal.SIG_IGN:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _install_handlers() -> None:
    with _LOCK:
        if _PREVIOUS or threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGINT, signal.SIGTERM):
            _PREVIOUS[signum] = signal.getsignal(signum)
            signal.signal(signum, _on_signal)
        atexit.register(stop_all)


def spawn(args: list[str], log: Path, header: str, cwd: Path,
          env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], IO[bytes]]:
    """Start ``args`` in a process group of its own (rule 4), stdout and stderr appended to ``log`` after a
    ``==== header`` line; from the main thread it also dies with this process (rule 5). The caller closes the
    returned sink once the process is stopped."""
    sink = log.open("ab")
    sink.write(f"\n==== {header}: {' '.join(args)}\n".encode())
    sink.flush()
    main_thread = threading.current_thread() is threading.main_thread()
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                               start_new_session=True, cwd=cwd, env=env,
                               preexec_fn=_die_with_parent if main_thread else None)
    return process, sink


def await_process(name: str, process: subprocess.Popen[bytes], log: Path, ready: Callable[[], Any], what: str,
                  within: float) -> None:
    """Poll ``ready`` until it is truthy; StartError with the log's tail if ``process`` exits first or ``within``
    s pass (a ``ready`` that raises OSError, ValueError or AssertionError counts as not ready yet)."""
    deadline = time.monotonic() + within
    while True:
        code = process.poll()
        if code is not None:
            raise StartError(f"{name} exited with {code} before it was {what}; log {log}:\n{tail(log)}")
        with contextlib.suppress(OSError, ValueError, AssertionError):
            if ready():
                return
        if time.monotonic() > deadline:
            raise StartError(f"{name} was not {what} within {within:.0f} s; log {log}:\n{tail(log)}")
        time.sleep(POLL)


@dataclass
class Component:
    """One running binary."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    sink: IO[bytes]
    args: list[str] = field(default_factory=list)


# ------------------------------------------------------------------ the control plane


class ControlPlane:
    """etcd + kube-apiserver + kube-scheduler + kube-controller-manager of one release, in ``workdir``."""

    def __init__(self, release: Release, workdir: Path, *, feature_gates: dict[str, bool] | None = None,
                 extra_args: dict[str, list[str]] | None = None, real_nodes: bool = False,
                 node_monitor_grace: float = NODE_MONITOR_GRACE) -> None:
        self.release = release
        self.real_nodes = real_nodes  # rule 3
        self.node_monitor_grace = node_monitor_grace
        self.kubelet_client: pki.ClientCert | None = None
        self.workdir = workdir
        self.logs = workdir / "logs"
        self.feature_gates = {**FEATURE_GATES, **(feature_gates or {})}
        self.component_gates: dict[str, dict[str, bool]] = {}  # per component, set by ``restart``
        self.extra_args = extra_args or {}
        self.components: dict[str, Component] = {}
        self.server = ""
        self.kubeconfig = workdir / "admin.kubeconfig"
        self.pki: pki.Pki | None = None
        self._etcd_url = ""
        self._ports: dict[str, int] = {}
        self.started_pids: list[int] = []  # every process ever started, failed attempts included

    # -- public

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()

    @property
    def credentials(self) -> Credentials:
        assert self.pki is not None, "not started"
        return Credentials(self.server, self.pki.ca_cert, self.pki.admin.cert, self.pki.admin.key)

    def api(self) -> Api:
        """An admin client."""
        return Api(self.credentials)

    def pids(self) -> dict[str, int]:
        return {name: component.process.pid for name, component in self.components.items()}

    def gates(self, component: str = "") -> str:
        """The ``--feature-gates`` value of ``component`` (the plane's own gates unless ``restart`` changed it)."""
        gates = self.component_gates.get(component, self.feature_gates)
        return ",".join(f"{name}={str(value).lower()}" for name, value in sorted(gates.items()))

    @property
    def etcd_url(self) -> str:
        """etcd's client URL (plain HTTP on loopback; it also serves the v3 JSON gateway, e.g. /v3/kv/compaction)."""
        return self._etcd_url

    @property
    def audit_log(self) -> Path:
        """kube-apiserver's audit log: one JSON event per line, for the users in ``AUDITED_USERS`` (rule 6)."""
        return self.logs / "audit.log"

    def restart(self, name: str, *, feature_gates: dict[str, bool] | None = None,
                flags: dict[str, str | None] | None = None, grace: float = RESTART_GRACE,
                resync_clients: bool = True) -> None:
        """Stop one component and start it again on the same ports, with changed gates or flags.

        ``feature_gates`` are merged into the component's current gates; ``flags`` maps ``--name`` to a new value
        (``None`` removes the flag). Everything else is the previous command line, so clients and kubeconfigs
        keep working. The old process group gets SIGTERM, then SIGKILL after ``grace`` s (kube-apiserver's
        graceful shutdown would otherwise hold a restart for the whole ``STOP_GRACE``). Waits until the component
        is ready again, like ``start`` (the scheduler and controller-manager also until they authorize the
        admin's /metrics scrape); a failure stops every component.

        With ``resync_clients``, a restart of kube-apiserver also restarts kube-scheduler and
        kube-controller-manager, as they were. Their informers survive an apiserver restart, but slowly: they
        back off, resume into ``410 too old resource version`` (the new watch cache starts at a newer revision),
        and their streaming relist waited up to 30 s for the cache to be fresh, so a new pod stayed unscheduled,
        or without its generated claim, for 10 to 55 s. Fresh processes sync in about a second.
        """
        if name not in ("kube-apiserver", "kube-scheduler", "kube-controller-manager"):
            raise ValueError(f"only the Kubernetes components restart, not {name}")
        old = self.components[name]
        gates = {**self.component_gates.get(name, self.feature_gates), **(feature_gates or {})}
        extra = self.extra_args.get(name, [])
        args = old.args[1:len(old.args) - len(extra)]
        for flag, value in {**(flags or {}), "--feature-gates": ""}.items():
            args = [arg for arg in args if arg.split("=", 1)[0] != flag]
            if flag != "--feature-gates" and value is not None:
                args.append(f"{flag}={value}")
        if feature_gates is not None:
            self.component_gates[name] = gates
        order = list(self.components)
        del self.components[name]
        _kill_group(old.process, grace)
        old.sink.close()
        ready = (self._apiserver_ready if name == "kube-apiserver"
                 else self._component_serving(name.removeprefix("kube-")))
        try:
            self._start(name, lambda: [*args, f"--feature-gates={self.gates(name)}"], ready)
        except BaseException:
            self.stop()
            raise
        self.components = {key: self.components[key] for key in order}  # stop() still goes newest first
        if name == "kube-apiserver" and resync_clients:
            for client in ("kube-scheduler", "kube-controller-manager"):
                if client in self.components:
                    self.restart(client, grace=grace)

    def start(self) -> None:
        """Start the four components in order, each ready before the next; on any failure stop them all."""
        track(self)
        try:
            self.logs.mkdir(parents=True, exist_ok=True)
            keys = self.pki = pki.generate(self.workdir / "pki")
            if self.real_nodes:
                self.kubelet_client = pki.issue_client(keys, self.workdir / "pki", "apiserver-kubelet-client",
                                                       *pki.KUBELET_CLIENT)
            self._start("etcd", self._etcd_args, self._etcd_healthy)
            self._start("kube-apiserver", self._apiserver_args, self._apiserver_ready)
            pki.write_kubeconfig(self.kubeconfig, self.server, keys.ca_cert, keys.admin, "admin")
            self._start("kube-scheduler", lambda: self._component_args("scheduler", keys.scheduler),
                        self._component_healthy("scheduler"))
            self._start("kube-controller-manager", lambda: self._component_args("controller-manager",
                                                                                keys.controller_manager),
                        self._component_healthy("controller-manager"))
            api = self.api()
            self._await("kube-controller-manager", lambda: api.get_or_none(
                "/api/v1/namespaces/default/serviceaccounts/default"), "the default ServiceAccount")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Kill every component's process group, newest first, and reap it. Idempotent.

        Stopped components are forgotten (``pids()`` is then empty; ``started_pids`` keeps them), so a second
        stop never signals a process group whose id the kernel has since given to someone else.
        """
        while self.components:
            _, component = self.components.popitem()  # newest first
            _kill_group(component.process, STOP_GRACE)
            component.sink.close()
        untrack(self)

    # -- starting one component

    def _start(self, name: str, make_args: Callable[[], list[str]], ready: Callable[[], bool]) -> None:
        log = self.logs / f"{name}.log"
        for attempt in range(1, ATTEMPTS + 1):
            args = [str(self.release.binary(name)), *make_args(), *self.extra_args.get(name, [])]
            process, sink = spawn(args, log, f"attempt {attempt}", self.workdir)
            self.components[name] = Component(name, process, log, sink, args)
            self.started_pids.append(process.pid)
            try:
                self._await(name, ready, "ready")
                return
            except StartError:
                _kill_group(process, STOP_GRACE)
                sink.close()
                del self.components[name]
                if attempt == ATTEMPTS or "address already in use" not in tail(log, 60):
                    raise

    def _await(self, name: str, ready: Callable[[], Any], what: str) -> None:
        component = self.components[name]
        await_process(name, component.process, component.log, ready, what, DEADLINES[name])

    # -- etcd

    def _etcd_args(self) -> list[str]:
        client, peer = free_port(), free_port()
        self._etcd_url = f"http://127.0.0.1:{client}"
        return [
            "--name=realcluster", f"--data-dir={self.workdir / 'etcd'}",
            f"--listen-client-urls={self._etcd_url}", f"--advertise-client-urls={self._etcd_url}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}", f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=realcluster=http://127.0.0.1:{peer}", "--initial-cluster-state=new",
            "--unsafe-no-fsync",  # test data: no fsync, much faster on a shared disk
        ]

    def _etcd_healthy(self) -> bool:
        with urllib.request.urlopen(f"{self._etcd_url}/health", timeout=5) as answer:
            return b'"health":"true"' in answer.read()

    # -- kube-apiserver

    def _apiserver_args(self) -> list[str]:
        assert self.pki is not None
        port = free_port()
        self.server = f"https://127.0.0.1:{port}"
        return [
            f"--etcd-servers={self._etcd_url}",
            "--bind-address=127.0.0.1", f"--secure-port={port}", "--advertise-address=127.0.0.1",
            f"--tls-cert-file={self.pki.serving_cert}", f"--tls-private-key-file={self.pki.serving_key}",
            f"--client-ca-file={self.pki.ca_cert}",
            "--authorization-mode=Node,RBAC",
            f"--enable-admission-plugins={','.join(ADMISSION_PLUGINS)}",
            f"--feature-gates={self.gates('kube-apiserver')}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={self.pki.service_account_pub}",
            f"--service-account-signing-key-file={self.pki.service_account_key}",
            "--allow-privileged=true",
            # the request-header (front-proxy) setup of kubeadm: the aggregator's client certificate, and the CA
            # that kube-scheduler and kube-controller-manager read from extension-apiserver-authentication
            f"--requestheader-client-ca-file={self.pki.ca_cert}", "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={self.pki.front_proxy.cert}",
            f"--proxy-client-key-file={self.pki.front_proxy.key}",
            "--endpoint-reconciler-type=none",  # the `kubernetes` Service would point at loopback: refused, noisy
            f"--cert-dir={self.workdir / 'apiserver-certs'}",
            f"--audit-policy-file={self._audit_policy()}", f"--audit-log-path={self.audit_log}",
            "--audit-log-format=json", "--audit-log-mode=blocking",  # written before the answer: no waiting
            *self._kubelet_client_args(),
        ]

    def _kubelet_client_args(self) -> list[str]:
        """How kube-apiserver reaches real kubelets (rule 3): its own client certificate, their serving CA."""
        if self.kubelet_client is None or self.pki is None:
            return []
        return [f"--kubelet-client-certificate={self.kubelet_client.cert}",
                f"--kubelet-client-key={self.kubelet_client.key}",
                f"--kubelet-certificate-authority={self.pki.ca_cert}",
                "--kubelet-preferred-address-types=InternalIP,Hostname"]

    def _audit_policy(self) -> Path:
        """Metadata (who, what, the answer's code; no bodies) for ``AUDITED_USERS``, nothing for anyone else."""
        policy = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
                  "rules": [{"level": "Metadata", "users": list(AUDITED_USERS)}, {"level": "None"}]}
        path = self.workdir / "audit-policy.yaml"
        path.write_text(json.dumps(policy, indent=1), encoding="utf-8")  # JSON is YAML
        return path

    def _apiserver_ready(self) -> bool:
        assert self.pki is not None
        context = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        context.load_cert_chain(str(self.pki.admin.cert), str(self.pki.admin.key))
        try:
            with urllib.request.urlopen(f"{self.server}/readyz", context=context, timeout=5) as answer:
                return bool(answer.status == 200)
        except urllib.error.HTTPError:
            return False

    # -- kube-scheduler and kube-controller-manager

    def _component_args(self, stem: str, client: pki.ClientCert) -> list[str]:
        assert self.pki is not None
        user = "system:kube-scheduler" if stem == "scheduler" else "system:kube-controller-manager"
        kubeconfig = pki.write_kubeconfig(self.workdir / f"{stem}.kubeconfig", self.server, self.pki.ca_cert,
                                          client, user)
        port = free_port()
        self._ports[stem] = port
        args = [
            f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={port}", "--leader-elect=false",
            f"--feature-gates={self.gates(f'kube-{stem}')}",
        ]
        if stem == "controller-manager":
            args += [
                f"--controllers={REAL_NODE_CONTROLLERS if self.real_nodes else CONTROLLERS}",
                *([f"--node-monitor-grace-period={self.node_monitor_grace:g}s", "--node-monitor-period=1s"]
                  if self.real_nodes else []),
                "--use-service-account-credentials=true",  # each controller under its bootstrap RBAC role
                f"--service-account-private-key-file={self.pki.service_account_key}",
                f"--root-ca-file={self.pki.ca_cert}",
                f"--cluster-signing-cert-file={self.pki.ca_cert}", f"--cluster-signing-key-file={self.pki.ca_key}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
            ]
        return args

    def _component_healthy(self, stem: str) -> Callable[[], bool]:
        """Healthy; for kube-controller-manager, with its controllers started too: its /healthz answers ok with
        only ``ping`` until they have registered their checks (a test right after the start would miss them)."""
        def healthy() -> bool:
            try:
                if stem == "controller-manager":
                    return "[+]resourceclaim-controller ok" in self._component_get(stem, "/healthz?verbose")
                return "ok" == self._component_get(stem, "/healthz")
            except urllib.error.HTTPError:
                return False

        return healthy

    def _component_serving(self, stem: str) -> Callable[[], bool]:
        """Healthy, and already authorizing the admin: /healthz is always allowed, but /metrics is authorized
        through the apiserver, and for a moment after a start the admin's certificate is not yet recognised
        (403). ``start`` never sees that moment: the next component's start takes longer."""
        healthy = self._component_healthy(stem)

        def serving() -> bool:
            try:
                return healthy() and bool(self._component_get(stem, "/metrics"))
            except urllib.error.HTTPError:
                return False

        return serving

    def _component_get(self, stem: str, path: str) -> str:
        assert self.pki is not None
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # their serving certificates are self-signed, generated in memory
        context.load_cert_chain(str(self.pki.admin.cert), str(self.pki.admin.key))
        url = f"https://127.0.0.1:{self._ports[stem]}{path}"
        with urllib.request.urlopen(url, context=context, timeout=10) as answer:
            return str(answer.read().decode())

    def scrape(self, component: str, path: str) -> str:
        """GET ``path`` (e.g. /metrics) from kube-scheduler or kube-controller-manager as the admin."""
        return self._component_get(component.removeprefix("kube-"), path)


def _kill_group(process: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM the process group, SIGKILL it after ``grace`` s, and reap the leader."""
    if process.returncode is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # stragglers of an exited leader
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def wait_gone(pids: list[int], within: float = 30.0) -> list[int]:
    """The pids still alive (not zombies) after waiting up to ``within`` s for them to go."""
    def alive() -> list[int]:
        return [pid for pid in pids if _alive(pid)]

    with contextlib.suppress(AssertionError):
        wait_until(lambda: not alive(), within=within, what="processes to exit")
    return alive()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
