"""Kubernetes Events: phase changes on ledgers (``kubectl describe nal NODE`` tells the story) and the
reasons a pod is held by the gate (``kubectl describe pod``). Best effort: never blocks anything.

A :class:`Poster` sends them in the background, ``CONCURRENCY`` at once. Unbounded, a burst of releases (an Event
each) took the client's connections, and the gate patches decided meanwhile waited behind them for one: the fault
suite saw releases land over a second after their decisions. The operator's client holds a connection for each of
its writes, its releases and this lane (``running``), so that none of them waits for another's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import structlog

from draledger.core.accounting.ledger import Ledger
from draledger.core.bodies import API_VERSION, KIND
from draledger.core.phases import WARNINGS, Phase
from draledger.operator.clocks import now_rfc3339
from draledger.operator.kubeapi import ApiError, KubeApi, transport_cause
from draledger.operator.metrics import Metrics

log = structlog.get_logger("draledger")
CONCURRENCY = 2  # Events in flight at once


class Poster:
    """Posts Events in the background, at most ``CONCURRENCY`` in flight; only ``settle`` waits for them."""

    def __init__(self, api: KubeApi, metrics: Metrics, enabled: bool = True) -> None:
        self.api = api
        self.metrics = metrics
        self.enabled = enabled
        self._slots = asyncio.Semaphore(CONCURRENCY)
        self._tasks: set[asyncio.Task[None]] = set()

    def post(self, body: dict[str, Any], still: Callable[[], bool] | None = None) -> None:
        """Send ``body`` when a slot is free, unless ``still`` then says that what it reports no longer holds
        (a pod's reason to be held, once the pod is released): a backlog never tells what has passed."""
        if not self.enabled:
            return
        task = asyncio.create_task(self._send(body, still), name=f"draledger-event-{body['reason']}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, body: dict[str, Any], still: Callable[[], bool] | None) -> None:
        async with self._slots:
            if still is not None and not still():
                self.metrics.events_dropped.inc()
                return
            await send(self.api, body, self.metrics)

    async def settle(self) -> None:
        """Until every Event posted is answered (tests, and a clean stop)."""
        while self._tasks:
            await asyncio.wait(list(self._tasks))


def event_body(involved: dict[str, Any], reason: str, message: str, kind: str, now: str) -> dict[str, Any]:
    namespace = involved.get("namespace") or "default"  # cluster-scoped objects' events live in default
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{involved['name']}.", "namespace": namespace},
        "involvedObject": {k: v for k, v in involved.items() if v},
        "reason": reason,
        "message": message[:1024],
        "type": kind,
        "source": {"component": "draledger"},
        "reportingComponent": "draledger.dev/operator",
        "reportingInstance": "draledger",
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


async def send(api: KubeApi, body: dict[str, Any], metrics: Metrics) -> None:
    try:
        await api.create(f"/api/v1/namespaces/{body['metadata']['namespace']}/events", body)
        metrics.writes.labels("event").inc()
    except ApiError as error:
        metrics.write_failures.labels("event", str(error.status)).inc()
        log.warning("event not posted", involved=body["involvedObject"].get("name"), error=str(error))
    except (OSError, TimeoutError) as error:  # aiohttp's connection errors are OSErrors
        metrics.write_failures.labels("event", "unreachable").inc()
        log.warning("event not posted", involved=body["involvedObject"].get("name"), server=api.server,
                    cause=transport_cause(error))


def phase_message(ledger: Ledger, frozen_reason: str) -> str:
    """Why a ledger is in its phase: the conditions that do not hold (a frozen ledger's reason first)."""
    reasons = [c.message for c in ledger.conditions if c.status == "False" and c.type != "PodStatusBackfill"]
    if ledger.phase == Phase.FROZEN:
        reasons.insert(0, f"frozen: {frozen_reason or 'no reason given'}")
    return "; ".join(reasons) or "all conditions hold"


def phase_changed(node: str, uid: str, old: str, new: str, message: str) -> dict[str, Any]:
    """The Event of a ledger's phase change."""
    involved = {"apiVersion": API_VERSION, "kind": KIND, "name": node, "uid": uid}
    kind = "Warning" if new in WARNINGS else "Normal"  # core.phases, rule 3
    return event_body(involved, new, f"{old or 'new'} -> {new}: {message}", kind, now_rfc3339())


def about_pod(namespace: str, name: str, uid: str, reason: str, message: str) -> dict[str, Any]:
    """The Event of a pod held by the gate for this reason, or released."""
    involved = {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": namespace, "uid": uid}
    return event_body(involved, f"LedgerGate{reason}", message, "Normal", now_rfc3339())
