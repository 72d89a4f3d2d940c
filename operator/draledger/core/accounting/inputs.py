"""What each number the state keeps is computed from: one table, beside the rules, that the state's invalidation
reads.

The state (core.state) keeps, per object, the result of a rule over plain data: a contribution and the facts its uses
read per claim, a charge per claim-using pod, running sums per node, and per node what its slices give (the mapping
fingerprint, the NUMA zones' capacity). The ledger's pass (``ledger.compute``) reads them and calls nothing back.

Rules:
1. ``KEPT`` names, for each kept value, the rule that computes it, what it is kept per (a claim, a pod, a node) and
   every input it reads, directly or through another kept value (a charge reads its claims' facts: their inputs
   are its inputs too). ``PARAMETERS`` says which input each parameter name of a rule is.
2. A rule that reads a new input names it here, and nothing else changes: the state drops a kept value whenever one
   of its inputs changes for an object it is kept for, and computes it again when it is next read. A test holds
   each rule's parameters to its row.
3. Running sums are not dropped but moved: the state adds and removes each pod as it changes, and counts them again
   when the release changes (accounting.sums).
4. The NUMA attributes are the state's from its start (the operator's ``--numa-attribute``, audit's): views keep only
   those attributes (views.slices, rule 6), so they never change under a state.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any, Final, NamedTuple

from draledger.core.accounting.charges import pod_charge
from draledger.core.accounting.contributions import contribution
from draledger.core.accounting.fingerprints import mapping_fingerprint
from draledger.core.accounting.footprints import plain_footprint
from draledger.core.accounting.uses import claim_facts
from draledger.core.accounting.zones import zone_capacity


class Input(StrEnum):
    """What a kept value may be computed from."""

    POD = "pod"  # a pod's view
    CLAIM = "claim"  # a claim's view
    CONSUMERS = "consumers"  # the counted pods that consume a claim
    POOL = "pool"  # a pool's slices: its newest generation, its devices, whether it is complete
    RELEASE = "release"  # whose rules apply
    ATTRIBUTES = "attributes"  # the NUMA attributes zones are read by (rule 4)


class Per(StrEnum):
    """What a kept value is kept per."""

    CLAIM = "claim"
    POD = "pod"
    NODE = "node"


class Kept(NamedTuple):
    rule: Callable[..., Any]
    per: Per
    inputs: frozenset[Input]


I = Input  # noqa: E741  (the table reads better with short names)
KEPT: Final[dict[str, Kept]] = {
    "contribution": Kept(contribution, Per.CLAIM, frozenset({I.CLAIM, I.POOL, I.ATTRIBUTES, I.RELEASE})),
    "facts": Kept(claim_facts, Per.CLAIM, frozenset({I.CLAIM, I.CONSUMERS, I.POOL, I.ATTRIBUTES, I.RELEASE})),
    "charge": Kept(pod_charge, Per.POD, frozenset({I.POD, I.CLAIM, I.CONSUMERS, I.POOL, I.ATTRIBUTES, I.RELEASE})),
    "sums": Kept(plain_footprint, Per.NODE, frozenset({I.POD, I.RELEASE})),
    "fingerprint": Kept(mapping_fingerprint, Per.NODE, frozenset({I.POOL, I.RELEASE})),
    "zone_capacity": Kept(zone_capacity, Per.NODE, frozenset({I.POOL, I.ATTRIBUTES, I.RELEASE})),
}
# Rule 1: the input each parameter name of a rule stands for (``devices``: a node's devices, from its pools), or the
# kept value it is (whose inputs then count too).
PARAMETERS: Final[dict[str, Input | str]] = {
    "pod": I.POD, "claim": I.CLAIM, "consumers": I.CONSUMERS, "pools": I.POOL, "devices": I.POOL,
    "release": I.RELEASE, "attributes": I.ATTRIBUTES, "contribution": "contribution", "facts": "facts",
}
RUNNING: Final = frozenset({"sums"})  # rule 3: moved, not dropped


def dropped_by(change: Input) -> dict[Per, list[str]]:
    """The kept values a change of ``change`` drops, by what they are kept per (rule 2)."""
    out: dict[Per, list[str]] = {}
    for name, kept in KEPT.items():
        if change in kept.inputs and name not in RUNNING:
            out.setdefault(kept.per, []).append(name)
    return out
