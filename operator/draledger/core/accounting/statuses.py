"""The ``status.nodeAllocatableResourceClaimStatuses`` the scheduler would have written for a pod.

Rules (kube-scheduler's DynamicResources plugin):
1. One entry per claim that has at least one allocated device with node-allocatable mappings, sorted by
   ``resourceClaimName`` (the real ResourceClaim name, the generated one for template claims).
2. ``containers``: the init containers, then the containers, in spec order, one entry per reference
   (scheduler v1.36 lists a container that names the claim twice twice, and v1.36 stores that). v1.37's API
   refuses the duplicate (the scheduler then fails the pod for ever): in the v1.37 shape each container once.
3. v1.36 shape: ``resources`` (the mapping part). v1.37 shape: ``mapping`` and ``overhead`` lists, sorted by
   resource name.
4. Only when every claim of the pod resolves, and no mapped claim is shared across pods (overhead-only
   claims may be shared in v1.37): otherwise there is no single right answer, and nothing is written.
"""

from __future__ import annotations

from typing import Any

from draledger.core.accounting.catalog import Catalog
from draledger.core.accounting.contributions import contribution
from draledger.core.views import PodView


def planned_statuses(
    pod: PodView, catalog: Catalog, shape: str, numa_attributes: tuple[str, ...]
) -> list[dict[str, Any]] | None:
    """The entries to write, ``[]`` when the scheduler would write none, or None when unsure."""
    entries: dict[str, dict[str, Any]] = {}
    for pod_claim in pod.claims:
        if pod_claim.claim_name is None:
            return None
        key = (pod.namespace, pod_claim.claim_name)
        claim = catalog.claim(key)
        if claim is None or not claim.allocated:
            return None
        contrib = contribution(claim, catalog, numa_attributes)
        if not contrib.resolved or contrib.problems or (contrib.mapping and len(catalog.consumers(key)) > 1):
            return None  # a mapped claim shared by several pods has no single right answer
        devices = [catalog.device(r.pool_key, r.device) for r in claim.results]
        if not any(d is not None and d.mappings for d in devices):
            continue
        entry = entries.setdefault(
            pod_claim.claim_name, {"resourceClaimName": pod_claim.claim_name, "containers": []}
        )
        if shape == "v1.37":
            entry["containers"] += [c for c in pod_claim.containers if c not in entry["containers"]]
        else:
            entry["containers"] += pod_claim.references
        if shape == "v1.37":
            if contrib.mapping:
                entry["mapping"] = [
                    {"name": r, "quantity": str(q)} for r, q in sorted(contrib.mapping.items())
                ]
            overhead = []
            for name in sorted(contrib.per_pod.keys() | contrib.per_container.keys()):
                item: dict[str, str] = {"name": name}
                if name in contrib.per_pod:
                    item["perPod"] = str(contrib.per_pod[name])
                if name in contrib.per_container:
                    item["perContainer"] = str(contrib.per_container[name])
                overhead.append(item)
            if overhead:
                entry["overhead"] = overhead
        else:
            entry["resources"] = {r: str(q) for r, q in sorted(contrib.mapping.items())}
    return [entries[name] for name in sorted(entries)]
