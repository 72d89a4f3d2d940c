"""Kubernetes Events: phase changes on ledgers (``kubectl describe nal NODE`` tells the story) and the
reasons a pod is held by the gate (``kubectl describe pod``). Best effort: never blocks anything."""

from __future__ import annotations

from typing import Any

import structlog

from draledger.core.accounting.ledger import Ledger
from draledger.core.bodies import API_VERSION, KIND
from draledger.core.phases import WARNINGS, Phase
from draledger.operator.clocks import now_rfc3339
from draledger.operator.kubeapi import ApiError, KubeApi
from draledger.operator.metrics import Metrics

log = structlog.get_logger("draledger")


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


def phase_message(ledger: Ledger, frozen_reason: str) -> str:
    """Why a ledger is in its phase: the conditions that do not hold (a frozen ledger's reason first)."""
    reasons = [c.message for c in ledger.conditions if c.status == "False" and c.type != "PodStatusBackfill"]
    if ledger.phase == Phase.FROZEN:
        reasons.insert(0, f"frozen: {frozen_reason or 'no reason given'}")
    return "; ".join(reasons) or "all conditions hold"


async def post(api: KubeApi, node: str, uid: str, old: str, new: str, message: str, metrics: Metrics) -> None:
    """A ledger's phase changed."""
    involved = {"apiVersion": API_VERSION, "kind": KIND, "name": node, "uid": uid}
    kind = "Warning" if new in WARNINGS else "Normal"  # core.phases, rule 3
    await send(api, event_body(involved, new, f"{old or 'new'} -> {new}: {message}", kind, now_rfc3339()), metrics)


async def post_pod(api: KubeApi, namespace: str, name: str, uid: str, reason: str, message: str,
                   metrics: Metrics) -> None:
    """A pod is held by the gate, for this reason."""
    involved = {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": namespace, "uid": uid}
    await send(api, event_body(involved, f"LedgerGate{reason}", message, "Normal", now_rfc3339()), metrics)
