"""The real operator against the real control plane: its manifests, its identity, its process, and the checks.

Rules:
1. What the operator runs under is what users deploy: ``manifests/overlays/canary`` swapped to
   ``components/admission-policy`` (docs/gitops.md), rendered with the real ``kubectl kustomize`` and applied
   with ``kubectl apply --server-side``; only the objects a pod would need are left out (Deployment, Services,
   NetworkPolicy, PodDisruptionBudget, ConfigMap, monitoring): there is no kubelet to run it. The canary scope
   keeps the MutatingAdmissionPolicy to namespaces labelled ``draledger.dev/gating=enabled``, so the other tests
   of the session are never gated.
2. The operator authenticates as ``draledger-system/draledger`` with a token from the TokenRequest API, in a
   kubeconfig of its own: every request it makes meets the manifests' RBAC and ValidatingAdmissionPolicy.
3. ``OperatorProcess`` is ``python -m draledger run`` in its own process group (PR_SET_PDEATHSIG when
   started from the main thread): ``stop`` kills the group and reaps it, and the ``operators`` fixture stops
   every one it started, so none outlives its test. Its JSON log stays in the test's directory, and a failing
   test's report carries its tail.
4. Each operator sees only the nodes of its own test (``--node-selector`` on a label the test's ``Site`` puts
   on its nodes), so ledgers of other tests' nodes never enter its accounting.
5. Waiting is ``wait_until`` (polling with a deadline); nothing here sleeps to wait for state.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.manifests.kustomized import variant_directories
from tests.realcluster.cluster import (
    RESOURCE_API,
    Api,
    ApiError,
    Credentials,
    create_node,
    ensure_namespace,
    kubectl,
    kubectl_binary,
    publish_device_class,
    publish_slice,
    wait_until,
)
from tests.realcluster.launcher import AUDITED_USERS, ControlPlane, _die_with_parent, _kill_group
from tests.realcluster.releases import ROOT, Release

NAMESPACE = "draledger-system"
SERVICE_ACCOUNT = "draledger"
USER = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"
GATE = "draledger.dev/ledger-ready"
GATING_LABEL = {"draledger.dev/gating": "enabled"}  # what the canary binding selects
LEDGERS = "/apis/draledger.dev/v1alpha1/nodeallocatableledgers"
IMAGE = "registry.k8s.io/pause:3.10"  # never pulled: there is no kubelet
VARIANT = "canary+admission-policy"
# Kinds of the rendered variant that only a running Deployment needs, or whose CRDs a bare cluster lacks.
NOT_APPLIED = {"Deployment", "Service", "NetworkPolicy", "PodDisruptionBudget", "ConfigMap", "ServiceMonitor",
               "PrometheusRule"}
STOP_GRACE = 15.0
LOG_TAIL = 150

assert USER in AUDITED_USERS, "the launcher's audit policy must record the operator's requests"


# ------------------------------------------------------------------ manifests and identity


def render(variant: str, scratch: Path) -> list[dict[str, Any]]:
    """The objects of a variant of manifests/ (see tests/manifests/kustomized.py), rendered by the real kustomize."""
    directory = variant_directories(scratch)[variant]
    done = subprocess.run([kubectl_binary(), "kustomize", str(directory)], capture_output=True, text=True,
                          timeout=60, check=True)
    return [item for item in yaml.safe_load_all(done.stdout) if item]


@dataclass
class Installation:
    """The manifests applied to one control plane, and the operator's identity on it."""

    plane: ControlPlane
    objects: list[dict[str, Any]]
    token: str
    kubeconfig: Path

    def as_operator(self) -> Api:
        """A direct client with the operator's own token (not the operator): for what it may and may not do."""
        assert self.plane.pki is not None
        return Api(Credentials(self.plane.server, self.plane.pki.ca_cert, None, None, token=self.token))


def install(plane: ControlPlane, scratch: Path) -> Installation:
    """Apply the canary+admission-policy manifests (module rule 1) and log in as the operator's ServiceAccount."""
    rendered = render(VARIANT, scratch / "kustomize")
    objects = [item for item in rendered if item["kind"] not in NOT_APPLIED]
    manifest = scratch / "applied.yaml"
    manifest.write_text(yaml.safe_dump_all(objects, sort_keys=False), encoding="utf-8")

    def applied() -> str | None:
        done = kubectl(plane.kubeconfig, "apply", "--server-side", "--force-conflicts",
                       "--field-manager=draledger-tests", "-f", str(manifest), check=False)
        return "applied" if done.returncode == 0 else None  # a CRD just created may not be served yet

    try:
        wait_until(applied, within=60, what="the manifests to apply")
    except AssertionError:  # once more, to fail with kubectl's stderr
        kubectl(plane.kubeconfig, "apply", "--server-side", "--force-conflicts", "--field-manager=draledger-tests",
                "-f", str(manifest))
    admin = plane.api()
    wait_until(lambda: any(c["type"] == "Established" and c["status"] == "True" for c in admin.get(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/nodeallocatableledgers.draledger.dev")
        ["status"].get("conditions", [])), within=60, what="the CRD to be Established")
    token = request_token(admin)
    assert plane.pki is not None
    kubeconfig = token_kubeconfig(scratch / "draledger.kubeconfig", plane.server, plane.pki.ca_cert, token)
    installation = Installation(plane, objects, token, kubeconfig)
    operator = installation.as_operator()
    wait_until(lambda: can(operator, "list", "pods") and can(operator, "patch", "nodeallocatableledgers",
                                                                 group="draledger.dev"),
               within=30, what="the operator's RBAC to take effect")
    return installation


def request_token(admin: Api, seconds: int = 7200, *, namespace: str = NAMESPACE,
                  account: str = SERVICE_ACCOUNT) -> str:
    """A token for ``namespace/account`` from the TokenRequest API (what the kubelet mounts into its pod)."""
    answer = admin.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
                          {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                           "spec": {"expirationSeconds": seconds}})
    return str(answer["status"]["token"])


def token_kubeconfig(path: Path, server: str, ca_cert: Path, token: str) -> Path:
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "realcluster", "cluster": {"server": server, "certificate-authority": str(ca_cert)}}],
        "users": [{"name": SERVICE_ACCOUNT, "user": {"token": token}}],
        "contexts": [{"name": "realcluster", "context": {"cluster": "realcluster", "user": SERVICE_ACCOUNT}}],
        "current-context": "realcluster",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    path.chmod(0o600)
    return path


def can(api: Api, verb: str, resource: str, *, group: str = "", namespace: str = "", subresource: str = "") -> bool:
    """SelfSubjectAccessReview: whether the client's own user may do this."""
    attributes = {"verb": verb, "resource": resource, "group": group, "namespace": namespace,
                  "subresource": subresource}
    answer = api.create("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                        {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                         "spec": {"resourceAttributes": attributes}})
    return bool(answer["status"].get("allowed"))


# ------------------------------------------------------------------ the audit log


def audit_offset(plane: ControlPlane) -> int:
    """Where the audit log ends now: events after this offset are the ones to come."""
    return plane.audit_log.stat().st_size if plane.audit_log.exists() else 0


def audit_events(plane: ControlPlane, since: int = 0,
                 stages: tuple[str, ...] = ("ResponseComplete", "Panic")) -> list[dict[str, Any]]:
    """The audit events written after ``since`` at ``stages`` (a watch still open has only ResponseStarted)."""
    if not plane.audit_log.exists():
        return []
    with plane.audit_log.open("rb") as log:
        log.seek(since)
        lines = log.read().decode(errors="replace").splitlines()
    events = []
    for line in lines:
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if event.get("stage") in stages:
                events.append(event)
    return events


def from_operator(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events of the operator process: its user, and aiohttp (Kopf and the writer), not the tests' urllib."""
    return [event for event in events if event.get("user", {}).get("username") == USER
            and not str(event.get("userAgent", "")).startswith("Python-urllib")]


def refusals(events: list[dict[str, Any]]) -> list[str]:
    """Every answer of 401 or 403, as ``CODE VERB URI``."""
    return [f"{event['responseStatus'].get('code')} {event['verb']} {event['requestURI']}"
            for event in events if event.get("responseStatus", {}).get("code") in (401, 403)]


# ------------------------------------------------------------------ the operator process


class OperatorProcess:
    """``python -m draledger run ...`` as the operator's ServiceAccount (module rule 3)."""

    def __init__(self, kubeconfig: Path, workdir: Path, args: list[str], name: str = "draledger",
                 env: dict[str, str] | None = None) -> None:
        self.kubeconfig = kubeconfig
        self.args = args
        self.env = dict(env or {})  # DRALEDGER_* and the like, as a pod's environment would hold them
        self.log = workdir / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.offsets: list[int] = []  # where each start's lines begin in the log

    @property
    def starts(self) -> int:
        return len(self.offsets)

    def start(self) -> OperatorProcess:
        """Start it (again); every start appends to the same log, behind a ``==== start`` line."""
        assert self.process is None or self.process.poll() is not None, "already running"
        env = {key: value for key, value in os.environ.items() if not key.startswith("DRALEDGER_")}
        env.update(self.env)
        env.update({"KUBECONFIG": str(self.kubeconfig), "PYTHONUNBUFFERED": "1"})
        command = [sys.executable, "-m", "draledger", "run", "--metrics-host", "127.0.0.1", "--metrics-port",
                   "0", "--log-format", "json", *self.args]
        self.port = 0
        with self.log.open("ab") as sink:
            self.offsets.append(sink.tell())
            sink.write(f"==== start {self.starts}: {' '.join(command)}\n".encode())
            sink.flush()
            main_thread = threading.current_thread() is threading.main_thread()
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                            start_new_session=True, cwd=ROOT, env=env,
                                            preexec_fn=_die_with_parent if main_thread else None)
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def records(self, start: int | None = None) -> list[dict[str, Any]]:
        """The JSON lines of the log: of every start, or of the ``start``-th only (1 is the first)."""
        data = self.log.read_bytes() if self.log.exists() else b""
        if start is not None:
            end = self.offsets[start] if start < len(self.offsets) else len(data)
            data = data[self.offsets[start - 1]:end]
        out = []
        for line in data.decode(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if isinstance(record, dict):
                    out.append(record)
        return out

    def logged(self, event: str, start: int | None = None) -> list[dict[str, Any]]:
        return [record for record in self.records(start) if record.get("event") == event]

    def tail(self, lines: int = LOG_TAIL) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def _alive_or_fail(self) -> None:
        if not self.running():
            code = self.process.returncode if self.process is not None else None
            raise AssertionError(f"the operator exited with {code}; log {self.log}:\n{self.tail(40)}")

    def metrics_port(self) -> int:
        if not self.port:
            self._alive_or_fail()
            starting = self.logged("draledger operator starting", self.starts)
            if starting:
                self.port = int(starting[-1]["metrics_port"])
        return self.port

    def get(self, path: str) -> tuple[int, str]:
        port = wait_until(self.metrics_port, within=60, what="the operator to serve its metrics port")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")

    def wait_ready(self, within: float = 90.0) -> None:
        """Until /readyz says every ledger is rebuilt; fails early (with the log) if the process exits."""
        def ready() -> bool:
            self._alive_or_fail()
            with contextlib.suppress(OSError):
                return self.get("/readyz")[0] == 200
            return False

        wait_until(ready, within=within, what="the operator's /readyz")

    def metric(self, name: str, **labels: str) -> float:
        """The sum of the samples named ``name`` whose labels include ``labels`` (0 when there is none)."""
        status, text = self.get("/metrics")
        assert 200 == status, text
        total = 0.0
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                    total += sample.value
        return total

    def send(self, signum: signal.Signals) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signum)

    def stop(self, signum: signal.Signals = signal.SIGTERM, grace: float = STOP_GRACE) -> int | None:
        """Send ``signum`` to the group (SIGKILL after ``grace`` s), reap it; the exit code."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGCONT)  # a paused process cannot act on SIGTERM
                os.killpg(process.pid, signum)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=grace)
        _kill_group(process, 0.0)  # stragglers of the group, and the SIGKILL if it did not go
        return process.returncode


@dataclass
class Operators:
    """Starts operator processes for one test and stops every one of them afterwards (the ``operators`` fixture)."""

    installation: Installation
    workdir: Path
    started: list[OperatorProcess] = field(default_factory=list)

    def start(self, *args: str, ready: bool = True, kubeconfig: Path | None = None) -> OperatorProcess:
        """A new operator process (its own log, ``draledger-<n>.log``), ready unless ``ready`` is false.
        ``kubeconfig`` is its ``$KUBECONFIG`` instead of the installation's (e.g. a missing file, so that only
        a ``--kubeconfig`` in ``args`` can work)."""
        process = OperatorProcess(kubeconfig or self.installation.kubeconfig, self.workdir, list(args),
                                  f"draledger-{len(self.started) + 1}")
        self.started.append(process)
        process.start()
        if ready:
            process.wait_ready()
        return process

    def stop_all(self) -> None:
        for process in reversed(self.started):
            process.stop()

    def report(self) -> str:
        return "\n\n".join(f"{process.log} (last {LOG_TAIL} lines):\n{process.tail()}" for process in self.started)


# ------------------------------------------------------------------ a test's own nodes and driver


@dataclass
class Site:
    """Nodes labelled for one operator (module rule 4), each with cores of a fake CPU driver, and a namespace."""

    api: Api
    release: Release
    name: str
    cleanup: list[str] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"realcluster.draledger.dev/site={self.name}"

    @property
    def driver(self) -> str:
        return f"cpu.{self.name}.realcluster.draledger.dev"

    @property
    def device_class(self) -> str:
        return f"{self.name}-cores"

    @property
    def namespace(self) -> str:
        return self.name

    def setup(self, nodes: int = 1, *, cores: int = 4, multiplier: str = "2", gated: bool = True) -> Site:
        """``nodes`` Ready nodes with ``cores`` devices each (every one maps to ``multiplier`` cpu), the class, and
        the namespace (labelled for the MutatingAdmissionPolicy when ``gated``)."""
        publish_device_class(self.api, self.device_class, self.driver)
        self.cleanup.append(f"{RESOURCE_API}/deviceclasses/{self.device_class}")
        for index in range(nodes):
            self.add_node(f"{self.name}-n{index}", cores=cores, multiplier=multiplier)
        ensure_namespace(self.api, self.namespace, GATING_LABEL if gated else None)
        self.cleanup.append(f"/api/v1/namespaces/{self.namespace}")
        return self

    def add_node(self, node: str, *, cores: int = 4, multiplier: str = "2") -> str:
        key, value = self.label.split("=")
        create_node(self.api, node, release=self.release, labels={key: value})
        self.cleanup.append(f"/api/v1/nodes/{node}")
        devices = [{"name": f"core-{index}", "attributes": {"index": {"int": index}},
                    **self.release.device_mapping("cpu", multiplier)} for index in range(cores)]
        publish_slice(self.api, f"{node}-cores", driver=self.driver, node=node, devices=devices)
        self.cleanup.append(f"{RESOURCE_API}/resourceslices/{node}-cores")
        self.nodes.append(node)
        return node

    def template(self, name: str = "one-core", count: int = 1) -> str:
        self.api.create(f"{RESOURCE_API}/namespaces/{self.namespace}/resourceclaimtemplates",
                        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                         "metadata": {"name": name}, "spec": {"spec": claim_spec(self.device_class, count)}})
        return name

    def claim_pod(self, name: str, template: str = "one-core", *, gates: list[str] | None = None,
                  affinity: dict[str, Any] | None = None, node_name: str = "") -> dict[str, Any]:
        """Create a pod with one claim from ``template``; the answer is the object as created (admission done)."""
        body = pod_body(name, {"resourceClaimTemplateName": template}, gates=gates, affinity=affinity,
                        node_name=node_name)
        created: dict[str, Any] = self.api.create(f"/api/v1/namespaces/{self.namespace}/pods", body)
        return created

    def pod_path(self, name: str) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods/{name}"

    def teardown(self) -> None:
        """Delete what the site created, newest first; pods go with their namespace (force: no kubelet)."""
        with contextlib.suppress(ApiError):
            for pod in self.api.get(f"/api/v1/namespaces/{self.namespace}/pods")["items"]:
                with contextlib.suppress(ApiError):
                    self.api.request("DELETE", f"{self.pod_path(pod['metadata']['name'])}?gracePeriodSeconds=0")
        for path in reversed(self.cleanup):
            try:
                self.api.request("DELETE", path + "?gracePeriodSeconds=0")
            except ApiError as error:
                if error.status != 404:
                    raise


def claim_spec(device_class: str, count: int) -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "cores", "exactly": {
        "deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}}]}}


def pod_body(name: str, claim_source: dict[str, str], *, gates: list[str] | None = None,
             affinity: dict[str, Any] | None = None, node_name: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "app", "image": IMAGE,
                        "resources": {"requests": {"cpu": "500m", "memory": "64Mi"}, "claims": [{"name": "cores"}]}}],
        "resourceClaims": [{"name": "cores", **claim_source}],
        "terminationGracePeriodSeconds": 0,
    }
    if gates:
        spec["schedulingGates"] = [{"name": gate} for gate in gates]
    if affinity:
        spec["affinity"] = affinity
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def gates_of(pod: dict[str, Any]) -> list[str]:
    return [gate["name"] for gate in pod["spec"].get("schedulingGates", [])]


def bound_with_status(api: Api, path: str) -> dict[str, Any] | None:
    got: dict[str, Any] = api.get(path)
    return got if got["spec"].get("nodeName") and got["status"].get("nodeAllocatableResourceClaimStatuses") else None


def managers_of(obj: dict[str, Any], field_name: str) -> list[str]:
    """The field managers whose managed fields mention ``field_name``."""
    return [entry.get("manager", "") for entry in obj["metadata"].get("managedFields", [])
            if f'"f:{field_name}"' in json.dumps(entry.get("fieldsV1", {}))]


# ------------------------------------------------------------------ ledgers, dumps and the offline audit


def ledger(api: Api, node: str) -> dict[str, Any] | None:
    got: dict[str, Any] | None = api.get_or_none(f"{LEDGERS}/{node}")
    return got


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    for entry in ((obj or {}).get("status") or {}).get("conditions", []):
        if entry.get("type") == kind:
            return dict(entry)
    return {}


# Fields the operator alone can know, or that differ by time only: not compared with the offline audit.
VOLATILE_STATUS = ("ledgerVersion", "mappingVersion", "observedTime", "rejectedSlices")
OPERATOR_ONLY_CONDITIONS = ("PodStatusBackfill",)


def semantic(status: dict[str, Any]) -> dict[str, Any]:
    """A ledger's status without versions, times, the operator-only condition and ``rejectedSlices``."""
    content = {key: value for key, value in status.items() if key not in VOLATILE_STATUS}
    content["conditions"] = sorted(
        ({key: value for key, value in entry.items() if key != "lastTransitionTime"}
         for entry in status.get("conditions", []) if entry.get("type") not in OPERATOR_ONLY_CONDITIONS),
        key=lambda entry: str(entry.get("type")))
    return content


def dump(plane: ControlPlane, path: Path) -> Path:
    """``kubectl get nodes,pods,resourceslices,resourceclaims -A -o json`` from the real server, into ``path``."""
    done = kubectl(plane.kubeconfig, "get", "nodes,pods,resourceslices,resourceclaims", "-A", "-o", "json")
    path.write_text(done.stdout, encoding="utf-8")
    return path


def audited(dump_file: Path) -> dict[str, dict[str, Any]]:
    """``draledger audit -f DUMP -o json``: node name -> the ledger it computes."""
    done = subprocess.run([sys.executable, "-m", "draledger", "audit", "-f", str(dump_file), "-o", "json",
                           "--fail-on", "none"],
                          capture_output=True, text=True, timeout=120, check=True, cwd=ROOT)
    return {item["metadata"]["name"]: item for item in json.loads(done.stdout)["items"]}


def stored(api: Api, nodes: list[str]) -> dict[str, dict[str, Any] | None]:
    return {node: ledger(api, node) for node in nodes}


def differences(plane: ControlPlane, nodes: list[str], scratch: Path) -> dict[str, Any]:
    """Per node, how the stored ledger differs from ``draledger audit`` of a dump taken now (empty: converged)."""
    api = plane.api()
    before = stored(api, nodes)
    expected = audited(dump(plane, scratch / "dump.json"))
    after = stored(api, nodes)
    out: dict[str, Any] = {}
    for node in nodes:
        mine, theirs = after[node], expected.get(node)
        if mine is None or theirs is None:
            out[node] = {"stored": mine is not None, "audited": theirs is not None}
            continue
        if (before[node] or {}).get("metadata", {}).get("resourceVersion") != mine["metadata"]["resourceVersion"]:
            out[node] = "changed while the dump was taken"
            continue
        a, b = semantic(mine.get("status") or {}), semantic(theirs["status"])
        if a != b:
            out[node] = {key: {"stored": a.get(key), "audited": b.get(key)} for key in sorted(set(a) | set(b))
                         if a.get(key) != b.get(key)}
    return out


def converge(plane: ControlPlane, nodes: list[str], scratch: Path, within: float = 60.0) -> None:
    """Until every node's stored ledger equals the offline audit of a dump of the same cluster."""
    last: list[dict[str, Any]] = []

    def equal() -> bool:
        last[:] = [differences(plane, nodes, scratch)]
        return not last[0]

    try:
        wait_until(equal, within=within, what="the ledgers to equal `draledger audit` of a dump")
    except AssertionError:
        raise AssertionError(f"ledgers differ from `draledger audit`: {json.dumps(last[0], indent=1)}") from None


class LedgerVersions:
    """Watches ledgers in a thread and records every ledgerVersion/mappingVersion seen, in order, per node."""

    def __init__(self, plane: ControlPlane, nodes: list[str]) -> None:
        self.plane = plane
        self.nodes = set(nodes)
        self.seen: dict[str, list[tuple[int, int]]] = {}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ledger-versions", daemon=True)

    def __enter__(self) -> LedgerVersions:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=15)

    def _run(self) -> None:
        plane = self.plane
        assert plane.pki is not None
        context = ssl.create_default_context(cafile=str(plane.pki.ca_cert))
        context.load_cert_chain(str(plane.pki.admin.cert), str(plane.pki.admin.key))
        version = ""
        while not self._stop.is_set():
            url = f"{plane.server}{LEDGERS}?watch=true&timeoutSeconds=5&allowWatchBookmarks=true"
            if version:
                url += f"&resourceVersion={version}"
            try:
                with urllib.request.urlopen(url, context=context, timeout=20) as stream:
                    for line in stream:
                        event = json.loads(line)
                        obj = event.get("object") or {}
                        version = obj.get("metadata", {}).get("resourceVersion", version)
                        if event.get("type") == "ERROR":
                            version = ""
                            continue
                        self._record(obj)
            except (OSError, ValueError) as error:
                if not self._stop.is_set():
                    self.errors.append(repr(error))
                    self._stop.wait(0.5)

    def _record(self, obj: dict[str, Any]) -> None:
        name = obj.get("metadata", {}).get("name")
        status = obj.get("status") or {}
        if name in self.nodes and "ledgerVersion" in status:
            pair = (int(status["ledgerVersion"]), int(status.get("mappingVersion", 0)))
            history = self.seen.setdefault(name, [])
            if not history or history[-1] != pair:
                history.append(pair)

    def regressions(self) -> list[str]:
        out = []
        for node, history in self.seen.items():
            for (lv0, mv0), (lv1, mv1) in itertools.pairwise(history):
                if lv1 < lv0 or mv1 < mv0:
                    out.append(f"{node}: ({lv0}, {mv0}) -> ({lv1}, {mv1})")
        return out


# ------------------------------------------------------------------ etcd


def etcd_revision(plane: ControlPlane) -> int:
    """etcd's current revision, from the header of a v3 JSON gateway range request."""
    answer = _etcd(plane, "/v3/kv/range", {"key": "AA=="})  # base64 of a single NUL byte: any key will do
    return int(answer["header"]["revision"])


def compact(plane: ControlPlane, revision: int) -> dict[str, Any]:
    """Physically compact etcd's history before ``revision``: any watch resuming below it gets 410 Gone."""
    return _etcd(plane, "/v3/kv/compaction", {"revision": str(revision), "physical": True})


def _etcd(plane: ControlPlane, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(plane.etcd_url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        decoded: dict[str, Any] = json.loads(answer.read())
        return decoded


@contextlib.contextmanager
def restarted(plane: ControlPlane, component: str, *, feature_gates: dict[str, bool] | None = None,
              flags: dict[str, str | None] | None = None) -> Iterator[None]:
    """Run the block with ``component`` restarted with other gates or flags; restart it as it was afterwards."""
    before_gates = plane.component_gates.get(component)
    before_args = list(plane.components[component].args)
    plane.restart(component, feature_gates=feature_gates, flags=flags)
    try:
        yield
    finally:
        undo: dict[str, str | None] = {}
        for flag in flags or {}:
            old = [arg.split("=", 1)[1] for arg in before_args if arg.split("=", 1)[0] == flag]
            undo[flag] = old[0] if old else None
        if before_gates is None:
            plane.component_gates.pop(component, None)
        else:
            plane.component_gates[component] = before_gates
        plane.restart(component, flags=undo)
