"""Explicit, countable fault injection for tests: failed watches, failed writes, mangled watch streams.

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
   ``emulator['list v1/nodes'][:1] << 500 << {"kind": "Status", "apiVersion": "v1", "code": 500}``. A DSL
   slice counts from the first request ever served, though; a list fault (:meth:`Faults.arm_list`) fires
   on the next LIST requests, like the other faults.
5. A write fault may be scoped to the main resource or to its ``status`` subresource (``target``): a PATCH
   takes the fault armed for its object and target first, then for any object and that target, then the
   unscoped ones, which fire on both.
6. A shuffle (:class:`Shuffle`) mangles the watch streams of one resource for its next ``events`` events,
   seeded: some events are sent twice in a row, and some pairs of adjacent events of *different* objects
   within one stream are swapped. Two events of the same object are never reordered (kube-apiserver
   never does that), events are never dropped, and only events a stream has at hand at once are swapped, so
   nothing is held back waiting for a partner.
"""

from __future__ import annotations

import random
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any, Literal

import kmock

__all__ = ["Faults", "Shuffle", "WatchFault", "WriteFault", "WriteTarget", "resource_key"]

WriteTarget = Literal["any", "main", "status"]

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


def _identity(event: dict[str, Any]) -> tuple[Any, Any]:
    meta = (event.get("object") or {}).get("metadata") or {}
    return meta.get("namespace"), meta.get("name")


@dataclass(slots=True)
class Shuffle:
    """Rule 6: duplicates and adjacent swaps of a resource's watch events, while ``events`` remain."""

    events: int
    duplicate: float = 0.25  # probability that an event is sent twice
    swap: float = 0.5  # probability that an event swaps places with the next one (of another object)
    rng: random.Random = field(default_factory=random.Random)
    duplicated: int = 0  # what it did, for assertions and reports
    swapped: int = 0

    def mangle(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The events of one batch (those a stream sends without waiting), duplicated and swapped."""
        out: list[dict[str, Any]] = []
        index = 0
        while index < len(batch) and self.events > 0:
            event = batch[index]
            following = batch[index + 1] if index + 1 < len(batch) else None
            if (
                following is not None
                and self.events >= 2
                and _identity(following) != _identity(event)
                and self.rng.random() < self.swap
            ):
                out += [following, event]
                self.events -= 2
                self.swapped += 1
                index += 2
                continue
            out.append(event)
            if self.rng.random() < self.duplicate:
                out.append(event)
                self.duplicated += 1
            self.events -= 1
            index += 1
        return out + batch[index:]


class Faults:
    """The armed faults, each a queue of one-shot entries per resource and verb."""

    def __init__(self) -> None:
        self._watches: defaultdict[ResourceKey, deque[WatchFault]] = defaultdict(deque)
        # (resource, verb[:target], object name or None for any object) -> faults
        self._writes: defaultdict[tuple[ResourceKey, str, str | None], deque[WriteFault]] = defaultdict(deque)
        self._shuffles: dict[ResourceKey, Shuffle] = {}
        self._lists: defaultdict[ResourceKey, deque[WriteFault]] = defaultdict(deque)

    def arm_watch(self, resource: kmock.resource, fault: WatchFault, times: int) -> None:
        self._watches[resource_key(resource)].extend([fault] * times)

    def arm_write(
        self,
        resource: kmock.resource,
        verb: str,
        fault: WriteFault,
        times: int,
        name: str | None = None,
        target: WriteTarget = "any",
    ) -> None:
        scoped = verb if target == "any" else f"{verb}:{target}"
        self._writes[resource_key(resource), scoped, name].extend([fault] * times)

    def arm_list(self, resource: kmock.resource, fault: WriteFault, times: int) -> None:
        """Fail the next ``times`` LIST requests of the resource (an answer with that status, nothing read)."""
        self._lists[resource_key(resource)].extend([fault] * times)

    def take_list(self, resource: kmock.resource) -> WriteFault | None:
        queue = self._lists.get(resource_key(resource))
        return queue.popleft() if queue else None

    def arm_shuffle(self, resource: kmock.resource, shuffle: Shuffle) -> None:
        """Mangle the resource's watch streams (rule 6); replaces a shuffle armed before."""
        self._shuffles[resource_key(resource)] = shuffle

    def shuffle(self, resource: kmock.resource) -> Shuffle | None:
        """The shuffle armed for the resource, while it has events left."""
        shuffle = self._shuffles.get(resource_key(resource))
        return shuffle if shuffle is not None and shuffle.events > 0 else None

    def take_watch(self, resource: kmock.resource) -> WatchFault | None:
        queue = self._watches.get(resource_key(resource))
        return queue.popleft() if queue else None

    def take_write(
        self, resource: kmock.resource, verb: str, name: str | None = None, subresource: str | None = None
    ) -> WriteFault | None:
        """The next fault armed for this object and target, else for any object, else unscoped (rule 5)."""
        res = resource_key(resource)
        scoped = f"{verb}:{subresource or 'main'}"
        for key in ((res, scoped, name), (res, scoped, None), (res, verb, name), (res, verb, None)):
            queue = self._writes.get(key)
            if queue:
                return queue.popleft()
        return None

    def pending(self, resource: kmock.resource | None = None, kind: str | None = None) -> int:
        """How many armed faults have not fired yet (for assertions), of one resource only if given, and of
        one kind only if given: ``watch``, ``list``, ``patch``, ``create``, or a scoped ``patch:main`` or
        ``patch:status``. Shuffles are not counted."""
        wanted = None if resource is None else resource_key(resource)
        count = 0
        if kind in (None, "watch"):
            count += sum(len(q) for res, q in self._watches.items() if wanted in (None, res))
        if kind in (None, "list"):
            count += sum(len(q) for res, q in self._lists.items() if wanted in (None, res))
        if kind not in ("watch", "list"):
            count += sum(len(q) for (res, verb, _), q in self._writes.items()
                         if wanted in (None, res) and kind in (None, verb))
        return count

    def clear(self) -> int:
        """Disarm everything (shuffles included); returns how many watch, list and write faults had not fired."""
        left = self.pending()
        self._watches.clear()
        self._lists.clear()
        self._writes.clear()
        self._shuffles.clear()
        return left
