"""Kopf's internals (operator.kopfcompat), each hook exercised against the pinned Kopf: the functions it replaces
exist with the parameters the wrappers pass, and each wrapper tells its tap what rules 2 and 3 say."""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import make_mocked_request
from kopf._cogs.clients import errors as kopf_errors
from kopf._cogs.clients import watching as kopf_watching

from draledger.operator import kopfcompat, watching
from draledger.operator.admitting import GatingWebhookServer
from draledger.operator.config import OperatorConfig
from draledger.operator.metrics import Metrics
from draledger.operator.runtime import Runtime

KIND = {"Node": "nodes", "Pod": "pods", "ResourceSlice": "resourceslices", "ResourceClaim": "resourceclaims"}


class Recorder:
    """An observer that records every call, and resumes ``resumed``'s kinds from their versions."""

    def __init__(self, resumed: dict[str, str] | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.resumed = resumed or {}

    def __getattr__(self, method: str) -> Any:
        if method in ("listing_started", "listed_object", "listing_done", "contact", "answered", "connecting",
                      "broken", "ledger_event"):
            return lambda *args: self.calls.append((method, *args))
        raise AttributeError(method)

    async def resume_from(self, kind: str) -> str | None:
        return self.resumed.pop(kind, None)


class Resource:
    def __init__(self, plural: str) -> None:
        self.plural = plural


def stream(*events: Any, error: Exception | None = None) -> Any:
    async def original(**_: Any) -> AsyncIterator[Any]:
        for event in events:
            yield event
        if error is not None:
            raise error

    return original


async def drained(iterator: AsyncIterator[Any]) -> list[Any]:
    return [event async for event in iterator]


class TestPin:
    def test_the_installed_kopf_is_supported(self) -> None:
        """The version pyproject.toml pins is the one installed, and the one this module supports."""
        kopfcompat.check_version()
        assert "kopf==1.45.2" == kopfcompat.PIN

    def test_another_kopf_fails_in_one_line_naming_the_pin(self) -> None:
        """Any other version stops the operator at start with one line that names the pin."""
        with pytest.raises(kopfcompat.KopfVersionError) as raised:
            kopfcompat.check_version("1.46.0")
        assert ("kopf 1.46.0 is installed; this operator reaches into Kopf's internals and runs only on 1.45.2: "
                "install kopf==1.45.2") == str(raised.value)

    def test_every_hooked_function_is_replaced(self) -> None:
        """Kopf's five functions exist, take the ``resource`` keyword the wrappers pass, and are ours once
        installed."""
        kopfcompat.install(watching.HOOKS)  # once per process: later calls change nothing
        assert set(kopfcompat.HOOKED) == set(kopfcompat.ORIGINALS)
        for name in ("infinite_watch", "watch_objs", "fetch_objs"):
            assert "resource" in inspect.signature(kopfcompat.ORIGINALS[name]).parameters, name
        assert {name: "draledger.operator.kopfcompat" for name in kopfcompat.HOOKED} == {
            name: function.__module__ for name, function in kopfcompat.hooked().items()}
        assert {name: True for name in kopfcompat.HOOKED} == {
            name: function.__module__.startswith("kopf._cogs") for name, function in kopfcompat.ORIGINALS.items()}


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A recorder observing through the installed hooks; each test puts its own originals in place."""
    observer = Recorder()
    with watching.HOOKS.observing(observer):
        for name in kopfcompat.HOOKED:
            monkeypatch.setitem(kopfcompat.ORIGINALS, name, kopfcompat.ORIGINALS[name])
        yield observer


class TestWatching:
    async def test_infinite_watch_tells_listings_and_contact_and_hands_ledger_events_over(
        self, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A listed object by uid, the end of a listing, contact for any other event; a ledger event goes to the
        observers and not on to Kopf."""
        listed = {"type": None, "object": {"metadata": {"uid": "u1"}}}
        modified = {"type": "MODIFIED", "object": {"metadata": {"uid": "u1"}}}
        monkeypatch.setitem(kopfcompat.ORIGINALS, "infinite_watch",
                            stream(listed, kopf_watching.Bookmark.LISTED, modified))
        pods = await drained(kopf_watching.infinite_watch(resource=Resource("pods")))
        ledgers = await drained(kopf_watching.infinite_watch(resource=Resource(watching.LEDGERS_KIND)))
        assert [listed, kopf_watching.Bookmark.LISTED, modified] == pods
        assert [kopf_watching.Bookmark.LISTED] == ledgers
        assert [("listed_object", "pods", "u1"), ("listing_done", "pods"), ("contact", "pods"),
                ("listed_object", watching.LEDGERS_KIND, "u1"), ("ledger_event", None, listed["object"]),
                ("listing_done", watching.LEDGERS_KIND), ("contact", watching.LEDGERS_KIND),
                ("ledger_event", "MODIFIED", modified["object"])] == recorder.calls

    @pytest.mark.parametrize(("code", "yielded"), [pytest.param(410, True, id="gone"),
                                                   pytest.param(500, False, id="server-error")])
    async def test_watch_objs_breaks_on_an_error_event_and_ends_on_any_but_410(
        self, recorder: Recorder, monkeypatch: pytest.MonkeyPatch, code: int, yielded: bool
    ) -> None:
        """An ERROR event breaks the stream; one other than 410 ends it (Kopf watches again) instead of the
        operator; whatever ended it, it is reconnecting."""
        error = {"type": "ERROR", "object": {"code": code, "message": "injected"}}
        later = {"type": "MODIFIED", "object": {}}
        monkeypatch.setitem(kopfcompat.ORIGINALS, "watch_objs", stream(error, later))
        events = await drained(kopf_watching.watch_objs(resource=Resource("pods")))
        assert ([error, later] if yielded else []) == events
        assert [("broken", "pods", f"watch error {code}"), ("connecting", "pods")] == recorder.calls

    async def test_watch_objs_breaks_on_an_exception_and_raises_it(
        self, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A watch that fails breaks its stream; the exception goes on to Kopf."""
        monkeypatch.setitem(kopfcompat.ORIGINALS, "watch_objs", stream(error=OSError("reset")))
        with pytest.raises(OSError, match="reset"):
            await drained(kopf_watching.watch_objs(resource=Resource("pods")))
        assert [("broken", "pods", "watch failed: OSError"), ("connecting", "pods")] == recorder.calls

    async def test_fetch_objs_answers_a_primed_kind_with_its_version(
        self, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A kind an observer has listed is answered with no objects and its version, once; then Kopf lists."""
        from kopf._cogs.clients import fetching as kopf_fetching

        recorder.resumed["pods"] = "42"
        monkeypatch.setitem(kopfcompat.ORIGINALS, "fetch_objs", stream(([{"kind": "Pod"}], "43")))
        assert [([], "42")] == await drained(kopf_fetching.fetch_objs(resource=Resource("pods")))
        assert [([{"kind": "Pod"}], "43")] == await drained(kopf_fetching.fetch_objs(resource=Resource("pods")))

    async def test_request_tells_connecting_listing_and_answers(
        self, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A LIST is reconnecting and starts a listing, then is contact; a WATCH is reconnecting, then only
        answered; a request that fails breaks its stream; a write to another resource tells nothing."""
        from kopf._cogs.clients import api as kopf_api

        class Answer:
            status = 200

        async def answered(*args: Any, **kwargs: Any) -> Answer:
            if "fail" in kwargs.get("url", ""):
                raise aiohttp.ClientConnectionError("refused")
            return Answer()

        monkeypatch.setitem(kopfcompat.ORIGINALS, "request", answered)
        await kopf_api.request("GET", url="http://h/api/v1/pods?limit=500")
        await kopf_api.request("GET", url="http://h/api/v1/pods?watch=true")
        await kopf_api.request("PATCH", url="http://h/api/v1/namespaces/t/pods/p")
        with pytest.raises(aiohttp.ClientConnectionError):
            await kopf_api.request("GET", url="http://h/api/v1/nodes?watch=true&fail=1")
        assert [("connecting", "pods"), ("listing_started", "pods"), ("contact", "pods"),
                ("connecting", "pods"), ("answered", "pods"),
                ("connecting", "nodes"), ("broken", "nodes", "request failed: ClientConnectionError")] == recorder.calls


def runtime() -> Runtime:
    rt = Runtime(OperatorConfig(), Metrics(), lambda: 100.0)
    for kind in (*KIND.values(), watching.LEDGERS_KIND):
        rt.contact(kind)
    rt.rebuilt.set()
    return rt


class TestStreamHealth:
    async def test_an_attempt_answered_with_an_error_breaks_its_stream_at_once(self) -> None:
        """Kopf retries a failing LIST or WATCH inside one request; its first error answer holds releases now,
        not after the reconnection grace (a change made while the renewal fails would go unseen)."""

        class Answer:
            def __init__(self, method: str, url: str, status: int) -> None:
                self.method, self.url, self.status, self.headers = method, url, status, {}

            async def json(self) -> dict[str, Any]:
                return {"kind": "Status", "code": self.status, "message": "injected"}

            def raise_for_status(self) -> None:
                if self.status >= 400:
                    raise aiohttp.ClientResponseError(None, (), status=self.status, message="injected")  # type: ignore[arg-type]

        rt = runtime()
        assert "" == rt.streams_unhealthy()
        with watching.HOOKS.observing(rt):
            await kopf_errors.check_response(Answer("GET", "http://h/api/v1/pods?watch=true", 200))
            assert "" == rt.streams_unhealthy()
            with pytest.raises(kopf_errors.APIServerError):
                await kopf_errors.check_response(Answer("PATCH", "http://h/api/v1/pods", 503))
            assert "" == rt.streams_unhealthy()  # not a stream's request
            with pytest.raises(kopf_errors.APIServerError, match="injected"):  # still raised
                await kopf_errors.check_response(Answer("GET", "http://h/api/v1/pods?watch=true", 503))
        assert "the pods watch is broken (request answered 503)" == rt.streams_unhealthy()
        rt.contact("pods")  # the retry succeeded
        assert "" == rt.streams_unhealthy()

    async def test_a_relist_holds_releases_from_its_list_request_on(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """After a 410, the relist's answer is contact with the server, before any listed object is taken: the
        stream is relisting from its LIST request on, not healthy in between. A WATCH request's answer starts no
        listing, and is not trusted before its first event (it may be a 410): the stream is resuming, quietly."""
        from kopf._cogs.clients import api as kopf_api

        class Answer:
            status = 200

        async def answered(*args: Any, **kwargs: Any) -> Answer:
            return Answer()

        rt = runtime()
        for kind in (*KIND.values(), watching.LEDGERS_KIND):
            rt.listing_done(kind)  # the first listings are over
        with watching.HOOKS.observing(rt):
            monkeypatch.setitem(kopfcompat.ORIGINALS, "request", answered)
            await kopf_api.request("GET", "http://h/api/v1/nodes?watch=true&resourceVersion=7")
            assert ("the nodes watch is resuming", True) == (rt.streams_unhealthy(), rt.renewing())
            rt.contact("nodes")  # its first event
            assert "" == rt.streams_unhealthy()
            await kopf_api.request("GET", "http://h/api/v1/nodes?limit=500")
            assert "the nodes watch is relisting" == rt.streams_unhealthy()
            rt.listing_done("nodes")
        assert "" == rt.streams_unhealthy()

    async def test_what_kopf_will_apply_is_counted_as_delivered(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Typed and listed events of the four kinds go to Kopf's workers: each counts as delivered, until the
        handler applies it; a BOOKMARK, the listing's end and the ledgers' events (taken at the stream) do not."""
        rt = runtime()
        with watching.HOOKS.observing(rt):
            events = ({"type": None, "object": {"metadata": {"uid": "u1"}}}, {"type": "MODIFIED", "object": {}},
                      {"type": "BOOKMARK", "object": {}}, kopf_watching.Bookmark.LISTED)
            monkeypatch.setitem(kopfcompat.ORIGINALS, "infinite_watch", stream(*events))
            for plural in ("pods", watching.LEDGERS_KIND):
                await drained(kopf_watching.infinite_watch(resource=Resource(plural)))
        assert 2 == rt.delivered_count["pods"]
        assert rt.behind(dict(rt.delivered_count))
        rt.applied("pods")
        assert rt.behind(dict(rt.delivered_count))
        rt.applied("pods")
        assert not rt.behind(dict(rt.delivered_count))

    def test_urls_map_to_kinds(self) -> None:
        """List and watch URLs name their kind; single-object URLs do not."""
        assert "pods" == watching.kind_of_url("/api/v1/pods?watch=true")
        assert "resourceclaims" == watching.kind_of_url("http://h/apis/resource.k8s.io/v1/resourceclaims")
        assert watching.kind_of_url("/api/v1/namespaces/t/pods/p") is None


class TestWebhookServer:
    @pytest.mark.parametrize(("body", "reason"), [
        pytest.param(b"{not json", "not JSON", id="truncated"),
        pytest.param(b'"a string"', "not an AdmissionReview: no request.uid", id="not-an-object"),
        pytest.param(b'{"request": {"uid": "u", "object": []}}', "request.object is not an object", id="object"),
    ])
    async def test_a_body_kopf_cannot_serve_gets_a_400_naming_why(self, body: bytes, reason: str) -> None:
        """Kopf's ``_serve`` is reached only by what it can serve; anything else is a 400 with the reason."""
        request = make_mocked_request("POST", "/gate-pods", payload=None)
        request._read_bytes = body  # what ``request.text()`` reads, in aiohttp's own test helper

        async def never(*_: Any, **__: Any) -> Any:
            raise AssertionError("Kopf's handler reached")

        with pytest.raises(aiohttp.web.HTTPBadRequest) as raised:
            await GatingWebhookServer()._serve(never, request)
        assert raised.value.reason.startswith(reason)

    async def test_an_admission_review_reaches_kopfs_own_serve(self) -> None:
        """A well-formed review goes on to Kopf's ``_serve``, which calls the webhook function."""
        review = {"request": {"uid": "u", "object": {"kind": "Pod"}}}
        request = make_mocked_request("POST", "/gate-pods", match_info={"id": "gate-pods"})
        request._read_bytes = json.dumps(review).encode()
        seen: list[Any] = []

        async def handler(data: Any, **_: Any) -> Any:
            seen.append(data)
            return {"response": {"uid": "u", "allowed": True}}

        answer = await GatingWebhookServer()._serve(handler, request)
        assert ([review], 200) == (seen, answer.status)
