"""How a pod uses its ResourceClaims: the one path from a pod to its claims, their contributions and the DRA part
of its footprint. The ledger (``charges``), the gate's decision (``release``) and the status the scheduler would
write (``statuses``) all start here; each keeps only its own policy.

Rules:
1. Each ResourceClaim the pod uses is one use, however many ``spec.resourceClaims`` entries name it
   (views.pods rule 3): kube-scheduler keys its status by claim, and lists in it every container that references
   any of those entries, once per reference, init containers first, in spec order.
2. A use holds the claim (None: it does not exist), its contribution under the catalog's release (None with it),
   the counted pods that consume it, the pod's status entry for it, and whether the pod carries the claim's
   mapping part (``owner``: the first consumer by namespace/name, or the pod itself when no counted pod
   consumes it yet, as for a pod being released). What a use reads of its claim is the claim's ``ClaimFacts``, kept
   per claim by the state (accounting.inputs): the rules here read plain data and call nothing back.
3. ``share``: what one use charges the pod, as a ``DraCharge``: the mapping if the pod is its owner, ``perPod``,
   and ``perContainer`` for each distinct referencing container (a container listed twice is refused by the
   v1.37 and v1.38 API; v1.36 has no overhead). The claim that satisfied the pod's extended resources is
   referenced by no container, so it pays no ``perContainer``.
4. Template claims not generated yet are no use: nothing can be looked up for them.
5. A claim's facts also name the pools of its results whose newest generation is incomplete (``incomplete``): the
   gate holds a pod on them (accounting.release, rule 4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from draledger.core.accounting.contributions import Contribution
from draledger.core.accounting.footprints import DraCharge
from draledger.core.keys import ClaimKey, PodKey, PoolKey
from draledger.core.pools import Pool
from draledger.core.releases import Release, status_shape
from draledger.core.resources import Resources, add_into
from draledger.core.views import ClaimStatus, ClaimView, PodView


class ClaimFacts(NamedTuple):
    """What a use reads of its claim (rules 2 and 5), as the state keeps it per claim."""

    claim: ClaimView | None  # None: it does not exist
    contribution: Contribution | None  # None with it
    consumers: tuple[PodKey, ...]  # every counted pod that consumes the claim, sorted
    incomplete: tuple[str, ...] = ()  # ``driver/pool`` of its results' pools that are incomplete (rule 5)


def claim_facts(
    claim: ClaimView | None, contribution: Contribution | None, consumers: tuple[PodKey, ...],
    pools: Mapping[PoolKey, Pool],
) -> ClaimFacts:
    """The claim's facts (rules 2 and 5)."""
    incomplete: tuple[str, ...] = ()
    if claim is not None and claim.results:
        incomplete = tuple(sorted({f"{r.driver}/{r.pool}" for r in claim.results
                                   if (pool := pools.get(r.pool_key)) is None or not pool.complete}))
    return ClaimFacts(claim, contribution, consumers, incomplete)


class ClaimUse(NamedTuple):
    """One claim as one pod uses it (rule 2)."""

    key: ClaimKey
    claim: ClaimView | None
    contribution: Contribution | None  # None: the claim does not exist
    consumers: Sequence[PodKey]  # every counted pod that consumes the claim
    references: tuple[str, ...]  # one container per reference, init containers first (rule 1)
    extended: bool  # the claim of the pod's extended resources: no container references it
    status: ClaimStatus | None  # the pod's status entry for it
    owner: bool  # the pod carries the claim's mapping part
    incomplete: tuple[str, ...] = ()  # rule 5

    @property
    def containers(self) -> tuple[str, ...]:
        """The distinct referencing containers, in order."""
        return tuple(dict.fromkeys(self.references))

    @property
    def resolved(self) -> bool:
        return self.contribution is not None and self.contribution.resolved

    def share(self, with_mapping: bool | None = None) -> DraCharge:
        """Rule 3 (only for a resolved use); ``with_mapping`` overrides ``owner``."""
        contrib = self.contribution
        assert contrib is not None
        fixed: Resources = dict(contrib.mapping) if (self.owner if with_mapping is None else with_mapping) else {}
        add_into(fixed, contrib.per_pod)
        per_container = {c: contrib.per_container for c in self.containers} if contrib.per_container else {}
        return DraCharge(fixed, per_container)


def claim_keys(pod: PodView) -> tuple[ClaimKey, ...]:
    """The ResourceClaims the pod uses, by (namespace, name), in the order of its claims: the template claims not
    generated yet aside (rule 4)."""
    return tuple(ClaimKey((pod.namespace, c.claim_name)) for c in pod.claims if c.claim_name is not None)


def claim_uses(pod: PodView, facts: Mapping[ClaimKey, ClaimFacts], release: Release) -> tuple[ClaimUse, ...]:
    """The pod's uses (rules 1, 2 and 4), in the order of its claims; ``facts`` holds every key of ``claim_keys``."""
    shape = status_shape(release)  # a status entry of the other shape is one the release never read
    statuses = {s.claim_name: s for s in pod.claim_statuses or () if s.shape == shape}
    uses = []
    for pod_claim in pod.claims:
        if pod_claim.claim_name is None:
            continue
        key = ClaimKey((pod.namespace, pod_claim.claim_name))
        found = facts[key]
        consumers = found.consumers
        uses.append(ClaimUse(
            key=key,
            claim=found.claim,
            contribution=found.contribution,
            consumers=consumers,
            references=pod_claim.references,
            extended=pod_claim.extended,
            status=statuses.get(pod_claim.claim_name),
            owner=not consumers or consumers[0] == pod.key,
            incomplete=found.incomplete,
        ))
    return tuple(uses)


def dra_charge(shares: Sequence[DraCharge]) -> DraCharge:
    """The sum of several uses' shares: the DRA part of one pod's footprint."""
    if len(shares) == 1:
        return shares[0]
    fixed: Resources = {}
    per_container: dict[str, Resources] = {}
    for share in shares:
        add_into(fixed, share.fixed)
        for container, amounts in share.per_container.items():
            add_into(per_container.setdefault(container, {}), amounts)
    return DraCharge(fixed, per_container)
