"""Resource lists: maps from a resource name to an exact quantity, and the arithmetic kube-scheduler does on them.

Rules (component-helpers ``resource/helpers.go``: ``addResourceList``, ``maxResourceList``,
``aggregateContainerResourcesByFn``):
1. A sum or a max over lists is taken name by name; a name missing from one list counts as absent, not as 0
   (``max`` keeps it only if some list has it).
2. Containers aggregate as ``max(Σ regular + Σ sidecars, max over regular init containers of (its requests +
   the sidecars declared before it))``; a sidecar is an init container with ``restartPolicy: Always``.
   ``extra`` adds to a container's own requests before it enters the aggregate (v1.38 places a claim's
   ``perContainer`` overhead there, so a regular init container pays it only in its own peak).
Lists handed in are never changed; results are new dicts, except where a docstring says "only to be read".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from draledger.core.quantities import Quantity

Resources = dict[str, Quantity]


def add_into(total: Resources, more: Mapping[str, Quantity]) -> None:
    for name, quantity in more.items():
        current = total.get(name)
        total[name] = quantity if current is None else current + quantity


def max_into(total: Resources, other: Mapping[str, Quantity]) -> None:
    for name, quantity in other.items():
        current = total.get(name)
        if current is None or quantity > current:
            total[name] = quantity


def plus(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> Resources:
    out = dict(a)
    add_into(out, b)
    return out


def maximum(*lists: Mapping[str, Quantity] | None) -> Resources:
    """``max`` of the lists given, a ``None`` list left out (Go's nil)."""
    out: Resources = {}
    for requests in lists:
        if requests is not None:
            max_into(out, requests)
    return out


class Entry(NamedTuple):
    """One container as the aggregate sees it (rule 2)."""

    name: str
    requests: Mapping[str, Quantity]
    init: bool
    restartable: bool


_NOTHING: Mapping[str, Mapping[str, Quantity]] = {}


def aggregate(entries: Iterable[Entry], extra: Mapping[str, Mapping[str, Quantity]] = _NOTHING) -> Resources:
    """Rule 2 over the pod's containers, in spec order (init containers first is not required: the regular
    containers' sum and the init peak are independent); ``extra[name]`` is added to that container's own
    requests."""
    total: Resources = {}
    sidecars: Resources = {}
    peak: Resources = {}
    for entry in entries:
        own = entry.requests
        more = extra.get(entry.name) if extra else None
        if more:
            own = plus(own, more)
        if not entry.init:
            add_into(total, own)
        elif entry.restartable:
            add_into(total, own)
            add_into(sidecars, own)
            max_into(peak, sidecars)
        else:
            max_into(peak, plus(own, sidecars))
    max_into(total, peak)
    return total
