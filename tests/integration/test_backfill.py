"""Pod status backfill against the emulator: the missing field only, guarded, in the server's shape."""

from __future__ import annotations

import json
from typing import Any

from draledger.demo.emulator import patches, serve_emulator
from tests.integration.harness import PODS, case_items, eventually, phase_is, running, status, writes

FIELD = "nodeAllocatableResourceClaimStatuses"


def pod_status(emulator: Any, name: str, namespace: str = "t") -> dict[str, Any]:
    return emulator.get_object(PODS, name, namespace=namespace)["status"]


class TestBackfill:
    async def test_writes_only_the_missing_field(self) -> None:
        """A pod bound while the gate was off gets exactly the field, as a guarded JSON patch."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(case_items("v09"))
            before = pod_status(emulator, "p1")
            async with running(url):
                await eventually(lambda: FIELD in pod_status(emulator, "p1"), what="backfill")
                await eventually(
                    lambda: (
                        status(emulator, "n1").get("resources", {}).get("cpu", {}).get("schedulerCharged")
                        == "8"
                    )
                )
            after = pod_status(emulator, "p1")
            assert [{"resourceClaimName": "c1", "containers": ["c"], "resources": {"cpu": "8"}}] == after.pop(
                FIELD
            )
            assert before == after
            (request,) = writes(emulator, "pods")
            ops = json.loads(request.text)
            assert ["test", "add"] == [op["op"] for op in ops]
            assert "/metadata/resourceVersion" == ops[0]["path"]
            assert f"/status/{FIELD}" == ops[1]["path"]
            assert "status" == request.subresource

    async def test_never_overwrites_what_the_scheduler_wrote(self) -> None:
        """A pod whose status the scheduler filled is never patched, even when the ledger disagrees."""
        items = case_items("v01")
        for item in items:
            if item["kind"] == "Pod":
                item["status"][FIELD][0]["resources"]["cpu"] = "3"  # the scheduler says 3, the ledger 4
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(items)
            async with running(url):
                await eventually(phase_is(emulator, "n1", "Ready"))
                sync = next(c for c in status(emulator, "n1")["conditions"] if c["type"] == "SchedulerInSync")
                assert ("False", "Diverged") == (sync["status"], sync["reason"])
            assert [] == writes(emulator, "pods")

    async def test_survives_a_conflict(self) -> None:
        """A 422 on the first attempt is retried, and the field is written once."""
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(case_items("v09"))
            emulator.inject_patch_error(PODS, 422)
            async with running(url) as operator:
                await eventually(lambda: FIELD in pod_status(emulator, "p1"), what="backfill after a 422")
                assert 1 == operator.metrics.write_failures.labels("pod-status", "conflict")._value.get()
            assert 2 == len(writes(emulator, "pods"))

    async def test_v137_shape_with_shared_overhead_claim(self) -> None:
        """Under v1.37, mapping and overhead lists are written; an overhead-only claim may be shared."""
        items = case_items("v10")
        for item in items:
            if item["kind"] == "Pod":
                del item["status"][FIELD]
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(items)
            async with running(url, release="v1.37"):
                await eventually(lambda: FIELD in pod_status(emulator, "p2"), what="p2 backfill")
                await eventually(lambda: FIELD in pod_status(emulator, "p1"), what="p1 backfill")
            assert [
                {
                    "resourceClaimName": "c",
                    "containers": ["a"],
                    "mapping": [{"name": "cpu", "quantity": "4"}],
                },
                {
                    "resourceClaimName": "g",
                    "containers": ["a", "b"],
                    "overhead": [
                        {"name": "cpu", "perContainer": "500m"},
                        {"name": "memory", "perPod": "2Gi"},
                    ],
                },
            ] == pod_status(emulator, "p1")[FIELD]

    async def test_gate_off_in_the_api_server_stops_backfill(self) -> None:
        """If the server drops the field, backfill stops at once: a condition, a metric, no patch loop."""
        items = case_items("v09")
        second = json.loads(json.dumps([i for i in items if i["kind"] in ("Pod", "ResourceClaim")]))
        for item in second:
            item["metadata"]["name"] += "-2"
            if item["kind"] == "Pod":
                item["spec"]["resourceClaims"][0]["resourceClaimName"] += "-2"
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(items + second)
            original = emulator.store.patch

            def dropping(
                spec: Any,
                namespace: Any,
                name: str,
                body: Any,
                content_type: str,
                *,
                subresource: str | None = None,
            ) -> Any:
                if spec.plural != "pods" or subresource != "status":
                    return original(spec, namespace, name, body, content_type, subresource=subresource)

                def compute(current: dict[str, Any]) -> dict[str, Any]:
                    new = patches.apply_patch(
                        current, body, content_type, plural=spec.plural, group=spec.group, name=name
                    )
                    new.get("status", {}).pop(FIELD, None)  # what a server with the gate off does
                    return new

                return emulator.store.update(spec, namespace, name, compute, subresource=subresource)

            emulator.store.patch = dropping  # type: ignore[method-assign]
            async with running(url) as operator:
                await eventually(lambda: operator.writer.backfill.disabled, what="gate-off detection")
                await eventually(
                    lambda: any(
                        c["type"] == "PodStatusBackfill" and c["reason"] == "ServerDropsField"
                        for c in status(emulator, "n1").get("conditions", [])
                    )
                )
                assert 1 == operator.metrics.backfill_disabled._value.get()
                assert 1 == len(writes(emulator, "pods"))
