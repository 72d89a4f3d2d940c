"""Gate release against the emulator: held while unsafe, released with tightened node affinity."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

from draledger.demo.emulator import serve_emulator
from tests.integration.harness import (
    CLAIMS,
    LEDGERS,
    PODS,
    SLICES,
    case_items,
    eventually,
    phase_is,
    running,
    status,
    writes,
)

GATE = "draledger.dev/ledger-ready"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def gated_pod(name: str, *, claim: str | None = "unallocated", cpu: str = "100m",
              gates: tuple[str, ...] = (GATE,), affinity: dict[str, Any] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
    spec: dict[str, Any] = {"containers": [container], "schedulingGates": [{"name": g} for g in gates]}
    if claim:
        container["resources"]["claims"] = [{"name": "x"}]
        spec["resourceClaims"] = [{"name": "x", "resourceClaimName": claim}]
    if affinity is not None:
        spec["affinity"] = affinity
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "t"}, "spec": spec,
            "status": {"phase": "Pending"}}


def pod_spec(emulator: Any, name: str) -> dict[str, Any]:
    return emulator.get_object(PODS, name, namespace="t")["spec"]


def released(emulator: Any, name: str) -> bool:
    return GATE not in [g["name"] for g in pod_spec(emulator, name).get("schedulingGates") or []]


def terms(emulator: Any, name: str) -> list[dict[str, Any]]:
    return pod_spec(emulator, name)["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"]


def pod_events(emulator: Any, name: str) -> list[dict[str, Any]]:
    return sorted((e for e in emulator.store.live(emulator.require("v1/events").resource)
                   if e["involvedObject"].get("name") == name), key=lambda e: e["metadata"]["name"])


def reasons(emulator: Any, name: str) -> list[str]:
    return [e["reason"] for e in pod_events(emulator, name)]


def event_messages(emulator: Any, name: str) -> list[str]:
    return [e["message"] for e in pod_events(emulator, name)]


def unallocated_claim(name: str = "unallocated") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "t"},
        "spec": {"devices": {"requests": [{"name": "c", "exactly": {"deviceClassName": "example"}}]}},
    }


def allocated_claim(name: str, node: str, device: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "t"},
        "spec": {"devices": {"requests": [{"name": "c", "exactly": {"deviceClassName": "example"}}]}},
        "status": {"allocation": {
            "devices": {"results": [{"request": "c", "driver": "cpu.example.com", "pool": node, "device": device}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}},
    }


class TestRelease:
    async def test_held_during_rebuild_then_released(self) -> None:
        """A gated pod stays gated while the rebuild is incomplete, and is released once it completes."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects([*case_items("v08"), unallocated_claim(), gated_pod("g")])
            emulator["list resource.k8s.io/v1/resourceclaims"][:2] << 500  # the claims LIST fails twice
            async with running(url) as operator:
                await eventually(lambda: len([r for r in emulator["get"] if r.resource is not None
                                              and r.resource.plural == "resourceclaims"]) >= 2,
                                 what="the claims LIST failing (the operator's own, priming the state)")
                assert not operator.runtime.rebuilt.is_set()
                assert not released(emulator, "g")
                await eventually(lambda: released(emulator, "g"), what="release after rebuild")
                assert operator.runtime.rebuilt.is_set()
                await eventually(lambda: operator.metrics.gated.labels("Rebuilding")._value.get() == 0,
                                 what="the pass that released it to count it no more")

    async def test_affinity_keeps_pods_off_stale_and_frozen_nodes(self) -> None:
        """Released pods get metadata.name NotIn [stale, frozen nodes], in the same patch as the gate."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects([*case_items("v08"), unallocated_claim()])
            async with running(url, pod_status="observe"):
                await eventually(phase_is(emulator, "n3", "Ready"))
                emulator.delete_object(SLICES, "n2-cpu")
                emulator.patch_object(LEDGERS, "n3", {"spec": {"frozen": True}})
                await eventually(phase_is(emulator, "n2", "Stale"))
                await eventually(phase_is(emulator, "n3", "Frozen"))
                emulator.load_objects([gated_pod("g")])
                await eventually(lambda: released(emulator, "g"))
                expected = [{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n2", "n3"]}]}]
                assert expected == terms(emulator, "g")
                (patch,) = [r for r in writes(emulator, "pods") if r.subresource is None]
                assert "application/json-patch+json" == patch.headers["Content-Type"]

    async def test_a_pod_released_at_once_gets_no_event(self) -> None:
        """Held for less than half a second (its ledgers Ready): released with its record, and no Event at all,
        so a burst costs one write a pod (the release), not two."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects([*case_items("v08"), unallocated_claim()])
            async with running(url, pod_status="observe") as operator:
                for node in ("n1", "n2", "n3"):
                    await eventually(phase_is(emulator, node, "Ready"))
                emulator.load_objects([gated_pod("g")])
                await eventually(lambda: released(emulator, "g"))
                await asyncio.wait_for(operator.writer.releaser.settle(), 10.0)  # its Event would be in flight
                assert [] == reasons(emulator, "g")
                assert pod_spec(emulator, "g") is not None

    async def test_existing_terms_are_tightened_not_replaced(self) -> None:
        """Every existing nodeSelectorTerm gains our requirement; nothing the user wrote is lost."""
        user_terms = [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                      {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n9"]}]}]
        affinity = {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": user_terms}}}
        async with serve_emulator() as (emulator, url):
            emulator.load_objects([*case_items("v08"), unallocated_claim()])
            async with running(url, pod_status="observe"):
                await eventually(phase_is(emulator, "n1", "Ready"))
                emulator.patch_object(LEDGERS, "n1", {"spec": {"frozen": True}})
                await eventually(phase_is(emulator, "n1", "Frozen"))
                emulator.load_objects([gated_pod("g", affinity=affinity)])
                await eventually(lambda: released(emulator, "g"))
                ours = {"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}
                assert [
                    {"matchExpressions": user_terms[0]["matchExpressions"], "matchFields": [ours]},
                    {"matchFields": [user_terms[1]["matchFields"][0], ours]},
                ] == terms(emulator, "g")

    async def test_foreign_gates_stay_and_conflicts_are_retried(self) -> None:
        """Only our gate goes; a 422 on the first try is retried with fresh state."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects([*case_items("v08"), unallocated_claim()])
            async with running(url, pod_status="observe") as operator:
                await eventually(phase_is(emulator, "n1", "Ready"))
                emulator.inject_patch_error(PODS, 422)
                emulator.load_objects([gated_pod("g", gates=("other.io/first", GATE, "other.io/last"))])
                await eventually(lambda: released(emulator, "g"))
                remaining = pod_spec(emulator, "g")["schedulingGates"]
                assert [{"name": "other.io/first"}, {"name": "other.io/last"}] == remaining
                assert 1 == operator.metrics.write_failures.labels("pod-gate", "conflict")._value.get()

    async def test_room_check_for_preallocated_claims(self) -> None:
        """A pod whose claim is already allocated goes only to that node, and only when it fits there."""
        async with serve_emulator() as (emulator, url):
            items = case_items("v08")
            emulator.load_objects([*items, allocated_claim("pre", "n1", "a1")])
            async with running(url, pod_status="observe") as operator:
                await eventually(phase_is(emulator, "n1", "Ready"))
                emulator.load_objects([gated_pod("big", claim="pre", cpu="6")])  # n1 has 6 free, the claim adds 1
                await eventually(lambda: operator.metrics.gated.labels("NoRoom")._value.get() == 1)
                assert not released(emulator, "big")
                emulator.delete_object(PODS, "p2", namespace="t")  # frees nothing of cpu: still no room
                emulator.patch_object(PODS, "p1", {"status": {"phase": "Succeeded"}}, namespace="t",
                                      subresource="status")  # frees 1 cpu + its claim's 1
                await eventually(lambda: released(emulator, "big"))
                assert [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}] == terms(
                    emulator, "big")

    async def test_held_until_its_claim_is_seen(self) -> None:
        """A pod seen before its (allocated) claim is held, not released unpinned, and goes to the claim's node."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects([*case_items("v08"), unallocated_claim()])
            async with running(url, pod_status="observe") as operator:
                await eventually(phase_is(emulator, "n1", "Ready"))
                emulator.load_objects([gated_pod("early", claim="late")])
                await eventually(lambda: operator.metrics.gated.labels("ClaimNotSeen")._value.get() == 1,
                                 what="the pod held for its unseen claim")
                assert not released(emulator, "early")
                emulator.load_objects([allocated_claim("late", "n2", "b0")])
                await eventually(lambda: released(emulator, "early"), what="release once the claim is seen")
                assert [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}] == terms(
                    emulator, "early")

    async def test_held_with_an_event_when_no_node_qualifies(self) -> None:
        """With every ledger Frozen the pod stays gated, counted by reason, with an Event saying why."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects([*case_items("v08"), unallocated_claim()])
            async with running(url, pod_status="observe") as operator:
                for node in ("n1", "n2", "n3"):
                    await eventually(phase_is(emulator, node, "Ready"))
                    emulator.patch_object(LEDGERS, node, {"spec": {"frozen": True}})
                for node in ("n1", "n2", "n3"):
                    await eventually(phase_is(emulator, node, "Frozen"))
                emulator.load_objects([gated_pod("g")])
                await eventually(lambda: operator.metrics.gated.labels("NoReadyNode")._value.get() == 1)
                await eventually(lambda: reasons(emulator, "g") == ["LedgerGateNoReadyNode"],
                                 what="the Event saying why (posted in the background)")
                held = event_messages(emulator, "g")
                emulator.patch_object(LEDGERS, "n2", {"spec": {"frozen": False}})
                await eventually(lambda: released(emulator, "g"))
                await eventually(lambda: "LedgerGateReleased" in reasons(emulator, "g"), what="the release's Event")
                assert ["held by draledger.dev/ledger-ready: no node's ledger is Ready: n1 (Frozen), n2 (Frozen), "
                        "n3 (Frozen)"] == held
                assert ["n1", "n3"] == terms(emulator, "g")[0]["matchFields"][0]["values"]


class TestFreezeCommands:
    async def test_freeze_resume_and_export_from_the_command_line(self, tmp_path: Any) -> None:
        """`draledger freeze/resume/export` patch spec.frozen and export versions, against a live API."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects([*case_items("v08"), unallocated_claim()])
            async with running(url, pod_status="observe"):
                for node in ("n1", "n2", "n3"):
                    await eventually(phase_is(emulator, node, "Ready"))

                async def cli(*args: str) -> subprocess.CompletedProcess[str]:
                    return await asyncio.to_thread(
                        subprocess.run, [sys.executable, "-m", "draledger", *args, "--server", url],
                        capture_output=True, text=True, timeout=60)

                frozen = await cli("freeze", "--node", "n2", "--reason", "repairing the cpu driver")
                assert 0 == frozen.returncode, frozen.stderr
                await eventually(phase_is(emulator, "n2", "Frozen"))
                export = tmp_path / "ledgers.yaml"
                exported = await cli("export", "--from-cluster", "--to", str(export))
                assert 0 == exported.returncode, exported.stderr
                assert "mappingVersion" in export.read_text()
                held = await cli("resume", "--node", "n2", "--since-export", str(export))
                assert 1 == held.returncode
                assert "stays frozen" in held.stdout
                assert status(emulator, "n2")["phase"] == "Frozen"
                resumed = await cli("resume", "--all")
                assert 0 == resumed.returncode, resumed.stderr
                await eventually(phase_is(emulator, "n2", "Ready"))
                assert emulator.get_object(CLAIMS, "cb", namespace="t") is not None
