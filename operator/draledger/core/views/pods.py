"""Pods: what the ledger needs of a Pod, and nothing more (about 1 KiB retained per pod).

Retained: identity, node, phase, the ordinary requests already aggregated as kube-scheduler aggregates them
(component-helpers ``resource.AggregateContainerRequests``), pod-level requests, overhead, the ResourceClaims the pod
uses with the containers that reference each, the ``status.nodeAllocatableResourceClaimStatuses`` the scheduler wrote
(both shapes), scheduling gates (and, for a pod held by the product's own gate, what its release needs), and, only
for a pod resized in place, what its status says of it; for a pod that uses claims, its containers one by one
(``layout``: v1.38 places claim overhead per container).

Rules:
1. Container requests default to limits where only a limit is given, as the API server's defaulting does.
2. Ordinary requests: ``max(Σ containers + Σ restartable init containers, max over regular init containers
   of (its request + the restartable init containers declared before it))`` (``core.resources.aggregate``).
3. ``claims`` lists each ResourceClaim the pod uses once: ``spec.resourceClaims`` entries that name the same claim
   are one (kube-scheduler keys its status by claim), with ``references`` one container name per
   ``resources.claims[]`` entry naming any of them, init containers first, in spec order: a container that names
   the claim twice is listed twice, as the scheduler lists it. A template claim not generated yet stays one entry
   of its own (``claim_name`` None). The claim that satisfied the pod's extended resources
   (``status.extendedResourceClaimStatus``) is one more, referenced by no container (``extended``).
4. In-place resize (the scheduler reads ``status``): the view keeps what each release's aggregate needs. v1.36: each
   container (and sidecar) whose status has ``resources`` counts ``max(spec, actuated, allocated)`` (without spec when
   the resize is Infeasible). v1.37 and v1.38: ``max(spec, actuated, allocated)`` of three aggregates (the claims are
   the footprint's business); pod-level status maps, when the kubelet wrote both, stand for the last two.
5. Pod-level requests: only cpu, memory and hugepages-* (``IsSupportedPodLevelResource``). With ``status.resources``
   the effective pod-level request is ``max(spec, actuated, allocated)`` (spec left out when Infeasible): v1.36 for
   the names the spec sets (a name the maximum lacks is 0), v1.37 and v1.38 for every supported name in it.
6. Every defect is a named problem; nothing raises.
7. Pods of one template request the same: equal ordinary requests share one dict (views.sharing). The entries of
   ``status.nodeAllocatableResourceClaimStatuses`` are read by views.charged.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from collections.abc import Mapping as AbstractMapping
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from draledger.core.keys import NodeName, PodKey
from draledger.core.quantities import ZERO, Quantity
from draledger.core.resources import Entry, aggregate, maximum
from draledger.core.views.charged import ClaimStatus, read_claim_statuses
from draledger.core.views.fields import IDENTITY, LEAF, PRESENCE, Fields
from draledger.core.views.problems import Problem, Reader, ref_of
from draledger.core.views.sharing import NONE, shared

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
GATE = "draledger.dev/ledger-ready"  # the product's scheduling gate: the webhook adds it, the release removes it
Requests = dict[str, Quantity]
__all__ = ["GATE", "ClaimStatus", "PodClaim", "PodView", "is_pod_level", "read_pod"]


class PodClaim(NamedTuple):
    """One ResourceClaim the pod uses (rule 3), resolved to its name where possible."""

    name: str  # the pod's own name for the claim (its first spec.resourceClaims entry); "" for ``extended``
    claim_name: str | None  # the ResourceClaim object's name; None while a template claim is not generated
    from_template: bool
    references: tuple[str, ...]  # one container name per reference, init containers first (rule 3)
    extended: bool = False  # the claim of status.extendedResourceClaimStatus: no container references it

    @property
    def containers(self) -> tuple[str, ...]:
        """The distinct containers that reference the claim, in order."""
        return tuple(dict.fromkeys(self.references))


class Resize(NamedTuple):
    """What the status of a pod resized in place changes in what the scheduler charges (rules 4 and 5)."""

    effective136: Requests  # v1.36: the aggregate with each resized container's max(spec, actuated, allocated)
    allocated137: Requests  # v1.37+: the aggregate of allocated requests (or the pod-level map)
    actuated137: Requests  # v1.37+: the aggregate of actuated requests (or the pod-level map)
    pod_level_maps: bool  # v1.37+: the two above are the pod-level status maps (the claims are in them)
    infeasible: bool  # PodResizePending=Infeasible: the spec does not count
    pod_level136: Requests | None  # v1.36's effective pod-level requests (rule 5); None: no status.resources
    pod_level137: Requests | None  # v1.37+'s, every supported name of the maximum (rule 5)


class Layout(NamedTuple):
    """A claim-using pod's containers one by one, for v1.38's per-container placement of claim overhead."""

    spec: tuple[Entry, ...]  # each container's requests, in spec order (init containers first)
    allocated: tuple[Entry, ...] | None  # containerAllocatedRequests per container; None: nothing resized


@dataclass(frozen=True, slots=True)
class GateInfo:
    """Kept only for pods held by ``GATE`` (few, and short-lived): what its release needs."""

    created: str  # metadata.creationTimestamp
    has_affinity: bool  # spec.affinity exists (any kind)
    node_affinity: dict[str, Any] | None  # spec.affinity.nodeAffinity, as sent
    has_annotations: bool = False  # metadata.annotations exists: the release adds its record to it, or creates it


class PodView(NamedTuple):
    """What the ledger keeps of a Pod (a named tuple: one is built per pod event)."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    node_name: NodeName
    phase: str
    ordinary: Requests
    pod_level: Requests
    overhead: Requests
    claims: tuple[PodClaim, ...]
    claim_statuses: tuple[ClaimStatus, ...] | None  # None: the field is absent (never charged)
    scheduling_gates: tuple[str, ...]
    gate_info: GateInfo | None
    key: PodKey  # (namespace, name), built once: every index shares this one tuple
    problems: tuple[Problem, ...] = ()
    resize: Resize | None = None
    layout: Layout | None = None  # only for pods that use claims or carry claim statuses

    @property
    def counted(self) -> bool:
        """Counts on its node: bound, and neither Succeeded nor Failed."""
        return bool(self.node_name) and self.phase not in TERMINAL_PHASES


_intern = sys.intern
class _Status(NamedTuple):
    resources: bool  # the status has ``resources`` (what v1.36 looks at)
    actuated: Requests | None  # status.resources.requests (None: absent)
    allocated: Requests | None  # status.allocatedResources (None: absent)


def read_pod(raw: AbstractMapping[str, Any]) -> PodView:
    """The pod's view; every defect a named problem."""
    reader = Reader(ref_of(raw, "Pod"))
    meta = reader.identity(raw)
    if "spec" not in raw:
        reader.bad("spec", None, "a Pod needs a spec; counted as requesting nothing")
    spec = reader.mapping(raw.get("spec"), "spec")
    status = reader.mapping(raw.get("status"), "status")

    references: list[tuple[str, str]] = []  # (the pod's claim name, container), in spec order (rule 3)
    containers: list[Entry] = []
    for field_name in ("initContainers", "containers"):
        init = field_name == "initContainers"
        for index, container in enumerate(reader.items(spec.get(field_name), f"spec.{field_name}")):
            path = f"spec.{field_name}[{index}]"
            container = reader.mapping(container, path)
            cname = _intern(reader.string(container.get("name"), f"{path}.name"))
            resources = reader.mapping(container.get("resources"), f"{path}.resources")
            requests = reader.quantities(resources.get("requests"), f"{path}.resources.requests")
            for name, limit in reader.quantities(resources.get("limits"), f"{path}.resources.limits").items():
                requests.setdefault(name, limit)
            containers.append(Entry(cname, requests, init, init and container.get("restartPolicy") == "Always"))
            for cindex, ref in enumerate(reader.items(resources.get("claims"), f"{path}.resources.claims")):
                ref = reader.mapping(ref, f"{path}.resources.claims[{cindex}]")
                references.append((reader.string(ref.get("name"), f"{path}.resources.claims[{cindex}].name"), cname))
    ordinary = aggregate(containers)
    claims = _claims(reader, spec, status, references)
    claim_statuses = read_claim_statuses(reader, status)

    spec_resources = reader.mapping(spec.get("resources"), "spec.resources")
    pod_level = {
        name: quantity
        for name, quantity in reader.quantities(spec_resources.get("requests"), "spec.resources.requests").items()
        if is_pod_level(name)
    }
    affinity = reader.mapping(spec.get("affinity"), "spec.affinity")
    gates = tuple(
        g["name"]
        for g in reader.items(spec.get("schedulingGates"), "spec.schedulingGates")
        if isinstance(g, dict) and isinstance(g.get("name"), str)
    )
    namespace = _intern(reader.ref.namespace)
    statuses = _statuses(reader, status)
    resize = _resize(reader, status, statuses, containers, pod_level)
    overhead = reader.quantities(spec.get("overhead"), "spec.overhead")
    layout = None
    if claims or claim_statuses is not None:
        layout = Layout(tuple(containers), None if resize is None else tuple(
            Entry(c.name, _allocated(c, statuses.get(c.name), resize.infeasible) or NONE, c.init, c.restartable)
            for c in containers
        ))
    return PodView(
        namespace=namespace,
        name=reader.ref.name,
        uid=reader.string(meta.get("uid"), "metadata.uid"),
        resource_version=reader.string(meta.get("resourceVersion"), "metadata.resourceVersion"),
        node_name=NodeName(_intern(reader.string(spec.get("nodeName"), "spec.nodeName"))),
        phase=_intern(reader.string(status.get("phase"), "status.phase")),
        ordinary=shared(ordinary),
        pod_level=pod_level or NONE,
        overhead=overhead or NONE,
        claims=claims,
        claim_statuses=claim_statuses,
        scheduling_gates=gates,
        gate_info=GateInfo(
            created=reader.string(meta.get("creationTimestamp"), "metadata.creationTimestamp"),
            has_affinity="affinity" in spec and spec.get("affinity") is not None,
            node_affinity=dict(affinity["nodeAffinity"]) if isinstance(affinity.get("nodeAffinity"), dict) else None,
            has_annotations=meta.get("annotations") is not None,
        )
        if GATE in gates
        else None,
        key=PodKey((namespace, reader.ref.name)),
        problems=tuple(reader.problems),
        resize=resize,
        layout=layout,
    )


def is_pod_level(name: str) -> bool:
    """A resource pod-level requests may set (``IsSupportedPodLevelResource``): cpu, memory, hugepages-*."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _claims(
    reader: Reader, spec: AbstractMapping[str, Any], status: AbstractMapping[str, Any],
    references: list[tuple[str, str]],
) -> tuple[PodClaim, ...]:
    """Rule 3: each ResourceClaim once, with every reference to it in spec order."""
    generated: dict[str, str | None] = {}
    for index, entry in enumerate(reader.items(status.get("resourceClaimStatuses"), "status.resourceClaimStatuses")):
        entry = reader.mapping(entry, f"status.resourceClaimStatuses[{index}]")
        name = reader.string(entry.get("name"), f"status.resourceClaimStatuses[{index}].name")
        value = entry.get("resourceClaimName")
        generated[name] = value if isinstance(value, str) and value else None
    entries: list[tuple[str, str | None, bool]] = []  # (pod's name, claim name, from a template), spec order
    for index, entry in enumerate(reader.items(spec.get("resourceClaims"), "spec.resourceClaims")):
        path = f"spec.resourceClaims[{index}]"
        entry = reader.mapping(entry, path)
        name = reader.string(entry.get("name"), f"{path}.name")
        direct = reader.string(entry.get("resourceClaimName"), f"{path}.resourceClaimName")
        template = reader.string(entry.get("resourceClaimTemplateName"), f"{path}.resourceClaimTemplateName")
        if not direct and not template:
            reader.bad(path, entry, "needs resourceClaimName or resourceClaimTemplateName")
        entries.append((name, direct or (generated.get(name) if template else None), bool(template) and not direct))
    claim_of = {name: claim_name or f"\0{name}" for name, claim_name, _ in entries}  # unresolved: on its own
    merged: dict[str, list[str]] = {key: [] for key in claim_of.values()}
    for pod_name, container in references:
        key = claim_of.get(pod_name)
        if key is not None:
            merged[key].append(container)
    claims: list[PodClaim] = []
    seen: set[str] = set()
    for name, claim_name, from_template in entries:
        key = claim_of[name]
        if key not in seen:
            seen.add(key)
            claims.append(PodClaim(name, claim_name, from_template, tuple(merged[key])))
    extended = reader.mapping(status.get("extendedResourceClaimStatus"), "status.extendedResourceClaimStatus")
    if extended:
        claim_name = reader.string(extended.get("resourceClaimName"),
                                   "status.extendedResourceClaimStatus.resourceClaimName")
        if claim_name and claim_name not in seen:
            claims.append(PodClaim("", claim_name, False, (), extended=True))
    return tuple(claims)


def _statuses(reader: Reader, status: AbstractMapping[str, Any]) -> dict[str, _Status]:
    out: dict[str, _Status] = {}
    for field_name in ("initContainerStatuses", "containerStatuses"):
        for index, entry in enumerate(reader.items(status.get(field_name), f"status.{field_name}")):
            path = f"status.{field_name}[{index}]"
            entry = reader.mapping(entry, path)
            resources = entry.get("resources")
            actuated = None
            if resources is not None:
                mapped = reader.mapping(resources, f"{path}.resources")
                if mapped.get("requests") is not None:
                    actuated = reader.quantities(mapped["requests"], f"{path}.resources.requests")
            allocated = None
            if entry.get("allocatedResources") is not None:
                allocated = reader.quantities(entry["allocatedResources"], f"{path}.allocatedResources")
            if resources is not None or allocated is not None:
                name = reader.string(entry.get("name"), f"{path}.name")
                out[name] = _Status(resources is not None, actuated, allocated)
    return out


def _infeasible(reader: Reader, status: AbstractMapping[str, Any]) -> bool:
    for condition in reader.items(status.get("conditions"), "status.conditions"):
        if isinstance(condition, dict) and condition.get("type") == "PodResizePending":
            return condition.get("reason") == "Infeasible"
    return False


def _allocated(c: Entry, found: _Status | None, infeasible: bool) -> Requests | None:
    """component-helpers ``containerAllocatedRequests`` (v1.37, v1.38)."""
    if found is not None and found.allocated is not None:
        return found.allocated
    return None if infeasible else dict(c.requests)


def _actuated(c: Entry, found: _Status | None, infeasible: bool) -> Requests | None:
    """component-helpers ``containerActuatedRequests`` (v1.37, v1.38)."""
    if found is not None and found.actuated is not None:
        return found.actuated
    if found is not None and found.allocated is not None:
        return found.allocated
    return None if infeasible else dict(c.requests)


def _resize(
    reader: Reader, status: AbstractMapping[str, Any], statuses: dict[str, _Status], containers: list[Entry],
    pod_level: Requests,
) -> Resize | None:
    """What the status says of a pod resized in place (rules 4 and 5); None when it says nothing."""
    has_resources = status.get("resources") is not None  # Go: pod.Status.Resources != nil
    pod_resources = reader.mapping(status.get("resources"), "status.resources")
    pod_actuated = (
        reader.quantities(pod_resources["requests"], "status.resources.requests")
        if pod_resources.get("requests") is not None else None
    )
    pod_allocated = (
        reader.quantities(status["allocatedResources"], "status.allocatedResources")
        if status.get("allocatedResources") is not None
        else None
    )
    if not statuses and not has_resources:
        return None
    infeasible = _infeasible(reader, status)

    def effective(spec: Requests, actuated: Requests | None, allocated: Requests | None) -> Requests:
        return maximum(None if infeasible else spec, actuated, allocated)

    def v136(c: Entry) -> Requests:
        found = statuses.get(c.name)
        if found is None or not found.resources or (c.init and not c.restartable):
            return dict(c.requests)
        return effective(dict(c.requests), found.actuated, found.allocated)

    def each(requests_of: Callable[[Entry, _Status | None, bool], Requests | None]) -> Requests:
        return aggregate(Entry(c.name, requests_of(c, statuses.get(c.name), infeasible) or NONE, c.init,
                               c.restartable) for c in containers)

    maps = pod_allocated is not None and pod_actuated is not None
    level136 = level137 = None
    if pod_level and has_resources:
        most = effective(pod_level, pod_actuated, pod_allocated)
        level136 = {name: most.get(name, ZERO) for name in pod_level}
        level137 = {name: quantity for name, quantity in most.items() if is_pod_level(name)}
    return Resize(
        effective136=aggregate(Entry(c.name, v136(c), c.init, c.restartable) for c in containers),
        allocated137=pod_allocated if maps and pod_allocated is not None else each(_allocated),
        actuated137=pod_actuated if maps and pod_actuated is not None else each(_actuated),
        pod_level_maps=maps,
        infeasible=infeasible,
        pod_level136=level136,
        pod_level137=level137,
    )


_CONTAINER: Final[Fields] = {"name": LEAF, "restartPolicy": LEAF,
                             "resources": {"requests": LEAF, "limits": LEAF, "claims": LEAF}}
_CONTAINER_STATUS: Final[Fields] = {"name": LEAF, "resources": LEAF, "allocatedResources": LEAF}
FIELDS: Final[Fields] = {  # views.fields: what ``read_pod`` reads
    "metadata": {**IDENTITY, "creationTimestamp": LEAF, "annotations": PRESENCE},
    "spec": {"nodeName": LEAF, "containers": [_CONTAINER], "initContainers": [_CONTAINER], "resourceClaims": LEAF,
             "resources": LEAF, "overhead": LEAF, "affinity": LEAF, "schedulingGates": LEAF},
    "status": {"phase": LEAF, "resourceClaimStatuses": LEAF, "extendedResourceClaimStatus": LEAF,
               "nodeAllocatableResourceClaimStatuses": LEAF, "containerStatuses": [_CONTAINER_STATUS],
               "initContainerStatuses": [_CONTAINER_STATUS], "resources": LEAF, "allocatedResources": LEAF,
               "conditions": [{"type": LEAF, "reason": LEAF}]},
}
