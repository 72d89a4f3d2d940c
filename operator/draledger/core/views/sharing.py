"""One dict for equal requests: the pods of one template request the same, and views never change.

Rules:
1. ``shared`` gives the dict already kept for requests equal to the ones given, or keeps these: up to ``SHARED_CAP``
   distinct ones, for the life of the process (a cluster has few distinct templates).
2. Empty requests are the one empty dict ``NONE``.

Measured (docs/performance.md, "Memos"): the state of 3,000 pods holds 0.84 × the memory with it, at no cost in
time; the table is process-wide because views are read before any state holds them (priming, a dump's load).
"""

from __future__ import annotations

from typing import Final

from draledger.core.quantities import Quantity

Requests = dict[str, Quantity]
NONE: Final[Requests] = {}  # the requests most pods do not have (pod-level, overhead): one shared empty dict
SHARED_CAP: Final = 1 << 16
_SHARED: dict[tuple[tuple[str, Quantity], ...], Requests] = {}  # rule 1


def shared(requests: Requests) -> Requests:
    """The one dict kept for requests equal to ``requests`` (rule 1): ``requests`` itself the first time."""
    if not requests:
        return NONE
    key = tuple(requests.items())
    found = _SHARED.get(key)
    if found is not None:
        return found
    if len(_SHARED) < SHARED_CAP:
        _SHARED[key] = requests
    return requests
