"""The emulator's support for the fault suite: change listeners, scoped write faults, shuffled watch
streams, and an API server stopped and started again on the same port with its store kept."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest

from draledger.demo.emulator import Change, ClusterEmulator, EmulatorServer, Shuffle
from draledger.demo.emulator.discovery import register_cluster_resources

PODS = "/api/v1/namespaces/ns1/pods"
MERGE = {"Content-Type": "application/merge-patch+json"}


def event(name: str, rv: int, namespace: str = "ns1") -> dict[str, Any]:
    return {"type": "MODIFIED", "object": {"metadata": {"name": name, "namespace": namespace,
                                                        "resourceVersion": str(rv)}}}


def names(events: list[dict[str, Any]]) -> list[str]:
    return [f"{e['object']['metadata']['name']}@{e['object']['metadata']['resourceVersion']}" for e in events]


class TestListeners:
    async def test_every_change_reaches_a_listener_in_rv_order(
        self, emulator: ClusterEmulator, api: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """A listener sees creations, updates and deletions with their RVs, beyond the journal's limit."""
        seen: list[tuple[str, str, int]] = []
        stop = emulator.store.listen(lambda resource, change: seen.append(
            (str(resource.plural), change.type, change.rv)))
        await api.create(PODS, pod_body("p1"))
        await api.merge(f"{PODS}/p1", {"metadata": {"labels": {"a": "1"}}})
        await api.delete(f"{PODS}/p1")
        stop()
        await api.create(PODS, pod_body("p2"))
        assert [("pods", "ADDED", 1), ("pods", "MODIFIED", 2), ("pods", "DELETED", 3)] == seen

    async def test_a_listener_gets_the_object_before_and_after(self, emulator: ClusterEmulator) -> None:
        """The change carries the stored object and the one it replaced."""
        changes: list[Change] = []
        emulator.store.listen(lambda resource, change: changes.append(change))
        emulator.load_objects([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}])
        emulator.patch_object("v1/nodes", "n1", {"metadata": {"labels": {"x": "y"}}})
        assert [None, "n1"] == [c.old and c.old["metadata"]["name"] for c in changes]
        assert [None, {"x": "y"}] == [c.obj["metadata"].get("labels") for c in changes]


class TestScopedWriteFaults:
    @pytest.mark.parametrize(("target", "main", "status"), [
        pytest.param("main", 503, 200, id="main"),
        pytest.param("status", 200, 503, id="status"),
        pytest.param("any", 503, 200, id="any-fires-on-the-first"),
    ])
    async def test_a_fault_fires_only_on_its_target(
        self, emulator: ClusterEmulator, api: Any, pod_body: Callable[..., dict[str, Any]],
        target: Any, main: int, status: int,
    ) -> None:
        """A fault scoped to the main resource or to ``status`` leaves the other endpoint alone."""
        await api.create(PODS, pod_body("p1"))
        emulator.inject_patch_error("v1/pods", 503, target=target)
        got_main, _ = await api.call("PATCH", f"{PODS}/p1", {"metadata": {"labels": {"a": "1"}}}, headers=MERGE)
        got_status, _ = await api.call("PATCH", f"{PODS}/p1/status", {"status": {"phase": "Running"}},
                                       headers=MERGE)
        assert (main, status, 0) == (got_main, got_status, emulator.faults.pending())

    async def test_a_scoped_fault_fires_before_an_unscoped_one(
        self, emulator: ClusterEmulator, api: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """With both armed, a status patch takes the status fault first."""
        await api.create(PODS, pod_body("p1"))
        emulator.inject_patch_error("v1/pods", 500)
        emulator.inject_patch_error("v1/pods", 422, target="status")
        first, _ = await api.call("PATCH", f"{PODS}/p1/status", {"status": {}}, headers=MERGE)
        second, _ = await api.call("PATCH", f"{PODS}/p1/status", {"status": {}}, headers=MERGE)
        assert (422, 500) == (first, second)


    def test_pending_counts_by_resource_and_kind(self, emulator: ClusterEmulator) -> None:
        """pending() narrows to one resource and one kind of fault."""
        emulator.inject_patch_error("v1/pods", 500, times=2, target="status")
        emulator.inject_patch_error("v1/pods", 500)
        emulator.inject_create_error("v1/events", 503)
        emulator.inject_watch_error("v1/pods", 410)
        pods = emulator.require("v1/pods").resource
        assert (5, 4, 1, 2, 1, 3) == (
            emulator.faults.pending(), emulator.faults.pending(pods), emulator.faults.pending(pods, "watch"),
            emulator.faults.pending(pods, "patch:status"), emulator.faults.pending(pods, "patch"),
            emulator.faults.pending(kind="patch:status") + emulator.faults.pending(kind="create"))

    async def test_clear_disarms_and_counts_what_did_not_fire(
        self, emulator: ClusterEmulator, api: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """clear() returns the faults left and disarms them, shuffles included."""
        await api.create(PODS, pod_body("p1"))
        emulator.inject_patch_error("v1/pods", 500, times=2)
        emulator.inject_watch_error("v1/pods", 410)
        emulator.inject_watch_shuffle("v1/pods", events=5)
        left = emulator.faults.clear()
        status, _ = await api.call("PATCH", f"{PODS}/p1", {"metadata": {}}, headers=MERGE)
        assert (3, 200, None) == (left, status, emulator.faults.shuffle(emulator.require("v1/pods").resource))


class TestListFaults:
    async def test_the_next_lists_fail_then_lists_answer(
        self, emulator: ClusterEmulator, api: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """inject_list_error fails the next LISTs (counted from now, unlike a kmock DSL slice), not watches."""
        await api.create(PODS, pod_body("p1"))
        await api.call("GET", "/api/v1/pods")
        emulator.inject_list_error("v1/pods", 503, times=2)
        pods = emulator.require("v1/pods").resource
        first, _ = await api.call("GET", "/api/v1/pods")
        assert (1, 1) == (emulator.faults.pending(pods, "list"), emulator.faults.pending(pods))
        second, body = await api.call("GET", "/api/v1/namespaces/ns1/pods")
        third, listed = await api.call("GET", "/api/v1/pods")
        assert (503, 503, "ServiceUnavailable", 200) == (first, second, body["reason"], third)
        assert ["p1"] == [item["metadata"]["name"] for item in listed["items"]]


class TestShuffle:
    def test_it_never_reorders_one_object_nor_drops_an_event(self) -> None:
        """Over many random batches, each object's events keep their order, and every event is sent."""
        shuffle = Shuffle(events=10_000, duplicate=0.3, swap=0.6, rng=random.Random(7))
        source = random.Random(3)
        rv = 0
        for _ in range(300):
            batch = []
            for _ in range(source.randint(1, 6)):
                rv += 1
                batch.append(event(source.choice("abc"), rv))
            sent = shuffle.mangle(batch)
            assert names(batch) == sorted(set(names(sent)), key=lambda n: int(n.split("@")[1]))
            for obj in "abc":
                mine = [int(n.split("@")[1]) for n in names(sent) if n.startswith(obj + "@")]
                assert sorted(mine) == mine
        assert shuffle.swapped > 100
        assert shuffle.duplicated > 100

    def test_it_stops_after_its_events(self) -> None:
        """Once its budget is spent, batches pass unchanged."""
        shuffle = Shuffle(events=2, duplicate=1.0, swap=0.0, rng=random.Random(1))
        batch = [event("a", 1), event("b", 2), event("c", 3)]
        assert ["a@1", "a@1", "b@2", "b@2", "c@3"] == names(shuffle.mangle(batch))
        assert ["d@4"] == names(shuffle.mangle([event("d", 4)]))

    async def test_a_watch_stream_is_shuffled_while_armed(
        self, emulator: ClusterEmulator, open_watch: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """Changes made together reach a watcher swapped and duplicated; the shuffle reports what it did."""
        shuffle = emulator.inject_watch_shuffle("v1/pods", events=4, seed=1, duplicate=0.0, swap=1.0)
        async with open_watch("/api/v1/pods", {"resourceVersion": "0"}) as stream:
            emulator.load_objects([{**pod_body(name), "metadata": {"name": name, "namespace": "ns1"}}
                                   for name in ("a", "b", "c", "d", "e")])
            events = await stream.take(5)
        assert ["b@2", "a@1", "d@4", "c@3", "e@5"] == names(events)
        assert (2, 0) == (shuffle.swapped, shuffle.duplicated)


class TestRestart:
    async def test_a_stopped_server_refuses_and_a_restarted_one_has_the_same_store(self) -> None:
        """stop() refuses connections and ends open watches; start() serves the same objects on the same port."""
        emulator = ClusterEmulator()
        register_cluster_resources(emulator)
        async with emulator, EmulatorServer(emulator) as server, aiohttp.ClientSession() as client:
            url = server.url
            emulator.load_objects([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}])
            async with client.get(f"{url}/api/v1/nodes", params={"watch": "true", "resourceVersion": "1"}) as watch:
                await server.stop()
                with pytest.raises(aiohttp.ClientError):
                    await asyncio.wait_for(watch.content.read(), timeout=5)
            with pytest.raises(aiohttp.ClientConnectionError):
                async with client.get(f"{url}/api/v1/nodes"):
                    pass
            emulator.load_objects([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}}])
            assert url == await server.start()
            async with client.get(f"{url}/api/v1/nodes") as response:
                listed = await response.json()
        assert ["n1", "n2"] == [item["metadata"]["name"] for item in listed["items"]]
        assert "2" == listed["metadata"]["resourceVersion"]

    async def test_start_is_idempotent_and_url_needs_a_start(self) -> None:
        """A second start() keeps the server; url before any start is an error."""
        emulator = ClusterEmulator()
        async with emulator:
            server = EmulatorServer(emulator)
            with pytest.raises(RuntimeError):
                _ = server.url
            async with server:
                assert server.running
                assert server.url == await server.start()
            assert not server.running
