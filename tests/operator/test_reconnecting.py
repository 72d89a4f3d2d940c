"""A watch being re-established is not a healthy watch: found by the fault suite (tests/faults, watch gaps).

Kopf retries a failing LIST or WATCH request inside one call (503s, refused connections: its error backoffs),
so the operator saw neither an error nor an end while the stream was down, and went on releasing gated pods
from its old picture until the freshness window ran out.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from draledger.core.accounting.release import GATE
from draledger.demo.emulator import ClusterEmulator, serve_emulator
from draledger.operator.config import OperatorConfig
from draledger.operator.health import RECONNECT_GRACE, RENEWAL_PATIENCE, StreamHealth
from draledger.operator.metrics import Metrics
from draledger.operator.runtime import Runtime
from tests.integration.harness import NODES, PODS, case_items, eventually, phase_is, running

UNALLOCATED = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
               "metadata": {"name": "unallocated", "namespace": "t"},
               "spec": {"devices": {"requests": [{"name": "c", "exactly": {"deviceClassName": "example"}}]}}}


def gated_pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "t"},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "x"}]}}],
                     "resourceClaims": [{"name": "x", "resourceClaimName": "unallocated"}],
                     "schedulingGates": [{"name": GATE}]}}


def gates(emulator: ClusterEmulator, name: str) -> list[str]:
    pod = emulator.get_object(PODS, name, namespace="t") or {}
    return [g["name"] for g in pod.get("spec", {}).get("schedulingGates") or []]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class TestStreamHealth:
    def test_reconnecting_from_the_first_mark_until_contact(self) -> None:
        """A stream that ended, or whose request is under way, reconnects from the first mark until contact."""
        health = StreamHealth()
        health.contact(1.0)
        assert not health.reconnecting
        health.connecting(2.0)
        health.connecting(3.0)
        assert (True, 2.0) == (health.reconnecting, health.connecting_since)
        health.contact(4.0)
        assert not health.reconnecting


class TestRuntime:
    def test_a_stream_being_renewed_holds_releases_until_answered(self) -> None:
        """No grace and no freshness window to wait out: while a stream is being re-established, even for an
        ordinary renewal, the changes made meanwhile have not arrived, so releases wait for the answer."""
        clock = Clock()
        runtime = Runtime(OperatorConfig(freshness_window=60), Metrics(), clock)
        for kind in ("nodes", "pods", "resourceslices", "resourceclaims", "nodeallocatableledgers"):
            runtime.contact(kind)
        assert "" == runtime.streams_unhealthy()
        runtime.connecting("nodes")
        assert "the nodes watch is reconnecting" == runtime.streams_unhealthy()
        clock.now += 0.001
        runtime.contact("nodes")
        assert "" == runtime.streams_unhealthy()

    def test_a_renewal_is_quiet_until_it_lasts_the_patience(self) -> None:
        """A reconnection shorter than RENEWAL_PATIENCE (a loaded server answers a renewal in most of a second),
        or an answered request's wait for its first event shorter than RECONNECT_GRACE, holds releases without
        a reason to report (no Event per renewal); a longer one, a broken stream or a relist is a reason."""
        clock = Clock()
        runtime = Runtime(OperatorConfig(freshness_window=60), Metrics(), clock)
        for kind in ("nodes", "pods", "resourceslices", "resourceclaims", "nodeallocatableledgers"):
            runtime.contact(kind)
        assert not runtime.renewing()  # nothing to wait for
        runtime.connecting("pods")
        assert runtime.renewing()
        clock.now += RECONNECT_GRACE
        assert runtime.renewing()
        clock.now += RENEWAL_PATIENCE - RECONNECT_GRACE
        assert (False, "the pods watch is reconnecting") == (runtime.renewing(), runtime.streams_unhealthy())
        runtime.answered("pods")
        assert runtime.renewing()  # resuming: its first event may be a 410
        clock.now += RECONNECT_GRACE
        assert (False, "") == (runtime.renewing(), runtime.streams_unhealthy())
        runtime.contact("pods")
        runtime.connecting("pods")
        runtime.broken("nodes", "request answered 503")
        assert not runtime.renewing()

    def test_contact_after_a_reconnection_wakes_the_releases(self) -> None:
        """Pods held while a stream was down are looked at again when it is back, not a second later; with
        no pod held, a renewal wakes nothing."""
        clock = Clock()
        runtime = Runtime(OperatorConfig(), Metrics(), clock)
        runtime.contact("nodes")
        runtime.connecting("nodes")
        runtime.contact("nodes")
        assert not runtime.release_wakeup.is_set()
        runtime.event("pods", "ADDED", gated_pod("g"))
        runtime.release_wakeup.clear()
        runtime.connecting("nodes")
        runtime.contact("pods")
        assert not runtime.release_wakeup.is_set()
        runtime.contact("nodes")
        assert runtime.release_wakeup.is_set()


class TestOperator:
    async def test_no_release_while_a_watch_request_is_being_retried(self) -> None:
        """The nodes watch answered 503 three times (Kopf retries after 0.5, 1 and 2 s): a pod that arrives
        after the first retry keeps its gate until the watch is back."""
        async with serve_emulator(emulator=ClusterEmulator(bookmark_interval=None)) as (emulator, url):
            emulator.load_objects([*case_items("v08"), UNALLOCATED])
            async with running(url, watch_timeout=1, freshness_window=60, pod_status="observe") as operator:
                await eventually(phase_is(emulator, "n3", "Ready"))
                resource = emulator.require(NODES).resource
                emulator.inject_watch_error(NODES, 503, times=3, as_event=False)
                emulator.inject_disconnect(NODES)
                await eventually(lambda: emulator.faults.pending(resource) < 2, what="the nodes watch retried")
                emulator.load_objects([gated_pod("g")])
                await eventually(lambda: ("t", "g") in operator.runtime.state.held, what="the pod seen")
                deadline = asyncio.get_running_loop().time() + 15
                while emulator.faults.pending(resource):  # polled: each answer is checked while it lasts
                    assert [GATE] == gates(emulator, "g")
                    assert asyncio.get_running_loop().time() < deadline, "the nodes watch never came back"
                    await asyncio.sleep(0.02)
                await eventually(lambda: [] == gates(emulator, "g"), what="the release once the watch is back")

    @pytest.mark.parametrize("code", [pytest.param(500, id="500"), pytest.param(403, id="403")])
    async def test_an_error_event_in_a_watch_stream_is_watched_again_not_fatal(self, code: int) -> None:
        """An ERROR event other than 410 in the nodes stream (Kopf would stop the operator on it): the stream is
        watched again from where it was, and a change made afterwards reaches the ledger."""
        async with serve_emulator(emulator=ClusterEmulator(bookmark_interval=None)) as (emulator, url):
            emulator.load_objects([*case_items("v08"), UNALLOCATED])
            async with running(url, watch_timeout=1, freshness_window=60, pod_status="observe") as operator:
                await eventually(phase_is(emulator, "n3", "Ready"))
                resource = emulator.require(NODES).resource
                emulator.inject_watch_error(NODES, code, as_event=True)
                emulator.patch_object(NODES, "n1", {"metadata": {"labels": {"touched": "yes"}}})
                await eventually(lambda: not emulator.faults.pending(resource), what="the error event sent")
                emulator.patch_object(NODES, "n3", {"status": {"conditions": [
                    {"type": "Ready", "status": "False", "reason": "KubeletDown"}]}}, subresource="status")
                await eventually(phase_is(emulator, "n3", "Stale"), what="the change after the error")
                assert operator.alive()
