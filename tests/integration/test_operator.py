"""The real operator against the emulator: start, incremental changes, deletion, freshness, restart."""

from __future__ import annotations

import gc

import pytest

from draledger.demo.emulator import ClusterEmulator, serve_emulator
from draledger.operator.running import Operator
from tests.integration.harness import (
    CLAIMS,
    NODES,
    PODS,
    SLICES,
    audited,
    case_items,
    emulating,
    eventually,
    ledger,
    phase_is,
    running,
    semantic,
    status,
    writes,
)

CASES = ["v01", "v02", "v03", "v04", "v05", "v06", "v07", "v08", "v09", "v10", "v11", "v12", "v13"]


def _pod(name: str, node: str, cpu: str, *, claim: str | None = None, ns: str = "t") -> dict:
    container: dict = {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
    spec: dict = {"nodeName": node, "containers": [container]}
    if claim:
        container["resources"]["claims"] = [{"name": "x"}]
        spec["resourceClaims"] = [{"name": "x", "resourceClaimName": claim}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
        "status": {"phase": "Running"},
    }


class TestStartup:
    async def test_what_the_rebuild_built_is_frozen_once_every_ledger_is_written(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Priming freezes what it read; once the rebuilt ledgers are all written, the operator collects once
        and freezes what the rebuild built too (``running.tune_gc``)."""
        freezes: list[tuple[bool, bool]] = []  # (every ledger written, a collection ran just before)
        collected = [False]
        freeze, collect = gc.freeze, gc.collect
        holder: dict[str, Operator] = {}

        def recording_collect(*args: int) -> int:
            collected[0] = True
            return collect(*args)

        def recording_freeze() -> None:
            operator = holder.get("operator")
            freezes.append((operator is not None and operator.writer.caught_up.is_set(), collected[0]))
            collected[0] = False
            freeze()

        monkeypatch.setattr(gc, "freeze", recording_freeze)
        monkeypatch.setattr(gc, "collect", recording_collect)
        items = case_items("v02")
        try:
            async with serve_emulator() as (emulator, url):
                emulator.load_objects(items)
                nodes = [i["metadata"]["name"] for i in items if i["kind"] == "Node"]
                async with running(url) as operator:
                    holder["operator"] = operator
                    await eventually(lambda: len(freezes) == 2, what="two freezes")
                    assert all(status(emulator, n).get("phase") not in (None, "Rebuilding") for n in nodes)
        finally:
            gc.unfreeze()
        assert [(False, False), (True, True)] == freezes

    @pytest.mark.parametrize("case", CASES, ids=CASES)
    async def test_ledgers_equal_audit_of_the_same_objects(self, case: str) -> None:
        """Started on a populated cluster, every ledger equals what audit computes from the same objects."""
        items = case_items(case)
        async with serve_emulator(emulator=emulating(items)) as (emulator, url):
            stored = emulator.load_objects(items)
            expected = audited(stored)
            async with running(url) as operator:
                await eventually(lambda: operator.runtime.rebuilt.is_set(), what="rebuild")
                for node, want in expected.items():
                    await eventually(
                        lambda node=node: status(emulator, node).get("phase") not in (None, "Rebuilding"),
                        what=f"{node} ledger",
                    )
                    assert want == semantic(status(emulator, node))
                owner = ledger(emulator, next(iter(expected)))["metadata"]["ownerReferences"][0]
                assert ("Node", "v1") == (owner["kind"], owner["apiVersion"])

    async def test_no_foreign_object_gains_annotations_or_finalizers(self) -> None:
        """Pods, claims, slices and nodes keep exactly their metadata annotations and finalizers."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(case_items("v02"))
            async with running(url, pod_status="observe") as operator:
                await eventually(lambda: operator.runtime.rebuilt.is_set())
                await eventually(phase_is(emulator, "n1", "Ready"))
            for resource in (PODS, NODES, SLICES, CLAIMS):
                for obj in emulator.store.live(emulator.require(resource).resource):
                    meta = obj.get("metadata", {})
                    assert not any(k.startswith("kopf") for k in meta.get("annotations") or {}), obj
                    assert [] == (meta.get("finalizers") or [])


class TestIncremental:
    async def test_pod_add_update_delete(self) -> None:
        """Adding, resizing and deleting a pod moves the node's requests each time, and only that node's."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(case_items("v08"))
            async with running(url) as operator:
                await eventually(phase_is(emulator, "n3", "Ready"))
                n1_before = status(emulator, "n1")["ledgerVersion"]
                emulator.load_objects([_pod("extra", "n3", "500m")])
                await eventually(lambda: status(emulator, "n3")["resources"]["cpu"]["requested"] == "500m")
                emulator.patch_object(
                    PODS,
                    "extra",
                    {
                        "spec": {
                            "containers": [
                                {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1500m"}}}
                            ]
                        }
                    },
                    namespace="t",
                )
                await eventually(lambda: status(emulator, "n3")["resources"]["cpu"]["requested"] == "1500m")
                emulator.delete_object(PODS, "extra", namespace="t")
                await eventually(lambda: status(emulator, "n3")["resources"]["cpu"]["requested"] == "0")
                assert n1_before == status(emulator, "n1")["ledgerVersion"]
                assert operator.runtime.state.pods.get(("t", "extra")) is None

    async def test_terminal_pod_leaves_the_ledger(self) -> None:
        """A pod that Succeeds stops counting (the field selector turns it into a DELETED event)."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(case_items("v08"))
            async with running(url):
                await eventually(
                    lambda: status(emulator, "n1").get("resources", {}).get("cpu", {}).get("requested") == "2"
                )
                emulator.patch_object(
                    PODS, "p1", {"status": {"phase": "Succeeded"}}, namespace="t", subresource="status"
                )
                await eventually(lambda: status(emulator, "n1")["resources"]["cpu"]["requested"] == "0")

    async def test_claim_update_and_delete(self) -> None:
        """Re-allocating a claim to more devices raises its charge; deleting it leaves a MissingResourceClaim."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(case_items("v09"))
            async with running(url, pod_status="observe"):
                await eventually(
                    lambda: status(emulator, "n1").get("resources", {}).get("cpu", {}).get("claims") == "8"
                )
                results = [
                    {"request": "cpus", "driver": "cpu.example.com", "pool": "n1", "device": d}
                    for d in ("dev0", "dev1")
                ]
                emulator.patch_object(
                    CLAIMS,
                    "c1",
                    {"status": {"allocation": {"devices": {"results": results}}}},
                    namespace="t",
                    subresource="status",
                )
                await eventually(lambda: status(emulator, "n1")["resources"]["cpu"]["claims"] == "4")
                emulator.delete_object(CLAIMS, "c1", namespace="t")
                await eventually(lambda: status(emulator, "n1")["phase"] == "Stale")
                claims = status(emulator, "n1")["claims"]
                assert ["MissingResourceClaim"] == claims[0]["problems"]

    async def test_slice_removed_then_restored(self) -> None:
        """A vanished ResourceSlice turns the node Stale; its return makes it Ready without a restart."""
        async with serve_emulator() as (emulator, url):
            items = case_items("v09")
            emulator.load_objects(items)
            async with running(url, pod_status="observe"):
                await eventually(phase_is(emulator, "n1", "Ready"))
                mapping = status(emulator, "n1")["mappingVersion"]
                emulator.delete_object(SLICES, "n1-cpu")
                await eventually(phase_is(emulator, "n1", "Stale"))
                assert "False" == next(
                    c["status"]
                    for c in status(emulator, "n1")["conditions"]
                    if c["type"] == "MappingsComplete"
                )
                emulator.load_objects([s for s in items if s["kind"] == "ResourceSlice"])
                await eventually(phase_is(emulator, "n1", "Ready"))
                assert status(emulator, "n1")["mappingVersion"] > mapping

    async def test_pool_generation_regression_is_rejected(self) -> None:
        """A slice update to an older pool generation is rejected and counted; the figures stay, the ledger
        names the refusal and turns Stale."""
        async with serve_emulator() as (emulator, url):
            items = case_items("v09")
            for item in items:
                if item["kind"] == "ResourceSlice":
                    item["spec"]["pool"]["generation"] = 5
            emulator.load_objects(items)
            async with running(url, pod_status="observe") as operator:
                await eventually(phase_is(emulator, "n1", "Ready"))
                resources = status(emulator, "n1")["resources"]
                emulator.patch_object(SLICES, "n1-cpu", {"spec": {"pool": {"generation": 4}, "devices": []}})
                await eventually(lambda: operator.metrics.slice_regressions._value.get() == 1)
                await eventually(phase_is(emulator, "n1", "Stale"))
                assert 8 == len(operator.runtime.state.slices["n1-cpu"].devices) * 2
                assert resources == status(emulator, "n1")["resources"]
                assert ["GenerationRegression"] == [
                    p["reason"] for p in status(emulator, "n1")["problems"] if p.get("name") == "n1-cpu"]

    async def test_node_deletion_takes_its_ledger(self) -> None:
        """Deleting a Node deletes its ledger (ownerReference) and the operator forgets it."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(case_items("v08"))
            async with running(url) as operator:
                await eventually(phase_is(emulator, "n2", "Ready"))
                emulator.delete_object(NODES, "n2")
                await eventually(lambda: ledger(emulator, "n2") is None, what="ledger GC")
                await eventually(lambda: "n2" not in operator.runtime.state.nodes)
                assert ledger(emulator, "n1") is not None

    async def test_node_not_ready_is_stale(self) -> None:
        """A NotReady node's ledger is Stale (Fresh=False) and recovers when the node is Ready again."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(case_items("v08"))
            async with running(url):
                await eventually(phase_is(emulator, "n3", "Ready"))
                emulator.patch_object(
                    NODES,
                    "n3",
                    {
                        "status": {
                            "conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]
                        }
                    },
                    subresource="status",
                )
                await eventually(phase_is(emulator, "n3", "Stale"))
                emulator.patch_object(
                    NODES,
                    "n3",
                    {
                        "status": {
                            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
                        }
                    },
                    subresource="status",
                )
                await eventually(phase_is(emulator, "n3", "Ready"))


class TestWrites:
    async def test_unchanged_content_causes_no_write(self) -> None:
        """An event that changes no number or condition causes no API write."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(case_items("v08"))
            async with running(url) as operator:
                for node in ("n1", "n2", "n3"):
                    await eventually(phase_is(emulator, node, "Ready"))
                await eventually(lambda: not operator.runtime.dirty)
                before = len(writes(emulator))
                emulator.patch_object(PODS, "p2", {"metadata": {"labels": {"touched": "yes"}}}, namespace="t")
                await eventually(lambda: operator.runtime.state.pods[("t", "p2")].resource_version != "")
                await eventually(lambda: operator.metrics.event_counts.get("pods", 0) >= 4)
                await eventually(lambda: not operator.runtime.dirty)
                assert before == len(writes(emulator))

    async def test_burst_is_coalesced_into_one_write(self) -> None:
        """Twenty pod events on one node within the window become one status write."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(case_items("v08"))
            async with running(url, coalesce_window=0.5) as operator:
                for node in ("n1", "n2", "n3"):
                    await eventually(phase_is(emulator, node, "Ready"))
                await eventually(lambda: not operator.runtime.dirty)
                before = len(writes(emulator))
                emulator.load_objects([_pod(f"b{i}", "n3", "10m") for i in range(20)])
                await eventually(lambda: status(emulator, "n3")["resources"]["cpu"]["requested"] == "200m")
                await eventually(lambda: not operator.runtime.dirty)
                assert 1 == len(writes(emulator)) - before

    async def test_restart_keeps_versions_monotonic(self) -> None:
        """A restarted operator continues ledgerVersion and mappingVersion from the stored ledgers."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(case_items("v02"))
            async with running(url, pod_status="observe"):
                await eventually(phase_is(emulator, "n1", "Ready"))
                first = status(emulator, "n1")
            async with running(url, pod_status="observe") as operator:
                await eventually(lambda: operator.runtime.rebuilt.is_set())
                await eventually(phase_is(emulator, "n1", "Ready"))
                second = status(emulator, "n1")
            assert second["ledgerVersion"] > first["ledgerVersion"]
            assert first["mappingVersion"] == second["mappingVersion"]
            assert semantic(first) == semantic(second)


class TestWatchFaults:
    @pytest.mark.parametrize(
        "fault", ["410", "500", "disconnect"], ids=["gone", "server-error", "disconnect"]
    )
    async def test_recovers_from_watch_faults(self, fault: str) -> None:
        """After a 410, a 500 or a dropped watch, later changes still reach the ledger."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(case_items("v08"))
            async with running(url, watch_timeout=1) as operator:
                await eventually(phase_is(emulator, "n3", "Ready"))
                if fault == "disconnect":
                    emulator.inject_disconnect(PODS)
                else:
                    emulator.inject_watch_error(PODS, int(fault))
                    emulator.inject_disconnect(PODS)
                emulator.load_objects([_pod("late", "n3", "700m")])
                await eventually(
                    lambda: status(emulator, "n3")["resources"]["cpu"]["requested"] == "700m", within=30
                )
                assert operator.runtime.rebuilt.is_set()

    async def test_relist_forgets_objects_deleted_during_the_gap(self) -> None:
        """A pod deleted while the watch was gone (410, relist) leaves the ledger."""
        async with serve_emulator(emulator=ClusterEmulator(journal_limit=5)) as (emulator, url):
            emulator.load_objects(case_items("v08"))
            async with running(url, watch_timeout=1) as operator:
                await eventually(phase_is(emulator, "n1", "Ready"))
                emulator.inject_watch_error(PODS, 410, times=3)
                emulator.inject_disconnect(PODS)
                emulator.delete_object(PODS, "p2", namespace="t")
                await eventually(
                    lambda: status(emulator, "n1")["resources"]["memory"]["requested"] == "0", within=30
                )
                assert ("t", "p2") not in operator.runtime.state.pods

    async def test_broken_watch_turns_stale_then_fresh(self) -> None:
        """A watch broken for longer than the freshness window makes nodes Stale; recovery clears it."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(case_items("v08"))
            async with running(url, watch_timeout=1, freshness_window=3) as operator:
                await eventually(phase_is(emulator, "n1", "Ready"))
                # Kopf retries a 500 with growing backoffs (0.5, 1, 2, 4 s): 5 failures outlast the window.
                emulator.inject_watch_error(PODS, 500, times=5, as_event=False)
                emulator.inject_disconnect(PODS)
                await eventually(phase_is(emulator, "n1", "Stale"), within=30)
                fresh = next(c for c in status(emulator, "n1")["conditions"] if c["type"] == "Fresh")
                assert "WatchStale" == fresh["reason"]
                await eventually(phase_is(emulator, "n1", "Ready"), within=60)
                assert operator.runtime.stale_reason == ""
