"""Pod footprints, as each release's kube-scheduler computes them (component-helpers ``resource.PodRequests`` with
``UseStatusResources`` and ``UseDRANodeAllocatableResourceClaimStatus``; v0.36.3, v0.37.2, v0.38.0-beta.0).

A pod's DRA part is a ``DraCharge``: ``fixed`` (each claim's mapping and ``perPod``: the whole pod lifetime) and
``per_container`` (each claim's ``perContainer``, by referencing container, once per listing).

Rules:
1. The ordinary requests are the view's aggregate (views.pods, rule 2).
2. v1.36 and v1.37 add the whole DRA part *outside* the init-container max. v1.38 (``aggregateContainerResourcesByFn``
   with ``draNodeAllocatableResources``) adds each container's ``perContainer`` to that container's own requests: a
   regular container or sidecar pays it in the sum, a non-restartable init container only in its own peak, and a
   name that is no container of the spec pays nothing; ``fixed`` is added outside the max. So in v1.38
   ``requested ≠ podRequests + claims`` even without pod-level resources.
3. In-place resize (views.pods, rule 4). v1.36: the resized containers' ``max(spec, actuated, allocated)``
   aggregated, then the DRA part. v1.37: ``max(spec + DRA, actuated, allocated + DRA)`` of the three aggregates;
   v1.38 the same with rule 2's placement in the spec and allocated aggregates; actuated gets no DRA in either,
   and the pod-level status maps, which hold the claims already, get nothing added. An Infeasible resize leaves
   the spec aggregate out.
4. Pod-level requests (cpu, memory, hugepages-*) replace all of the above for their resources, DRA included; a
   pod resized in place charges the effective pod-level requests its status gives (views.pods, rule 5: v1.36 for
   the names the spec sets, v1.37 and v1.38 for every supported name of the maximum).
5. ``spec.overhead`` is added last, always.
6. ``status_charge``: the DRA part the release's scheduler charges a bound pod, read from its
   ``nodeAllocatableResourceClaimStatuses`` (``NodeInfo`` charges every bound pod this way): entries of the shape
   the release knows (v1.36 ``resources``; v1.37 and v1.38 ``mapping`` and ``overhead``), ``perContainer`` once per
   listed container.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from draledger.core.quantities import ZERO, Quantity
from draledger.core.releases import Release, status_shape
from draledger.core.resources import Resources, add_into, aggregate, max_into, plus
from draledger.core.views import ClaimStatus, PodView

__all__ = ["NO_CHARGE", "DraCharge", "entry_charge", "footprint", "plain_footprint", "status_charge"]


class DraCharge(NamedTuple):
    """A pod's DRA part (only to be read)."""

    fixed: Mapping[str, Quantity]
    per_container: Mapping[str, Mapping[str, Quantity]]

    def total(self) -> Resources:
        """All of it, as v1.36 and v1.37 add it outside the max: the pod's part of the claims stream."""
        out = dict(self.fixed)
        for amounts in self.per_container.values():
            add_into(out, amounts)
        return out


NO_CHARGE = DraCharge({}, {})


def footprint(pod: PodView, dra: DraCharge, release: Release) -> Mapping[str, Quantity]:
    """The pod's footprint D (rules 1 to 5); only to be read (a plain pod's is its view's own dict)."""
    resize = pod.resize
    plain = not dra.fixed and not dra.per_container
    if plain and resize is None and not pod.pod_level and not pod.overhead:
        return pod.ordinary
    if release == "v1.38" and not plain:
        total = _v138(pod, dra)
    else:
        claims = NO_TOTAL if plain else dra.total()
        if resize is None:
            total = plus(pod.ordinary, claims)
        elif release == "v1.36":
            total = plus(resize.effective136, claims)
        else:
            total = {} if resize.infeasible else plus(pod.ordinary, claims)
            max_into(total, resize.actuated137)
            max_into(total, resize.allocated137 if resize.pod_level_maps else plus(resize.allocated137, claims))
    if pod.pod_level:
        _pod_level(pod, total, release)
    add_into(total, pod.overhead)
    return total


NO_TOTAL: Mapping[str, Quantity] = {}


def _v138(pod: PodView, dra: DraCharge) -> Resources:
    """Rules 2 and 3 for v1.38: per-container placement in the spec and allocated aggregates."""
    layout = pod.layout
    resize = pod.resize
    if layout is None:  # a view built without its containers: the v1.37 placement is all that can be done
        spec = plus(pod.ordinary, dra.total())
    else:
        spec = plus(aggregate(layout.spec, dra.per_container), dra.fixed)
    if resize is None:
        return spec
    total = {} if resize.infeasible else spec
    max_into(total, resize.actuated137)
    if resize.pod_level_maps:
        max_into(total, resize.allocated137)
    elif layout is not None and layout.allocated is not None:
        max_into(total, plus(aggregate(layout.allocated, dra.per_container), dra.fixed))
    else:
        max_into(total, plus(resize.allocated137, dra.total()))
    return total


def _pod_level(pod: PodView, total: Resources, release: Release) -> None:
    """Rule 4, in place."""
    resize = pod.resize
    if release == "v1.36":
        effective = resize.pod_level136 if resize is not None and resize.pod_level136 is not None else None
        for name, quantity in pod.pod_level.items():
            total[name] = effective.get(name, ZERO) if effective is not None else quantity
        return
    level = resize.pod_level137 if resize is not None and resize.pod_level137 is not None else pod.pod_level
    total.update(level)


def plain_footprint(pod: PodView, release: Release) -> Mapping[str, Quantity]:
    """The pod's footprint without claims (only to be read)."""
    return footprint(pod, NO_CHARGE, release)


def status_charge(pod: PodView, release: Release) -> DraCharge:
    """Rule 6: what the release's scheduler charges the bound pod for its claims, from its status."""
    statuses = pod.claim_statuses
    if not statuses:
        return NO_CHARGE
    shape = status_shape(release)
    fixed: Resources = {}
    per_container: dict[str, Resources] = {}
    for status in statuses:
        if status.shape != shape:
            continue
        add_into(fixed, status.mapping)
        add_into(fixed, status.per_pod)
        if status.per_container:
            for container in status.containers:
                add_into(per_container.setdefault(container, {}), status.per_container)
    if not fixed and not per_container:
        return NO_CHARGE
    return DraCharge(fixed, per_container)


def entry_charge(status: ClaimStatus, release: Release) -> DraCharge:
    """Rule 6 for one status entry: what the scheduler charged for that one claim."""
    if status.shape != status_shape(release):
        return NO_CHARGE
    per_container: dict[str, Resources] = {}
    if status.per_container:
        for container in status.containers:  # once per listing, as status_charge
            add_into(per_container.setdefault(container, {}), status.per_container)
    return DraCharge(plus(status.mapping, status.per_pod), per_container)
