"""Pod footprints, as kube-scheduler computes them (component-helpers ``resource.PodRequests`` with
``UseStatusResources`` and ``UseDRANodeAllocatableResourceClaimStatus``).

Rules:
1. The ordinary requests are the view's aggregate (views.pods, rule 2).
2. DRA claims are added *outside* the init-container max, once per claim charged to the pod.
3. Pod-level ``spec.resources.requests[r]`` (cpu, memory, hugepages-*) replaces all of the above for r: DRA is
   not added. A pod resized in place charges the effective pod-level request its status gives.
4. ``spec.overhead[r]`` is added last, always.
5. In-place resize, by release (views.pods, rule 4). v1.36 (component-helpers v0.36): the resized containers'
   ``max(spec, actuated, allocated)`` aggregated, then the claims. v1.37 (v0.37): ``max(spec + claims,
   actuated, allocated + claims)`` of the three aggregates, per resource; with the pod-level status maps,
   which already hold the claims, nothing is added to them.
"""

from __future__ import annotations

from collections.abc import Mapping

from draledger.core.quantities import ZERO, Quantity
from draledger.core.views import PodView
from draledger.core.views.pods import add_into, max_into

Resources = dict[str, Quantity]
API_VERSIONS = ("v1.36", "v1.37")

__all__ = ["API_VERSIONS", "Resources", "add_into", "footprint", "plain_footprint"]


def _plus(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> Resources:
    out = dict(a)
    add_into(out, b)
    return out


def footprint(pod: PodView, claims: Mapping[str, Quantity], api: str = "v1.36") -> Mapping[str, Quantity]:
    """The pod's footprint D (rules 1 to 5); only to be read (a plain pod's is its view's own dict)."""
    resize = pod.resize
    if resize is None:
        if not claims and not pod.pod_level and not pod.overhead:
            return pod.ordinary
        total = _plus(pod.ordinary, claims) if claims else dict(pod.ordinary)
    elif api == "v1.36":
        total = _plus(resize.effective136, claims)
    else:
        total = {} if resize.infeasible else _plus(pod.ordinary, claims)
        max_into(total, resize.actuated137)
        max_into(total, resize.allocated137 if resize.pod_level_maps else _plus(resize.allocated137, claims))
    if pod.pod_level:
        effective = resize.pod_level if resize is not None and resize.pod_level is not None else pod.pod_level
        for name in pod.pod_level:
            total[name] = effective.get(name, ZERO)
    add_into(total, pod.overhead)
    return total


def plain_footprint(pod: PodView, api: str = "v1.36") -> Mapping[str, Quantity]:
    """The pod's footprint without claims (only to be read)."""
    return footprint(pod, {}, api)
