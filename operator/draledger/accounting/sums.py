"""Per-node running sums of the pods' claim-free footprints, kept as pods come, change and go.

Rules:
1. ``podRequests`` is the sum, over every counted pod of the node, of its claim-free footprint; the pods
   without claims add that same footprint to ``requested``. ``NodeSums`` keeps the claim-free footprints
   summed apart for pods without and with claims, so a ledger pass visits only the pods that need more than
   a sum: claims, claim statuses or problems (``needs_pass``).
2. A sum's value is exact whatever the order of its terms. Its format is the first term's in
   namespace/name order (Quantity.Add keeps the left operand's; a format-less zero takes the next one's).
   Each sum counts its terms per format: with one format that is the answer; with mixed formats the
   caller finds the first term in pod order (``Sum.known_formats`` says which formats it holds).
3. The result is the ledger a full pass over every pod computes, to the format of each figure: the
   differential tests hold the two equal after every event.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from draledger.accounting.catalog import PodKey
from draledger.accounting.footprints import footprint
from draledger.quantities import EXACT, Format, Quantity, scheduler_units
from draledger.views import PodView

__all__ = ["NodeSums", "Sum", "needs_pass", "plain_footprint"]

_NONE = Decimal(0)


def plain_footprint(pod: PodView) -> Mapping[str, Quantity]:
    """The pod's footprint without claims (only to be read)."""
    return footprint(pod.ordinary, pod.pod_level, pod.overhead, {})


def needs_pass(pod: PodView) -> bool:
    """Whether the ledger pass must visit the pod: its sums alone do not say all it contributes."""
    return bool(pod.claims or pod.claim_statuses or pod.problems)


_FORMATS = (Format.DECIMAL_SI, Format.BINARY_SI, Format.DECIMAL_EXPONENT)


def _slot(fmt: Format | None) -> int:
    """The counter of a format (identity tests: an Enum's hash is computed in Python)."""
    if fmt is Format.DECIMAL_SI:
        return 0
    if fmt is Format.BINARY_SI:
        return 1
    return 2 if fmt is Format.DECIMAL_EXPONENT else 3


class Sum:
    """One resource's running sum: exact value, and how many terms of each format it holds."""

    __slots__ = ("counts", "terms", "value")

    def __init__(self) -> None:
        self.value = _NONE
        self.terms = 0
        self.counts = [0, 0, 0, 0]  # terms per format: _FORMATS, then format-less

    def add(self, quantity: Quantity, sign: int) -> None:
        self.value = EXACT.add(self.value, quantity.value) if sign > 0 else EXACT.subtract(self.value, quantity.value)
        self.counts[_slot(quantity.fmt)] += sign
        self.terms += sign

    def known_formats(self) -> set[Format]:
        """The formats among the terms (format-less terms, the last counter, decide nothing)."""
        return {fmt for fmt, count in zip(_FORMATS, self.counts[:3], strict=True) if count}


def _entry(sums: dict[str, Sum], name: str) -> Sum:
    entry = sums.get(name)
    if entry is None:
        entry = sums[name] = Sum()
    return entry


def _apply(sums: dict[str, Sum], amounts: Mapping[str, Quantity], sign: int) -> None:
    for name, quantity in amounts.items():
        entry = _entry(sums, name)
        entry.add(quantity, sign)
        if not entry.terms:
            del sums[name]


def _swap(sums: dict[str, Sum], before: Mapping[str, Quantity], after: Mapping[str, Quantity]) -> None:
    """One term replaced by another: a resource in both, in one format, moves by the difference only."""
    for name, quantity in before.items():
        entry = sums[name]
        fresh = after.get(name)
        if fresh is not None and fresh.fmt is quantity.fmt:
            if fresh.value != quantity.value:  # a resize mostly moves one resource: leave the others be
                entry.value = EXACT.add(EXACT.subtract(entry.value, quantity.value), fresh.value)
            continue
        entry.add(quantity, -1)
        if fresh is not None:
            entry.add(fresh, 1)
        elif not entry.terms:
            del sums[name]
    for name, fresh in after.items():
        if name not in before:
            _entry(sums, name).add(fresh, 1)


def _count_units(units: dict[str, int], amounts: Mapping[str, Quantity], sign: int) -> None:
    for name, quantity in amounts.items():
        total = units.get(name, 0) + sign * scheduler_units(name, quantity)
        if total or sign > 0:
            units[name] = total
        else:
            units.pop(name, None)


class NodeSums:
    """The counted pods of one node, as far as the ledger needs them summed (rule 1). The two sums are
    disjoint (a pod is in one), so the common update touches one: podRequests is their sum."""

    __slots__ = ("claimed", "claimless", "claimless_units", "special")

    def __init__(self) -> None:
        self.claimless: dict[str, Sum] = {}  # claim-free footprints of the pods without claims
        self.claimed: dict[str, Sum] = {}  # claim-free footprints of the pods with claims
        self.special: dict[PodKey, PodView] = {}  # pods the ledger pass visits (needs_pass)
        # The pods without claims as kube-scheduler charges them: each footprint rounded up to its units
        self.claimless_units: dict[str, int] = {}

    def add(self, pod: PodView) -> None:
        plain = plain_footprint(pod)
        if pod.claims:
            _apply(self.claimed, plain, 1)
        else:
            _apply(self.claimless, plain, 1)
            _count_units(self.claimless_units, plain, 1)
        if needs_pass(pod):
            self.special[pod.key] = pod

    def remove(self, pod: PodView) -> None:
        plain = plain_footprint(pod)
        if pod.claims:
            _apply(self.claimed, plain, -1)
        else:
            _apply(self.claimless, plain, -1)
            _count_units(self.claimless_units, plain, -1)
        self.special.pop(pod.key, None)

    def replace(self, old: PodView, new: PodView) -> None:
        """``remove(old)`` then ``add(new)``, in one pass when the pod stays in the same sum (the common
        update of a pod that stays on its node: a resize, a status change)."""
        if bool(old.claims) != bool(new.claims):
            self.remove(old)
            self.add(new)
            return
        before, after = plain_footprint(old), plain_footprint(new)
        if before is not after:
            _swap(self.claimed if new.claims else self.claimless, before, after)
            if not new.claims:
                _count_units(self.claimless_units, before, -1)
                _count_units(self.claimless_units, after, 1)
        if needs_pass(new):
            self.special[new.key] = new
        else:
            self.special.pop(old.key, None)
