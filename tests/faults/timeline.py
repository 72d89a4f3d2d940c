"""Every stored change of a scenario, with the moment it was stored and who made it.

A listener on the emulator's store (called synchronously on each change, in RV order, whatever the journal
limit) appends one :class:`Entry` per change. Changes the test makes in-process (the churn, the scenario's
own faults, the emulator's garbage collection that follows them) are marked with the actor set by
:meth:`Timeline.acting`; everything else came in over HTTP, i.e. from the operator.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass

import kmock

from draledger.demo.emulator import Change, ClusterEmulator

OPERATOR = "operator"


@dataclass(frozen=True, slots=True)
class Entry:
    at: float  # time.monotonic() of the pytest process when the change was stored
    plural: str
    change: Change
    actor: str


class Timeline:
    def __init__(self, emulator: ClusterEmulator) -> None:
        self.entries: list[Entry] = []
        self._actor = OPERATOR
        self._stop = emulator.store.listen(self._record)

    def _record(self, resource: kmock.resource, change: Change) -> None:
        self.entries.append(Entry(time.monotonic(), str(resource.plural), change, self._actor))

    @contextlib.contextmanager
    def acting(self, actor: str) -> Iterator[None]:
        """Changes stored inside the block are ``actor``'s (the block must not await)."""
        before, self._actor = self._actor, actor
        try:
            yield
        finally:
            self._actor = before

    def close(self) -> None:
        self._stop()
