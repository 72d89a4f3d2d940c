"""One node's ledger: the ordinary stream, the DRA stream (each claim once), NUMA zones, phase, conditions.

Rules (ledger contract, sections 1 and 2):
1. A pod counts on node N when bound to N and neither Succeeded nor Failed.
2. Each claim enters once, however many containers or pods reference it. When several counted pods consume
   one claim, its mapping part is charged to the first of them by namespace/name (``SharedAcrossPods``);
   v1.37 overhead is paid by every consuming pod (perContainer × its referencing containers).
3. A claim that cannot be resolved (claim, slice or device missing) is counted with what its pod status
   says, when there is one, and otherwise not at all; either way the node is Stale.
4. ``podRequests`` uses footprints without claims; ``requested`` with them; ``free = allocatable − requested``;
   ``schedulerCharged`` is what the pods' ``nodeAllocatableResourceClaimStatuses`` say.
5. Phase: the first of Rebuilding, Frozen, Stale, Overcommitted, Ready that applies.
6. What a claim-using pod adds (``pod_charge``) depends on the pod, its claims, their contributions and their
   consumers, never on the other pods of its node: a catalog may keep it (``ClusterState`` does, so an event
   charges the one pod it changed), and the node's pass only enters it into the claim lines.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from draledger.core.accounting.catalog import Catalog, ClaimKey, PodKey
from draledger.core.accounting.contributions import Contribution, DeviceRef
from draledger.core.accounting.footprints import Resources, add_into, footprint
from draledger.core.accounting.sums import NodeSums
from draledger.core.accounting.zones import DEFAULT_NUMA_ATTRIBUTES, zone_capacity
from draledger.core.quantities import ZERO, Quantity, scheduler_units
from draledger.core.views import ClaimView, NodeView, PodView, Problem
from draledger.core.views.problems import ObjectRef
from draledger.core.views.slices import is_node_allocatable

PHASES = ("Rebuilding", "Frozen", "Stale", "Overcommitted", "Ready")
STALE_REASONS = frozenset({"MissingResourceSlice", "MissingDevice", "MissingResourceClaim"})


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

    @property
    def free_units(self) -> int:
        return self.allocatable_units - self.requested_units


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
class Condition:
    type: str
    status: str  # "True" | "False"
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Ledger:
    node_name: str
    node_uid: str
    phase: str
    resources: dict[str, ResourceLine]
    zones: dict[int, dict[str, ZoneLine]]
    claims: tuple[ClaimLine, ...]
    conditions: tuple[Condition, ...]
    problems: tuple[Problem, ...]
    mapping_fingerprint: str
    rejected_slices: tuple[RejectedSlice, ...] = ()

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


class LedgerCatalog(Catalog, Protocol):
    """A catalog as the node's pass asks it: its lookups, and the derived values it may keep (``ClusterState``
    caches them; the tests' oracle computes each one when asked)."""

    def node_sums(self, node: str) -> NodeSums:
        """The running sums of the node's counted pods (accounting.sums)."""

    def contribution(self, claim: ClaimView, attributes: tuple[str, ...]) -> Contribution:
        """``contributions.contribution(claim, self, attributes)`` (a catalog may cache it)."""

    def mapping_fingerprint(self, node: str) -> str:
        """``ledger.mapping_fingerprint(self, node)`` (a catalog may cache it)."""

    def zone_capacity(self, node: str, attributes: tuple[str, ...]) -> dict[int, Resources]:
        """``ledger.node_zone_capacity(self, node, attributes)`` (a catalog may cache it; only to be read)."""

    def pod_charge(self, pod: PodView, attributes: tuple[str, ...]) -> PodCharge:
        """``ledger.pod_charge(pod, self, attributes)`` (a catalog may cache it)."""


def compute(node: NodeView, catalog: LedgerCatalog, flags: Flags = Flags()) -> Ledger:
    """One node's ledger: the node's running sums for its pods, and a visit of the pods the sums cannot stand
    for (claims, claim statuses, problems). A catalog may cache what depends only on its inputs (a claim's
    contribution, a node's fingerprint and zone capacity); the figures are the same either way."""
    attributes = flags.numa_attributes
    problems: list[Problem] = [*node.problems, *catalog.slice_problems(node.name)]
    accs: dict[ClaimKey, _ClaimAcc] = {}
    claims_total: Resources = {}
    charged_total: Resources = {}
    zone_claims: dict[int, Resources] = {}
    sums = catalog.node_sums(node.name)
    requested_nanos = dict(sums.claimless)
    requested_units = dict(sums.claimless_units)
    for key in sorted(sums.special):
        pod = sums.special[key]
        problems.extend(pod.problems)
        if pod.claims:
            charge = catalog.pod_charge(pod, attributes)
            problems.extend(charge.problems)
            _enter(pod, charge.uses, accs, zone_claims, problems)
            add_into(claims_total, charge.charge)
            for name, nanos in charge.nanos.items():
                requested_nanos[name] = requested_nanos.get(name, 0) + nanos
            for name, units in charge.units.items():
                requested_units[name] = requested_units.get(name, 0) + units
            add_into(charged_total, charge.charged)
        else:
            for status in pod.claim_statuses or ():
                add_into(charged_total, status.charged())
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
    conditions = _conditions(node, flags, resources, stale_reasons, claims)
    return Ledger(
        node_name=node.name,
        node_uid=node.uid,
        phase=_phase(flags, conditions),
        resources=resources,
        zones=zones,
        claims=claims,
        conditions=conditions,
        problems=tuple(problems),
        mapping_fingerprint=catalog.mapping_fingerprint(node.name),
        rejected_slices=flags.rejected_slices,
    )


class ClaimUse(NamedTuple):
    """One claim as one counted pod uses it: the pod's part of the claim's line."""

    key: ClaimKey
    claim: ClaimView | None
    contribution: Contribution | None  # None: the claim does not exist
    consumers: Sequence[PodKey]  # every counted pod that consumes the claim, as the share was decided with
    unreferenced: bool  # no container of the pod references it
    charged: Resources | None  # what the pod's status says the scheduler charged for it
    share: Resources  # what the ledger charges the pod for it
    owner: bool  # the pod carries the claim's mapping (its NUMA zones count here)


class PodCharge(NamedTuple):
    """What a claim-using pod adds to its node's ledger, from the pod, its claims and their consumers only
    (rule 6): the same whichever other pods share its node."""

    problems: tuple[Problem, ...]  # its template claims not yet generated
    uses: tuple[ClaimUse, ...]
    charge: Resources  # Σ shares: the DRA part of its footprint
    nanos: dict[str, int]  # its footprint with them
    units: dict[str, int]  # the same in kube-scheduler's units, rounded up (ResourceLine)
    charged: Resources  # Σ of what its claim statuses say


def pod_charge(pod: PodView, catalog: LedgerCatalog, attributes: tuple[str, ...]) -> PodCharge:
    """The pod's ``PodCharge`` (rules 2 and 3)."""
    statuses = {s.claim_name: s for s in pod.claim_statuses or ()}
    problems: list[Problem] = []
    seen: dict[ClaimKey, list[str]] = {}
    for pod_claim in pod.claims:
        if pod_claim.claim_name is None:
            problems.append(
                Problem(
                    "UnresolvedTemplateClaim",
                    f"claim {pod_claim.name!r} has no generated "
                    "ResourceClaim in status.resourceClaimStatuses yet",
                    ObjectRef("Pod", pod.name, pod.namespace),
                    "status.resourceClaimStatuses",
                )
            )
            continue
        containers = seen.setdefault((pod.namespace, pod_claim.claim_name), [])
        containers.extend(c for c in pod_claim.containers if c not in containers)
    uses = []
    charge: Resources = {}
    for key, containers in seen.items():
        claim = catalog.claim(key)
        contrib = catalog.contribution(claim, attributes) if claim is not None else None
        consumers = catalog.consumers(key)
        status = statuses.get(key[1])
        charged = status.charged() if status is not None else None
        owner = False
        if contrib is None or not contrib.resolved:
            share = charged or {}
        else:
            owner = not consumers or consumers[0] == pod.key
            share = contrib.pod_share(len(containers), with_mapping=owner)
        uses.append(ClaimUse(key, claim, contrib, consumers, not containers, charged, share, owner))
        add_into(charge, share)
    term = footprint(pod, charge, catalog.api)
    total: Resources = {}
    for status in pod.claim_statuses or ():
        add_into(total, status.charged())
    return PodCharge(
        problems=tuple(problems),
        uses=tuple(uses),
        charge=charge,
        nanos={name: quantity.nanos for name, quantity in term.items()},
        units={name: scheduler_units(name, quantity) for name, quantity in term.items()},
        charged=total,
    )


def _enter(
    pod: PodView,
    uses: tuple[ClaimUse, ...],
    accs: dict[ClaimKey, _ClaimAcc],
    zone_claims: dict[int, Resources],
    problems: list[Problem],
) -> None:
    """Enter the pod's claim uses into the node's claim lines; a claim's own problems once, at its first."""
    pod_ref = f"{pod.namespace}/{pod.name}"
    for use in uses:
        key, claim, contrib = use.key, use.claim, use.contribution
        acc = accs.get(key)
        if acc is None:
            acc = accs[key] = _ClaimAcc(key, claim.uid if claim else "", contrib, [], dict(use.share),
                                        dict(use.charged or {}))
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
            add_into(acc.resources, use.share)
            if use.charged is not None:
                add_into(acc.charged, use.charged)
        acc.pods.append(pod_ref)
        if use.unreferenced:
            acc.problems.append("UnreferencedClaim")
        if contrib is not None and contrib.resolved:
            if len(use.consumers) > 1 and contrib.mapping and "SharedAcrossPods" not in acc.problems:
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
        if catalog.pool_exists(pool) and not catalog.pool_complete(pool):
            reasons.add("IncompletePool")
            problems.append(
                Problem(
                    "IncompletePool",
                    f"pool {pool[0]}/{pool[1]}: fewer slices of the newest "
                    "generation than its resourceSliceCount",
                )
            )
    return reasons


def _differences(resources: dict[str, ResourceLine]) -> list[str]:
    return [
        f"{name}: ledger {line.claims}, scheduler {line.scheduler_charged}"
        for name, line in resources.items()
        if line.claims != line.scheduler_charged
    ]


def _conditions(
    node: NodeView,
    flags: Flags,
    resources: dict[str, ResourceLine],
    stale_reasons: set[str],
    claims: tuple[ClaimLine, ...],
) -> tuple[Condition, ...]:
    if not node.ready:
        fresh = Condition(
            "Fresh", "False", "NodeNotReady", f"node {node.name} is not Ready ({node.ready_reason})"
        )
    elif flags.watch_stale:
        fresh = Condition("Fresh", "False", "WatchStale", flags.watch_stale)
    else:
        fresh = Condition("Fresh", "True", "Fresh", "all inputs are current")
    if stale_reasons:
        broken = [
            f"{c.namespace}/{c.name}: {', '.join(c.problems)}"
            for c in claims
            if STALE_REASONS.intersection(c.problems)
        ]
        detail = "; ".join(broken[:5]) + (f" (+{len(broken) - 5} more)" if len(broken) > 5 else "")
        if "IncompletePool" in stale_reasons:
            detail = "a pool is incomplete" + ("; " + detail if detail else "")
        if "GenerationRegression" in stale_reasons:
            detail = "a ResourceSlice went back to an older pool generation" + ("; " + detail if detail else "")
        mappings = Condition("MappingsComplete", "False", sorted(stale_reasons)[0], detail)
    else:
        mappings = Condition(
            "MappingsComplete", "True", "AllResolved", "every claim resolves to a published device"
        )
    diffs = _differences(resources)
    if diffs:
        sync = Condition("SchedulerInSync", "False", "Diverged", "; ".join(diffs))
    else:
        sync = Condition("SchedulerInSync", "True", "Matched", "the scheduler charged what the ledger counts")
    over = [_overcommitted(n, line) for n, line in resources.items() if line.free_units < 0]
    if over:
        fits = Condition("Fits", "False", "Overcommitted", "; ".join(over))
    else:
        fits = Condition("Fits", "True", "Fits", "requested fits in allocatable for every resource")
    if flags.pod_status is None:
        return (fresh, mappings, sync, fits)
    return (fresh, mappings, sync, fits, Condition("PodStatusBackfill", *flags.pod_status))


def _overcommitted(name: str, line: ResourceLine) -> str:
    if line.free < ZERO:
        return f"{name}: requested {line.requested} > allocatable {line.allocatable}"
    unit = "m" if name == "cpu" else ""
    return (
        f"{name}: requested {line.requested}, rounded up pod by pod as the scheduler charges it, is "
        f"{line.requested_units}{unit} > allocatable {line.allocatable_units}{unit}"
    )


def _phase(flags: Flags, conditions: tuple[Condition, ...]) -> str:
    status = {c.type: c.status for c in conditions}
    if flags.rebuilding:
        return "Rebuilding"
    if flags.frozen:
        return "Frozen"
    if status["Fresh"] == "False" or status["MappingsComplete"] == "False":
        return "Stale"
    if status["Fits"] == "False":
        return "Overcommitted"
    return "Ready"


def mapping_fingerprint(catalog: Catalog, node: str) -> str:
    """A digest of the node's mapping inputs: for every device published for the node (newest generation),
    its driver, pool and name, and per mapped resource the capacity key, the multiplier, the overhead and
    the capacity the key names, each as an explicit field (quantities in nano-units)."""

    def nanos(quantity: Quantity | None) -> str:
        return "-" if quantity is None else str(quantity.nanos)

    digest = hashlib.sha256()
    for (driver, pool), device in sorted(catalog.node_devices(node), key=lambda d: (d[0], d[1].name)):
        digest.update(f"{driver}\0{pool}\0{device.name}\0".encode())
        for resource, mapping in sorted(device.mappings.items()):
            capacity = device.capacity.get(mapping.capacity_key or "")
            fields = (resource, mapping.capacity_key or "-", nanos(mapping.multiplier), nanos(mapping.per_pod),
                      nanos(mapping.per_container), nanos(capacity))
            digest.update(("\0".join(fields) + "\0").encode())
    return digest.hexdigest()[:16]


def node_zone_capacity(catalog: Catalog, node: str, attributes: tuple[str, ...]) -> dict[int, Resources]:
    """What each NUMA zone of the node could hold: depends only on the node's ResourceSlices."""
    return zone_capacity(catalog.node_devices(node), attributes)
