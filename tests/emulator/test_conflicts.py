"""Optimistic concurrency and error answers: 422, 409, 404, 415 as kube-apiserver sends them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from draledger.demo.emulator import ClusterEmulator

PODS = "/api/v1/namespaces/ns1/pods"
GATES = [{"name": "ours.dev/gate"}, {"name": "other.io/gate"}]


class TestJsonPatchTest:
    async def test_failed_test_op_is_422_and_applies_nothing(
        self, api: Any, emulator: ClusterEmulator, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """A JSON patch whose test op fails answers 422 Invalid and changes nothing, RV included."""
        await api.create(PODS, pod_body("p1", schedulingGates=GATES))
        await api.merge(f"{PODS}/p1", {"metadata": {"labels": {"bump": "1"}}})  # RV 1 -> 2
        ops = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": "1"},
            {"op": "remove", "path": "/spec/schedulingGates/0"},
        ]
        status, body = await api.call(
            "PATCH", f"{PODS}/p1", ops, headers={"Content-Type": "application/json-patch+json"}
        )
        stored = emulator.get_object("v1/pods", "p1", "ns1")
        assert (status, body["kind"], body["reason"], body["code"]) == (422, "Status", "Invalid", 422)
        assert stored is not None
        assert (stored["spec"]["schedulingGates"], stored["metadata"]["resourceVersion"]) == (GATES, "2")

    async def test_passing_test_op_applies(self, api: Any, pod_body: Callable[..., dict[str, Any]]) -> None:
        """A JSON patch whose test op holds is applied with a new RV."""
        await api.create(PODS, pod_body("p1", schedulingGates=GATES))
        patched = await api.json_patch(
            f"{PODS}/p1",
            [
                {"op": "test", "path": "/metadata/resourceVersion", "value": "1"},
                {"op": "remove", "path": "/spec/schedulingGates/0"},
            ],
        )
        assert (
            patched["spec"]["schedulingGates"],
            patched["metadata"]["resourceVersion"],
        ) == ([{"name": "other.io/gate"}], "2")

    async def test_missing_path_is_422(self, api: Any, pod_body: Callable[..., dict[str, Any]]) -> None:
        """Removing a path that does not exist is 422 as well."""
        await api.create(PODS, pod_body("p1"))
        ops = [{"op": "remove", "path": "/spec/schedulingGates/0"}]
        status, _ = await api.call(
            "PATCH", f"{PODS}/p1", ops, headers={"Content-Type": "application/json-patch+json"}
        )
        assert status == 422


class TestConflicts:
    async def test_duplicate_create_is_409_already_exists(
        self, api: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """Creating a live name again answers 409 AlreadyExists."""
        await api.create(PODS, pod_body("p1"))
        status, body = await api.call("POST", PODS, pod_body("p1"))
        assert (
            status,
            body["reason"],
            body["details"],
        ) == (409, "AlreadyExists", {"name": "p1", "kind": "pods"})

    async def test_recreate_after_delete(self, api: Any, pod_body: Callable[..., dict[str, Any]]) -> None:
        """A deleted name can be created again, with a new uid."""
        first = await api.create(PODS, pod_body("p1"))
        await api.delete(f"{PODS}/p1")
        second = await api.create(PODS, pod_body("p1"))
        assert first["metadata"]["uid"] != second["metadata"]["uid"]

    async def test_stale_merge_patch_rv_is_409_conflict(
        self, api: Any, emulator: ClusterEmulator, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """A merge patch carrying an old resourceVersion answers 409 Conflict and applies nothing."""
        await api.create(PODS, pod_body("p1"))
        await api.merge(f"{PODS}/p1", {"metadata": {"labels": {"a": "1"}}})
        stale = {"metadata": {"resourceVersion": "1", "labels": {"a": "2"}}}
        status, body = await api.call(
            "PATCH", f"{PODS}/p1", stale, headers={"Content-Type": "application/merge-patch+json"}
        )
        stored = emulator.get_object("v1/pods", "p1", "ns1")
        assert (status, body["reason"]) == (409, "Conflict")
        assert stored is not None
        assert stored["metadata"]["labels"]["a"] == "1"

    async def test_current_merge_patch_rv_applies(
        self, api: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """A merge patch carrying the current resourceVersion is applied."""
        await api.create(PODS, pod_body("p1"))
        patched = await api.merge(f"{PODS}/p1", {"metadata": {"resourceVersion": "1", "labels": {"a": "2"}}})
        assert (patched["metadata"]["labels"]["a"], patched["metadata"]["resourceVersion"]) == ("2", "2")

    async def test_put_with_stale_rv_is_409(self, api: Any, pod_body: Callable[..., dict[str, Any]]) -> None:
        """PUT is a full replace guarded by the body's resourceVersion."""
        created = await api.create(PODS, pod_body("p1"))
        await api.merge(f"{PODS}/p1", {"metadata": {"labels": {"a": "1"}}})
        status, body = await api.call("PUT", f"{PODS}/p1", created)
        assert (status, body["reason"]) == (409, "Conflict")

    async def test_delete_precondition_mismatch_is_409(
        self, api: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """DELETE with a stale resourceVersion precondition answers 409."""
        await api.create(PODS, pod_body("p1"))
        await api.merge(f"{PODS}/p1", {"metadata": {"labels": {"a": "1"}}})
        status, _ = await api.call("DELETE", f"{PODS}/p1", {"preconditions": {"resourceVersion": "1"}})
        assert status == 409


class TestNotFound:
    async def test_patch_and_get_missing_are_404(self, api: Any) -> None:
        """Patch, get and delete of a missing object answer 404 NotFound."""
        patch_status, patch_body = await api.call(
            "PATCH",
            f"{PODS}/nope",
            {"metadata": {}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        get_status, get_body = await api.call("GET", f"{PODS}/nope")
        delete_status, _ = await api.call("DELETE", f"{PODS}/nope")
        assert (patch_status, get_status, delete_status) == (404, 404, 404)
        assert (get_body["reason"], get_body["message"]) == ("NotFound", 'pods "nope" not found')
        assert patch_body["reason"] == "NotFound"

    async def test_undeclared_resource_is_404(self, api: Any) -> None:
        """Resources that were never declared are not served: a plain-text 404, as kube-apiserver's mux answers."""
        status, body = await api.call("GET", "/apis/example.com/v1/widgets")
        assert (404, "404 page not found") == (status, str(body).strip())

    async def test_server_side_apply_is_415(self, api: Any, pod_body: Callable[..., dict[str, Any]]) -> None:
        """Server-side apply is not emulated and says so."""
        await api.create(PODS, pod_body("p1"))
        status, _ = await api.call(
            "PATCH", f"{PODS}/p1", {"metadata": {}}, headers={"Content-Type": "application/apply-patch+yaml"}
        )
        assert status == 415
