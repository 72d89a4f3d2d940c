"""Pods: what the ledger needs of a Pod, and nothing more (about 1 KiB retained per pod).

Retained: identity, node, phase, the ordinary requests already aggregated (init containers, sidecars),
pod-level requests, overhead, the pod's claims with the containers that reference each, the
``status.nodeAllocatableResourceClaimStatuses`` the scheduler wrote (both shapes), and scheduling gates.
Container requests default to limits where only a limit is given, as the API server's defaulting does.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping as AbstractMapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from draledger.accounting.footprints import aggregate_containers
from draledger.quantities import Quantity
from draledger.views.problems import (
    Bail,
    Problem,
    Reader,
    fast_items,
    fast_mapping,
    fast_quantities,
    fast_quantity,
    fast_string,
    ref_of,
)

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


class PodClaim(NamedTuple):
    """One ``spec.resourceClaims[]`` entry, resolved to a ResourceClaim name where possible. A named tuple,
    as PodView is: one is built per event of a pod with claims."""

    name: str  # the pod's own name for the claim
    claim_name: str | None  # the ResourceClaim object's name; None while a template claim is not generated
    from_template: bool
    containers: tuple[str, ...]  # init containers then containers, in spec order, that reference it


class ClaimStatus(NamedTuple):
    """One entry of ``status.nodeAllocatableResourceClaimStatuses`` (v1.36 or v1.37 shape)."""

    claim_name: str
    containers: tuple[str, ...]
    mapping: dict[str, Quantity]  # v1.36 ``resources`` or v1.37 ``mapping``
    per_pod: dict[str, Quantity]  # v1.37 overhead
    per_container: dict[str, Quantity]  # v1.37 overhead
    shape: str  # "v1.36" | "v1.37"

    def charged(self) -> dict[str, Quantity]:
        """What the scheduler charged for this claim: mapping + perPod + perContainer × containers."""
        out = dict(self.mapping)
        for name, quantity in self.per_pod.items():
            out[name] = out[name] + quantity if name in out else quantity
        count = len(self.containers)
        for name, quantity in self.per_container.items():
            extra = quantity.times(count)
            out[name] = out[name] + extra if name in out else extra
        return out


@dataclass(frozen=True, slots=True)
class GateInfo:
    """Kept only for pods with scheduling gates (few, and short-lived): what gate release needs."""

    created: str  # metadata.creationTimestamp
    has_affinity: bool  # spec.affinity exists (any kind)
    node_affinity: dict[str, Any] | None  # spec.affinity.nodeAffinity, as sent


class PodView(NamedTuple):
    """What the ledger keeps of a Pod. A named tuple, not a frozen dataclass: one is built per pod event,
    and a frozen dataclass's ``__init__`` (one ``object.__setattr__`` per field) cost more than reading
    the pod's containers."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    node_name: str
    phase: str
    ordinary: dict[str, Quantity]
    pod_level: dict[str, Quantity]
    overhead: dict[str, Quantity]
    claims: tuple[PodClaim, ...]
    claim_statuses: tuple[ClaimStatus, ...] | None  # None: the field is absent (never charged)
    scheduling_gates: tuple[str, ...]
    gate_info: GateInfo | None
    # (namespace, name), built once by the reader: the state indexes and the runtime's uid map all share
    # this one tuple.
    key: tuple[str, str]
    problems: tuple[Problem, ...] = ()

    @property
    def counted(self) -> bool:
        """Counts on its node: bound, and neither Succeeded nor Failed."""
        return bool(self.node_name) and self.phase not in TERMINAL_PHASES


def _intern(text: str) -> str:
    """Namespaces, node names, phases and container names repeat across thousands of pods: keep one copy."""
    return sys.intern(text)


def _requests(reader: Reader, raw: object, path: str) -> dict[str, Quantity]:
    resources = reader.mapping(raw, path)
    requests = reader.quantities(resources.get("requests"), f"{path}.requests")
    for name, limit in reader.quantities(resources.get("limits"), f"{path}.limits").items():
        requests.setdefault(name, limit)
    return requests


def read_pod(raw: AbstractMapping[str, Any]) -> PodView:
    """The pod's view: the fast reader for a plainly well-formed body, else the full one (same result)."""
    try:
        return _read_pod_fast(raw)
    except Bail:
        return read_pod_full(raw)


_intern_str = sys.intern


def _read_pod_fast(raw: AbstractMapping[str, Any]) -> PodView:
    """``read_pod_full`` for a body it would report no problem for; raises Bail on anything else.

    Hot: one call per pod event. ``type(x) is dict`` guards the common case inline, and the ``fast_*``
    helpers (which also take dict subclasses, or bail) run only when it fails.
    """
    meta = raw.get("metadata")
    if type(meta) is not dict:
        meta = fast_mapping(meta)
    if "spec" not in raw:
        raise Bail
    spec = raw["spec"]
    if type(spec) is not dict:
        spec = fast_mapping(spec)
    status = raw.get("status")
    if type(status) is not dict:
        status = fast_mapping(status)
    name = meta.get("name")
    if type(name) is not str:
        name = fast_string(name)
    name = name or "<unnamed>"
    namespace = meta.get("namespace")
    if type(namespace) is not str:
        namespace = fast_string(namespace)

    references: dict[str, list[str]] = {}
    containers: list[dict[str, Quantity]] = []
    inits: list[tuple[dict[str, Quantity], bool]] = []
    for regular, items in ((False, spec.get("initContainers")), (True, spec.get("containers"))):
        if items is None:
            continue
        if type(items) is not list:
            items = fast_items(items)
        for container in items:
            if type(container) is not dict:
                container = fast_mapping(container)
            cname = container.get("name")
            cname = _intern_str(cname if type(cname) is str else fast_string(cname))
            resources = container.get("resources")
            if type(resources) is not dict:
                resources = fast_mapping(resources)
            requests = fast_quantities(resources.get("requests"))
            limits = resources.get("limits")
            if limits is not None:
                for lname, limit in fast_quantities(limits).items():
                    if lname not in requests:
                        requests[lname] = limit
            if regular:
                containers.append(requests)
            else:
                inits.append((requests, container.get("restartPolicy") == "Always"))
            refs = resources.get("claims")
            if refs is not None:
                for ref in fast_items(refs):
                    claim = fast_string(fast_mapping(ref).get("name"))
                    users = references.setdefault(claim, [])
                    if cname not in users:
                        users.append(cname)

    generated: dict[str, str | None] = {}
    for entry in fast_items(status.get("resourceClaimStatuses")):
        entry = fast_mapping(entry)
        value = entry.get("resourceClaimName")
        generated[fast_string(entry.get("name"))] = value if isinstance(value, str) and value else None

    claims: tuple[PodClaim, ...] = ()
    raw_claims = spec.get("resourceClaims")
    if raw_claims is not None:
        found: list[PodClaim] = []
        for entry in fast_items(raw_claims):
            entry = fast_mapping(entry)
            cname = fast_string(entry.get("name"))
            direct = fast_string(entry.get("resourceClaimName"))
            template = fast_string(entry.get("resourceClaimTemplateName"))
            if not direct and not template:
                raise Bail
            found.append(
                _new(PodClaim, (cname, direct or generated.get(cname), not direct, tuple(references.get(cname, ()))))
            )
        claims = tuple(found)

    spec_resources = spec.get("resources")
    pod_level = (
        _NO_QUANTITIES if spec_resources is None else fast_quantities(fast_mapping(spec_resources).get("requests"))
    )
    overhead = spec.get("overhead")
    raw_gates = spec.get("schedulingGates")
    gates: tuple[str, ...] = ()
    gate_info = None
    if raw_gates is not None:
        gates = tuple(
            g["name"] for g in fast_items(raw_gates) if isinstance(g, dict) and isinstance(g.get("name"), str)
        )
    affinity = spec.get("affinity")
    if affinity is not None:
        affinity = fast_mapping(affinity)
    if gates:
        gate_info = GateInfo(
            created=fast_string(meta.get("creationTimestamp")),
            has_affinity=affinity is not None,
            node_affinity=dict(affinity["nodeAffinity"])
            if affinity is not None and isinstance(affinity.get("nodeAffinity"), dict)
            else None,
        )
    namespace = _intern_str(namespace)
    uid = meta.get("uid")
    version = meta.get("resourceVersion")
    node = spec.get("nodeName")
    phase = status.get("phase")
    return _new(  # the fields in PodView's order
        PodView,
        (
            namespace,
            name,
            uid if type(uid) is str else fast_string(uid),
            version if type(version) is str else fast_string(version),
            _intern_str(node if type(node) is str else fast_string(node)),
            _intern_str(phase if type(phase) is str else fast_string(phase)),
            aggregate_containers(containers, inits),
            pod_level,
            _NO_QUANTITIES if overhead is None else fast_quantities(overhead),
            claims,
            _claim_statuses_fast(status),
            gates,
            gate_info,
            (namespace, name),
            (),
        ),
    )


_new = tuple.__new__  # a named tuple without its generated __new__'s Python frame
# The pod-level requests and overhead most pods do not have: one shared empty dict (views are only read),
# not two more per pod retained.
_NO_QUANTITIES: dict[str, Quantity] = {}


def _claim_statuses_fast(status: AbstractMapping[str, Any]) -> tuple[ClaimStatus, ...] | None:
    entries = status.get("nodeAllocatableResourceClaimStatuses")
    if entries is None:
        return None
    out: list[ClaimStatus] = []
    for entry in fast_items(entries):
        entry = fast_mapping(entry)
        containers = tuple(_intern_str(c) for c in fast_items(entry.get("containers")) if isinstance(c, str))
        mapping: dict[str, Quantity] = {}
        per_pod: dict[str, Quantity] = {}
        per_container: dict[str, Quantity] = {}
        shape = "v1.36"
        if "resources" in entry:
            mapping = fast_quantities(entry.get("resources"))
        if "mapping" in entry or "overhead" in entry:
            shape = "v1.37"
            for item in fast_items(entry.get("mapping")):
                item = fast_mapping(item)
                name = fast_string(item.get("name"))
                quantity = fast_quantity(item.get("quantity"))
                if name:
                    mapping[name] = quantity
            for item in fast_items(entry.get("overhead")):
                item = fast_mapping(item)
                name = fast_string(item.get("name"))
                for key, target in (("perPod", per_pod), ("perContainer", per_container)):
                    if item.get(key) is not None:
                        quantity = fast_quantity(item.get(key))
                        if name:
                            target[name] = quantity
        out.append(
            _new(
                ClaimStatus,
                (fast_string(entry.get("resourceClaimName")), containers, mapping, per_pod, per_container, shape),
            )
        )
    return tuple(out)


def read_pod_full(raw: AbstractMapping[str, Any]) -> PodView:
    """The full reader: every field path checked, every defect a named problem."""
    reader = Reader(ref_of(raw, "Pod"))
    meta = reader.identity(raw)
    if "spec" not in raw:
        reader.bad("spec", None, "a Pod needs a spec; counted as requesting nothing")
    spec = reader.mapping(raw.get("spec"), "spec")
    status = reader.mapping(raw.get("status"), "status")

    references: dict[str, list[str]] = {}
    containers: list[dict[str, Quantity]] = []
    inits: list[tuple[dict[str, Quantity], bool]] = []
    for field_name in ("initContainers", "containers"):
        for index, container in enumerate(reader.items(spec.get(field_name), f"spec.{field_name}")):
            path = f"spec.{field_name}[{index}]"
            container = reader.mapping(container, path)
            cname = _intern(reader.string(container.get("name"), f"{path}.name"))
            resources = reader.mapping(container.get("resources"), f"{path}.resources")
            requests = _requests(reader, resources, f"{path}.resources")
            if field_name == "containers":
                containers.append(requests)
            else:
                inits.append((requests, container.get("restartPolicy") == "Always"))
            for cindex, ref in enumerate(reader.items(resources.get("claims"), f"{path}.resources.claims")):
                ref = reader.mapping(ref, f"{path}.resources.claims[{cindex}]")
                claim = reader.string(ref.get("name"), f"{path}.resources.claims[{cindex}].name")
                users = references.setdefault(claim, [])
                if cname not in users:
                    users.append(cname)

    generated: dict[str, str | None] = {}
    for index, entry in enumerate(reader.items(status.get("resourceClaimStatuses"), "status.resourceClaimStatuses")):
        entry = reader.mapping(entry, f"status.resourceClaimStatuses[{index}]")
        name = reader.string(entry.get("name"), f"status.resourceClaimStatuses[{index}].name")
        value = entry.get("resourceClaimName")
        generated[name] = value if isinstance(value, str) and value else None

    claims: list[PodClaim] = []
    for index, entry in enumerate(reader.items(spec.get("resourceClaims"), "spec.resourceClaims")):
        path = f"spec.resourceClaims[{index}]"
        entry = reader.mapping(entry, path)
        name = reader.string(entry.get("name"), f"{path}.name")
        direct = reader.string(entry.get("resourceClaimName"), f"{path}.resourceClaimName")
        template = reader.string(entry.get("resourceClaimTemplateName"), f"{path}.resourceClaimTemplateName")
        claim_name = direct or (generated.get(name) if template else None)
        if not direct and not template:
            reader.bad(path, entry, "needs resourceClaimName or resourceClaimTemplateName")
        claims.append(PodClaim(name, claim_name, bool(template) and not direct, tuple(references.get(name, ()))))

    spec_resources = reader.mapping(spec.get("resources"), "spec.resources")
    affinity = reader.mapping(spec.get("affinity"), "spec.affinity")
    gates = tuple(
        g["name"]
        for g in reader.items(spec.get("schedulingGates"), "spec.schedulingGates")
        if isinstance(g, dict) and isinstance(g.get("name"), str)
    )
    namespace = _intern(reader.ref.namespace)
    return PodView(
        namespace=namespace,
        name=reader.ref.name,
        uid=reader.string(meta.get("uid"), "metadata.uid"),
        resource_version=reader.string(meta.get("resourceVersion"), "metadata.resourceVersion"),
        node_name=_intern(reader.string(spec.get("nodeName"), "spec.nodeName")),
        phase=_intern(reader.string(status.get("phase"), "status.phase")),
        ordinary=aggregate_containers(containers, inits),
        pod_level=reader.quantities(spec_resources.get("requests"), "spec.resources.requests"),
        overhead=reader.quantities(spec.get("overhead"), "spec.overhead"),
        claims=tuple(claims),
        claim_statuses=_claim_statuses(reader, status),
        scheduling_gates=gates,
        gate_info=GateInfo(
            created=reader.string(meta.get("creationTimestamp"), "metadata.creationTimestamp"),
            has_affinity="affinity" in spec and spec.get("affinity") is not None,
            node_affinity=dict(affinity["nodeAffinity"]) if isinstance(affinity.get("nodeAffinity"), dict) else None,
        )
        if gates
        else None,
        key=(namespace, reader.ref.name),
        problems=tuple(reader.problems),
    )


def _claim_statuses(reader: Reader, status: AbstractMapping[str, Any]) -> tuple[ClaimStatus, ...] | None:
    field = "status.nodeAllocatableResourceClaimStatuses"
    if status.get("nodeAllocatableResourceClaimStatuses") is None:
        return None
    out: list[ClaimStatus] = []
    for index, entry in enumerate(reader.items(status.get("nodeAllocatableResourceClaimStatuses"), field)):
        path = f"{field}[{index}]"
        entry = reader.mapping(entry, path)
        containers = tuple(
            _intern(c) for c in reader.items(entry.get("containers"), f"{path}.containers") if isinstance(c, str)
        )
        mapping: dict[str, Quantity] = {}
        per_pod: dict[str, Quantity] = {}
        per_container: dict[str, Quantity] = {}
        shape = "v1.36"
        if "resources" in entry:
            mapping = reader.quantities(entry.get("resources"), f"{path}.resources")
        if "mapping" in entry or "overhead" in entry:
            shape = "v1.37"
            for mindex, item in enumerate(reader.items(entry.get("mapping"), f"{path}.mapping")):
                item = reader.mapping(item, f"{path}.mapping[{mindex}]")
                name = reader.string(item.get("name"), f"{path}.mapping[{mindex}].name")
                quantity = reader.quantity(item.get("quantity"), f"{path}.mapping[{mindex}].quantity")
                if name and quantity is not None:
                    mapping[name] = quantity
            for oindex, item in enumerate(reader.items(entry.get("overhead"), f"{path}.overhead")):
                item = reader.mapping(item, f"{path}.overhead[{oindex}]")
                name = reader.string(item.get("name"), f"{path}.overhead[{oindex}].name")
                for key, target in (("perPod", per_pod), ("perContainer", per_container)):
                    if item.get(key) is not None:
                        quantity = reader.quantity(item.get(key), f"{path}.overhead[{oindex}].{key}")
                        if name and quantity is not None:
                            target[name] = quantity
        out.append(
            ClaimStatus(
                claim_name=reader.string(entry.get("resourceClaimName"), f"{path}.resourceClaimName"),
                containers=containers,
                mapping=mapping,
                per_pod=per_pod,
                per_container=per_container,
                shape=shape,
            )
        )
    return tuple(out)
