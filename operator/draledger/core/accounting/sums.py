"""Per-node running sums of the pods' claim-free footprints, kept as pods come, change and go.

Rules:
1. ``podRequests`` is the sum, over every counted pod of the node, of its claim-free footprint; the plain pods
   (no claims, no claim statuses) add that same footprint to ``requested`` and to what the scheduler charges.
   ``NodeSums`` keeps the claim-free footprints summed apart for plain pods and the others, so a ledger needs to
   visit only the pods a sum cannot stand for: claims, claim statuses or problems (``needs_visit``).
2. Sums are whole numbers of nano-units: exact in any order, so adding and removing in any order gives what
   one pass over the pods gives (the differential tests hold the two equal after every event).
3. The plain pods are also summed in kube-scheduler's units, each pod rounded up on its own.
"""

from __future__ import annotations

from collections.abc import Mapping

from draledger.core.accounting.footprints import plain_footprint
from draledger.core.keys import PodKey
from draledger.core.quantities import Quantity, scheduler_units
from draledger.core.releases import Release
from draledger.core.views import PodView

__all__ = ["NodeSums", "needs_visit"]


def needs_visit(pod: PodView) -> bool:
    """Whether the ledger must visit the pod: its sums alone do not say all it contributes."""
    return bool(pod.claims or pod.claim_statuses or pod.problems)


def _apply(sums: dict[str, int], amounts: Mapping[str, Quantity], sign: int) -> None:
    for name, quantity in amounts.items():
        sums[name] = sums.get(name, 0) + sign * quantity.nanos


def _apply_units(units: dict[str, int], amounts: Mapping[str, Quantity], sign: int) -> None:
    for name, quantity in amounts.items():
        units[name] = units.get(name, 0) + sign * scheduler_units(name, quantity)


class NodeSums:
    """The counted pods of one node, as far as the ledger needs them summed (rule 1). The two sums are
    disjoint (a pod is in one); podRequests is their sum. A resource whose sum went back to 0 stays, as 0."""

    __slots__ = ("claimed", "claimless", "claimless_units", "special")

    def __init__(self) -> None:
        self.claimless: dict[str, int] = {}  # nanos: footprints of the plain pods (rule 1)
        self.claimed: dict[str, int] = {}  # nanos: claim-free footprints of the others
        self.claimless_units: dict[str, int] = {}  # the plain pods, in the scheduler's units
        self.special: dict[PodKey, PodView] = {}  # pods the ledger visits (needs_visit)

    def add(self, pod: PodView, release: Release, sign: int = 1) -> None:
        plain = plain_footprint(pod, release)
        if pod.claims or pod.claim_statuses:
            _apply(self.claimed, plain, sign)
        else:
            _apply(self.claimless, plain, sign)
            _apply_units(self.claimless_units, plain, sign)
        if sign < 0:
            self.special.pop(pod.key, None)
        elif needs_visit(pod):
            self.special[pod.key] = pod

    def remove(self, pod: PodView, release: Release) -> None:
        self.add(pod, release, -1)
