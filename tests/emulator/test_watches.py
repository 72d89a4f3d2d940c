"""Watch streams: resume from an RV, initial state, 410 Gone, bookmarks, server-side timeouts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from draledger.demo.emulator import ClusterEmulator

PODS = "/api/v1/namespaces/ns1/pods"


def summary(events: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [
        (e["type"], e["object"]["metadata"]["name"], e["object"]["metadata"]["resourceVersion"])
        for e in events
    ]


class TestResume:
    async def test_watch_from_rv_replays_only_newer_events(
        self, api: Any, open_watch: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """A watch from RV N gets the changes after N (with their real RVs), then live changes."""
        await api.create(PODS, pod_body("p1"))
        await api.create(PODS, pod_body("p2"))
        await api.merge(f"{PODS}/p1", {"metadata": {"labels": {"x": "1"}}})
        async with open_watch("/api/v1/pods", {"resourceVersion": "2"}) as stream:
            replayed = await stream.take(1)
            await api.create(PODS, pod_body("p3"))
            await api.delete(f"{PODS}/p2")
            live = await stream.take(2)
        assert summary(replayed) == [("MODIFIED", "p1", "3")]
        assert summary(live) == [("ADDED", "p3", "4"), ("DELETED", "p2", "5")]

    async def test_watch_without_rv_starts_with_current_state(
        self, api: Any, open_watch: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """Without an RV, every live object comes first as ADDED with its own RV (no full replay later)."""
        await api.create(PODS, pod_body("p1"))
        await api.merge(f"{PODS}/p1", {"metadata": {"labels": {"x": "1"}}})
        await api.create(PODS, pod_body("p2"))
        async with open_watch("/api/v1/pods") as stream:
            initial = await stream.take(2)
            await api.merge(f"{PODS}/p2", {"metadata": {"labels": {"x": "1"}}})
            live = await stream.take(1)
        assert summary(initial) == [("ADDED", "p1", "2"), ("ADDED", "p2", "3")]
        assert summary(live) == [("MODIFIED", "p2", "4")]

    async def test_watch_is_per_resource_and_namespace(
        self, api: Any, open_watch: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """A namespaced watch sees neither other namespaces nor other resources."""
        async with open_watch(PODS, {"resourceVersion": "0"}) as stream:
            await api.create("/api/v1/namespaces/ns2/pods", pod_body("elsewhere"))
            await api.create("/api/v1/nodes", {"metadata": {"name": "n1"}})
            await api.create(PODS, pod_body("here"))
            events = await stream.take(1)
        assert summary(events) == [("ADDED", "here", "3")]


class TestExpiry:
    @pytest.fixture
    def emulator_kwargs(self) -> dict[str, Any]:
        return {"journal_limit": 2}

    async def test_too_old_rv_is_410_gone(
        self, api: Any, open_watch: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """A watch from an RV older than the retained history gets one ERROR 410 Expired event, then EOF."""
        for name in ("p1", "p2", "p3", "p4"):
            await api.create(PODS, pod_body(name))
        async with open_watch("/api/v1/pods", {"resourceVersion": "1"}) as stream:
            events = await stream.rest()
        assert [e["type"] for e in events] == ["ERROR"]
        assert (
            events[0]["object"]["kind"],
            events[0]["object"]["code"],
            events[0]["object"]["reason"],
        ) == ("Status", 410, "Expired")

    async def test_retained_rv_still_resumes(
        self, api: Any, open_watch: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """A watch from an RV within the retained history resumes normally."""
        for name in ("p1", "p2", "p3", "p4"):
            await api.create(PODS, pod_body(name))
        async with open_watch("/api/v1/pods", {"resourceVersion": "2"}) as stream:
            events = await stream.take(2)
        assert summary(events) == [("ADDED", "p3", "3"), ("ADDED", "p4", "4")]


class TestStreamControl:
    @pytest.fixture
    def emulator_kwargs(self) -> dict[str, Any]:
        return {"bookmark_interval": 0.05}

    async def test_timeout_seconds_ends_the_stream(self, open_watch: Any) -> None:
        """timeoutSeconds makes the server end a quiet stream cleanly."""
        async with open_watch("/api/v1/pods", {"timeoutSeconds": "1"}) as stream:
            events = await stream.rest(within=10)
        assert events == []

    async def test_bookmarks_carry_the_current_rv(
        self, api: Any, open_watch: Any, emulator: ClusterEmulator
    ) -> None:
        """With allowWatchBookmarks, a quiet stream gets BOOKMARKs (kind, apiVersion and the current RV)."""
        await api.create("/api/v1/nodes", {"metadata": {"name": "n1"}})
        async with open_watch(PODS, {"allowWatchBookmarks": "true", "resourceVersion": "1"}) as stream:
            event = await stream.next()
        assert event is not None
        assert (
            event["type"],
            event["object"]["kind"],
            event["object"]["apiVersion"],
            event["object"]["metadata"]["resourceVersion"],
        ) == ("BOOKMARK", "Pod", "v1", "1")

    async def test_no_bookmarks_unless_allowed(self, api: Any, open_watch: Any, pod_body: Any) -> None:
        """Without allowWatchBookmarks, no BOOKMARK is sent."""
        async with open_watch(PODS, {"resourceVersion": "0", "timeoutSeconds": "1"}) as stream:
            events = await stream.rest(within=10)
        assert events == []

    async def test_initial_events_end_bookmark(
        self, api: Any, open_watch: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """sendInitialEvents=true ends the initial state with an annotated BOOKMARK."""
        await api.create(PODS, pod_body("p1"))
        params = {
            "sendInitialEvents": "true",
            "allowWatchBookmarks": "true",
            "resourceVersionMatch": "NotOlderThan",
        }
        async with open_watch(PODS, params) as stream:
            added, bookmark = await stream.take(2)
        assert (added["type"], bookmark["type"]) == ("ADDED", "BOOKMARK")
        assert bookmark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
