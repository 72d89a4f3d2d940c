"""Applying generated cases to a real cluster, letting the real scheduler work, and reading back what it did.

Rules:
1. Many cases go in one batch (their objects never meet: rule 1 of ``generating``); creates run on a few
   threads, in each case's order (classes, slices, templates, claims, pods), so a stage costs one settle.
2. An object the API refuses is recorded with the server's code and message and left out; nothing else of its
   case is skipped (a pod whose claim was refused simply stays pending). A slice refused on kube-apiserver's stale
   view of the node the case has just created is tried again first (``create_slice``, cluster.py rule 3).
3. Settled means: every pod of the batch is bound, marked unschedulable, or failing in the scheduler
   (``SchedulerError``: retried for ever, as v1.37.2 does with a status its own API refuses), none marked
   unschedulable is being bound (a claim reserved for it: a later attempt is in PreBind, e.g. waiting for binding
   conditions), and nothing changed for a quiet interval; a failing pod's retries change only its condition's
   time, which is ignored. A pod failing at PreBind is assumed on its node while each attempt lasts, so a pod
   refused on that node is tried again after each (v1.36.3 too fails for ever a pod naming one claim twice when
   its retry sees the reservation undone): what such a pod's retries change is ignored too (``quiet_keys``).
   Polling has a deadline; a batch that never settles fails with the pods left and the pods that changed last.
   While it settles, a stand-in for a driver sets the binding conditions of every allocated device that has them
   (the scheduler waits for them in PreBind).
4. A resize goes through ``/resize``, then the status a kubelet writes while it actuates it (allocated: new;
   actuated: old), the pod-level status maps too for a pod-level resize.
5. Probes, at the end: per node and resource (cpu, memory, hugepages-2Mi), a pod requesting what the scheduler
   leaves free by the ledger (``scheduler_free_units``) plus one scheduler unit (hugepages: one page), which the
   scheduler must refuse (``Insufficient``), then exactly that (rounded down to a page), which it must bind. They
   are pinned to their node and carry no claim.
6. Everything of a batch is deleted afterwards, so the cluster stays small.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from tests.realcluster.cluster import (
    MERGE,
    STRATEGIC,
    Api,
    ApiError,
    create_node,
    create_slice,
    ensure_namespace,
)
from tests.realcluster.fidelity.generating import CASE_LABEL, NODE_LABEL, RUNTIME_CLASSES, Case
from tests.realcluster.fidelity.pods import IMAGE
from tests.realcluster.releases import Release

PLURALS = {  # kind -> (plural, namespaced)
    "DeviceClass": ("deviceclasses", False), "ResourceSlice": ("resourceslices", False),
    "ResourceClaimTemplate": ("resourceclaimtemplates", True), "ResourceClaim": ("resourceclaims", True),
    "Pod": ("pods", True),
}
RESOURCE_API = "/apis/resource.k8s.io/v1"
THREADS = 8
QUIET = 1.5  # seconds without a change in any pod of the batch
PAGE = 2 * 1024 * 1024  # hugepages-2Mi
PROBED = ("cpu", "memory", "hugepages-2Mi")
PROBE_LABEL = "fidelity.draledger.dev/probe"  # its value: the resource probed


@dataclass
class Outcome:
    """What the real cluster made of one case."""

    case: Case
    rejected: dict[str, tuple[int, str]] = field(default_factory=dict)  # "Kind/name" -> (code, message)
    probes: list[dict[str, Any]] = field(default_factory=list)  # the probe pods as finally read
    dump: list[dict[str, Any]] = field(default_factory=list)  # Nodes, Pods, slices, claims, read back
    window: list[dict[str, Any]] = field(default_factory=list)  # the dump while a pool was incomplete
    gate_off: set[str] = field(default_factory=set)  # pods bound while the scheduler's gate was off
    resized: set[str] = field(default_factory=set)  # the kinds of resize that went through: "pod", "container"


def path_of(obj: dict[str, Any], name: str | None = None) -> str:
    plural, namespaced = PLURALS[obj["kind"]]
    base = "/api/v1" if obj["apiVersion"] == "v1" else f"/apis/{obj['apiVersion']}"
    ns = f"/namespaces/{obj['metadata']['namespace']}" if namespaced else ""
    return f"{base}{ns}/{plural}" + (f"/{name}" if name else "")


def ensure_runtime_classes(api: Api) -> None:
    for name, overhead in RUNTIME_CLASSES.items():
        if api.get_or_none(f"/apis/node.k8s.io/v1/runtimeclasses/{name}") is None:
            api.create("/apis/node.k8s.io/v1/runtimeclasses", {
                "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
                "handler": "runc", "overhead": {"podFixed": overhead}})


def _refused(outcome: Outcome, ref: str, error: ApiError) -> None:
    outcome.rejected[ref] = (error.status, error.message)


def _create(api: Api, outcome: Outcome, objects: Iterable[dict[str, Any]]) -> None:
    for obj in objects:
        try:
            if obj["kind"] == "ResourceSlice":  # its node was just created (cluster.py rule 3)
                create_slice(api, obj)
            else:
                api.create(path_of(obj), obj)
        except ApiError as error:
            _refused(outcome, f"{obj['kind']}/{obj['metadata']['name']}", error)


def _create_case(api: Api, release: Release, outcome: Outcome) -> None:
    case = outcome.case
    ensure_namespace(api, case.namespace, {CASE_LABEL: case.namespace, **case.namespace_labels})
    for node in case.nodes:  # a kubelet with InPlacePodLevelResourcesVerticalScaling on (beta, on) declares it
        create_node(api, node["name"], release=release, capacity=node["allocatable"], labels=node["labels"],
                    declared_features=[*release.declared_features, "InPlacePodLevelResourcesVerticalScaling"])
    _create(api, outcome, case.objects)


def each(outcomes: Iterable[Outcome], work: Callable[[Outcome], None]) -> None:
    """``work`` for every case, a few at a time (rule 1)."""
    with ThreadPoolExecutor(THREADS) as pool:
        for future in [pool.submit(work, outcome) for outcome in outcomes]:
            future.result()


def apply(api: Api, release: Release, cases: Sequence[Case]) -> dict[str, Outcome]:
    outcomes = {case.namespace: Outcome(case) for case in cases}
    each(outcomes.values(), lambda outcome: _create_case(api, release, outcome))
    return outcomes


def create_stage(api: Api, outcomes: dict[str, Outcome], stage: str) -> bool:
    """The objects of a later stage (generating rule 4); whether there were any."""
    busy = [o for o in outcomes.values() if o.case.later.get(stage)]
    each(busy, lambda outcome: _create(api, outcome, outcome.case.later[stage]))
    return bool(busy)


def republish(api: Api, outcomes: dict[str, Outcome], stage: str) -> bool:
    """The slices a stage republishes at a newer generation (generating rule 4); whether there were any."""
    busy = [o for o in outcomes.values() if o.case.republish.get(stage)]

    def work(outcome: Outcome) -> None:
        for obj in outcome.case.republish[stage]:
            try:
                api.patch(path_of(obj, obj["metadata"]["name"]), {"spec": obj["spec"]}, content_type=MERGE)
            except ApiError as error:
                _refused(outcome, f"ResourceSlice/{obj['metadata']['name']}/generation", error)

    each(busy, work)
    return bool(busy)


def quiet_keys(pods: list[dict[str, Any]]) -> dict[str, str]:
    """Rule 3: per pod, what must stay unchanged for the batch to be quiet: its resourceVersion, but "error" for a
    pod the scheduler keeps failing, and "beside" for one refused on a node where a pod keeps failing at PreBind."""
    stuck = {_node(p) for p in pods if _scheduled(p) == "error" and "running PreBind plugin" in unscheduled_message(p)}
    keys = {}
    for pod in pods:
        state = _scheduled(pod)
        keys[f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"] = (
            "error" if state == "error" else "beside" if state == "unschedulable" and _node(pod) in stuck
            else pod["metadata"]["resourceVersion"])
    return keys


def _node(pod: dict[str, Any]) -> str:
    return str((pod["spec"].get("nodeSelector") or {}).get(NODE_LABEL, ""))


def unscheduled_message(pod: dict[str, Any]) -> str:
    """The message of the pod's ``PodScheduled=False`` condition, or ""."""
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return str(condition.get("message") or "")
    return ""


def _scheduled(pod: dict[str, Any]) -> str:
    """"bound", "unschedulable", "error" (the scheduler keeps failing on it) or "" (not decided yet)."""
    if pod["spec"].get("nodeName"):
        return "bound"
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return {"Unschedulable": "unschedulable", "SchedulerError": "error"}.get(condition.get("reason"), "")
    return ""


def pods_of(api: Api, namespaces: Iterable[str]) -> list[dict[str, Any]]:
    wanted = set(namespaces)
    return [p for p in api.get("/api/v1/pods")["items"] if p["metadata"]["namespace"] in wanted]


def satisfy_binding_conditions(api: Api, claims: list[dict[str, Any]]) -> None:
    """Rule 3's stand-in for a driver: every allocated device with binding conditions gets them True."""
    for claim in claims:
        meta, status = claim["metadata"], claim.get("status") or {}
        if status.get("devices"):
            continue
        results = [r for r in ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
                   if r.get("bindingConditions")]
        if not results:
            continue
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        devices = [{"driver": r["driver"], "pool": r["pool"], "device": r["device"],
                    **({"shareID": r["shareID"]} if r.get("shareID") else {}),
                    "conditions": [{"type": c, "status": "True", "reason": "Ready", "message": "the stand-in driver",
                                    "lastTransitionTime": now} for c in r["bindingConditions"]]} for r in results]
        with contextlib.suppress(ApiError):  # changed meanwhile (deallocated, written): the next pass looks again
            api.patch(f"{RESOURCE_API}/namespaces/{meta['namespace']}/resourceclaims/{meta['name']}/status",
                      {"status": {"devices": devices}}, content_type=MERGE)


def settle(api: Api, namespaces: Iterable[str], *, within: float = 180.0, quiet: float = QUIET,
           conditions: bool = False) -> list[dict[str, Any]]:
    """Wait until every pod of ``namespaces`` is decided and the batch has been quiet for ``quiet`` seconds."""
    namespaces = list(namespaces)
    deadline = time.monotonic() + within
    last: dict[str, str] = {}
    moved: list[str] = []
    quiet_since = time.monotonic()
    while True:
        claims = [c for c in api.get(f"{RESOURCE_API}/resourceclaims")["items"]
                  if c["metadata"]["namespace"] in namespaces]
        if conditions:
            satisfy_binding_conditions(api, claims)
        binding = {r["uid"] for c in claims for r in (c.get("status") or {}).get("reservedFor") or ()}
        pods = pods_of(api, namespaces)
        now = quiet_keys(pods)
        if now != last:
            moved = sorted(key for key in now.keys() | last.keys() if now.get(key) != last.get(key))
            last, quiet_since = now, time.monotonic()
        undecided = [key for key, p in zip(now, pods, strict=True) if not _scheduled(p) or (
            _scheduled(p) == "unschedulable" and p["metadata"]["uid"] in binding)]
        if not undecided and time.monotonic() - quiet_since >= quiet:
            return pods
        if time.monotonic() > deadline:
            raise AssertionError(f"the batch did not settle within {within:g}s; undecided: {undecided[:10]}; "
                                 f"changed last: {moved[:10]}")
        time.sleep(0.2)


def _container_statuses(names: Iterable[str], old: dict[str, dict[str, str]],
                        new: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    return [{"name": c, "image": IMAGE, "imageID": "", "ready": False, "restartCount": 0,
             "state": {"waiting": {"reason": "ContainerCreating"}},
             "allocatedResources": {**old.get(c, {}), **new.get(c, {})}, "resources": {"requests": old.get(c, {})}}
            for c in names]


def resize(api: Api, outcomes: dict[str, Outcome], pods: list[dict[str, Any]]) -> bool:
    """Rule 4, for the bound pods the generator resizes."""
    done = False
    for pod in pods:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        wanted = outcomes[ns].case.resizes.get(name) if ns in outcomes else None
        if not wanted or not pod["spec"].get("nodeName"):
            continue
        old = {c["name"]: c.get("resources", {}).get("requests", {}) for c in pod["spec"]["containers"]}
        level = wanted.get("")
        change: dict[str, Any] = {"containers": [{"name": c, "resources": {"requests": r}}
                                                 for c, r in wanted.items() if c]}
        if level:
            change["resources"] = {"requests": level}
        try:
            api.patch(f"/api/v1/namespaces/{ns}/pods/{name}/resize", {"spec": change}, content_type=STRATEGIC)
        except ApiError as error:
            _refused(outcomes[ns], f"Pod/{name}/resize", error)
            continue
        status: dict[str, Any] = {"containerStatuses": _container_statuses(
            [c for c in wanted if c] or list(old), old, {c: r for c, r in wanted.items() if c})}
        if level:
            before = pod["spec"]["resources"]["requests"]
            status["allocatedResources"] = {**before, **level}
            status["resources"] = {"requests": before}
        api.patch(f"/api/v1/namespaces/{ns}/pods/{name}/status", {"status": status}, content_type=STRATEGIC)
        outcomes[ns].resized.add("pod" if level else "container")
        done = True
    return done


def probe(api: Api, outcome: Outcome, node: str, resource: str, units: int, name: str) -> None:
    ns = outcome.case.namespace
    amount = f"{units}m" if resource == "cpu" else str(units)
    resources: dict[str, Any] = {"requests": {resource: amount}}
    if resource.startswith("hugepages-"):  # hugepages need cpu or memory, and limits equal to requests
        resources = {"requests": {resource: amount, "cpu": "0"}, "limits": {resource: amount}}
    api.create(f"/api/v1/namespaces/{ns}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns,
                                                         "labels": {PROBE_LABEL: resource}},
        "spec": {"nodeSelector": {NODE_LABEL: node}, "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "probe", "image": IMAGE, "resources": resources}]}})


def probe_amounts(resource: str, free: int) -> tuple[int, int]:
    """Rule 5: (one unit over, exactly) in the scheduler's units; hugepages go by whole pages."""
    if resource.startswith("hugepages-"):
        return (free // PAGE + 1) * PAGE, (free // PAGE) * PAGE
    return free + 1, free


def read_back(api: Api, outcomes: dict[str, Outcome]) -> dict[str, list[dict[str, Any]]]:
    """Every case's Nodes, Pods, ResourceSlices and ResourceClaims, as ``kubectl get`` would list them."""
    nodes = api.get(f"/api/v1/nodes?labelSelector={CASE_LABEL}")["items"]
    pods = api.get("/api/v1/pods")["items"]
    slices = api.get(f"{RESOURCE_API}/resourceslices")["items"]
    claims = api.get(f"{RESOURCE_API}/resourceclaims")["items"]
    out = {}
    for ns, outcome in outcomes.items():
        drivers = outcome.case.drivers
        out[ns] = [
            *({"apiVersion": "v1", "kind": "Node", **n} for n in nodes
              if n["metadata"]["labels"].get(CASE_LABEL) == ns),
            *({"apiVersion": "v1", "kind": "Pod", **p} for p in pods if p["metadata"]["namespace"] == ns),
            *({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", **s} for s in slices
              if s["spec"].get("driver") in drivers),
            *({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", **c} for c in claims
              if c["metadata"]["namespace"] == ns),
        ]
    return out


def clean(api: Api, outcomes: dict[str, Outcome]) -> None:
    def work(outcome: Outcome) -> None:
        case = outcome.case
        for path in (f"/api/v1/namespaces/{case.namespace}", *(f"/api/v1/nodes/{n['name']}" for n in case.nodes),
                     *(path_of(o, o["metadata"]["name"]) for o in case.objects
                       if o["kind"] in ("DeviceClass", "ResourceSlice"))):
            try:
                api.delete(path)
            except ApiError as error:
                if error.status != 404:
                    raise

    each(outcomes.values(), work)
