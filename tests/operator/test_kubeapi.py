"""KubeApi against the emulator over real HTTP: a write whose answer is not wanted is not decoded, and its
failures still raise with the server's message."""

from __future__ import annotations

from collections.abc import AsyncIterator

import kopf
import pytest

from draledger.demo.emulator import ClusterEmulator, serve_emulator
from draledger.operator.kubeapi import Conflict, KubeApi

PODS = "/api/v1/namespaces/ns1/pods"


@pytest.fixture
async def served() -> AsyncIterator[tuple[ClusterEmulator, KubeApi]]:
    async with serve_emulator() as (emulator, url):
        api = KubeApi(kopf.ConnectionInfo(server=url, insecure=True))
        try:
            yield emulator, api
        finally:
            await api.close()


def pod(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns1"},
            "spec": {"containers": [{"name": "app", "image": "busybox"}]}}


async def test_a_write_without_reply_applies_and_returns_none(served: tuple[ClusterEmulator, KubeApi]) -> None:
    emulator, api = served
    await api.create(PODS, pod("p1"))
    answer = await api.merge_patch(f"{PODS}/p1", {"metadata": {"labels": {"a": "1"}}}, reply=False)
    stored = emulator.get_object("v1/pods", "p1", "ns1")
    assert answer is None
    assert stored is not None
    assert stored["metadata"]["labels"] == {"a": "1"}


async def test_a_write_with_reply_returns_the_object(served: tuple[ClusterEmulator, KubeApi]) -> None:
    _, api = served
    await api.create(PODS, pod("p1"))
    answer = await api.merge_patch(f"{PODS}/p1", {"metadata": {"labels": {"a": "2"}}})
    assert answer["metadata"]["labels"] == {"a": "2"}


async def test_a_failed_write_without_reply_still_raises_with_the_message(
    served: tuple[ClusterEmulator, KubeApi],
) -> None:
    _, api = served
    await api.create(PODS, pod("p1"))
    stale = {"metadata": {"resourceVersion": "1", "labels": {"a": "3"}}}
    await api.merge_patch(f"{PODS}/p1", {"metadata": {"labels": {"a": "1"}}}, reply=False)
    with pytest.raises(Conflict) as raised:
        await api.merge_patch(f"{PODS}/p1", stale, reply=False)
    assert raised.value.status == 409
    assert isinstance(raised.value.body, dict)
    assert raised.value.body.get("reason") == "Conflict"
