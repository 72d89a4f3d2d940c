"""Events are best effort: posted in the background, a few at once, and never in the way of a gate release.

A burst of releases posts an Event each. Unbounded, they took every connection of the operator's client, and the
gate patches decided meanwhile waited behind them: the fault suite saw releases land over a second after their
decisions. These run a real client against a real HTTP server whose Events never get an answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import kopf
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from draledger.operator import events, gating
from draledger.operator.config import OperatorConfig
from draledger.operator.kubeapi import KubeApi
from draledger.operator.metrics import Metrics
from draledger.operator.running import client_connections
from tests.integration.harness import eventually


class Server:
    """Answers pod patches at once; holds every Event POST until ``answer`` is set."""

    def __init__(self) -> None:
        self.answer = asyncio.Event()
        self.events_in_flight = 0
        self.most_events_in_flight = 0
        self.events_answered = 0

    async def event(self, request: web.Request) -> web.Response:
        self.events_in_flight += 1
        self.most_events_in_flight = max(self.most_events_in_flight, self.events_in_flight)
        try:
            await self.answer.wait()
        finally:
            self.events_in_flight -= 1
        self.events_answered += 1
        return web.json_response(await request.json(), status=201)

    async def patch(self, request: web.Request) -> web.Response:
        return web.json_response({"kind": "Pod", "metadata": {"name": request.match_info["name"]}})


@pytest.fixture
async def served() -> AsyncIterator[tuple[Server, KubeApi]]:
    server = Server()
    app = web.Application()
    app.router.add_post("/api/v1/namespaces/{ns}/events", server.event)
    app.router.add_patch("/api/v1/namespaces/{ns}/pods/{name}", server.patch)
    async with TestServer(app, host="127.0.0.1") as http:
        api = KubeApi(kopf.ConnectionInfo(server=str(http.make_url("")), insecure=True), attempts=0, timeout=5.0,
                      connections=client_connections(OperatorConfig()))
        try:
            yield server, api
        finally:
            server.answer.set()
            await api.close()


def pod_event(n: int) -> dict[str, object]:
    return events.about_pod("ns1", f"p{n}", f"uid-{n}", "Released", "released")


async def test_events_are_posted_a_few_at_once_and_all_of_them_in_the_end(served: tuple[Server, KubeApi]) -> None:
    server, api = served
    poster = events.Poster(api, Metrics())
    for n in range(20):
        poster.post(pod_event(n))
    await eventually(lambda: server.events_in_flight == events.CONCURRENCY, what="the Events' lane to fill")
    server.answer.set()
    await asyncio.wait_for(poster.settle(), 5.0)
    assert (server.most_events_in_flight, server.events_answered) == (events.CONCURRENCY, 20)


async def test_releases_are_answered_while_a_burst_of_events_goes_unanswered(served: tuple[Server, KubeApi]) -> None:
    server, api = served
    poster = events.Poster(api, Metrics())
    for n in range(200):  # a burst's Events, against a server that does not answer them
        poster.post(pod_event(n))
    await eventually(lambda: server.events_in_flight >= events.CONCURRENCY, what="the Events' lane to fill")
    patches = [api.json_patch(f"/api/v1/namespaces/ns1/pods/p{n}", [{"op": "test", "path": "/metadata/name",
                                                                      "value": f"p{n}"}], attempts=0)
               for n in range(gating.RELEASE_CONCURRENCY)]
    answers = await asyncio.wait_for(asyncio.gather(*patches), 2.0)  # every release in flight at once
    assert [answer["metadata"]["name"] for answer in answers] == [f"p{n}" for n in range(gating.RELEASE_CONCURRENCY)]
    assert server.events_answered == 0
    server.answer.set()
    await asyncio.wait_for(poster.settle(), 10.0)
    assert server.events_answered == 200


async def test_an_event_whose_news_has_passed_is_dropped(served: tuple[Server, KubeApi]) -> None:
    """A backlog never tells what has passed: ``still`` is asked when the Event's turn comes, not when posted."""
    server, api = served
    metrics = Metrics()
    poster = events.Poster(api, metrics)
    for n in range(events.CONCURRENCY):  # the lane, full and unanswered
        poster.post(pod_event(n))
    await eventually(lambda: server.events_in_flight == events.CONCURRENCY, what="the Events' lane to fill")
    held = {"p8": True, "p9": True}
    poster.post(pod_event(8), still=lambda: held["p8"])
    poster.post(pod_event(9), still=lambda: held["p9"])
    held["p8"] = False  # released while its Event waited for a slot
    server.answer.set()
    await asyncio.wait_for(poster.settle(), 5.0)
    assert (server.events_answered, metrics.events_dropped._value.get()) == (events.CONCURRENCY + 1, 1)
