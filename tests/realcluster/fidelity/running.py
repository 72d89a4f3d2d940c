"""Applying generated cases to a real cluster, letting the real scheduler work, and reading back what it did.

Rules:
1. Many cases go in one batch (their objects never meet: rule 1 of ``generating``); creates run on a few
   threads, in each case's order (classes, slices, templates, claims, pods), so the batch costs one settle.
2. An object the API refuses is recorded with the server's code and message and left out; nothing else of its
   case is skipped (a pod whose claim was refused simply stays pending).
3. Settled means: every pod of the batch is bound, marked unschedulable, or failing in the scheduler
   (``SchedulerError``: retried for ever, as v1.37.2 does with a status its own API refuses), and nothing
   changed for a quiet interval; a failing pod's retries change only its condition's time, which is ignored.
   Polling has a deadline; a batch that never settles fails with the pods left.
4. Probes, after the resizes have settled: per node and resource (cpu, memory), a pod requesting the ledger's
   free amount plus one scheduler unit (the scheduler must refuse it: ``Insufficient``), then exactly the free
   amount (it must bind). They are pinned to their node and carry no claim.
5. Everything of a batch is deleted afterwards, so the cluster stays small.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from tests.realcluster.cluster import RESOURCE_API, STRATEGIC, Api, ApiError, create_node, ensure_namespace
from tests.realcluster.fidelity.generating import CASE_LABEL, IMAGE, NODE_LABEL, RUNTIME_CLASSES, Case
from tests.realcluster.releases import Release

PLURALS = {
    "DeviceClass": ("/apis/resource.k8s.io/v1", "deviceclasses", False),
    "ResourceSlice": ("/apis/resource.k8s.io/v1", "resourceslices", False),
    "ResourceClaimTemplate": ("/apis/resource.k8s.io/v1", "resourceclaimtemplates", True),
    "ResourceClaim": ("/apis/resource.k8s.io/v1", "resourceclaims", True),
    "Pod": ("/api/v1", "pods", True),
}
THREADS = 6
QUIET = 1.5  # seconds without a change in any pod of the batch


@dataclass
class Outcome:
    """What the cluster made of one case."""

    case: Case
    rejected: dict[str, tuple[int, str]] = field(default_factory=dict)  # "Kind/name" -> (code, message)
    probes: list[dict[str, Any]] = field(default_factory=list)  # the probe pods as finally read
    dump: list[dict[str, Any]] = field(default_factory=list)  # Nodes, Pods, slices, claims, read back


def path_of(obj: dict[str, Any], name: str | None = None) -> str:
    base, plural, namespaced = PLURALS[obj["kind"]]
    ns = f"/namespaces/{obj['metadata']['namespace']}" if namespaced else ""
    return f"{base}{ns}/{plural}" + (f"/{name}" if name else "")


def ensure_runtime_classes(api: Api) -> None:
    for name, overhead in RUNTIME_CLASSES.items():
        if api.get_or_none(f"/apis/node.k8s.io/v1/runtimeclasses/{name}") is None:
            api.create("/apis/node.k8s.io/v1/runtimeclasses", {
                "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
                "handler": "runc", "overhead": {"podFixed": overhead}})


def _create_case(api: Api, release: Release, case: Case, outcome: Outcome) -> None:
    ensure_namespace(api, case.namespace, {CASE_LABEL: case.namespace})
    for node in case.nodes:
        create_node(api, node["name"], release=release, capacity=node["allocatable"], labels=node["labels"])
    for obj in case.objects:
        try:
            api.create(path_of(obj), obj)
        except ApiError as error:
            message = error.body.get("message", "") if isinstance(error.body, dict) else str(error.body)
            outcome.rejected[f"{obj['kind']}/{obj['metadata']['name']}"] = (error.status, message)


def apply(api: Api, release: Release, cases: Sequence[Case]) -> dict[str, Outcome]:
    outcomes = {case.namespace: Outcome(case) for case in cases}
    with ThreadPoolExecutor(THREADS) as pool:
        for future in [pool.submit(_create_case, api, release, c, outcomes[c.namespace]) for c in cases]:
            future.result()
    return outcomes


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


def settle(api: Api, namespaces: Iterable[str], *, within: float = 180.0) -> list[dict[str, Any]]:
    """Wait until every pod of ``namespaces`` is decided and the batch has been quiet for ``QUIET`` seconds."""
    namespaces = list(namespaces)
    deadline = time.monotonic() + within
    last: dict[str, str] = {}
    quiet_since = time.monotonic()
    while True:
        pods = pods_of(api, namespaces)
        now = {f"{p['metadata']['namespace']}/{p['metadata']['name']}":
               p["metadata"]["resourceVersion"] if _scheduled(p) != "error" else "error" for p in pods}
        if now != last:
            last, quiet_since = now, time.monotonic()
        undecided = [key for key, p in zip(now, pods, strict=True) if not _scheduled(p)]
        if not undecided and time.monotonic() - quiet_since >= QUIET:
            return pods
        if time.monotonic() > deadline:
            raise AssertionError(f"the batch did not settle within {within:g}s; undecided: {undecided[:10]}")
        time.sleep(0.2)


def resize(api: Api, outcomes: dict[str, Outcome], pods: list[dict[str, Any]]) -> bool:
    """Resize bound pods in place as a user and a kubelet would: the new requests through ``/resize``, then
    the status a kubelet writes while the resize is being actuated (allocated: new; actuated: old)."""
    done = False
    for pod in pods:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        wanted = outcomes[ns].case.resizes.get(name)
        if not wanted or not pod["spec"].get("nodeName"):
            continue
        old = {c["name"]: c.get("resources", {}).get("requests", {}) for c in pod["spec"]["containers"]}
        containers = [{"name": c, "resources": {"requests": r}} for c, r in wanted.items()]
        try:
            api.patch(f"/api/v1/namespaces/{ns}/pods/{name}/resize", {"spec": {"containers": containers}},
                      content_type=STRATEGIC)
        except ApiError as error:
            outcomes[ns].rejected[f"Pod/{name}/resize"] = (error.status, str(error))
            continue
        statuses = [{"name": c, "image": IMAGE, "imageID": "", "ready": False, "restartCount": 0,
                     "state": {"waiting": {"reason": "ContainerCreating"}},
                     "allocatedResources": {**old.get(c, {}), **r}, "resources": {"requests": old.get(c, {})}}
                    for c, r in wanted.items()]
        api.patch(f"/api/v1/namespaces/{ns}/pods/{name}/status", {"status": {"containerStatuses": statuses}},
                  content_type=STRATEGIC)
        done = True
    return done


def probe(api: Api, outcome: Outcome, node: str, resource: str, amount: str, name: str) -> None:
    ns = outcome.case.namespace
    api.create(f"/api/v1/namespaces/{ns}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns,
                                                         "labels": {"fidelity.draledger.dev/probe": "true"}},
        "spec": {"nodeSelector": {NODE_LABEL: node}, "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "probe", "image": IMAGE, "resources": {"requests": {resource: amount}}}]}})


def dump(api: Api, outcomes: dict[str, Outcome]) -> None:
    """Read back every case's Nodes, Pods, ResourceSlices and ResourceClaims, as ``kubectl get`` would."""
    selector = f"labelSelector={CASE_LABEL}"
    nodes = api.get(f"/api/v1/nodes?{selector}")["items"]
    pods = api.get("/api/v1/pods")["items"]
    slices = api.get(f"{RESOURCE_API}/resourceslices")["items"]
    claims = api.get(f"{RESOURCE_API}/resourceclaims")["items"]
    for ns, outcome in outcomes.items():
        mine = {n["metadata"]["name"] for n in nodes if n["metadata"]["labels"].get(CASE_LABEL) == ns}
        outcome.dump = [
            *({"apiVersion": "v1", "kind": "Node", **n} for n in nodes if n["metadata"]["name"] in mine),
            *({"apiVersion": "v1", "kind": "Pod", **p} for p in pods if p["metadata"]["namespace"] == ns),
            *({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", **s} for s in slices
              if s["spec"].get("driver") == outcome.case.driver),
            *({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", **c} for c in claims
              if c["metadata"]["namespace"] == ns),
        ]


def clean(api: Api, outcomes: dict[str, Outcome]) -> None:
    for ns, outcome in outcomes.items():
        for path in (f"/api/v1/namespaces/{ns}",
                     *(f"/api/v1/nodes/{n['name']}" for n in outcome.case.nodes),
                     *(path_of(o, o["metadata"]["name"]) for o in outcome.case.objects
                       if o["kind"] in ("DeviceClass", "ResourceSlice"))):
            try:
                api.delete(path)
            except ApiError as error:
                if error.status != 404:
                    raise
