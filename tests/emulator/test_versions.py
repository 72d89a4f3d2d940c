"""resourceVersion, uid, creationTimestamp and generation, as the apiserver assigns them."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import pytest

from draledger.demo.emulator import ClusterEmulator

PODS = "/api/v1/namespaces/ns1/pods"


class TestResourceVersions:
    async def test_create_assigns_next_rv(self, api: Any, pod_body: Callable[..., dict[str, Any]]) -> None:
        """Each create takes the next cluster-wide RV, across resources."""
        first = await api.create(PODS, pod_body("p1"))
        node = await api.create("/api/v1/nodes", {"metadata": {"name": "n1"}})
        second = await api.create(PODS, pod_body("p2"))
        assert [o["metadata"]["resourceVersion"] for o in (first, node, second)] == ["1", "2", "3"]

    async def test_patches_and_status_patches_bump_rv(
        self, api: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """A main patch and a /status patch each bump the RV."""
        await api.create(PODS, pod_body("p1"))
        main = await api.merge(f"{PODS}/p1", {"metadata": {"labels": {"x": "1"}}})
        status = await api.merge(f"{PODS}/p1/status", {"status": {"phase": "Running"}})
        assert (main["metadata"]["resourceVersion"], status["metadata"]["resourceVersion"]) == ("2", "3")

    async def test_noop_patch_keeps_rv(
        self, api: Any, emulator: ClusterEmulator, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """A patch that changes nothing is a no-op: same RV, no new RV taken."""
        await api.create(PODS, pod_body("p1", labels={"x": "1"}))
        same = await api.merge(f"{PODS}/p1", {"metadata": {"labels": {"x": "1"}}})
        assert (same["metadata"]["resourceVersion"], emulator.resource_version) == ("1", 1)

    async def test_delete_takes_a_new_rv(self, api: Any, pod_body: Callable[..., dict[str, Any]]) -> None:
        """The deleted object is returned with a new RV, and the list RV moves on."""
        await api.create(PODS, pod_body("p1"))
        deleted = await api.delete(f"{PODS}/p1")
        listed = await api.get("/api/v1/pods")
        assert (
            deleted["metadata"]["resourceVersion"],
            listed["metadata"]["resourceVersion"],
            listed["items"],
        ) == ("2", "2", [])

    async def test_list_rv_is_the_current_counter(
        self, api: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """LIST returns metadata.resourceVersion = the latest RV of the whole cluster."""
        await api.create(PODS, pod_body("p1"))
        await api.create("/api/v1/nodes", {"metadata": {"name": "n1"}})
        listed = await api.get("/api/v1/pods")
        assert listed["metadata"]["resourceVersion"] == "2"


class TestServerFields:
    @pytest.fixture
    def emulator_kwargs(self) -> dict[str, Any]:
        moment = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
        return {"now": lambda: moment}

    async def test_create_sets_uid_timestamp_generation(
        self, api: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """Creates get a uuid4 uid, an RFC 3339 creationTimestamp from the injected clock and generation 1."""
        meta = (await api.create(PODS, pod_body("p1")))["metadata"]
        assert (
            meta["creationTimestamp"],
            meta["generation"],
            len(meta["uid"]),
        ) == ("2030-01-02T03:04:05Z", 1, 36)

    async def test_generate_name(self, api: Any) -> None:
        """generateName gets a 5-character suffix."""
        created = await api.create("/api/v1/nodes", {"metadata": {"generateName": "node-"}})
        assert created["metadata"]["name"].startswith("node-")
        assert len("node-") + 5 == len(created["metadata"]["name"])

    async def test_generation_bumps_on_spec_only(
        self, api: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """generation moves on spec changes, not on metadata or status changes."""
        await api.create(PODS, pod_body("p1", schedulingGates=[{"name": "a"}]))
        labelled = await api.merge(f"{PODS}/p1", {"metadata": {"labels": {"x": "y"}}})
        statused = await api.merge(f"{PODS}/p1/status", {"status": {"phase": "Running"}})
        ungated = await api.merge(f"{PODS}/p1", {"spec": {"schedulingGates": None}})
        assert [o["metadata"]["generation"] for o in (labelled, statused, ungated)] == [1, 1, 2]

    async def test_server_owned_metadata_is_immutable(
        self, api: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """A patch cannot change uid or creationTimestamp."""
        created = await api.create(PODS, pod_body("p1"))
        forged = {"metadata": {"uid": "forged", "creationTimestamp": "1999-01-01T00:00:00Z"}}
        patched = await api.merge(f"{PODS}/p1", forged)
        assert created["metadata"]["uid"] == patched["metadata"]["uid"]
        assert patched["metadata"]["creationTimestamp"] == "2030-01-02T03:04:05Z"
