"""Stream health: whether each watch stream is alive now, and whether data it brought may be old.

Every time here is handed in (the runtime's clock); nothing reads one.

Rules:
1. A stream is *broken* from an error (an ERROR event, a failed request, an error answer to one attempt) until it
   makes contact again (an event, or a successful LIST or WATCH request); *reconnecting* from the moment its watch
   ends or a request for it starts, until that request is answered; *relisting* from its relist's first LIST
   request until every object the relist listed is applied (the runtime says when).
2. A watch request that is answered is not yet contact: resumed from an expired resourceVersion, it is answered 200
   and refused by its first event (410 Gone). It counts as *resuming* until its first event, or ``RECONNECT_GRACE``
   with none.
3. ``issues`` names each stream that is not healthy this moment, and whether it is only being renewed: a
   reconnection shorter than ``RENEWAL_PATIENCE``, or a resumption shorter than ``RECONNECT_GRACE``, is an ordinary
   renewal of a watch request (every ``--watch-timeout``). A renewal's request is answered in milliseconds by an
   idle API server and in most of a second by a loaded one (the fault suite's emulator, beside CI's builds and
   control planes, answered in up to 0.8 s), so a fixed grace of a quarter second counted a loaded server's every
   renewal as an outage; a broken stream (an error answer, a failed request) is an outage at once, whatever its
   length. A stream silent for longer than the freshness window is an issue too. The gate's releaser holds every
   release while there is one (a change made while a stream is down arrives only with the next request, and a
   decision taken meanwhile would rest on a picture that lacks it), and decides nothing during a renewal.
4. ``stale`` says why the ledgers' data may be older than the freshness window (a stream broken, or silent, for
   longer): it becomes the ledgers' ``Fresh`` condition, so its text changes only when the streams' state does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

RECONNECT_GRACE = 0.25  # seconds: an answered watch request not yet refused by a first event (rule 2)
RENEWAL_PATIENCE = 2.0  # seconds: a shorter reconnection is an ordinary renewal of a watch request (rule 3)


@dataclass
class StreamHealth:
    """One kind's stream (rules 1 and 2)."""

    last_contact: float | None = None
    broken_since: float | None = None
    broken_reason: str = ""
    restarts: int = 0
    connecting_since: float | None = None  # the stream ended or a request for it is under way
    answered_at: float | None = None  # its watch request was answered, and no event has come yet

    def contact(self, now: float) -> None:
        self.last_contact = now
        self.broken_since = None
        self.broken_reason = ""
        self.connecting_since = None
        self.answered_at = None

    def answered(self, now: float) -> None:
        """A watch request answered 200: connected, but its first event may still refuse it (410 Gone)."""
        self.contact(now)
        self.answered_at = now

    def connecting(self, now: float) -> None:
        if self.connecting_since is None:
            self.connecting_since = now

    @property
    def reconnecting(self) -> bool:
        """Whether the stream is down now: it ended, and its new request has not been answered yet."""
        return self.connecting_since is not None

    @property
    def down(self) -> bool:
        """Whether a pod held now may have been held for this stream: broken, reconnecting or resuming."""
        return self.broken_since is not None or self.reconnecting or self.answered_at is not None

    def broken(self, now: float, reason: str) -> None:
        if self.broken_since is None:
            self.broken_since = now
            self.restarts += 1
        self.broken_reason = reason

    def stale_reason(self, kind: str, now: float, window: float) -> str:
        """Why this stream's data may be older than the window ("" when it is fresh, rule 4)."""
        if self.broken_since is not None and now - self.broken_since > window:
            return f"the {kind} watch has been broken for more than {window:g}s ({self.broken_reason})"
        if self.last_contact is not None and now - self.last_contact > window:
            return f"no contact with the {kind} watch for more than {window:g}s"
        return ""


class Streams:
    """Every watched kind's stream, and which are relisting (rules 1 to 4)."""

    def __init__(self, kinds: Iterable[str]) -> None:
        self.health = {kind: StreamHealth() for kind in kinds}
        self.relisting: set[str] = set()  # kinds whose relist is under way (rule 1: the runtime says when)

    def __contains__(self, kind: object) -> bool:
        return kind in self.health

    def __getitem__(self, kind: str) -> StreamHealth:
        return self.health[kind]

    def issues(self, now: float, window: float) -> list[tuple[str, bool]]:
        """Rule 3: each stream that is not healthy this moment, why, and whether it is only being renewed."""
        issues = []
        for kind, health in self.health.items():
            since = health.connecting_since
            if kind in self.relisting:
                issues.append((f"the {kind} watch is relisting", False))
            elif health.broken_since is not None:
                issues.append((f"the {kind} watch is broken ({health.broken_reason})", False))
            elif since is not None:
                issues.append((f"the {kind} watch is reconnecting", now - since < RENEWAL_PATIENCE))
            elif health.answered_at is not None and now - health.answered_at < RECONNECT_GRACE:
                issues.append((f"the {kind} watch is resuming", True))  # its first event may be a 410
            elif health.last_contact is None or now - health.last_contact > window:
                issues.append((f"no recent contact with the {kind} watch", False))
        return issues

    def stale(self, kinds: Iterable[str], now: float, window: float) -> str:
        """Rule 4 over ``kinds`` ("" when their data is fresh)."""
        return "; ".join(r for kind in kinds if (r := self.health[kind].stale_reason(kind, now, window)))
