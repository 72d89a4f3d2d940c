"""One node's ledger: the ordinary stream, the DRA stream (each claim once), NUMA zones, phase, conditions.

Rules (docs/accounting.md: 2 "What is counted", 3 "Two streams, and what the scheduler charges", 4 "Each claim
once", 10 "Phases and conditions"):
1. A pod counts on node N when bound to N and neither Succeeded nor Failed.
2. ``podRequests`` sums the footprints without claims; ``requested`` with the ledger's own shares (accounting.charges:
   its recomputation, the truth the ledger vouches for); ``free = allocatable − requested``; ``schedulerCharged`` is
   what the pods' ``nodeAllocatableResourceClaimStatuses`` say of their claims; ``schedulerRequested`` is what
   kube-scheduler's ``NodeInfo`` charges in all, every bound pod from its status (so a pod bound with the gate off
   is charged nothing for its claims there). ``Fits`` judges ``requested``; the gate's room check both.
3. Each claim enters once, however many containers or pods reference it (accounting.charges, rule 1).
4. Problems of a release (``Problem.releases``) appear only under that release.
5. Conditions and phase: accounting.conditions.
6. ``compute`` reads plain data only (``NodeInputs``) and calls nothing back: the node's running sums, the charge of
   each pod the sums cannot stand for (claims, claim statuses, problems), and what the node's slices give, each kept
   by the state per object (accounting.inputs), as kube-scheduler's ``NodeInfo`` keeps its sums.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from draledger.core.accounting import conditions
from draledger.core.accounting.charges import PodCharge
from draledger.core.accounting.conditions import Condition
from draledger.core.accounting.contributions import STALE_REASONS, Contribution, DeviceRef
from draledger.core.accounting.sums import NodeSums
from draledger.core.accounting.uses import ClaimUse
from draledger.core.keys import ClaimKey, PodKey, PoolKey
from draledger.core.phases import Phase
from draledger.core.pools import Pool
from draledger.core.quantities import ZERO, Quantity, scheduler_units
from draledger.core.releases import Release
from draledger.core.resources import Resources, add_into
from draledger.core.views import NodeView, PodView, Problem
from draledger.core.views.mappings import is_node_allocatable
from draledger.core.views.problems import ObjectRef

__all__ = ["Condition", "Flags", "Ledger", "NodeInputs", "RejectedSlice", "ResourceLine", "compute"]


@dataclass(frozen=True, slots=True)
class RejectedSlice:
    """A ResourceSlice update the operator refused because its pool generation went back.

    ``generation`` is the newest generation seen for the slice: updates older than it stay refused (across
    operator restarts: the ledger keeps the record) until the driver publishes it or a newer one.
    """

    name: str
    driver: str
    pool: str
    generation: int
    rejected: int  # the older generation published since


@dataclass(frozen=True, slots=True)
class Flags:
    """What the shell knows and the dump does not: rebuild, freeze, watch freshness, refused updates."""

    rebuilding: bool = False
    frozen: bool = False
    watch_stale: str = ""  # non-empty: why the watch data is older than the freshness window
    pod_status: tuple[str, str, str] | None = None  # operator only: (status, reason, message) of backfill
    rejected_slices: tuple[RejectedSlice, ...] = ()  # operator only: this node's refused slice regressions


@dataclass(frozen=True, slots=True)
class ResourceLine:
    allocatable: Quantity
    pod_requests: Quantity
    claims: Quantity
    requested: Quantity
    free: Quantity
    scheduler_charged: Quantity
    # In kube-scheduler's own integer units (millicores for cpu, bytes otherwise), each pod's footprint
    # rounded up on its own, as NodeInfo.Requested sums them: what fit is judged in.
    allocatable_units: int = 0
    requested_units: int = 0
    scheduler_requested: Quantity = ZERO  # rule 2: what NodeInfo charges, every pod from its status
    scheduler_requested_units: int = 0

    @property
    def free_units(self) -> int:
        return self.allocatable_units - self.requested_units

    @property
    def scheduler_free_units(self) -> int:
        return self.allocatable_units - self.scheduler_requested_units


@dataclass(frozen=True, slots=True)
class ZoneLine:
    capacity: Quantity
    claims: Quantity
    free: Quantity


@dataclass(frozen=True, slots=True)
class ClaimLine:
    namespace: str
    name: str
    uid: str
    pods: tuple[str, ...]
    devices: tuple[DeviceRef, ...]
    resources: Resources
    scheduler_charged: Resources
    problems: tuple[str, ...]

    @property
    def zones(self) -> frozenset[int]:
        return frozenset(d.zone for d in self.devices if d.zone is not None)


@dataclass(frozen=True, slots=True)
class Ledger:
    node_name: str
    node_uid: str
    phase: Phase
    resources: dict[str, ResourceLine]
    zones: dict[int, dict[str, ZoneLine]]
    claims: tuple[ClaimLine, ...]
    conditions: tuple[Condition, ...]
    problems: tuple[Problem, ...]
    mapping_fingerprint: str
    rejected_slices: tuple[RejectedSlice, ...] = ()
    release: Release = "v1.36"

    def condition(self, kind: str) -> Condition:
        return next(c for c in self.conditions if c.type == kind)


@dataclass(slots=True)
class _ClaimAcc:
    key: ClaimKey
    uid: str
    contribution: Contribution | None
    pods: list[str] = field(default_factory=list)
    resources: Resources = field(default_factory=dict)
    charged: Resources = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class NodeInputs:
    """What one node's ledger is computed from, as plain data (rule 6); only to be read."""

    release: Release
    sums: NodeSums  # the running sums of the node's counted pods (accounting.sums)
    charges: Mapping[PodKey, PodCharge]  # of each pod of ``sums.special`` with claims or claim statuses
    slice_problems: tuple[Problem, ...]  # of the ResourceSlices published for the node
    node_pools: frozenset[PoolKey]  # the pools with a slice published for the node
    pools: Mapping[PoolKey, Pool]  # every pool there is: the ledger judges those it names
    zone_capacity: Mapping[int, Resources]  # what each NUMA zone could hold (accounting.zones)
    fingerprint: str  # accounting.fingerprints


def compute(node: NodeView, inputs: NodeInputs, flags: Flags = Flags()) -> Ledger:
    """One node's ledger: the node's running sums for its pods, and a visit of the pods the sums cannot stand
    for (claims, claim statuses, problems)."""
    release = inputs.release
    problems: list[Problem] = [*node.problems, *inputs.slice_problems]
    accs: dict[ClaimKey, _ClaimAcc] = {}
    claims_total: Resources = {}
    charged_total: Resources = {}
    zone_claims: dict[int, Resources] = {}
    sums = inputs.sums
    charges = inputs.charges
    requested_nanos = dict(sums.claimless)
    requested_units = dict(sums.claimless_units)
    scheduler_nanos = dict(sums.claimless)
    scheduler_units_ = dict(sums.claimless_units)
    for key in sorted(sums.special):
        pod = sums.special[key]
        problems.extend(pod.problems)
        if not (pod.claims or pod.claim_statuses):
            continue
        charge = charges[key]
        problems.extend(charge.problems)
        _enter(pod, charge, accs, zone_claims, problems)
        add_into(claims_total, charge.charge)
        add_into(charged_total, charge.charged)
        for into, amounts in ((requested_nanos, charge.nanos), (requested_units, charge.units),
                              (scheduler_nanos, charge.scheduler_nanos), (scheduler_units_, charge.scheduler_units)):
            for name, value in amounts.items():
                into[name] = into.get(name, 0) + value
    pod_requests = {name: Quantity(nanos) for name, nanos in sums.claimless.items()}
    for name, nanos in sums.claimed.items():
        pod_requests[name] = Quantity(pod_requests[name].nanos + nanos) if name in pod_requests else Quantity(nanos)
    requested = {name: Quantity(nanos) for name, nanos in requested_nanos.items()}

    names = {r for r in node.allocatable if is_node_allocatable(r)}
    for stream in (requested, claims_total, charged_total):
        names.update(r for r, q in stream.items() if q and is_node_allocatable(r))
    resources = {}
    for name in sorted(names):
        allocatable = node.allocatable.get(name, ZERO)
        total = requested.get(name, ZERO)
        resources[name] = ResourceLine(
            allocatable=allocatable,
            pod_requests=pod_requests.get(name, ZERO),
            claims=claims_total.get(name, ZERO),
            requested=total,
            free=allocatable - total,
            scheduler_charged=charged_total.get(name, ZERO),
            allocatable_units=scheduler_units(name, allocatable),
            requested_units=requested_units.get(name, 0),
            scheduler_requested=Quantity(scheduler_nanos.get(name, 0)),
            scheduler_requested_units=scheduler_units_.get(name, 0),
        )

    zones = _zones(inputs.zone_capacity, zone_claims)
    stale_reasons = _pool_problems(inputs, accs, problems)
    for rejected in flags.rejected_slices:
        stale_reasons.add("GenerationRegression")
        problems.append(
            Problem(
                "GenerationRegression",
                f"pool {rejected.driver}/{rejected.pool} went back from generation {rejected.generation} to "
                f"{rejected.rejected}; the update is ignored until generation {rejected.generation} or newer "
                "is published",
                ObjectRef("ResourceSlice", rejected.name),
                "spec.pool.generation",
                str(rejected.rejected),
            )
        )
    claims = tuple(_claim_line(acc) for _, acc in sorted(accs.items()))
    for line in claims:
        stale_reasons.update(p for p in line.problems if p in STALE_REASONS)
    broken = [f"{c.namespace}/{c.name}: {', '.join(c.problems)}" for c in claims
              if STALE_REASONS.intersection(c.problems)]
    lines = [conditions.Line(name, line.claims, line.scheduler_charged, line.requested, line.allocatable,
                             line.requested_units, line.allocatable_units) for name, line in resources.items()]
    found: tuple[Condition, ...] = (
        conditions.fresh(node.ready, node.name, node.ready_reason, flags.watch_stale),
        conditions.mappings_complete(stale_reasons, broken),
        conditions.scheduler_in_sync(lines),
        conditions.fits(lines),
    )
    if flags.pod_status is not None:
        found = (*found, Condition("PodStatusBackfill", *flags.pod_status))
    return Ledger(
        node_name=node.name,
        node_uid=node.uid,
        phase=conditions.phase(flags.rebuilding, flags.frozen, found),
        resources=resources,
        zones=zones,
        claims=claims,
        conditions=found,
        problems=tuple(p for p in problems if p.applies(release)),
        mapping_fingerprint=inputs.fingerprint,
        rejected_slices=flags.rejected_slices,
        release=release,
    )


def _enter(
    pod: PodView,
    charge: PodCharge,
    accs: dict[ClaimKey, _ClaimAcc],
    zone_claims: dict[int, Resources],
    problems: list[Problem],
) -> None:
    """Enter the pod's claim uses into the node's claim lines; a claim's own problems once, at its first."""
    pod_ref = f"{pod.namespace}/{pod.name}"
    for use, share in zip(charge.uses, charge.shares, strict=True):
        _enter_use(pod_ref, use, share.total(), accs, zone_claims, problems)


def _enter_use(
    pod_ref: str, use: ClaimUse, share: Resources, accs: dict[ClaimKey, _ClaimAcc],
    zone_claims: dict[int, Resources], problems: list[Problem],
) -> None:
    key, claim, contrib = use.key, use.claim, use.contribution
    charged = use.status.charged() if use.status is not None else {}
    acc = accs.get(key)
    if acc is None:
        acc = accs[key] = _ClaimAcc(key, claim.uid if claim else "", contrib, [], dict(share), dict(charged))
        if claim is None or contrib is None:
            acc.problems.append("MissingResourceClaim")
            problems.append(
                Problem(
                    "MissingResourceClaim",
                    "a counted pod references it; it does not exist",
                    ObjectRef("ResourceClaim", key[1], key[0]),
                )
            )
        else:
            problems.extend(claim.problems)
            acc.problems.extend(reason for reason, _ in contrib.problems)
            ref = ObjectRef("ResourceClaim", claim.name, claim.namespace)
            problems.extend(Problem(reason, message, ref) for reason, message in contrib.problems)
    else:
        add_into(acc.resources, share)
        add_into(acc.charged, charged)
    acc.pods.append(pod_ref)
    if not use.references and not use.extended:
        acc.problems.append("UnreferencedClaim")
    if contrib is not None and contrib.resolved:
        if len(use.consumers) > 1 and contrib.mapped and "SharedAcrossPods" not in acc.problems:
            acc.problems.append("SharedAcrossPods")
        if use.owner:
            for zone, amounts in contrib.by_zone.items():
                add_into(zone_claims.setdefault(zone, {}), amounts)


def _claim_line(acc: _ClaimAcc) -> ClaimLine:
    return ClaimLine(
        namespace=acc.key[0],
        name=acc.key[1],
        uid=acc.uid,
        pods=tuple(acc.pods),
        devices=tuple(acc.contribution.devices) if acc.contribution else (),
        resources=acc.resources,
        scheduler_charged=acc.charged,
        problems=tuple(dict.fromkeys(acc.problems)),
    )


def _zones(capacity: Mapping[int, Resources], zone_claims: dict[int, Resources]) -> dict[int, dict[str, ZoneLine]]:
    """``capacity`` is only read (a caller may pass a cached value)."""
    zones: dict[int, dict[str, ZoneLine]] = {}
    for zone in sorted(capacity.keys() | zone_claims.keys()):
        caps, used = capacity.get(zone, {}), zone_claims.get(zone, {})
        zones[zone] = {
            r: ZoneLine(caps.get(r, ZERO), used.get(r, ZERO), caps.get(r, ZERO) - used.get(r, ZERO))
            for r in sorted(caps.keys() | used.keys())
        }
    return zones


def _pool_problems(inputs: NodeInputs, accs: dict[ClaimKey, _ClaimAcc], problems: list[Problem]) -> set[str]:
    """The node's pools and those of its claims' devices: invalid or incomplete ones are problems."""
    pools = set(inputs.node_pools)
    for acc in accs.values():
        if acc.contribution:
            pools.update(PoolKey((d.driver, d.pool)) for d in acc.contribution.devices)
    reasons: set[str] = set()
    known = inputs.pools
    for pool in sorted(pools):
        found = known.get(pool)
        if found is None:
            continue
        invalid = found.invalid
        if invalid:
            reasons.add("InvalidPool")
            problems.append(Problem("InvalidPool", f"pool {pool[0]}/{pool[1]} is invalid: {invalid}; the allocator "
                                    "allocates nothing from it, and its devices resolve to nothing here"))
        if not found.complete:
            reasons.add("IncompletePool")
            problems.append(
                Problem(
                    "IncompletePool",
                    f"pool {pool[0]}/{pool[1]}: fewer slices of the newest "
                    "generation than its resourceSliceCount",
                )
            )
    return reasons

