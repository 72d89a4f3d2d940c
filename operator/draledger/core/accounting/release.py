"""Gate release: when a pod held by ``draledger.dev/ledger-ready`` may go to the scheduler, where, and on what.

A release needs positive evidence, never the mere absence of a problem seen so far, and the evidence is the
record others read: a node's ledger *as stored*.
1. Nothing is released before the ledgers are rebuilt and stored, while admission is frozen cluster-wide, or while any
   watch stream the decision depends on is unhealthy this very moment (broken, relisting, reconnecting,
   silent).
2. A node vouches for a pod only when its ledger is Ready both as computed now and as stored (``vouched``): a
   ledger not written yet, or stored Rebuilding, Stale, Frozen or Overcommitted, vouches for nothing, whatever
   the operator's memory says. A released pod's node affinity is tightened (``metadata.name NotIn [...]``
   every node of ours that does not vouch, those with no stored ledger included) in the same JSON patch that
   removes the gate (KEP-3838 allows tightening while a pod is gated). Nodes outside the canary (seen, not
   selected) are not ours and not restricted.
3. A claim the pod names but the operator has not seen yet (its event may still be on the way) holds the pod:
   it may already be allocated, and releasing early could send the pod where its claim is not.
   A template claim not yet generated does not hold it: it cannot be allocated before this pod is scheduled.
4. An allocated claim must resolve: every device of its results published in the newest generation of a
   complete pool. Otherwise the pod is held (``ClaimUnresolved``): its charge would be unknown.
5. When the pod's claims are already allocated, it may only go to their node(s) (pinned: ``In``). Each must
   vouch, and its stored ledger must hold exactly what is computed now (``current``: the room checked below is
   the room stored); a node that vouches but whose newer picture is not stored yet holds the pod
   (``LedgerPending``) until it is, and the shell writes that node first. The pod's footprint (claims
   included, each with its mapping) must fit in the node's ``free`` and in what the scheduler leaves free
   (``schedulerRequested``: it binds only what fits there), in the scheduler's units.
6. Only our gate is removed; other controllers' gates stay. The patch is guarded by ``resourceVersion``.
7. Every release says what it relied on, in the same patch: the annotation ``draledger.dev/released-on``
   (core.records): ``node@ledgerVersion=N`` for each node a pinned pod may go to, or ``*@resourceVersion=R``
   for a pod the scheduler places.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from draledger.core.accounting.contributions import STALE_REASONS
from draledger.core.accounting.footprints import NO_CHARGE, DraCharge, footprint
from draledger.core.accounting.ledger import Ledger
from draledger.core.accounting.uses import ClaimUse, dra_charge
from draledger.core.phases import SAFE
from draledger.core.quantities import ZERO, Quantity, scheduler_units
from draledger.core.records import ANNOTATION as ANNOTATION
from draledger.core.records import Record
from draledger.core.releases import Release
from draledger.core.views import PodView
from draledger.core.views.pods import GATE as GATE

SAFE_PHASE = SAFE  # only a Ready ledger vouches for its node (core.phases, rule 2)
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


class Computed:
    """A node's ledger as last computed for the releaser, at the node's generation then."""

    __slots__ = ("free", "generation", "phase", "scheduler_free")

    def __init__(self, ledger: Ledger, generation: int) -> None:
        self.generation = generation
        self.phase = ledger.phase
        self.free = {r: line.free_units for r, line in ledger.resources.items()}
        self.scheduler_free = {r: line.scheduler_free_units for r, line in ledger.resources.items()}


@dataclass(frozen=True, slots=True)
class NodeStanding:
    """One node of ours as a release sees it: its ledger computed now, and what its stored ledger says."""

    phase: str  # computed now
    free: Mapping[str, int]  # in the scheduler's units (ResourceLine.free_units)
    scheduler_free: Mapping[str, int] | None = None  # what NodeInfo leaves (ResourceLine.scheduler_free_units)
    stored_phase: str = ""  # "": no ledger stored (yet)
    ledger_version: int = 0  # of the stored ledger
    current: bool = False  # the stored ledger holds what is computed now (rule 5)

    @property
    def vouched(self) -> bool:
        """Rule 2: Ready as computed and as stored."""
        return self.phase == SAFE_PHASE and self.stored_phase == SAFE_PHASE

    def why(self) -> str:
        """Why the node does not vouch, for people ("" when it does)."""
        if self.phase != SAFE_PHASE:
            return str(self.phase)
        if not self.stored_phase:
            return "no ledger stored yet"
        if self.stored_phase != SAFE_PHASE:
            return f"stored {self.stored_phase}"
        return ""


@dataclass(slots=True)
class Standings:
    """Every node of ours at one moment (``nodes`` is read, never changed), and what a pass derives from them
    once, not once per pod: the nodes that do not vouch, sorted, and the newest stored resourceVersion."""

    nodes: Mapping[str, NodeStanding]
    unsafe: Sequence[str] = ()  # sorted: the nodes that do not vouch
    revision: str = ""  # the newest resourceVersion among the stored ledgers relied on (rule 7)
    reserved: dict[str, NodeStanding] = field(default_factory=dict)  # this pass's reservations (``reserve``)

    @classmethod
    def of(cls, nodes: Mapping[str, NodeStanding], revision: str = "") -> Standings:
        return cls(nodes, sorted(name for name, standing in nodes.items() if not standing.vouched), revision)

    def get(self, node: str) -> NodeStanding | None:
        return self.reserved.get(node) or self.nodes.get(node)

    def reserve(self, nodes: Iterable[str], needed: Mapping[str, int]) -> None:
        """A pod released onto ``nodes`` with this footprint (scheduler units): later decisions of the same
        pass see that much less room there."""
        for name in nodes:
            standing = self.get(name)
            if standing is None:
                continue
            less = {r: standing.free.get(r, 0) - needed.get(r, 0) for r in {*standing.free, *needed}}
            below = standing.scheduler_free
            if below is not None:
                below = {r: below.get(r, 0) - needed.get(r, 0) for r in {*below, *needed}}
            self.reserved[name] = replace(standing, free=less, scheduler_free=below)


@dataclass(frozen=True, slots=True)
class Decision:
    release: bool
    reason: str  # Released | Rebuilding | Frozen | WatchUnhealthy | ClaimNotSeen | ClaimUnresolved
    # | NoReadyNode | NodeUnavailable | LedgerPending | NoRoom | ClaimsOnDifferentNodes
    message: str
    patch: list[dict[str, Any]] | None = None
    released_on: str = ""  # rule 7's record
    pinned: tuple[str, ...] | None = None  # the nodes a pinned pod may go to (None: every node that vouches)
    waiting_on: tuple[str, ...] = ()  # LedgerPending: the nodes whose ledger must be stored first
    needed: Mapping[str, int] = field(default_factory=dict)  # a pinned pod's footprint, in scheduler units


def _claims_charge(uses: Sequence[ClaimUse]) -> tuple[DraCharge, set[str] | None, list[str], list[str]]:
    """The DRA part of the pod's footprint (its allocated claims, each with its mapping: the pod will carry it),
    the nodes its allocated claims pin it to (None: unpinned), the claims it names that are not in the state
    yet, and why its allocated claims do not resolve."""
    shares: list[DraCharge] = []
    unseen: list[str] = []
    unresolved: list[str] = []
    pinned: set[str] | None = None
    for use in uses:
        claim, contrib = use.claim, use.contribution
        where = f"{use.key[0]}/{use.key[1]}"
        if claim is None or contrib is None:
            unseen.append(where)
            continue
        if not claim.allocated:
            continue
        if claim.allocation_nodes:
            nodes = set(claim.allocation_nodes)
            pinned = nodes if pinned is None else pinned & nodes
        if not contrib.resolved:
            unresolved.extend(f"{where}: {message}" for reason, message in contrib.problems if reason in STALE_REASONS)
            continue
        if use.incomplete:
            unresolved.append(f"{where}: pool {', '.join(use.incomplete)} is incomplete")
            continue
        shares.append(use.share(with_mapping=True))
    return dra_charge(shares) if shares else NO_CHARGE, pinned, unseen, unresolved


def _units(needed: Mapping[str, Quantity]) -> dict[str, int]:
    """The footprint in the scheduler's units: each resource rounded up to its unit."""
    return {name: scheduler_units(name, q) for name, q in needed.items() if q > ZERO}


def _fits(needed: Mapping[str, int], free: Mapping[str, int]) -> bool:
    return all(units <= free.get(name, 0) for name, units in needed.items())


def _room(needed: Mapping[str, int], standing: NodeStanding) -> bool:
    """Rule 5: room in the ledger's own account and in what the scheduler charges (it binds only what fits
    there)."""
    return _fits(needed, standing.free) and (standing.scheduler_free is None or _fits(needed, standing.scheduler_free))


def _explained(names: Sequence[str], nodes: Mapping[str, NodeStanding]) -> str:
    """``n1 (Frozen), n2 (no ledger stored yet)``: each node with why it does not vouch."""
    return ", ".join(f"{n} ({nodes[n].why()})" if n in nodes else f"{n} (not seen)" for n in names)


def decide(
    pod: PodView,
    standings: Standings,
    uses: Sequence[ClaimUse],
    release: Release,
    *,
    rebuilt: bool,
    cluster_frozen: bool,
    streams_unhealthy: str = "",
    outside: Container[str] = frozenset(),
) -> Decision:
    """``standings``: every node of ours, now; ``uses``: the pod's claims' uses (``ClusterState.uses``); ``outside``:
    nodes seen but not selected."""
    if not rebuilt:
        return Decision(False, "Rebuilding", "the ledgers are being rebuilt and stored (an operator start or takeover)")
    if cluster_frozen:
        return Decision(False, "Frozen", "admission of new claim pods is frozen cluster-wide")
    if streams_unhealthy:
        return Decision(False, "WatchUnhealthy", f"the ledgers cannot vouch for any node now: {streams_unhealthy}")
    charge, pinned, unseen, unresolved = _claims_charge(uses)
    if unseen:
        return Decision(False, "ClaimNotSeen", f"waiting to see its ResourceClaim {', '.join(unseen)}")
    if unresolved:
        return Decision(False, "ClaimUnresolved", "; ".join(unresolved))
    nodes = standings.nodes
    if pinned is not None:
        return _pinned(pod, sorted(pinned), standings, _units(footprint(pod, charge, release)), outside)
    if nodes and len(standings.unsafe) == len(nodes):
        return Decision(False, "NoReadyNode", f"no node's ledger is Ready: {_explained(standings.unsafe, nodes)}")
    unsafe = list(standings.unsafe)
    requirement = {"key": "metadata.name", "operator": "NotIn", "values": list(unsafe)} if unsafe else None
    record = Record({}, True, standings.revision).text()
    message = f"kept away from {_explained(unsafe, nodes)}" if unsafe else "every ledger is Ready"
    return Decision(True, "Released", f"{message}; released on {record}", release_patch(pod, requirement, record),
                    record)


def _pinned(
    pod: PodView, pinned: list[str], standings: Standings, needed: dict[str, int], outside: Container[str]
) -> Decision:
    """Rule 5: a pod whose claims are allocated goes to their node(s) only."""
    if not pinned:
        return Decision(False, "ClaimsOnDifferentNodes", "the pod's allocated claims are on different nodes")
    nodes = {n: standing for n in pinned if n not in outside and (standing := standings.get(n)) is not None}
    usable = [n for n in pinned if n in outside or (n in nodes and nodes[n].vouched)]
    if not usable:
        return Decision(False, "NodeUnavailable",
                        f"its claims' node(s) are not Ready: {_explained(pinned, nodes)}")
    pending = [n for n in usable if n not in outside and not nodes[n].current]
    if len(pending) == len(usable):
        return Decision(False, "LedgerPending", f"waiting for the newest ledger of {', '.join(pending)} to be stored",
                        waiting_on=tuple(pending))
    roomy = [n for n in usable if n in outside or (n not in pending and _room(needed, nodes[n]))]
    if not roomy:
        wanted = ", ".join(f"{r}={q}" for r, q in sorted(needed.items()))
        return Decision(False, "NoRoom", f"no room for its footprint ({wanted}) on {', '.join(usable)}",
                        waiting_on=tuple(pending))
    record = Record({n: None if n in outside else nodes[n].ledger_version for n in roomy}).text()
    requirement = {"key": "metadata.name", "operator": "In", "values": roomy}
    return Decision(True, "Released", f"pinned to {', '.join(roomy)}; released on {record}",
                    release_patch(pod, requirement, record), record, pinned=tuple(roomy), needed=needed)


def release_patch(pod: PodView, requirement: dict[str, Any] | None, record: str = "") -> list[dict[str, Any]]:
    """One JSON patch: test the resourceVersion, remove our gate, record what the release relied on (rule 7),
    add the node requirement to every term."""
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": pod.resource_version},
        {"op": "remove", "path": f"/spec/schedulingGates/{pod.scheduling_gates.index(GATE)}"},
    ]
    info = pod.gate_info
    if record:
        if info and info.has_annotations:
            ops.append({"op": "add", "path": f"/metadata/annotations/{ANNOTATION.replace('/', '~1')}",
                        "value": record})
        else:
            ops.append({"op": "add", "path": "/metadata/annotations", "value": {ANNOTATION: record}})
    if requirement is None:
        return ops
    node_affinity = info.node_affinity if info else None
    terms_path = f"/spec/affinity/nodeAffinity/{REQUIRED}"
    if not (info and info.has_affinity):
        ops.append(
            {
                "op": "add",
                "path": "/spec/affinity",
                "value": {
                    "nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchFields": [requirement]}]}}
                },
            }
        )
    elif node_affinity is None:
        ops.append(
            {
                "op": "add",
                "path": "/spec/affinity/nodeAffinity",
                "value": {REQUIRED: {"nodeSelectorTerms": [{"matchFields": [requirement]}]}},
            }
        )
    elif not (node_affinity.get(REQUIRED) or {}).get("nodeSelectorTerms"):
        ops.append(
            {
                "op": "add",
                "path": terms_path,
                "value": {"nodeSelectorTerms": [{"matchFields": [requirement]}]},
            }
        )
    else:
        for index, term in enumerate(node_affinity[REQUIRED]["nodeSelectorTerms"]):
            if isinstance(term, dict) and term.get("matchFields"):
                ops.append(
                    {
                        "op": "add",
                        "path": f"{terms_path}/nodeSelectorTerms/{index}/matchFields/-",
                        "value": requirement,
                    }
                )
            else:
                ops.append(
                    {
                        "op": "add",
                        "path": f"{terms_path}/nodeSelectorTerms/{index}/matchFields",
                        "value": [requirement],
                    }
                )
    return ops


def age(pod: PodView, now: datetime) -> float:
    """Seconds since the pod was created (0 when unknown)."""
    if pod.gate_info and pod.gate_info.created:
        try:
            return (now - datetime.fromisoformat(pod.gate_info.created.replace("Z", "+00:00"))).total_seconds()
        except ValueError:
            return 0.0
    return 0.0
