"""Explicit, countable fault injection for tests: failed watches, failed writes.

Rules:
1. A fault is armed for one resource (all its versions: storage is shared) and fires on the next matching
   request(s), ``times`` times, then disarms itself. Faults never fire on their own.
2. A write fault (PATCH, or POST for creates) answers a ``kind: Status`` error with the given code **and
   applies nothing**: that is the difference with kmock's DSL (``emulator['patch v1/pods'] << 500``), where
   the emulator would still store the patch and only the answer would be an error.
3. A watch fault answers the next watch either as an ``ERROR`` event in a 200 stream that then ends (how
   kube-apiserver reports 410 Expired) or as an HTTP error status (how it reports most other failures).
   By default 410 is an event and anything else an HTTP status.
4. Errors on reads (list, get, discovery) need no emulator support: kmock's DSL already answers them
   without side effects, and a slice limits how often, e.g. the first list only:
   ``emulator['list v1/nodes'][:1] << 500 << {"kind": "Status", "apiVersion": "v1", "code": 500}``.
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass

import kmock

__all__ = ["Faults", "WatchFault", "WriteFault", "resource_key"]

ResourceKey = tuple[str, str]  # (group, plural): a fault applies to every version of a resource


def resource_key(resource: kmock.resource) -> ResourceKey:
    return (str(resource.group or ""), str(resource.plural))


@dataclass(frozen=True, slots=True)
class WatchFault:
    status: int
    as_event: bool


@dataclass(frozen=True, slots=True)
class WriteFault:
    status: int
    retry_after: int | None


class Faults:
    """The armed faults, each a queue of one-shot entries per resource and verb."""

    def __init__(self) -> None:
        self._watches: defaultdict[ResourceKey, deque[WatchFault]] = defaultdict(deque)
        # (resource, verb, object name or None for any object) -> faults
        self._writes: defaultdict[tuple[ResourceKey, str, str | None], deque[WriteFault]] = defaultdict(deque)

    def arm_watch(self, resource: kmock.resource, fault: WatchFault, times: int) -> None:
        self._watches[resource_key(resource)].extend([fault] * times)

    def arm_write(
        self, resource: kmock.resource, verb: str, fault: WriteFault, times: int, name: str | None = None
    ) -> None:
        self._writes[resource_key(resource), verb, name].extend([fault] * times)

    def take_watch(self, resource: kmock.resource) -> WatchFault | None:
        queue = self._watches.get(resource_key(resource))
        return queue.popleft() if queue else None

    def take_write(self, resource: kmock.resource, verb: str, name: str | None = None) -> WriteFault | None:
        """The next fault armed for this object by name, else for any object of the resource."""
        for key in ((resource_key(resource), verb, name), (resource_key(resource), verb, None)):
            queue = self._writes.get(key)
            if queue:
                return queue.popleft()
        return None

    def pending(self) -> int:
        """How many armed faults have not fired yet (for assertions)."""
        return sum(map(len, self._watches.values())) + sum(map(len, self._writes.values()))
