"""Pod footprints, as kube-scheduler computes them (component-helpers resource.PodRequests).

Rules:
1. Ordinary requests: ``max(Σ containers + Σ restartable init containers, max over regular init containers
   of (its request + the restartable init containers declared before it))``; a restartable (sidecar) init
   container is itself compared as the running sum of sidecars up to it.
2. DRA claims are added *outside* that max, once per claim charged to the pod.
3. Pod-level ``spec.resources.requests[r]`` replaces all of the above for r: DRA is not added.
4. ``spec.overhead[r]`` is added last, always.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from draledger.quantities import ZERO, Quantity

Resources = dict[str, Quantity]


def add_into(total: Resources, more: Mapping[str, Quantity]) -> None:
    for name, quantity in more.items():
        total[name] = total.get(name, ZERO) + quantity


def added(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> Resources:
    out = dict(a)
    add_into(out, b)
    return out


def _max_into(total: Resources, other: Mapping[str, Quantity]) -> None:
    for name, quantity in other.items():
        current = total.get(name)
        if current is None or quantity > current:
            total[name] = quantity


def aggregate_containers(
    containers: Iterable[Mapping[str, Quantity]],
    init_containers: Iterable[tuple[Mapping[str, Quantity], bool]],
) -> Resources:
    """The ordinary (claim-free, overhead-free) requests of a pod; init entries are (requests, restartable)."""
    requests: Resources = {}
    for container in containers:
        add_into(requests, container)
    sidecars: Resources = {}
    peak: Resources = {}
    for container, restartable in init_containers:
        if restartable:
            add_into(requests, container)
            add_into(sidecars, container)
            _max_into(peak, sidecars)
        else:
            _max_into(peak, added(container, sidecars))
    _max_into(requests, peak)
    return requests


def footprint(
    ordinary: Mapping[str, Quantity],
    pod_level: Mapping[str, Quantity],
    overhead: Mapping[str, Quantity],
    claims: Mapping[str, Quantity],
) -> Resources:
    """The pod's footprint D: rule 2, 3 and 4 on top of its ordinary requests."""
    total: Resources = {}
    for name in ordinary.keys() | pod_level.keys() | claims.keys():
        if name in pod_level:
            total[name] = pod_level[name]
        else:
            total[name] = ordinary.get(name, ZERO) + claims.get(name, ZERO)
    add_into(total, overhead)
    return total
