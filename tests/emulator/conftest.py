"""Fixtures for the emulator tests: a served emulator, an HTTP client, watch readers and polling.

Everything talks real HTTP on 127.0.0.1; nothing sleeps to wait for state (polls have deadlines).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import aiohttp
import pytest

from draledger.demo.emulator import ClusterEmulator, serve_emulator

JSON_PATCH = {"Content-Type": "application/json-patch+json"}
MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture
def emulator_kwargs() -> dict[str, Any]:
    """Override in a test module (or parametrize indirectly) to configure the emulator."""
    return {}


@pytest.fixture
async def cluster(emulator_kwargs: dict[str, Any]) -> AsyncIterator[tuple[ClusterEmulator, str]]:
    async with serve_emulator(emulator=ClusterEmulator(**emulator_kwargs)) as served:
        yield served


@pytest.fixture
def emulator(cluster: tuple[ClusterEmulator, str]) -> ClusterEmulator:
    return cluster[0]


@pytest.fixture
def url(cluster: tuple[ClusterEmulator, str]) -> str:
    return cluster[1]


@pytest.fixture
async def client(url: str) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(url) as session:
        yield session


class Api:
    """Small JSON helpers over the client; every response body is read (so connections are released)."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> tuple[int, Any]:
        """The status and the answer: decoded JSON, or the text of a non-JSON answer (a plain-text 404)."""
        async with self.session.request(method, path, json=body, headers=headers, params=params) as response:
            if response.content_type != "application/json":
                return response.status, await response.text()
            return response.status, await response.json()

    async def ok(self, method: str, path: str, body: Any = None, **kwargs: Any) -> dict[str, Any]:
        status, data = await self.call(method, path, body, **kwargs)
        assert 200 <= status < 300, data
        return data

    async def create(self, path: str, body: Any) -> dict[str, Any]:
        return await self.ok("POST", path, body)

    async def get(self, path: str, **params: str) -> dict[str, Any]:
        return await self.ok("GET", path, params=params)

    async def merge(self, path: str, body: Any) -> dict[str, Any]:
        return await self.ok("PATCH", path, body, headers=MERGE_PATCH)

    async def json_patch(self, path: str, ops: list[dict[str, Any]]) -> dict[str, Any]:
        return await self.ok("PATCH", path, ops, headers=JSON_PATCH)

    async def delete(self, path: str) -> dict[str, Any]:
        return await self.ok("DELETE", path)


@pytest.fixture
def api(client: aiohttp.ClientSession) -> Api:
    return Api(client)


class WatchStream:
    """An open watch response, read one JSON line at a time with a deadline."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def next(self, within: float = 5.0) -> dict[str, Any] | None:
        """The next event, or None once the server has ended the stream."""
        async with asyncio.timeout(within):
            while True:
                line = await self.response.content.readline()
                if not line:
                    return None
                if line.strip():
                    event: dict[str, Any] = json.loads(line)
                    return event

    async def take(self, count: int, within: float = 5.0) -> list[dict[str, Any]]:
        events = []
        for _ in range(count):
            event = await self.next(within)
            assert event is not None, f"the stream ended after {events!r}"
            events.append(event)
        return events

    async def rest(self, within: float = 5.0) -> list[dict[str, Any]]:
        """All remaining events until the server ends the stream."""
        events = []
        while (event := await self.next(within)) is not None:
            events.append(event)
        return events


OpenWatch = Callable[..., contextlib.AbstractAsyncContextManager[WatchStream]]


@pytest.fixture
def open_watch(client: aiohttp.ClientSession) -> OpenWatch:
    @contextlib.asynccontextmanager
    async def open_(path: str, params: Mapping[str, str] | None = None) -> AsyncIterator[WatchStream]:
        query = {"watch": "true", **(params or {})}
        async with client.get(path, params=query) as response:
            assert response.status == 200, await response.text()
            yield WatchStream(response)

    return open_


Eventually = Callable[[Callable[[], bool]], Awaitable[None]]


@pytest.fixture
def eventually() -> Eventually:
    async def poll(predicate: Callable[[], bool], within: float = 10.0) -> None:
        async with asyncio.timeout(within):
            while True:
                if predicate():
                    return
                await asyncio.sleep(0.01)

    return poll


@pytest.fixture
def pod_body() -> Callable[..., dict[str, Any]]:
    def make(name: str, **extra: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": extra.pop("labels", {})},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        }
        body["spec"].update(extra)
        return body

    return make
