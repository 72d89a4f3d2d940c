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
   of ours not seen at all is not), and the pod's footprint (claims included) must fit in the node's
   ``free``; otherwise it stays gated with a reason.
6. Only our gate is removed; other controllers' gates stay. The patch is guarded by ``resourceVersion``.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass
from typing import Any

from draledger.core.accounting.catalog import Catalog
from draledger.core.accounting.contributions import contribution
from draledger.core.accounting.footprints import Resources, add_into, footprint
from draledger.core.quantities import ZERO, Quantity, scheduler_units
from draledger.core.views import PodView
from draledger.core.views.pods import GATE as GATE

SAFE_PHASE = "Ready"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True, slots=True)
class NodeStanding:
    phase: str
    free: Mapping[str, int]  # in the scheduler's units (ResourceLine.free_units)


@dataclass(frozen=True, slots=True)
class Decision:
    release: bool
    reason: str  # Released | Rebuilding | Frozen | WatchUnhealthy | ClaimNotSeen | ClaimUnresolved
    # | NoReadyNode | NodeUnavailable | NoRoom | ClaimsOnDifferentNodes
    message: str
    patch: list[dict[str, Any]] | None = None


def _claims_charge(
    pod: PodView, catalog: Catalog, numa_attributes: tuple[str, ...]
) -> tuple[Resources, set[str] | None, list[str], list[str]]:
    """The DRA part of the pod's footprint, the nodes its allocated claims pin it to (None: unpinned), the
    claims it names that are not in the catalog yet, and why its allocated claims do not resolve."""
    charge: Resources = {}
    unseen: list[str] = []
    unresolved: list[str] = []
    pinned: set[str] | None = None
    seen: set[str] = set()
    for pod_claim in pod.claims:
        if pod_claim.claim_name is None or pod_claim.claim_name in seen:
            continue
        seen.add(pod_claim.claim_name)
        claim = catalog.claim((pod.namespace, pod_claim.claim_name))
        if claim is None:
            unseen.append(f"{pod.namespace}/{pod_claim.claim_name}")
            continue
        if not claim.allocated:
            continue
        if claim.allocation_nodes:
            nodes = set(claim.allocation_nodes)
            pinned = nodes if pinned is None else pinned & nodes
        contrib = contribution(claim, catalog, numa_attributes)
        where = f"{pod.namespace}/{pod_claim.claim_name}"
        if not contrib.resolved:
            missing = [message for reason, message in contrib.problems if reason.startswith("Missing")]
            unresolved.extend(f"{where}: {message}" for message in missing)
            continue
        incomplete = sorted(
            {f"{r.driver}/{r.pool}" for r in claim.results if not catalog.pool_complete(r.pool_key)}
        )
        if incomplete:
            unresolved.append(f"{where}: pool {', '.join(incomplete)} is incomplete")
            continue
        add_into(charge, contrib.pod_share(len(pod_claim.containers), with_mapping=True))
    return charge, pinned, unseen, unresolved


def _fits(needed: Mapping[str, Quantity], free: Mapping[str, int]) -> bool:
    """Whether the footprint fits, judged as the scheduler does: each resource rounded up to its unit."""
    return all(scheduler_units(name, q) <= free.get(name, 0) for name, q in needed.items() if q > ZERO)


def decide(
    pod: PodView,
    nodes: Mapping[str, NodeStanding],
    catalog: Catalog,
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
        needed = footprint(pod, charge, catalog.api)
        usable = [
            n for n in sorted(pinned) if n in outside or (n in nodes and nodes[n].phase == SAFE_PHASE)
        ]
        if not usable:
            return Decision(
                False,
                "NodeUnavailable",
                f"its claims' node(s) {', '.join(sorted(pinned))} are not Ready (or not seen)",
            )
        roomy = [n for n in usable if n in outside or _fits(needed, nodes[n].free)]
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
