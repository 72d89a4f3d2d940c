"""Gate release: when a pod held by ``draledger.dev/ledger-ready`` may go to the scheduler, and where.

A release needs positive evidence, never the mere absence of a problem seen so far:
1. Nothing is released before the ledgers are rebuilt, while admission is frozen cluster-wide, or while any
   watch stream the decision depends on is unhealthy this very moment (broken, relisting, reconnecting,
   silent).
2. A released pod may only land on a node whose ledger is Ready now. Its node affinity is tightened
   (``metadata.name NotIn [...]`` every node of ours that is not Ready) in the same JSON patch that removes
   the gate (KEP-3838 allows tightening while a pod is gated). Nodes outside the canary (seen, not selected)
   are not ours and not restricted.
3. A claim the pod names but the operator has not seen yet (its event may still be on the way) holds the pod:
   it may already be allocated, and releasing early could send the pod where its claim is not.
   A template claim not yet generated does not hold it: it cannot be allocated before this pod is scheduled.
4. An allocated claim must resolve: every device of its results published in the newest generation of a
   complete pool. Otherwise the pod is held (``ClaimUnresolved``): its charge would be unknown.
5. When the pod's claims are already allocated, it may only go to their node(s): each must be Ready (a node
   of ours not seen at all is not), and the pod's footprint (claims included, each with its mapping) must fit in
   the node's ``free`` and in what the scheduler leaves free (``schedulerRequested``: it binds only what fits
   there), in the scheduler's units; otherwise it stays gated with a reason.
6. Only our gate is removed; other controllers' gates stay. The patch is guarded by ``resourceVersion``.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass
from typing import Any

from draledger.core.accounting.contributions import STALE_REASONS
from draledger.core.accounting.footprints import NO_CHARGE, DraCharge, footprint
from draledger.core.accounting.uses import UseCatalog, claim_uses, dra_charge
from draledger.core.phases import SAFE
from draledger.core.quantities import ZERO, Quantity, scheduler_units
from draledger.core.views import PodView
from draledger.core.views.pods import GATE as GATE

SAFE_PHASE = SAFE  # only a Ready ledger vouches for its node (core.phases, rule 2)
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True, slots=True)
class NodeStanding:
    phase: str
    free: Mapping[str, int]  # in the scheduler's units (ResourceLine.free_units)
    scheduler_free: Mapping[str, int] | None = None  # what NodeInfo leaves (ResourceLine.scheduler_free_units)


@dataclass(frozen=True, slots=True)
class Decision:
    release: bool
    reason: str  # Released | Rebuilding | Frozen | WatchUnhealthy | ClaimNotSeen | ClaimUnresolved
    # | NoReadyNode | NodeUnavailable | NoRoom | ClaimsOnDifferentNodes
    message: str
    patch: list[dict[str, Any]] | None = None


def _claims_charge(
    pod: PodView, catalog: UseCatalog, numa_attributes: tuple[str, ...]
) -> tuple[DraCharge, set[str] | None, list[str], list[str]]:
    """The DRA part of the pod's footprint (its allocated claims, each with its mapping: the pod will carry it),
    the nodes its allocated claims pin it to (None: unpinned), the claims it names that are not in the catalog
    yet, and why its allocated claims do not resolve."""
    shares: list[DraCharge] = []
    unseen: list[str] = []
    unresolved: list[str] = []
    pinned: set[str] | None = None
    for use in claim_uses(pod, catalog, numa_attributes):
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
        incomplete = sorted(
            {f"{r.driver}/{r.pool}" for r in claim.results if not catalog.pool_complete(r.pool_key)}
        )
        if incomplete:
            unresolved.append(f"{where}: pool {', '.join(incomplete)} is incomplete")
            continue
        shares.append(use.share(with_mapping=True))
    return dra_charge(shares) if shares else NO_CHARGE, pinned, unseen, unresolved


def _fits(needed: Mapping[str, Quantity], free: Mapping[str, int]) -> bool:
    """Whether the footprint fits, judged as the scheduler does: each resource rounded up to its unit."""
    return all(scheduler_units(name, q) <= free.get(name, 0) for name, q in needed.items() if q > ZERO)


def _room(needed: Mapping[str, Quantity], standing: NodeStanding) -> bool:
    """Rule 5: room in the ledger's own account and in what the scheduler charges (it binds only what fits
    there)."""
    return _fits(needed, standing.free) and (standing.scheduler_free is None or _fits(needed, standing.scheduler_free))


def decide(
    pod: PodView,
    nodes: Mapping[str, NodeStanding],
    catalog: UseCatalog,
    *,
    rebuilt: bool,
    cluster_frozen: bool,
    numa_attributes: tuple[str, ...],
    streams_unhealthy: str = "",
    outside: Container[str] = frozenset(),
) -> Decision:
    """``nodes``: the standing of every node of ours, current; ``outside``: nodes seen but not selected."""
    if not rebuilt:
        return Decision(False, "Rebuilding", "the ledgers are being rebuilt after an operator start")
    if cluster_frozen:
        return Decision(False, "Frozen", "admission of new claim pods is frozen cluster-wide")
    if streams_unhealthy:
        return Decision(False, "WatchUnhealthy", f"the ledgers cannot vouch for any node now: {streams_unhealthy}")
    charge, pinned, unseen, unresolved = _claims_charge(pod, catalog, numa_attributes)
    if unseen:
        return Decision(False, "ClaimNotSeen", f"waiting to see its ResourceClaim {', '.join(unseen)}")
    if unresolved:
        return Decision(False, "ClaimUnresolved", "; ".join(unresolved))
    unsafe = sorted(name for name, standing in nodes.items() if standing.phase != SAFE_PHASE)
    if pinned is not None:
        if not pinned:
            return Decision(
                False, "ClaimsOnDifferentNodes", "the pod's allocated claims are on different nodes"
            )
        needed = footprint(pod, charge, catalog.release)
        usable = [
            n for n in sorted(pinned) if n in outside or (n in nodes and nodes[n].phase == SAFE_PHASE)
        ]
        if not usable:
            return Decision(
                False,
                "NodeUnavailable",
                f"its claims' node(s) {', '.join(sorted(pinned))} are not Ready (or not seen)",
            )
        roomy = [n for n in usable if n in outside or _room(needed, nodes[n])]
        if not roomy:
            wanted = ", ".join(f"{r}={q}" for r, q in sorted(needed.items()) if q > ZERO)
            return Decision(False, "NoRoom", f"no room for its footprint ({wanted}) on {', '.join(usable)}")
        return Decision(
            True,
            "Released",
            f"pinned to {', '.join(roomy)}",
            release_patch(pod, {"key": "metadata.name", "operator": "In", "values": roomy}),
        )
    if nodes and len(unsafe) == len(nodes):
        return Decision(False, "NoReadyNode", "no node's ledger is Ready")
    requirement = {"key": "metadata.name", "operator": "NotIn", "values": unsafe} if unsafe else None
    message = f"kept away from {', '.join(unsafe)}" if unsafe else "every ledger is Ready"
    return Decision(True, "Released", message, release_patch(pod, requirement))


def release_patch(pod: PodView, requirement: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One JSON patch: test the resourceVersion, remove our gate, add the node requirement to every term."""
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": pod.resource_version},
        {"op": "remove", "path": f"/spec/schedulingGates/{pod.scheduling_gates.index(GATE)}"},
    ]
    if requirement is None:
        return ops
    info = pod.gate_info
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
