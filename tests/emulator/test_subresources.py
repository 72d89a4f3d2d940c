"""The status subresource isolates spec from status both ways; finalizers hold deletions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from draledger.demo.emulator import ClusterEmulator

PODS = "/api/v1/namespaces/ns1/pods"
LEDGERS = "/apis/draledger.dev/v1alpha1/nodeallocatableledgers"


class TestStatusIsolation:
    async def test_main_patch_ignores_status(self, api: Any, pod_body: Callable[..., dict[str, Any]]) -> None:
        """A patch to the main resource applies its spec changes and drops its status changes."""
        await api.create(PODS, pod_body("p1", schedulingGates=[{"name": "g"}]))
        patched = await api.merge(
            f"{PODS}/p1", {"spec": {"schedulingGates": None}, "status": {"phase": "Running"}}
        )
        assert (patched["status"]["phase"], patched["spec"].get("schedulingGates")) == ("Pending", None)

    async def test_status_patch_ignores_everything_else(
        self, api: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """A patch to /status changes only status (plus the RV)."""
        await api.create(PODS, pod_body("p1", nodeName="n1"))
        patched = await api.merge(
            f"{PODS}/p1/status",
            {"spec": {"nodeName": "n2"}, "metadata": {"labels": {"x": "1"}}, "status": {"phase": "Running"}},
        )
        assert (
            patched["spec"]["nodeName"],
            patched["metadata"]["labels"],
            patched["status"]["phase"],
            patched["metadata"]["resourceVersion"],
        ) == ("n1", {}, "Running", "2")

    async def test_status_json_patch_with_test_op(self, api: Any) -> None:
        """kopf's JSON patch to /status (test RV, add /status) works on a custom resource."""
        await api.create(LEDGERS, {"metadata": {"name": "n1"}, "spec": {"frozen": False}})
        patched = await api.json_patch(
            f"{LEDGERS}/n1/status",
            [
                {"op": "test", "path": "/metadata/resourceVersion", "value": "1"},
                {
                    "op": "add",
                    "path": "/status",
                    "value": {"conditions": [{"type": "Ready", "status": "True"}]},
                },
            ],
        )
        assert (patched["spec"], patched["status"]["conditions"][0]["status"]) == ({"frozen": False}, "True")

    async def test_create_drops_status(self, api: Any) -> None:
        """Creates ignore status for resources with a status subresource; pods start Pending."""
        ledger = await api.create(LEDGERS, {"metadata": {"name": "n1"}, "status": {"nodes": 1}})
        pod = await api.create(PODS, {"metadata": {"name": "p1"}, "spec": {}, "status": {"phase": "Running"}})
        assert (ledger.get("status"), pod["status"]) == (None, {"phase": "Pending"})

    async def test_status_on_resource_without_subresource_is_404(self, api: Any) -> None:
        """/status of a resource that has no status subresource is 404."""
        await api.create("/apis/resource.k8s.io/v1/resourceslices", {"metadata": {"name": "s1"}, "spec": {}})
        status, _ = await api.call(
            "PATCH",
            "/apis/resource.k8s.io/v1/resourceslices/s1/status",
            {"status": {}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert status == 404

    async def test_preloading_keeps_status(self, emulator: ClusterEmulator, api: Any) -> None:
        """load_objects stores objects as if reconciled earlier: status and a given uid are kept."""
        emulator.load_objects(
            [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "p1", "namespace": "ns1", "uid": "fixed-uid"},
                    "spec": {"nodeName": "n1"},
                    "status": {"phase": "Running"},
                }
            ]
        )
        fetched = await api.get(f"{PODS}/p1")
        assert (
            fetched["status"]["phase"],
            fetched["metadata"]["uid"],
            fetched["metadata"]["resourceVersion"],
        ) == ("Running", "fixed-uid", "1")


class TestFinalizers:
    async def test_finalizers_hold_the_deletion(self, api: Any, open_watch: Any) -> None:
        """DELETE marks deletionTimestamp (MODIFIED); emptying finalizers removes it (DELETED only)."""
        await api.create(LEDGERS, {"metadata": {"name": "n1", "finalizers": ["x.dev/f"]}})
        async with open_watch(LEDGERS, {"resourceVersion": "1"}) as stream:
            marked = await api.delete(f"{LEDGERS}/n1")
            still_there = await api.get(f"{LEDGERS}/n1")
            await api.merge(f"{LEDGERS}/n1", {"metadata": {"finalizers": None}})
            events = await stream.take(2)
        status, _ = await api.call("GET", f"{LEDGERS}/n1")
        assert marked["metadata"]["deletionTimestamp"] == still_there["metadata"]["deletionTimestamp"]
        assert [(e["type"], e["object"]["metadata"]["resourceVersion"]) for e in events] == [
            ("MODIFIED", "2"),
            ("DELETED", "3"),
        ]
        assert status == 404


class TestReplace:
    async def test_put_replaces_but_keeps_status(
        self, api: Any, pod_body: Callable[..., dict[str, Any]]
    ) -> None:
        """PUT with the current RV replaces the object; status still only changes through /status."""
        created = await api.create(PODS, pod_body("p1", nodeName="n1"))
        body = dict(created, spec={"nodeName": "n2"}, status={"phase": "Failed"})
        replaced = await api.ok("PUT", f"{PODS}/p1", body)
        assert (replaced["spec"], replaced["status"], replaced["metadata"]["resourceVersion"]) == (
            {"nodeName": "n2"},
            {"phase": "Pending"},
            "2",
        )
