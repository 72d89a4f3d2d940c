"""Discovery documents for the declared resources, as kopf and kubectl read them."""

from __future__ import annotations

from typing import Any

from draledger.demo.emulator.discovery import version_priority


class TestDiscovery:
    async def test_core_group_version(self, api: Any) -> None:
        """/api/v1 lists core resources with groupVersion "v1" and their subresources."""
        document = await api.get("/api/v1")
        names = {r["name"]: r for r in document["resources"]}
        assert (document["kind"], document["groupVersion"]) == ("APIResourceList", "v1")
        assert {"namespaces", "nodes", "pods", "pods/status", "events"} <= set(names)
        assert (names["pods"]["namespaced"], names["nodes"]["namespaced"]) == (True, False)
        assert {"list", "watch", "patch"} <= set(names["pods"]["verbs"])

    async def test_ledger_resource(self, api: Any) -> None:
        """The ledger is cluster-scoped, with a status subresource, short name nal and category draledger."""
        document = await api.get("/apis/draledger.dev/v1alpha1")
        ledger = next(r for r in document["resources"] if r["name"] == "nodeallocatableledgers")
        assert (
            ledger["namespaced"],
            ledger["kind"],
            ledger["shortNames"],
            ledger["categories"],
        ) == (False, "NodeAllocatableLedger", ["nal"], ["draledger"])
        assert any(r["name"] == "nodeallocatableledgers/status" for r in document["resources"])

    async def test_preferred_version_is_ga(self, api: Any) -> None:
        """resource.k8s.io prefers v1 over v1beta2, in the group document and in the group list."""
        group = await api.get("/apis/resource.k8s.io")
        groups = await api.get("/apis")
        listed = next(g for g in groups["groups"] if g["name"] == "resource.k8s.io")
        assert (group["preferredVersion"]["version"], listed["preferredVersion"]["version"]) == ("v1", "v1")

    async def test_unknown_group_is_404(self, api: Any) -> None:
        """Unknown groups are 404 like on an apiserver without that API."""
        status, _ = await api.call("GET", "/apis/example.com")
        assert status == 404

    async def test_version_order(self) -> None:
        """Kubernetes version priority: GA, then beta, then alpha; higher numbers first."""
        versions = ["v1alpha1", "v1beta1", "v2", "v1", "v1beta2", "v2beta1", "foo"]
        assert sorted(versions, key=version_priority) == [
            "v2",
            "v1",
            "v2beta1",
            "v1beta2",
            "v1beta1",
            "v1alpha1",
            "foo",
        ]
