"""Owner-reference garbage collection: owned objects go when their last owner goes."""

from __future__ import annotations

from typing import Any

from draledger.demo.emulator import ClusterEmulator

LEDGERS = "/apis/draledger.dev/v1alpha1/nodeallocatableledgers"


def owned_by(*owners: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": o["apiVersion"],
            "kind": o["kind"],
            "name": o["metadata"]["name"],
            "uid": o["metadata"]["uid"],
        }
        for o in owners
    ]


class TestOwnerGC:
    async def test_deleting_a_node_deletes_its_ledger(self, api: Any, open_watch: Any) -> None:
        """Deleting a Node deletes the ledger it owns, with a DELETED event for the ledger."""
        node = await api.create("/api/v1/nodes", {"metadata": {"name": "n1"}})
        await api.create(LEDGERS, {"metadata": {"name": "n1", "ownerReferences": owned_by(node)}})
        await api.create(LEDGERS, {"metadata": {"name": "unowned"}})
        async with open_watch(LEDGERS, {"resourceVersion": "3"}) as stream:
            await api.delete("/api/v1/nodes/n1")
            events = await stream.take(1)
        remaining = await api.get(LEDGERS)
        assert [
            (e["type"], e["object"]["metadata"]["name"], e["object"]["metadata"]["resourceVersion"])
            for e in events
        ] == [("DELETED", "n1", "5")]
        assert [i["metadata"]["name"] for i in remaining["items"]] == ["unowned"]

    async def test_another_live_owner_keeps_the_dependent(self, api: Any) -> None:
        """A dependent with another live owner survives the deletion of one owner."""
        n1 = await api.create("/api/v1/nodes", {"metadata": {"name": "n1"}})
        n2 = await api.create("/api/v1/nodes", {"metadata": {"name": "n2"}})
        await api.create(LEDGERS, {"metadata": {"name": "shared", "ownerReferences": owned_by(n1, n2)}})
        await api.delete("/api/v1/nodes/n1")
        assert (await api.get(f"{LEDGERS}/shared"))["metadata"]["name"] == "shared"

    async def test_cascade_is_recursive_and_respects_finalizers(self, emulator: ClusterEmulator) -> None:
        """GC cascades through owner chains; a dependent with finalizers is only marked for deletion."""
        [node] = emulator.load_objects([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}])
        [ledger] = emulator.load_objects(
            [
                {
                    "apiVersion": "draledger.dev/v1alpha1",
                    "kind": "NodeAllocatableLedger",
                    "metadata": {"name": "n1", "ownerReferences": owned_by(node)},
                }
            ]
        )
        emulator.load_objects(
            [
                {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {
                        "name": "l1",
                        "namespace": "ns1",
                        "finalizers": ["x/f"],
                        "ownerReferences": owned_by(ledger),
                    },
                }
            ]
        )
        emulator.delete_object("v1/nodes", "n1")
        lease = emulator.get_object("coordination.k8s.io/v1/leases", "l1", "ns1")
        assert emulator.get_object("draledger.dev/v1alpha1/nodeallocatableledgers", "n1") is None
        assert lease is not None
        assert "deletionTimestamp" in lease["metadata"]

    async def test_orphan_propagation_keeps_dependents(self, api: Any) -> None:
        """propagationPolicy=Orphan skips the garbage collection."""
        node = await api.create("/api/v1/nodes", {"metadata": {"name": "n1"}})
        await api.create(LEDGERS, {"metadata": {"name": "n1", "ownerReferences": owned_by(node)}})
        await api.ok("DELETE", "/api/v1/nodes/n1", {"propagationPolicy": "Orphan"})
        assert (await api.get(f"{LEDGERS}/n1"))["metadata"]["name"] == "n1"
