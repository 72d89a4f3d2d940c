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
6. What a claim-using pod adds is its ``PodCharge``, which depends on the pod and its claims only: a catalog may keep
   it (``ClusterState`` does, so an event charges the one pod it changed), and the node's pass only enters it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Protocol

from draledger.core.accounting import conditions
from draledger.core.accounting.catalog import Catalog, ClaimKey
from draledger.core.accounting.charges import PodCharge
from draledger.core.accounting.conditions import Condition
from draledger.core.accounting.contributions import STALE_REASONS, Contribution, DeviceRef
from draledger.core.accounting.uses import ClaimUse
from draledger.core.accounting.zones import DEFAULT_NUMA_ATTRIBUTES, zone_capacity
from draledger.core.phases import Phase
from draledger.core.quantities import ZERO, Quantity, scheduler_units
from draledger.core.releases import Release
from draledger.core.resources import Resources, add_into
from draledger.core.views import ClaimView, NodeView, PodView, Problem
from draledger.core.views.mappings import is_node_allocatable
from draledger.core.views.problems import ObjectRef

__all__ = ["Condition", "Flags", "Ledger", "LedgerCatalog", "RejectedSlice", "ResourceLine", "compute"]


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
    numa_attributes: tuple[str, ...] = DEFAULT_NUMA_ATTRIBUTES
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


class NodeSumsLike(Protocol):
    claimless: dict[str, int]
    claimed: dict[str, int]
    claimless_units: dict[str, int]
    special: dict[tuple[str, str], PodView]


class LedgerCatalog(Catalog, Protocol):
    """A catalog as the node's pass asks it: its lookups, and the derived values it may keep (``ClusterState``
    caches them; the tests' oracle computes each one when asked)."""

    def node_sums(self, node: str) -> NodeSumsLike:
        """The running sums of the node's counted pods (accounting.sums)."""

    def contribution(self, claim: ClaimView, attributes: tuple[str, ...]) -> Contribution:
        """``contributions.contribution(claim, self, attributes, self.release)`` (a catalog may cache it)."""

    def mapping_fingerprint(self, node: str) -> str:
        """``ledger.mapping_fingerprint(self, node)`` (a catalog may cache it)."""

    def zone_capacity(self, node: str, attributes: tuple[str, ...]) -> dict[int, Resources]:
        """``ledger.node_zone_capacity(self, node, attributes)`` (a catalog may cache it; only to be read)."""

    def pod_charge(self, pod: PodView, attributes: tuple[str, ...]) -> PodCharge:
        """``charges.pod_charge(pod, self, attributes)`` (a catalog may cache it)."""


def compute(node: NodeView, catalog: LedgerCatalog, flags: Flags = Flags()) -> Ledger:
    """One node's ledger: the node's running sums for its pods, and a visit of the pods the sums cannot stand
    for (claims, claim statuses, problems)."""
    release = catalog.release
    attributes = flags.numa_attributes
    problems: list[Problem] = [*node.problems, *catalog.slice_problems(node.name)]
    accs: dict[ClaimKey, _ClaimAcc] = {}
    claims_total: Resources = {}
    charged_total: Resources = {}
    zone_claims: dict[int, Resources] = {}
    sums = catalog.node_sums(node.name)
    requested_nanos = dict(sums.claimless)
    requested_units = dict(sums.claimless_units)
    scheduler_nanos = dict(sums.claimless)
    scheduler_units_ = dict(sums.claimless_units)
    for key in sorted(sums.special):
        pod = sums.special[key]
        problems.extend(pod.problems)
        if not (pod.claims or pod.claim_statuses):
            continue
        charge = catalog.pod_charge(pod, attributes)
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

    zones = _zones(catalog.zone_capacity(node.name, attributes), zone_claims)
    stale_reasons = _pool_problems(catalog, node.name, accs, problems)
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
        mapping_fingerprint=catalog.mapping_fingerprint(node.name),
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


def _zones(capacity: dict[int, Resources], zone_claims: dict[int, Resources]) -> dict[int, dict[str, ZoneLine]]:
    """``capacity`` is only read (a caller may pass a cached value)."""
    zones: dict[int, dict[str, ZoneLine]] = {}
    for zone in sorted(capacity.keys() | zone_claims.keys()):
        caps, used = capacity.get(zone, {}), zone_claims.get(zone, {})
        zones[zone] = {
            r: ZoneLine(caps.get(r, ZERO), used.get(r, ZERO), caps.get(r, ZERO) - used.get(r, ZERO))
            for r in sorted(caps.keys() | used.keys())
        }
    return zones


def _pool_problems(
    catalog: Catalog, node: str, accs: dict[ClaimKey, _ClaimAcc], problems: list[Problem]
) -> set[str]:
    pools = set(catalog.node_pools(node))
    for acc in accs.values():
        if acc.contribution:
            pools.update((d.driver, d.pool) for d in acc.contribution.devices)
    reasons: set[str] = set()
    for pool in sorted(pools):
        if not catalog.pool_exists(pool):
            continue
        invalid = catalog.pool_invalid(pool)
        if invalid:
            reasons.add("InvalidPool")
            problems.append(Problem("InvalidPool", f"pool {pool[0]}/{pool[1]} is invalid: {invalid}; the allocator "
                                    "allocates nothing from it, and its devices resolve to nothing here"))
        if not catalog.pool_complete(pool):
            reasons.add("IncompletePool")
            problems.append(
                Problem(
                    "IncompletePool",
                    f"pool {pool[0]}/{pool[1]}: fewer slices of the newest "
                    "generation than its resourceSliceCount",
                )
            )
    return reasons


def mapping_fingerprint(catalog: Catalog, node: str) -> str:
    """A digest of the node's mapping inputs under the catalog's release: the release, and for every device
    published for the node (newest generation) its driver, pool and name, and per mapping the release counts
    the capacity key, the multiplier, the overhead and the capacity the key names (``DeviceView.capacity_of``,
    the lookup zones use), each as an explicit field (quantities in nano-units)."""

    def nanos(quantity: Quantity | None) -> str:
        return "-" if quantity is None else str(quantity.nanos)

    release = catalog.release
    digest = hashlib.sha256(f"{release}\0".encode())
    for (driver, pool), device in sorted(catalog.node_devices(node), key=lambda d: (d[0], d[1].name)):
        digest.update(f"{driver}\0{pool}\0{device.name}\0".encode())
        for resource, mapping in sorted(device.mappings_in(release).items()):
            key = mapping.capacity_key
            capacity = device.capacity_of(key) if key is not None else None
            fields = (resource, key or "-", nanos(mapping.multiplier), nanos(mapping.per_pod),
                      nanos(mapping.per_container), nanos(capacity))
            digest.update(("\0".join(fields) + "\0").encode())
    return digest.hexdigest()[:16]


def node_zone_capacity(catalog: Catalog, node: str, attributes: tuple[str, ...]) -> dict[int, Resources]:
    """What each NUMA zone of the node could hold: depends only on the node's ResourceSlices and the release."""
    return zone_capacity(catalog.node_devices(node), attributes, catalog.release)
