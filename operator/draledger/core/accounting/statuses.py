"""The ``status.nodeAllocatableResourceClaimStatuses`` the scheduler would have written for a pod.

Rules (kube-scheduler's DynamicResources plugin, ``buildNodeAllocatableDRAInfo``):
1. One entry per claim the scheduler charges something for (``Contribution.entry``: a mapping that charged, or
   an overhead), sorted by ``resourceClaimName`` (the real ResourceClaim name, the generated one for template
   claims). v1.36.3 writes entries only for the claims allocated in the pod's own scheduling cycle; the ledger
   writes them for every allocated claim, as v1.37 does (docs/accounting.md lists the difference).
2. ``containers``: one per reference, init containers first, in spec order (accounting.uses). The v1.37 and v1.38
   API refuses a container listed twice (v1.37.2 and v1.38.0-beta.0 still write it, and then fail the pod for ever):
   in their shape each container once.
3. v1.36 shape: ``resources`` (the mapping part). v1.37 shape (v1.37, v1.38): ``mapping`` and ``overhead`` lists,
   sorted by resource name.
4. The claim that satisfied the pod's extended resources: v1.38 writes it under its real name with
   ``containers: []``; earlier releases cannot store such an entry (their API refuses the name), so there is no
   right answer to write.
5. Only when every claim of the pod resolves, and no mapped claim is shared across pods (overhead-only claims may
   be shared): otherwise there is no single right answer, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from draledger.core.accounting.uses import ClaimUse
from draledger.core.releases import Release, status_shape
from draledger.core.views import PodView


def planned_statuses(pod: PodView, uses: Sequence[ClaimUse], release: Release) -> list[dict[str, Any]] | None:
    """The entries to write for the pod whose claims' uses are ``uses`` (``ClusterState.uses``), ``[]`` when the
    scheduler would write none, or None when unsure (rules 1 to 5)."""
    shape = status_shape(release)
    if any(c.claim_name is None for c in pod.claims):
        return None
    entries: list[dict[str, Any]] = []
    for use in uses:
        claim, contrib = use.claim, use.contribution
        if claim is None or contrib is None or not claim.allocated:
            return None
        if not contrib.resolved or contrib.problems or (contrib.mapped and len(use.consumers) > 1):
            return None  # a mapped claim shared by several pods has no single right answer
        if not contrib.entry:
            continue
        if use.extended and release != "v1.38":
            return None
        name = use.key[1]
        if shape == "v1.36":
            entries.append({"resourceClaimName": name, "containers": list(use.references),
                            "resources": {r: str(q) for r, q in sorted(contrib.mapping.items())}})
            continue
        entry: dict[str, Any] = {"resourceClaimName": name, "containers": list(use.containers)}
        if contrib.mapping:
            entry["mapping"] = [{"name": r, "quantity": str(q)} for r, q in sorted(contrib.mapping.items())]
        overhead = []
        for resource in sorted(contrib.per_pod.keys() | contrib.per_container.keys()):
            item: dict[str, str] = {"name": resource}
            if resource in contrib.per_pod:
                item["perPod"] = str(contrib.per_pod[resource])
            if resource in contrib.per_container:
                item["perContainer"] = str(contrib.per_container[resource])
            overhead.append(item)
        if overhead:
            entry["overhead"] = overhead
        entries.append(entry)
    return sorted(entries, key=lambda e: e["resourceClaimName"])
