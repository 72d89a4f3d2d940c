"""LIST documents: kind, apiVersion, items with kind/apiVersion, key order, pagination, shared versions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from draledger.demo.emulator import ClusterEmulator


class TestListShape:
    async def test_list_document(self, api: Any, pod_body: Callable[..., dict[str, Any]]) -> None:
        """A list is a <Kind>List with apiVersion, metadata.resourceVersion and typed items."""
        await api.create("/api/v1/namespaces/ns1/pods", pod_body("p1"))
        listed = await api.get("/api/v1/pods")
        assert (
            listed["kind"],
            listed["apiVersion"],
            listed["metadata"]["resourceVersion"],
        ) == ("PodList", "v1", "1")
        assert [(i["kind"], i["apiVersion"], i["metadata"]["name"]) for i in listed["items"]] == [
            ("Pod", "v1", "p1")
        ]

    async def test_custom_resource_list(self, api: Any) -> None:
        """Cluster-scoped custom resources list with their group/version."""
        await api.create("/apis/draledger.dev/v1alpha1/nodeallocatableledgers", {"metadata": {"name": "n1"}})
        listed = await api.get("/apis/draledger.dev/v1alpha1/nodeallocatableledgers")
        item = listed["items"][0]
        assert (
            listed["kind"],
            listed["apiVersion"],
        ) == ("NodeAllocatableLedgerList", "draledger.dev/v1alpha1")
        assert (item["kind"], item["apiVersion"]) == ("NodeAllocatableLedger", "draledger.dev/v1alpha1")
        assert "namespace" not in item["metadata"]

    async def test_namespace_scoping(self, api: Any, pod_body: Callable[..., dict[str, Any]]) -> None:
        """A namespaced list sees its namespace; the cluster-wide list sees all, in key order."""
        await api.create("/api/v1/namespaces/ns2/pods", pod_body("a"))
        await api.create("/api/v1/namespaces/ns1/pods", pod_body("b"))
        await api.create("/api/v1/namespaces/ns1/pods", pod_body("a"))
        scoped = await api.get("/api/v1/namespaces/ns1/pods")
        everything = await api.get("/api/v1/pods")
        keys = [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in everything["items"]]
        assert [i["metadata"]["name"] for i in scoped["items"]] == ["a", "b"]
        assert keys == [("ns1", "a"), ("ns1", "b"), ("ns2", "a")]

    async def test_namespaces_resource(self, api: Any) -> None:
        """The core namespaces resource itself can be created, fetched and listed."""
        await api.create("/api/v1/namespaces", {"metadata": {"name": "ns1"}})
        fetched = await api.get("/api/v1/namespaces/ns1")
        listed = await api.get("/api/v1/namespaces")
        assert (fetched["kind"], [i["metadata"]["name"] for i in listed["items"]]) == ("Namespace", ["ns1"])


class TestPagination:
    async def test_limit_and_continue(self, api: Any, emulator: ClusterEmulator) -> None:
        """limit/continue pages through all items once, with the first page's RV and no token at the end."""
        emulator.load_objects(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"}} for i in range(5)
        )
        first = await api.get("/api/v1/nodes", limit="2")
        second = await api.get("/api/v1/nodes", limit="2", **{"continue": first["metadata"]["continue"]})
        third = await api.get("/api/v1/nodes", limit="2", **{"continue": second["metadata"]["continue"]})
        names = [i["metadata"]["name"] for page in (first, second, third) for i in page["items"]]
        assert [f"n{i}" for i in range(5)] == names
        assert (3, "continue" in third["metadata"]) == (first["metadata"]["remainingItemCount"], False)
        assert {"5"} == {page["metadata"]["resourceVersion"] for page in (first, second, third)}

    async def test_bad_continue_token_is_400(self, api: Any) -> None:
        """A malformed continue token answers 400 BadRequest."""
        status, _ = await api.call("GET", "/api/v1/nodes", params={"continue": "%%%"})
        assert status == 400


class TestVersions:
    async def test_versions_share_storage(self, api: Any) -> None:
        """An object created through v1 is served through v1beta2 with that apiVersion, like the apiserver."""
        await api.create("/apis/resource.k8s.io/v1/resourceslices", {"metadata": {"name": "s1"}, "spec": {}})
        beta = await api.get("/apis/resource.k8s.io/v1beta2/resourceslices/s1")
        listed = await api.get("/apis/resource.k8s.io/v1beta2/resourceslices")
        assert (beta["apiVersion"], beta["kind"]) == ("resource.k8s.io/v1beta2", "ResourceSlice")
        assert [i["apiVersion"] for i in listed["items"]] == ["resource.k8s.io/v1beta2"]
