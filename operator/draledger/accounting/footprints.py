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
        current = total.get(name)
        total[name] = _zero_plus(quantity) if current is None else current + quantity


# id(q) -> (q, ZERO + q). The same few parsed quantities ("100m", "1Gi") start most sums; keeping q in the
# entry keeps its id from being reused. ``ZERO + q`` is a pure function of an immutable q: the memoized
# result is exactly what the addition returns (value, exponent and format).
_ZERO_PLUS: dict[int, tuple[Quantity, Quantity]] = {}


def _zero_plus(quantity: Quantity) -> Quantity:
    hit = _ZERO_PLUS.get(id(quantity))
    if hit is not None and hit[0] is quantity:
        return hit[1]
    result = ZERO + quantity
    if len(_ZERO_PLUS) >= 4096:  # bounded: start over (one-off sums of a ledger pass through here too)
        _ZERO_PLUS.clear()
    _ZERO_PLUS[id(quantity)] = (quantity, result)
    return result


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
            _max_into(peak, added(container, sidecars) if sidecars else container)
    _max_into(requests, peak)
    return requests


def footprint(
    ordinary: Mapping[str, Quantity],
    pod_level: Mapping[str, Quantity],
    overhead: Mapping[str, Quantity],
    claims: Mapping[str, Quantity],
) -> Mapping[str, Quantity]:
    """The pod's footprint D: rule 2, 3 and 4 on top of its ordinary requests.

    The result is only to be read: for a pod with nothing but ordinary requests it is ``ordinary`` itself
    (``q + 0`` is q exactly: the left operand keeps its value and format).
    """
    if not claims and not pod_level and not overhead:
        return ordinary
    total: Resources = {}
    for name in ordinary.keys() | pod_level.keys() | claims.keys():
        if name in pod_level:
            total[name] = pod_level[name]
        else:
            total[name] = ordinary.get(name, ZERO) + claims.get(name, ZERO)
    add_into(total, overhead)
    return total
