"""Kopf's internals: the one module that reaches below Kopf's public API (``.importlinter`` forbids ``kopf._*``
everywhere else), checked against the Kopf version it was written for.

Kopf gives ``on.event`` handlers no "listing is over" signal (only its ``@kopf.index`` barrier, which costs O(n²) on
large clusters), no view of stream health, no way to start a watch from a LIST of our own, and no way to answer a
malformed admission request with a clear 400. So this module replaces five functions of Kopf's watching layer for the
whole process, and overrides one method of its webhook server. What the wrappers observe goes to a ``Tap``
(``watching.Hooks``, which fans it out to the runtime and the writer's mirror).

Rules:
1. Only a Kopf version in ``SUPPORTED`` runs: ``check_version`` fails at start in one line naming the pin, since each
   function below may move or change in another release (Kopf's main branch no longer has ``fetch_objs``).
2. The wrappers only observe; they never drop, reorder or alter an event of the four kinds. The exceptions: the
   first listing of a primed kind is empty (its objects are already in the state), an ERROR event other than 410
   ends its stream instead of the operator, and a ledger event a tap takes is not processed by Kopf.
   - ``watching.infinite_watch``: every raw event before Kopf queues it: listed objects (``type: None``) by uid, and
     ``Bookmark.LISTED`` closing a listing; any other event is contact. Each event Kopf will hand to a worker is
     *delivered*: Kopf applies it later, in a per-object worker, and a decision must not rest on a picture that
     lacks one already delivered (``Runtime.applied_up_to``).
   - ``watching.watch_objs``: an ``ERROR`` event or an exception breaks the stream; an ``ERROR`` other than 410 Gone
     ends it, and Kopf watches again from its last resourceVersion, as client-go's reflector does (Kopf itself
     would stop the whole operator on it: a 500 from an API server that lost its etcd for a moment). Whatever ended
     the stream, it is reconnecting until a new request succeeds.
   - ``api.request``: a LIST or WATCH request for a watched kind is reconnecting until answered; a LIST starts a
     listing from its request on; an answered LIST is contact, an answered WATCH only *answered* (its first event
     may still be 410 Gone: operator.health, rule 2). A request that fails breaks the stream.
   - ``errors.check_response``: an error answer to one attempt of a LIST or WATCH breaks the stream at once (Kopf
     retries inside one ``api.request`` call, for ever).
   - ``fetching.fetch_objs``: a kind the tap has listed itself (operator.priming) answers Kopf's first listing with
     no objects and that list's resourceVersion; Kopf's later listings (after 410 Gone) are real ones.
3. ``WebhookServer._serve`` (Kopf answers 400 only to unparseable JSON, and 500 to, e.g., a JSON string): a body
   ``CheckedWebhookServer.refusal`` names a reason for is answered 400 with it, before Kopf's own handling.
4. Tap calls are synchronous and must be cheap; a test exercises every hook against the pinned Kopf
   (tests/operator/test_kopfcompat.py).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from importlib.metadata import version
from typing import Any, Protocol

import aiohttp.web
import kopf
import structlog
from kopf._cogs.clients import api as kopf_api
from kopf._cogs.clients import errors as kopf_errors
from kopf._cogs.clients import fetching as kopf_fetching
from kopf._cogs.clients import watching as kopf_watching

log = structlog.get_logger("draledger")
SUPPORTED = ("1.45.2",)  # rule 1: pyproject.toml pins the first
PIN = f"kopf=={SUPPORTED[0]}"
ORIGINALS: dict[str, Any] = {}  # Kopf's own functions, which the wrappers call
HOOKED = ("infinite_watch", "watch_objs", "request", "check_response", "fetch_objs")


class KopfVersionError(RuntimeError):
    """The installed Kopf is not one this module was written for."""


def check_version(installed: str | None = None) -> None:
    """Rule 1: raise ``KopfVersionError``, one line naming the pin, unless Kopf's version is supported."""
    found = installed if installed is not None else version("kopf")
    if found not in SUPPORTED:
        raise KopfVersionError(f"kopf {found} is installed; this operator reaches into Kopf's internals and runs "
                               f"only on {', '.join(SUPPORTED)}: install {PIN}")


class Tap(Protocol):
    """What the wrappers tell (watching.Hooks)."""

    def each(self, method: str, *args: str) -> None:
        """Call ``method(*args)`` on every observer that has it (``watching.Observer``)."""

    async def resume_from(self, kind: str) -> str | None:
        """The resourceVersion the tap has listed ``kind`` at (taken once), or None: Kopf lists it."""

    def take(self, kind: str, event: Mapping[str, Any]) -> bool:
        """Whether an observer took the event (Kopf then does not process it)."""

    def kind_of_url(self, url: str) -> str | None:
        """The watched kind a request's URL is for, if any."""


def install(tap: Tap) -> None:
    """Replace the five functions of rule 2 for the whole process (once: later calls change nothing)."""
    if ORIGINALS:
        return
    ORIGINALS.update(infinite_watch=kopf_watching.infinite_watch, watch_objs=kopf_watching.watch_objs,
                     request=kopf_api.request, check_response=kopf_errors.check_response,
                     fetch_objs=kopf_fetching.fetch_objs)

    async def infinite_watch(*, resource: Any, **kwargs: Any) -> AsyncIterator[Any]:
        kind = resource.plural
        async for event in ORIGINALS["infinite_watch"](resource=resource, **kwargs):
            if event is kopf_watching.Bookmark.LISTED:
                tap.each("listing_done", kind)
            elif isinstance(event, dict):
                if event.get("type") is None:
                    uid = (event.get("object") or {}).get("metadata", {}).get("uid", "")
                    tap.each("listed_object", kind, uid)
                else:
                    tap.each("contact", kind)
                if tap.take(kind, event):
                    continue
                if event.get("type") != "BOOKMARK":  # Kopf queues it to a worker, which applies it later
                    tap.each("delivered", kind)
            yield event

    async def watch_objs(*, resource: Any, **kwargs: Any) -> AsyncIterator[Any]:
        kind = resource.plural
        try:
            async for event in ORIGINALS["watch_objs"](resource=resource, **kwargs):
                if isinstance(event, dict) and event.get("type") == "ERROR":
                    code = (event.get("object") or {}).get("code")
                    tap.each("broken", kind, f"watch error {code}")
                    if code != 410:  # Kopf ends the operator on it; client-go's reflector watches again
                        log.warning("watch error event; watching again", kind=kind, code=code,
                                    message=str((event.get("object") or {}).get("message", ""))[:200])
                        return
                yield event
        except Exception as error:
            tap.each("broken", kind, f"watch failed: {type(error).__name__}")
            raise
        finally:  # whatever ended the stream, it is not live until a new request succeeds
            tap.each("connecting", kind)

    async def request(*args: Any, **kwargs: Any) -> Any:
        url = str(kwargs.get("url", args[1] if len(args) > 1 else ""))
        method = str(kwargs.get("method", args[0] if args else "")).upper()
        kind = tap.kind_of_url(url)
        if kind and method == "GET":  # a LIST or a WATCH: Kopf writes nothing to these resources
            tap.each("connecting", kind)
            if "watch=true" not in url:  # a LIST: a listing is under way from its first request on
                tap.each("listing_started", kind)
        try:
            response = await ORIGINALS["request"](*args, **kwargs)
        except Exception as error:
            if kind:
                tap.each("broken", kind, f"request failed: {type(error).__name__}")
            raise
        if kind and getattr(response, "status", 500) < 400:
            tap.each("answered" if "watch=true" in url else "contact", kind)
        return response

    async def check_response(response: Any) -> None:
        try:
            await ORIGINALS["check_response"](response)
        except Exception:
            kind = tap.kind_of_url(str(getattr(response, "url", "")))
            if kind and str(getattr(response, "method", "")).upper() == "GET":
                tap.each("broken", kind, f"request answered {getattr(response, 'status', '?')}")
            raise

    async def fetch_objs(*, resource: Any, **kwargs: Any) -> AsyncIterator[tuple[Any, str]]:
        resumed = await tap.resume_from(resource.plural)
        if resumed is not None:  # primed: the watch starts where our own LIST ended
            yield [], resumed
            return
        async for chunk in ORIGINALS["fetch_objs"](resource=resource, **kwargs):
            yield chunk

    kopf_watching.infinite_watch = infinite_watch
    kopf_watching.watch_objs = watch_objs
    kopf_api.request = request
    kopf_errors.check_response = check_response
    kopf_fetching.fetch_objs = fetch_objs


def hooked() -> dict[str, Callable[..., Any]]:
    """What Kopf calls now for each function of rule 2 (a test holds them to this module's wrappers)."""
    return {"infinite_watch": kopf_watching.infinite_watch, "watch_objs": kopf_watching.watch_objs,
            "request": kopf_api.request, "check_response": kopf_errors.check_response,
            "fetch_objs": kopf_fetching.fetch_objs}


class CheckedWebhookServer(kopf.WebhookServer):
    """Kopf's HTTPS webhook server, answering 400 to a body ``refusal`` names a reason for (rule 3)."""

    @staticmethod
    def refusal(data: Any) -> str:
        """Why ``data`` (a decoded JSON body) cannot be served ("" when it can); subclasses say."""
        return ""

    async def _serve(self, fn: Any, request: aiohttp.web.Request) -> aiohttp.web.Response:  # type: ignore[override]
        try:
            data = json.loads(await request.text())
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise aiohttp.web.HTTPBadRequest(reason=f"not JSON: {error}") from None
        refusal = self.refusal(data)
        if refusal:
            raise aiohttp.web.HTTPBadRequest(reason=refusal)
        return await kopf.WebhookServer._serve(fn, request)
