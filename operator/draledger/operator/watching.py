"""Watch-stream observation: when each initial LIST is complete, and whether each stream is alive.

What Kopf's watching layer does is seen through ``kopfcompat``'s wrappers (its internals, pinned); this module fans
what they see out to the observers that registered (``HOOKS.observing``): the runtime (listings, relists, stream
health, the primed resourceVersions) and the writer's mirror of the stored ledgers.

Rules:
1. A stream is *reconnecting* from the moment its watch ends (a timeout, an error, a dropped connection) or a LIST or
   WATCH request for it starts, until that request succeeds. Kopf retries a failing request inside one call (5xx,
   refused connections: its error backoffs, for ever), so nothing else would tell that the stream is down while it
   retries; the runtime holds releases while any stream is reconnecting, and marks it broken at once when an
   attempt is answered with an error (operator.health).
2. The ledgers' own stream is consumed here: each of its events goes to the observers' ``ledger_event`` (the
   writer's mirror, ``stored``) at the stream and not on to Kopf's per-event processing (causes, memories, loggers,
   handler invocation). Every status write of the operator comes back as one such event, about one per pod event
   at a steady pace, and Kopf's processing of it cost about as much as the pod event's own
   (benchmarks/results/scale.md). Kopf still lists, watches, reconnects and relists the ledgers; its registered
   ledger handler sees only what no observer took.
3. Observers are called synchronously and must be cheap; one that raises on a ledger event never ends the stream.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from draledger.core.state import KINDS
from draledger.operator import kopfcompat

__all__ = ["HOOKS", "KINDS", "LEDGERS_KIND", "Hooks", "Observer", "kind_of_url"]

log = structlog.get_logger("draledger")
LEDGERS_KIND = "nodeallocatableledgers"


class Observer(Protocol):
    """What the hooks tell; an observer implements the methods it needs (the others are not called)."""

    def listing_started(self, kind: str) -> None: ...
    def delivered(self, kind: str) -> None: ...
    def listed_object(self, kind: str, uid: str) -> None: ...
    def listing_done(self, kind: str) -> None: ...
    def contact(self, kind: str) -> None: ...
    def answered(self, kind: str) -> None: ...
    def connecting(self, kind: str) -> None: ...
    def broken(self, kind: str, reason: str) -> None: ...
    async def resume_from(self, kind: str) -> str | None: ...
    def ledger_event(self, event_type: str | None, body: Mapping[str, Any]) -> None: ...


def kind_of_url(url: str) -> str | None:
    path = url.split("?", 1)[0].rstrip("/")
    for kind in (*KINDS, LEDGERS_KIND):
        if path.endswith("/" + kind):
            return kind
    return None


@dataclass
class Hooks:
    """Fans what ``kopfcompat``'s wrappers see out to the registered observers (a ``kopfcompat.Tap``)."""

    observers: list[Any] = field(default_factory=list)  # each implements some of ``Observer``

    def each(self, method: str, *args: str) -> None:
        for observer in list(self.observers):
            call = getattr(observer, method, None)
            if call is not None:
                call(*args)

    async def resume_from(self, kind: str) -> str | None:
        """The resourceVersion an observer has listed ``kind`` at (taken once), or None: Kopf lists."""
        for observer in list(self.observers):
            resume_from = getattr(observer, "resume_from", None)
            version = await resume_from(kind) if resume_from is not None else None
            if isinstance(version, str):
                return version
        return None

    def take(self, kind: str, event: Mapping[str, Any]) -> bool:
        """Give a ledger event to the observers (rule 2); whether there was one to take it (else Kopf's handler
        does). Events of other kinds are Kopf's."""
        if kind != LEDGERS_KIND:
            return False
        takers = [t for t in (getattr(o, "ledger_event", None) for o in list(self.observers)) if t is not None]
        for take in takers:
            try:
                take(event.get("type"), event.get("object") or {})
            except Exception:  # a bug here must not end the stream (rule 3)
                log.exception("ledger event not applied")
        return bool(takers)

    @staticmethod
    def kind_of_url(url: str) -> str | None:
        return kind_of_url(url)

    @contextlib.contextmanager
    def observing(self, observer: Any) -> Iterator[None]:
        kopfcompat.install(self)
        self.observers.append(observer)
        try:
            yield
        finally:
            self.observers.remove(observer)


HOOKS = Hooks()
