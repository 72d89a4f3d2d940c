"""A real kopf operator, in-process over real HTTP, against the emulator: the stale-patch case."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import kopf

from draledger.demo.emulator import ClusterEmulator

OURS = "draledger.dev/gate"
FIRST = "other.io/first"
SECOND = "other.io/second"
JSON_PATCH = "application/json-patch+json"


def remove_our_gate(body: dict[str, Any]) -> None:
    spec = body.setdefault("spec", {})
    spec["schedulingGates"] = [g for g in spec.get("schedulingGates", []) if g["name"] != OURS]


@contextlib.asynccontextmanager
async def running(registry: kopf.OperatorRegistry) -> AsyncIterator[None]:
    """Run kopf inside the test body (never from a fixture: kopf cancels tasks created after it)."""
    settings = kopf.OperatorSettings()
    settings.scanning.disabled = True
    settings.posting.enabled = False
    settings.peering.standalone = True
    settings.networking.error_backoffs = [0.1]
    settings.watching.reconnect_backoff = 0.1
    stop_flag, ready_flag = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(
        kopf.operator(
            registry=registry,
            settings=settings,
            clusterwide=True,
            standalone=True,
            stop_flag=stop_flag,
            ready_flag=ready_flag,
        )
    )
    try:
        async with asyncio.timeout(30):
            await ready_flag.wait()
        yield
    finally:
        stop_flag.set()
        async with asyncio.timeout(30):
            await task


class TestKopfAgainstEmulator:
    async def test_stale_json_patch_never_removes_a_foreign_gate(
        self, cluster: tuple[ClusterEmulator, str], api: Any, eventually: Any
    ) -> None:
        """kopf's patch.fns removes only its own gate though another controller changed the pod meanwhile."""
        emulator, url = cluster
        gates = [{"name": FIRST}, {"name": OURS}, {"name": SECOND}]
        await api.create(
            "/api/v1/namespaces/ns1/pods", {"metadata": {"name": "g"}, "spec": {"schedulingGates": gates}}
        )

        registry = kopf.OperatorRegistry()
        raced: list[bool] = []

        @kopf.on.login(registry=registry)
        def login(**_: Any) -> kopf.ConnectionInfo:
            return kopf.ConnectionInfo(server=url)

        @kopf.on.event("pods", registry=registry)
        async def ungate(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
            names = [g["name"] for g in body.get("spec", {}).get("schedulingGates", [])]
            if OURS not in names:
                return
            if (
                not raced
            ):  # the other controller removes its first gate while we decide: our body is stale now
                raced.append(True)
                emulator.patch_object(
                    "v1/pods",
                    "g",
                    [{"op": "remove", "path": "/spec/schedulingGates/0"}],
                    namespace="ns1",
                    content_type=JSON_PATCH,
                )
            patch.fns.append(remove_our_gate)

        def current_gates() -> list[str]:
            pod = emulator.get_object("v1/pods", "g", "ns1") or {}
            return [g["name"] for g in pod.get("spec", {}).get("schedulingGates", [])]

        async with running(registry):
            await eventually(lambda: OURS not in current_gates(), within=30)

        kopf_patches = [r for r in emulator["patch v1/pods"] if r.name == "g"]
        assert current_gates() == [SECOND]  # plain KMock (no RV bump) would leave [FIRST] here
        assert len(kopf_patches) >= 2  # the stale patch got 422 and kopf re-applied its fns on fresh state
        assert kopf_patches[0].data[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "1"}
