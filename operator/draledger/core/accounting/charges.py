"""What one claim-using pod adds to its node's ledger: its claims' shares, its footprint with them, and what the
scheduler charged it.

Rules (docs/accounting.md: 3 "Two streams, and what the scheduler charges", 4 "Each claim once", 6 "Missing slices
and `Stale`", 9 "`schedulerCharged` and divergence"):
1. Each claim the pod uses is charged once (accounting.uses). When several counted pods consume one claim, its
   mapping part is charged to the first of them by namespace/name (``SharedAcrossPods``); overhead is paid by
   every consuming pod.
2. A claim that cannot be resolved (claim, slice or device missing, or its pool invalid) is counted with what the
   pod's status entry for it says, when there is one, and otherwise not at all; either way the node is Stale.
3. ``nanos``/``units``: the footprint with the ledger's own shares (what ``requested`` sums); ``scheduler_*``: the
   footprint the release's scheduler charges the bound pod from its status (kube-scheduler's ``NodeInfo``).
4. ``charged``: what the pod's status entries say was charged for its claims (entries of the release's shape).
5. A charge depends on the pod and its claims' facts (their views, contributions and consumers: accounting.inputs),
   never on the other pods of its node: the state keeps it per pod, and the node's pass only enters it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from draledger.core.accounting.footprints import DraCharge, entry_charge, footprint, status_charge
from draledger.core.accounting.uses import ClaimFacts, ClaimUse, claim_uses, dra_charge
from draledger.core.keys import ClaimKey
from draledger.core.quantities import scheduler_units
from draledger.core.releases import Release, status_shape
from draledger.core.resources import Resources, add_into
from draledger.core.views import PodView, Problem
from draledger.core.views.problems import ObjectRef


class PodCharge(NamedTuple):
    """What a claim-using pod adds to its node's ledger (rule 5: the same whichever other pods share its node)."""

    problems: tuple[Problem, ...]  # its template claims not yet generated
    uses: tuple[ClaimUse, ...]
    shares: tuple[DraCharge, ...]  # what the ledger charges the pod for each use
    charge: Resources  # Σ shares: the pod's part of the claims stream
    nanos: dict[str, int]  # its footprint with them
    units: dict[str, int]  # the same in kube-scheduler's units, rounded up (ResourceLine)
    charged: Resources  # Σ of what its claim statuses say (rule 4)
    scheduler_nanos: dict[str, int]  # its footprint as the scheduler charges it from its status (rule 3)
    scheduler_units: dict[str, int]


def pod_charge(pod: PodView, facts: Mapping[ClaimKey, ClaimFacts], release: Release) -> PodCharge:
    """The pod's ``PodCharge`` (rules 1 to 4), from its claims' facts (``uses.claim_keys``)."""
    problems = tuple(
        Problem(
            "UnresolvedTemplateClaim",
            f"claim {pod_claim.name!r} has no generated ResourceClaim in status.resourceClaimStatuses yet",
            ObjectRef("Pod", pod.name, pod.namespace),
            "status.resourceClaimStatuses",
        )
        for pod_claim in pod.claims
        if pod_claim.claim_name is None
    )
    uses = claim_uses(pod, facts, release)
    shares = tuple(
        use.share() if use.resolved else entry_charge(use.status, release) if use.status is not None
        else DraCharge({}, {})
        for use in uses
    )
    dra = dra_charge(shares) if shares else DraCharge({}, {})
    charge: Resources = {}
    for share in shares:
        add_into(charge, share.total())
    shape = status_shape(release)
    charged: Resources = {}
    for status in pod.claim_statuses or ():
        if status.shape == shape:
            add_into(charged, status.charged())
    term = footprint(pod, dra, release)
    scheduled = footprint(pod, status_charge(pod, release), release)
    return PodCharge(
        problems=problems,
        uses=uses,
        shares=shares,
        charge=charge,
        nanos={name: quantity.nanos for name, quantity in term.items()},
        units={name: scheduler_units(name, quantity) for name, quantity in term.items()},
        charged=charged,
        scheduler_nanos={name: quantity.nanos for name, quantity in scheduled.items()},
        scheduler_units={name: scheduler_units(name, quantity) for name, quantity in scheduled.items()},
    )
