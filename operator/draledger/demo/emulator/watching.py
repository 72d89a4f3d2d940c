"""Watch streams: replay from a resourceVersion, filter by selectors, bookmark, time out, expire.

Rules (kube-apiserver's cacher, ``k8s.io/apiserver/pkg/storage/cacher``):
1. Without ``resourceVersion`` (or with ``"0"``, or with ``sendInitialEvents=true``) the stream starts with
   one synthetic ADDED per matching live object, then follows changes newer than the current RV. With
   ``sendInitialEvents=true`` and bookmarks allowed, a BOOKMARK annotated
   ``k8s.io/initial-events-end: "true"`` marks the end of that initial state.
2. With ``resourceVersion=N`` the stream sends only changes with ``rv > N``; if some of them are no longer
   retained it sends one ERROR event with a 410 Expired Status ("too old resource version") and ends.
3. Selectors apply to both sides of a change: matching after but not before → ADDED; before but not
   after → DELETED (the old object with the change's RV); both → MODIFIED; neither → nothing.
4. ``allowWatchBookmarks=true``: a BOOKMARK (kind, apiVersion and the current RV only) after every
   ``bookmark_interval`` seconds without an event. ``timeoutSeconds`` ends the stream cleanly after that
   many seconds of the event loop's clock. An injected disconnect ends it cleanly at once.
5. Every object carries its real RV; events are yielded as plain dicts (kmock writes them as JSON lines).
6. ``mangle`` (fault injection, :class:`~draledger.demo.emulator.faults.Shuffle`) sees each batch of journal
   events a stream sends without waiting, and returns what is sent instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from draledger.demo.emulator import errors
from draledger.demo.emulator.journals import Change
from draledger.demo.emulator.selectors import Selector
from draledger.demo.emulator.store import ResourceSpec, Store

__all__ = ["WatchParams", "stream_events", "transition"]

Event = dict[str, Any]
Render = Callable[[dict[str, Any]], dict[str, Any]]
Scope = Callable[[Mapping[str, Any]], bool]
Mangle = Callable[[list[Event]], list[Event]]
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


@dataclass(frozen=True, slots=True)
class WatchParams:
    since: int | None  # None: start from the current state
    bookmarks: bool
    timeout: float | None
    initial_events: bool

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> WatchParams:
        raw_rv = params.get("resourceVersion") or ""
        raw_timeout = params.get("timeoutSeconds") or ""
        try:
            since = int(raw_rv) if raw_rv not in ("", "0") else None
            timeout = float(raw_timeout) if raw_timeout else None
        except ValueError:
            raise errors.bad_request(f"invalid resourceVersion or timeoutSeconds: {dict(params)}") from None
        initial = params.get("sendInitialEvents") == "true"
        return cls(
            since=None if initial else since,
            bookmarks=params.get("allowWatchBookmarks") == "true",
            timeout=timeout if timeout and timeout > 0 else None,
            initial_events=initial,
        )


def transition(change: Change, scope: Scope, selector: Selector) -> Event | None:
    """The event a watcher with this scope and selector sees for a change (rule 3), if any."""
    if not scope(change.obj):
        return None
    now_matches = change.type != "DELETED" and selector.matches(change.obj)
    was_matching = change.old is not None and selector.matches(change.old)
    if now_matches and was_matching:
        return {"type": "MODIFIED", "object": change.obj}
    if now_matches:
        return {"type": "ADDED", "object": change.obj}
    if was_matching and change.old is not None:
        if change.type == "DELETED":
            return {"type": "DELETED", "object": change.obj}
        old = dict(change.old)
        old["metadata"] = dict(old.get("metadata") or {}, resourceVersion=str(change.rv))
        return {"type": "DELETED", "object": old}
    return None


def _bookmark(spec: ResourceSpec, api_version: str, rv: int, *, initial_end: bool = False) -> Event:
    metadata: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_end:
        metadata["annotations"] = {INITIAL_EVENTS_END: "true"}
    return {
        "type": "BOOKMARK",
        "object": {"kind": spec.kind, "apiVersion": api_version, "metadata": metadata},
    }


async def stream_events(
    store: Store,
    spec: ResourceSpec,
    *,
    api_version: str,
    render: Render,
    scope: Scope,
    selector: Selector,
    params: WatchParams,
    bookmark_interval: float | None,
    mangle: Mangle | None = None,
) -> AsyncIterator[Event]:
    """Yield the watch events of one request until timeout, disconnect or expiry (never raises)."""
    loop = asyncio.get_running_loop()
    deadline = None if params.timeout is None else loop.time() + params.timeout
    journal = store.journal(spec.resource)
    epoch = journal.epoch

    if params.since is None:
        cursor = store.clock.current
        snapshot = [obj for obj in store.live(spec.resource) if scope(obj) and selector.matches(obj)]
        snapshot.sort(key=lambda obj: (obj["metadata"].get("namespace") or "", obj["metadata"]["name"]))
        for obj in snapshot:
            yield {"type": "ADDED", "object": render(obj)}
        if params.initial_events and params.bookmarks:
            yield _bookmark(spec, api_version, cursor, initial_end=True)
    else:
        cursor = params.since

    interval = bookmark_interval if params.bookmarks else None
    next_bookmark = None if interval is None else loop.time() + interval
    while journal.epoch == epoch:
        signal = journal.signal  # taken before reading: an append after the read will set it
        changes = journal.since(cursor)
        if changes is None:
            error = errors.expired(f"too old resource version: {cursor} ({journal.floor})")
            yield {"type": "ERROR", "object": errors.status_body(error)}
            return
        batch = []
        for change in changes:
            event = transition(change, scope, selector)
            if event is not None:
                batch.append({"type": event["type"], "object": render(event["object"])})
        if changes:
            cursor = changes[-1].rv
        for event in mangle(batch) if mangle is not None and batch else batch:
            yield event
            if interval is not None:
                next_bookmark = loop.time() + interval
        if changes:
            continue

        wake_at = min((t for t in (deadline, next_bookmark) if t is not None), default=None)
        try:
            async with asyncio.timeout_at(wake_at):
                await signal.wait()
        except TimeoutError:
            pass
        now = loop.time()
        if deadline is not None and now >= deadline:
            return
        if next_bookmark is not None and now >= next_bookmark and journal.since(cursor) == []:
            cursor = max(cursor, store.clock.current)
            yield _bookmark(spec, api_version, cursor)
            next_bookmark = now + (interval or 0)
