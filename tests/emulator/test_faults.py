"""Fault injection (watch errors, disconnects, write errors, kmock DSL read errors) and the request log."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aiohttp

from draledger.demo.emulator import ClusterEmulator

PODS = "/api/v1/namespaces/ns1/pods"
MERGE = {"Content-Type": "application/merge-patch+json"}


class TestWatchFaults:
    async def test_injected_410_is_an_error_event(self, emulator: ClusterEmulator, open_watch: Any) -> None:
        """inject_watch_error(410) answers the next watch with one ERROR 410 event; the next is normal."""
        emulator.inject_watch_error("v1/pods", 410)
        async with open_watch("/api/v1/pods") as stream:
            failed = await stream.rest()
        async with open_watch("/api/v1/pods", {"timeoutSeconds": "1"}) as stream:
            normal = await stream.rest()
        assert [(e["type"], e["object"]["code"]) for e in failed] == [("ERROR", 410)]
        assert (normal, emulator.faults.pending()) == ([], 0)

    async def test_injected_500_is_an_http_status(self, emulator: ClusterEmulator, api: Any) -> None:
        """inject_watch_error(500) answers the next watch with HTTP 500 and a Status body."""
        emulator.inject_watch_error("v1/pods", 500)
        status, body = await api.call("GET", "/api/v1/pods", params={"watch": "true"})
        assert (status, body["kind"], body["reason"]) == (500, "Status", "InternalError")

    async def test_error_event_on_request(self, emulator: ClusterEmulator, open_watch: Any) -> None:
        """as_event=True sends any status as an ERROR event instead."""
        emulator.inject_watch_error("v1/pods", 500, as_event=True)
        async with open_watch("/api/v1/pods") as stream:
            events = await stream.rest()
        assert [(e["type"], e["object"]["code"]) for e in events] == [("ERROR", 500)]

    async def test_disconnect_ends_open_streams(
        self, emulator: ClusterEmulator, api: Any, open_watch: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """inject_disconnect ends the streams open on that resource; a new watch resumes from an RV."""
        async with open_watch("/api/v1/pods", {"resourceVersion": "0"}) as stream:
            await api.create(PODS, pod_body("p1"))
            seen = await stream.take(1)
            emulator.inject_disconnect("v1/pods")
            after = await stream.rest()
        await api.create(PODS, pod_body("p2"))
        async with open_watch("/api/v1/pods", {"resourceVersion": "1"}) as stream:
            resumed = await stream.take(1)
        assert (
            [e["object"]["metadata"]["name"] for e in seen],
            after,
            [e["object"]["metadata"]["name"] for e in resumed],
        ) == (["p1"], [], ["p2"])


class TestWriteFaults:
    async def test_patch_errors_apply_nothing(
        self, emulator: ClusterEmulator, api: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """inject_patch_error fails the next N patches (main and status) without applying them."""
        await api.create(PODS, pod_body("p1"))
        emulator.inject_patch_error("v1/pods", 503, times=2)
        first, _ = await api.call("PATCH", f"{PODS}/p1", {"metadata": {"labels": {"a": "1"}}}, headers=MERGE)
        second, _ = await api.call(
            "PATCH", f"{PODS}/p1/status", {"status": {"phase": "Running"}}, headers=MERGE
        )
        stored = emulator.get_object("v1/pods", "p1", "ns1")
        third = await api.merge(f"{PODS}/p1", {"metadata": {"labels": {"a": "1"}}})
        assert (first, second) == (503, 503)
        assert stored is not None
        assert (stored["metadata"]["resourceVersion"], stored["status"]["phase"]) == ("1", "Pending")
        assert third["metadata"]["resourceVersion"] == "2"

    async def test_429_carries_retry_after(
        self,
        emulator: ClusterEmulator,
        client: aiohttp.ClientSession,
        api: Any,
        pod_body: Callable[..., dict[str, Any]],
    ) -> None:
        """A 429 fault sends Retry-After and details.retryAfterSeconds, like the apiserver's throttling."""
        await api.create(PODS, pod_body("p1"))
        emulator.inject_patch_error("v1/pods", 429, retry_after=2)
        async with client.patch(f"{PODS}/p1", json={"metadata": {}}, headers=MERGE) as response:
            body = await response.json()
            header = response.headers.get("Retry-After")
        assert (
            response.status,
            header,
            body["reason"],
            body["details"]["retryAfterSeconds"],
        ) == (429, "2", "TooManyRequests", 2)

    async def test_create_errors_create_nothing(self, emulator: ClusterEmulator, api: Any) -> None:
        """inject_create_error fails the next create without storing the object."""
        emulator.inject_create_error("draledger.dev/v1alpha1/nodeallocatableledgers", 500)
        status, _ = await api.call(
            "POST", "/apis/draledger.dev/v1alpha1/nodeallocatableledgers", {"metadata": {"name": "n1"}}
        )
        assert (
            status,
            emulator.get_object("draledger.dev/v1alpha1/nodeallocatableledgers", "n1"),
            emulator.resource_version,
        ) == (500, None, 0)


class TestKmockDsl:
    async def test_dsl_read_fault_once(self, emulator: ClusterEmulator, api: Any) -> None:
        """kmock's DSL injects read faults: a slice makes it fire on the first list only."""
        emulator["list v1/nodes"][:1] << 500 << {"kind": "Status", "apiVersion": "v1", "code": 500}
        first, _ = await api.call("GET", "/api/v1/nodes")
        second, body = await api.call("GET", "/api/v1/nodes")
        assert (first, second, body["kind"]) == (500, 200, "NodeList")

    async def test_request_log(
        self, emulator: ClusterEmulator, api: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """kmock's request log records every request, failed ones included, and filters by action/resource."""
        await api.create(PODS, pod_body("p1"))
        await api.merge(f"{PODS}/p1", {"metadata": {"labels": {"a": "1"}}})
        await api.call("PATCH", f"{PODS}/nope", {"metadata": {}}, headers=MERGE)
        patches = list(emulator["patch v1/pods"])
        assert [request.name for request in patches] == ["p1", "nope"]
        assert patches[0].data == {"metadata": {"labels": {"a": "1"}}}
        assert all(request in emulator for request in patches)  # identity is preserved
        assert emulator.errors == []  # deliberate API errors are not "errors"
