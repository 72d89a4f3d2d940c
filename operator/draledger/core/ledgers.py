"""The NodeAllocatableLedger resource: its pydantic model (the CRD schema is generated from it) and the
translation of an accounting ``Ledger`` into that resource.

Rules:
1. Quantities are written in canonical Kubernetes form (``9600m``, ``8Gi``); zone ids are integers.
2. Serialization is deterministic (sorted keys and lists), so an unchanged ledger serializes to the same
   bytes and the operator can skip the write.
3. Versions and timestamps are inputs: this module never reads a clock.
4. ``summary`` repeats a few figures for people (``kubectl get nal``'s columns), humanised by
   ``core.figures``; nothing reads it back, and it changes only when the exact figures do.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from draledger.core.accounting.ledger import Condition, Ledger, ResourceLine
from draledger.core.figures import humanize_pair
from draledger.core.views import Problem

GROUP = "draledger.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "NodeAllocatableLedger"
PLURAL = "nodeallocatableledgers"
SHORT_NAME = "nal"
QUANTITY_PATTERN = (  # kube-apiserver's own pattern for resource.Quantity
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


def Qty(description: str) -> Any:
    return Field(description=description, pattern=QUANTITY_PATTERN)


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid")


class Phase(StrEnum):
    REBUILDING = "Rebuilding"
    FROZEN = "Frozen"
    STALE = "Stale"
    OVERCOMMITTED = "Overcommitted"
    READY = "Ready"


class ResourceFigures(_Model):
    allocatable: str = Qty("node.status.allocatable[r]")
    pod_requests: str = Qty("Σ footprints of the counted pods without any claim (the ordinary stream)")
    claims: str = Qty("Σ contributions of the node's claims, each claim once (the DRA stream)")
    requested: str = Qty("Σ footprints of the counted pods, claims included: what the scheduler charges")
    free: str = Qty("allocatable − requested; negative means overcommitted")
    scheduler_charged: str = Qty("Σ of what the pods' status.nodeAllocatableResourceClaimStatuses say")


class ZoneFigures(_Model):
    capacity: str = Qty("what the zone's devices would charge if wholly allocated")
    claims: str = Qty("mapping contributions of results on devices of the zone")
    free: str = Qty("capacity − claims")


class NumaZone(_Model):
    id: int = Field(description="the NUMA node id, from the device's NUMA attribute")
    resources: dict[str, ZoneFigures]


class ClaimDevice(_Model):
    driver: str
    pool: str
    device: str
    numa_zone: int | None = None


class LedgerClaim(_Model):
    namespace: str
    name: str
    uid: str = Field(description="empty when the ResourceClaim object is missing")
    pods: list[str] = Field(description="namespace/name of the counted pods that consume it")
    devices: list[ClaimDevice]
    resources: dict[str, str] = Field(description="what the ledger charges for the claim on this node")
    scheduler_charged: dict[str, str] = Field(description="what the pods' status says the scheduler charged")
    problems: list[str] = Field(description="reason codes, e.g. MissingResourceSlice, SharedAcrossPods")


class LedgerProblem(_Model):
    reason: str
    message: str
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    field: str | None = None
    value: str | None = None


class LedgerCondition(_Model):
    type: str
    status: str = Field(pattern="^(True|False|Unknown)$")
    reason: str
    message: str
    last_transition_time: str = Field(json_schema_extra={"format": "date-time"})


class RejectedSliceRecord(_Model):
    name: str = Field(description="the ResourceSlice")
    driver: str
    pool: str
    generation: int = Field(ge=0, description="the newest pool generation seen; older updates stay refused")
    rejected_generation: int = Field(ge=0, description="the older generation the driver published since")


class LedgerSummary(_Model):
    cpu: str = Field(description="for people: cpu requested/allocatable, humanised (3.5/64); - without cpu")
    memory: str = Field(description="for people: memory requested/allocatable, humanised (41.7Gi/494Gi)")
    scheduler: str = Field(description="InSync when the scheduler charged what the ledger counts, else Diverged")
    problems: int = Field(ge=0, description="how many problems the ledger lists")


class NodeAllocatableLedgerStatus(_Model):
    node_name: str
    phase: Phase
    ledger_version: int = Field(ge=0, description="+1 whenever the status content changes; never decreases")
    mapping_version: int = Field(ge=0, description="+1 whenever the node's mapping inputs change")
    mapping_fingerprint: str = Field(description="digest of the node's device mappings")
    observed_time: str = Field(json_schema_extra={"format": "date-time"})
    claim_count: int = Field(ge=0)
    resources: dict[str, ResourceFigures]
    numa_zones: list[NumaZone]
    claims: list[LedgerClaim]
    problems: list[LedgerProblem]
    conditions: list[LedgerCondition]
    summary: LedgerSummary | None = Field(None, description="for people; optional, as ledgers written by "
                                          "earlier versions of the operator have none")
    rejected_slices: list[RejectedSliceRecord] | None = Field(
        None,
        description="operator only: ResourceSlice updates refused because their pool generation went back "
        "(kept across restarts until the driver publishes the generation again)",
    )


class NodeAllocatableLedgerSpec(_Model):
    frozen: bool = Field(
        False, description="new claim-using pods stay gated for this node; bound pods are untouched"
    )
    reason: str | None = Field(None, description="why the node is frozen (shown in events)")


def _problem(problem: Problem) -> LedgerProblem:
    return LedgerProblem.model_validate(_problem_body(problem))


def _condition_bodies(
    conditions: tuple[Condition, ...], previous: list[dict[str, Any]] | None, now: str
) -> list[dict[str, str]]:
    """metav1.Condition semantics: lastTransitionTime moves only when the status changes."""
    before = {c.get("type"): c for c in previous or () if isinstance(c, dict)}
    out = []
    for cond in conditions:
        old = before.get(cond.type)
        since = old.get("lastTransitionTime") if old and old.get("status") == cond.status else None
        out.append(
            {
                "type": cond.type,
                "status": cond.status,
                "reason": cond.reason,
                "message": cond.message,
                "lastTransitionTime": since or now,
            }
        )
    return out


def stamp_conditions(
    conditions: tuple[Condition, ...], previous: list[dict[str, Any]] | None, now: str
) -> list[LedgerCondition]:
    return [LedgerCondition.model_validate(c) for c in _condition_bodies(conditions, previous, now)]


def status_of(
    ledger: Ledger,
    *,
    ledger_version: int,
    mapping_version: int,
    now: str,
    previous_conditions: list[dict[str, Any]] | None = None,
) -> NodeAllocatableLedgerStatus:
    """The status as the model (validated): what ``status_body`` builds, read back through the model."""
    return NodeAllocatableLedgerStatus.model_validate(
        status_body(
            ledger,
            ledger_version=ledger_version,
            mapping_version=mapping_version,
            now=now,
            previous_conditions=previous_conditions,
        )
    )


def status_body(
    ledger: Ledger,
    *,
    ledger_version: int,
    mapping_version: int,
    now: str,
    previous_conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The status body as the API holds it, built without the models (the writer's hot path).

    The same keys in the same order as the model's own dump, ``None`` fields left out; tests hold
    ``status_json(status_of(...))`` (this body read back through the model) equal to it, key order
    included, so the body always validates against the model the CRD schema is generated from.
    """
    body = {
        "nodeName": ledger.node_name,
        "phase": Phase(ledger.phase).value,
        "ledgerVersion": ledger_version,
        "mappingVersion": mapping_version,
        "mappingFingerprint": ledger.mapping_fingerprint,
        "observedTime": now,
        "claimCount": len(ledger.claims),
        "resources": {name: line_figures(line) for name, line in ledger.resources.items()},
        "numaZones": [
            {
                "id": zone,
                "resources": {
                    r: {"capacity": str(z.capacity), "claims": str(z.claims), "free": str(z.free)}
                    for r, z in lines.items()
                },
            }
            for zone, lines in ledger.zones.items()
        ],
        "claims": [
            {
                "namespace": c.namespace,
                "name": c.name,
                "uid": c.uid,
                "pods": list(c.pods),
                "devices": [
                    {"driver": d.driver, "pool": d.pool, "device": d.device}
                    if d.zone is None
                    else {"driver": d.driver, "pool": d.pool, "device": d.device, "numaZone": d.zone}
                    for d in c.devices
                ],
                "resources": {r: str(q) for r, q in sorted(c.resources.items())},
                "schedulerCharged": {r: str(q) for r, q in sorted(c.scheduler_charged.items())},
                "problems": list(c.problems),
            }
            for c in ledger.claims
        ],
        "problems": [_problem_body(p) for p in ledger.problems],
        "conditions": _condition_bodies(ledger.conditions, previous_conditions, now),
        "summary": summary(ledger),
    }
    if ledger.rejected_slices:
        body["rejectedSlices"] = [
            {
                "name": r.name,
                "driver": r.driver,
                "pool": r.pool,
                "generation": r.generation,
                "rejectedGeneration": r.rejected,
            }
            for r in ledger.rejected_slices
        ]
    return body


def summary(ledger: Ledger) -> dict[str, Any]:
    """The ``summary`` for ``kubectl get nal`` (rule 4): the figures ``audit``'s table prints."""

    def pair(name: str) -> str:
        line = ledger.resources.get(name)
        return humanize_pair(name, line.requested, line.allocatable) if line else "-"

    in_sync = any(c.type == "SchedulerInSync" and c.status == "True" for c in ledger.conditions)
    return {"cpu": pair("cpu"), "memory": pair("memory"), "scheduler": "InSync" if in_sync else "Diverged",
            "problems": len(ledger.problems)}


def line_figures(line: ResourceLine) -> dict[str, str]:
    """One resource line of the status, in canonical text (the ``ResourceFigures`` fields, by alias)."""
    return {
        "allocatable": str(line.allocatable),
        "podRequests": str(line.pod_requests),
        "claims": str(line.claims),
        "requested": str(line.requested),
        "free": str(line.free),
        "schedulerCharged": str(line.scheduler_charged),
    }


def _problem_body(problem: Problem) -> dict[str, Any]:
    ref = problem.obj
    body = {"reason": problem.reason, "message": problem.message}
    optional = {
        "kind": ref.kind if ref else None,
        "namespace": (ref.namespace or None) if ref else None,
        "name": ref.name if ref else None,
        "field": problem.field or None,
        "value": problem.value or None,
    }
    body.update((k, v) for k, v in optional.items() if v is not None)
    return body


def ledger_object(
    status: NodeAllocatableLedgerStatus | dict[str, Any],
    node_uid: str = "",
    spec: NodeAllocatableLedgerSpec | None = None,
) -> dict[str, Any]:
    """The whole resource as the API (and ``audit -o json``) shows it; owned by its Node. ``status`` is the
    model, or the body ``status_body`` builds (the same, key order included)."""
    body = status if isinstance(status, dict) else status_json(status)
    name = body["nodeName"]
    metadata: dict[str, Any] = {"name": name}
    if node_uid:
        metadata["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": node_uid}]
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": metadata,
        "spec": {"frozen": False} if spec is None else spec.model_dump(by_alias=True, exclude_none=True),
        "status": body,
    }


def status_json(status: NodeAllocatableLedgerStatus) -> dict[str, Any]:
    return status.model_dump(mode="json", by_alias=True, exclude_none=True)
