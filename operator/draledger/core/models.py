"""The NodeAllocatableLedger's pydantic models: the CRD schema is generated from them (``core.crds``), and
tests read every status body the operator and ``audit`` build back through them.

Rules:
1. Field names are the API's (camelCase aliases); a model is frozen and forbids unknown fields.
2. ``status_body`` (``core.bodies``) builds the same document without these models, on the hot path; the
   tests hold ``status_json(status_of(...))`` equal to it, key order included.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from draledger.core.accounting.ledger import Ledger
from draledger.core.bodies import status_body
from draledger.core.phases import Phase

QUANTITY_PATTERN = (  # kube-apiserver's own pattern for resource.Quantity
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


def Qty(description: str) -> Any:
    return Field(description=description, pattern=QUANTITY_PATTERN)


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid")


class ResourceFigures(_Model):
    allocatable: str = Qty("node.status.allocatable[r]")
    pod_requests: str = Qty("Σ footprints of the counted pods without any claim (the ordinary stream)")
    claims: str = Qty("Σ contributions of the node's claims, each claim once (the DRA stream)")
    requested: str = Qty("Σ footprints of the counted pods, claims included, as the ledger recomputes them "
                         "under the release's rules")
    free: str = Qty("allocatable − requested; negative means overcommitted")
    scheduler_charged: str = Qty("Σ of what the pods' status.nodeAllocatableResourceClaimStatuses say")
    scheduler_requested: str | None = Field(
        None, pattern=QUANTITY_PATTERN, description="what kube-scheduler charges in all: every bound pod's footprint "
        "from its status (a pod without status.nodeAllocatableResourceClaimStatuses is charged nothing for its "
        "claims); optional, as ledgers written by earlier versions have none")


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
    memory: str = Field(description="for people: memory requested/allocatable, humanised (41.7Gi/494Gi, 64Mi/1Gi)")
    scheduler: str = Field(description="InSync when the scheduler charged what the ledger counts, else Diverged")
    problems: int = Field(ge=0, description="how many problems the ledger shows: status.problems and the claims' "
                                         "own (SharedAcrossPods, UnreferencedClaim)")


class NodeAllocatableLedgerStatus(_Model):
    node_name: str
    phase: Phase
    release: str | None = Field(None, description="the Kubernetes release whose accounting rules apply "
                                "(v1.36, v1.37, v1.38); optional, as ledgers written by earlier versions have none")
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


def status_json(status: NodeAllocatableLedgerStatus) -> dict[str, Any]:
    return status.model_dump(mode="json", by_alias=True, exclude_none=True)
