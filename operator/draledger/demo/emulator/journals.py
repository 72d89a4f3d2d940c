"""The resourceVersion clock and the per-resource change journals that watches replay from.

Rules:
1. One cluster-wide counter, like etcd's revision: every stored change (create, update, status update,
   deletion mark, deletion) takes the next integer; ``resourceVersion`` is its decimal string.
2. Each resource has a bounded journal of its changes in RV order. A journal remembers its ``floor``: every
   change with ``rv > floor`` is still retained. A watch that asks for an RV below the floor gets
   410 Gone ("too old resource version"), as kube-apiserver answers once its watch cache has moved on.
3. A change keeps the object before it (``old``) so that selector-filtered watches can turn a change that
   stops matching into DELETED, and one that starts matching into ADDED, like the apiserver's cacher.
4. Watchers never poll: they wait on the journal's signal, which is set and replaced on every append and on
   every injected disconnect (which also bumps ``epoch`` so that current streams end).
5. Synchronous and loop-agnostic: appending never awaits; ``asyncio.Event`` binds to a loop on first wait.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Change", "ChangeType", "Clock", "Journal"]

ChangeType = Literal["ADDED", "MODIFIED", "DELETED"]


@dataclass(frozen=True, slots=True)
class Change:
    """One stored change: the object after it (with its new RV) and before it (None for a creation)."""

    rv: int
    type: ChangeType
    obj: dict[str, Any]
    old: dict[str, Any] | None


class Clock:
    """The cluster-wide resourceVersion counter."""

    __slots__ = ("_current",)

    def __init__(self, start: int = 0) -> None:
        self._current = start

    @property
    def current(self) -> int:
        return self._current

    def tick(self) -> int:
        self._current += 1
        return self._current


class Journal:
    """The bounded, ordered change history of one resource, with wake-ups for its watchers."""

    __slots__ = ("_changes", "_floor", "_signal", "epoch")

    def __init__(self, limit: int) -> None:
        self._changes: deque[Change] = deque(maxlen=limit)
        self._floor = 0
        self._signal = asyncio.Event()
        self.epoch = 0  # bumped by an injected disconnect; streams started in an older epoch end

    @property
    def floor(self) -> int:
        """Every change with ``rv > floor`` is retained; older RVs are Gone."""
        return self._floor

    @property
    def signal(self) -> asyncio.Event:
        """Set on the next append or disconnect; take it *before* reading, without awaiting in between."""
        return self._signal

    def __len__(self) -> int:
        return len(self._changes)

    def append(self, change: Change) -> None:
        if self._changes.maxlen is not None and len(self._changes) == self._changes.maxlen:
            self._floor = self._changes[0].rv
        self._changes.append(change)
        self._wake()

    def since(self, rv: int) -> list[Change] | None:
        """The retained changes newer than ``rv``, or None if some of them are no longer retained."""
        if rv < self._floor:
            return None
        if not self._changes or self._changes[-1].rv <= rv:
            return []
        newer: list[Change] = []  # from the end: RVs only grow, and a stream asks for the last few
        for change in reversed(self._changes):
            if change.rv <= rv:
                break
            newer.append(change)
        newer.reverse()
        return newer

    def disconnect(self) -> None:
        """End every stream that is currently watching this resource."""
        self.epoch += 1
        self._wake()

    def _wake(self) -> None:
        self._signal.set()
        self._signal = asyncio.Event()
