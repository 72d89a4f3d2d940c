"""Watch-stream observation: when each initial LIST is complete, and whether each stream is alive.

Kopf gives ``on.event`` handlers no "listing is over" signal (only its ``@kopf.index`` barrier, which costs
O(n²) on large clusters), and no view of stream health. So this module wraps three functions of Kopf's
watching layer, pinned to kopf==1.45.2 (a test fails loudly if they move):

* ``watching.infinite_watch``: sees every raw event before Kopf queues it. Initial-list events
  (``type: None``) are recorded by UID, ``Bookmark.LISTED`` closes the listing. A relist after a broken
  watch (410 Gone) is recorded the same way, so that objects deleted during the gap can be forgotten.
  Each event of the four kinds that Kopf will hand to a worker is counted as delivered: Kopf applies events in
  per-object workers, after the stream has moved on, and a decision must not rest on a picture that lacks one
  already delivered (``Runtime.applied_up_to``).
* ``watching.watch_objs``: an ``ERROR`` event or an exception marks the stream broken. An ``ERROR`` event
  other than 410 Gone ends the stream, which Kopf then watches again from its last resourceVersion, as
  client-go's reflector does: Kopf itself would stop the whole operator on it (a 500 from an apiserver
  that lost its etcd for a moment).
* ``api.request``: a successful LIST or WATCH request for a resource is contact with the server; with a
  server-side watch timeout, a healthy but quiet stream makes contact every ``watch_timeout`` seconds. A
  LIST request starts a listing: a relist is under way from its request on, not from its first object (the
  answer's contact would otherwise make the stream look healthy before any listed object is taken). A WATCH
  request's answer is not yet contact: a watch resumed from an expired resourceVersion is answered 200 and
  refused by its first event (410 Gone), so the stream is only *answered* (``StreamHealth.answered``) until
  its first event, or until a short grace has passed with none.
* ``errors.check_response``: an error answer to one attempt of a LIST or WATCH (Kopf retries inside one
  ``api.request`` call, for ever) marks the stream broken at once, without waiting for the retries to end.
* ``fetching.fetch_objs``: a kind the operator has already listed itself (``draledger.operator.priming``)
  answers Kopf's first listing with no objects and that list's resourceVersion, so the watch resumes from
  there instead of listing everything again. Kopf's later listings (after a 410 Gone) are real ones.

A stream is *reconnecting* from the moment its watch ends (a timeout, an error, a dropped connection) or a
LIST or WATCH request for it starts, until that request succeeds. Kopf retries a failing request inside one
call (5xx, refused connections: its error backoffs, for ever), so nothing else would tell that the stream is
down while it retries; the runtime holds releases while any stream is reconnecting, and marks it broken at
once when an attempt is answered with an error.

The ledgers' own stream is consumed here: each of its events goes to the observers' ``ledger_event`` (the
writer's mirror of what is stored, ``stored``) at the stream and not on to Kopf's per-event processing
(causes, memories, loggers, handler invocation). Every status write of the operator comes back as one such
event, about one per pod event at a steady pace, and Kopf's processing of it cost about as much as the pod
event's own (benchmarks/results/scale.md). Kopf still lists, watches,
reconnects and relists the ledgers; its registered ledger handler sees only what no observer took.

Rules: the wrappers only observe; they never drop, reorder or alter an event of the four kinds (the
exceptions: the first listing of a primed kind is empty because its objects are already in the state, and an
ERROR event other than 410 ends its stream instead of the operator).
Observers are called synchronously and must be cheap.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog
from kopf._cogs.clients import api as kopf_api
from kopf._cogs.clients import errors as kopf_errors
from kopf._cogs.clients import fetching as kopf_fetching
from kopf._cogs.clients import watching as kopf_watching

log = structlog.get_logger("draledger")
KINDS = ("nodes", "pods", "resourceslices", "resourceclaims")
LEDGERS_KIND = "nodeallocatableledgers"


class Observer(Protocol):
    """What the hooks tell; an observer implements the methods it needs (the others are not called)."""

    def listing_started(self, kind: str) -> None: ...
    def listed_object(self, kind: str, uid: str) -> None: ...
    def listing_done(self, kind: str) -> None: ...
    def contact(self, kind: str) -> None: ...
    def delivered(self, kind: str) -> None: ...
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
    """Installs the wrappers once per process and fans observations out to registered observers."""

    observers: list[Any] = field(default_factory=list)  # each implements some of ``Observer``
    installed: bool = False
    originals: dict[str, Any] = field(default_factory=dict)  # Kopf's functions the wrappers call

    def _each(self, method: str, *args: str) -> None:
        for observer in list(self.observers):
            call = getattr(observer, method, None)
            if call is not None:
                call(*args)

    async def _resume_from(self, kind: str) -> str | None:
        """The resourceVersion an observer has listed ``kind`` at (taken once), or None: Kopf lists."""
        for observer in list(self.observers):
            resume_from = getattr(observer, "resume_from", None)
            version = await resume_from(kind) if resume_from is not None else None
            if isinstance(version, str):
                return version
        return None

    def _take_ledger(self, event: Mapping[str, Any]) -> bool:
        """Give a ledger event to the observers; whether there was one to take it (else Kopf's handler does)."""
        takers = [t for t in (getattr(o, "ledger_event", None) for o in list(self.observers)) if t is not None]
        for take in takers:
            try:
                take(event.get("type"), event.get("object") or {})
            except Exception:  # a bug here must not end the stream
                log.exception("ledger event not applied")
        return bool(takers)

    def install(self) -> None:
        if self.installed:
            return
        self.originals["infinite_watch"] = kopf_watching.infinite_watch
        original_fetch = kopf_fetching.fetch_objs
        original_watch = kopf_watching.watch_objs
        self.originals["request"] = kopf_api.request
        original_check = kopf_errors.check_response
        hooks = self

        async def infinite_watch(*, resource: Any, **kwargs: Any) -> AsyncIterator[Any]:
            kind = resource.plural
            ledgers = kind == LEDGERS_KIND
            async for event in hooks.originals["infinite_watch"](resource=resource, **kwargs):
                if event is kopf_watching.Bookmark.LISTED:
                    hooks._each("listing_done", kind)
                elif isinstance(event, dict):
                    if event.get("type") is None:
                        uid = (event.get("object") or {}).get("metadata", {}).get("uid", "")
                        hooks._each("listed_object", kind, uid)
                    else:
                        hooks._each("contact", kind)
                    if not ledgers and event.get("type") != "BOOKMARK":  # Kopf queues it to a worker
                        hooks._each("delivered", kind)
                    if ledgers and hooks._take_ledger(event):
                        continue
                yield event

        async def watch_objs(*, resource: Any, **kwargs: Any) -> AsyncIterator[Any]:
            kind = resource.plural
            try:
                async for event in original_watch(resource=resource, **kwargs):
                    if isinstance(event, dict) and event.get("type") == "ERROR":
                        code = (event.get("object") or {}).get("code")
                        hooks._each("broken", kind, f"watch error {code}")
                        if code != 410:  # Kopf ends the operator on it; client-go's reflector watches again
                            log.warning("watch error event; watching again", kind=kind, code=code,
                                        message=str((event.get("object") or {}).get("message", ""))[:200])
                            return
                    yield event
            except Exception as error:
                hooks._each("broken", kind, f"watch failed: {type(error).__name__}")
                raise
            finally:  # whatever ended the stream, it is not live until a new request succeeds
                hooks._each("connecting", kind)

        async def request(*args: Any, **kwargs: Any) -> Any:
            url = str(kwargs.get("url", args[1] if len(args) > 1 else ""))
            method = str(kwargs.get("method", args[0] if args else "")).upper()
            kind = kind_of_url(url)
            if kind and method == "GET":  # a LIST or a WATCH: Kopf writes nothing to these resources
                hooks._each("connecting", kind)
                if "watch=true" not in url:  # a LIST: a listing is under way from its first request on
                    hooks._each("listing_started", kind)
            try:
                response = await hooks.originals["request"](*args, **kwargs)
            except Exception as error:
                if kind:
                    hooks._each("broken", kind, f"request failed: {type(error).__name__}")
                raise
            if kind and getattr(response, "status", 500) < 400:
                hooks._each("answered" if "watch=true" in url else "contact", kind)
            return response

        async def check_response(response: Any) -> None:
            try:
                await original_check(response)
            except Exception:
                kind = kind_of_url(str(getattr(response, "url", "")))
                if kind and str(getattr(response, "method", "")).upper() == "GET":
                    hooks._each("broken", kind, f"request answered {getattr(response, 'status', '?')}")
                raise

        async def fetch_objs(*, resource: Any, **kwargs: Any) -> AsyncIterator[tuple[Any, str]]:
            version = await hooks._resume_from(resource.plural)
            if version is not None:  # primed: the watch starts where our own LIST ended
                yield [], version
                return
            async for chunk in original_fetch(resource=resource, **kwargs):
                yield chunk

        kopf_watching.infinite_watch = infinite_watch
        kopf_fetching.fetch_objs = fetch_objs
        kopf_watching.watch_objs = watch_objs
        kopf_api.request = request
        kopf_errors.check_response = check_response
        self.installed = True

    @contextlib.contextmanager
    def observing(self, observer: Any) -> Any:
        self.install()
        self.observers.append(observer)
        try:
            yield
        finally:
            self.observers.remove(observer)


HOOKS = Hooks()


@dataclass
class StreamHealth:
    """Pure bookkeeping of one kind's stream: times are passed in, never read here."""

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

    def broken(self, now: float, reason: str) -> None:
        if self.broken_since is None:
            self.broken_since = now
            self.restarts += 1
        self.broken_reason = reason

    def stale_reason(self, kind: str, now: float, window: float) -> str:
        """Why this stream's data may be older than the window ("" when it is fresh)."""
        # The text must not change while the state does not: it becomes a condition message, and a
        # changing message would rewrite every ledger each second.
        if self.broken_since is not None and now - self.broken_since > window:
            return f"the {kind} watch has been broken for more than {window:g}s ({self.broken_reason})"
        if self.last_contact is not None and now - self.last_contact > window:
            return f"no contact with the {kind} watch for more than {window:g}s"
        return ""
