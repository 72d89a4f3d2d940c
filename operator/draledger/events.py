"""Kubernetes Events on ledgers, so that ``kubectl describe nal NODE`` tells the story of its phases."""

from __future__ import annotations

import structlog

from draledger.audit import now_rfc3339
from draledger.kubeapi import ApiError, KubeApi
from draledger.ledgers import API_VERSION, KIND
from draledger.metrics import Metrics

log = structlog.get_logger("draledger")
WARNING_PHASES = frozenset({"Stale", "Overcommitted", "Frozen"})


def event_body(node: str, uid: str, old: str, new: str, message: str, now: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{node}.", "namespace": "default"},
        "involvedObject": {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "name": node,
            **({"uid": uid} if uid else {}),
        },
        "reason": new,
        "message": (f"{old or 'new'} -> {new}: {message}")[:1024],
        "type": "Warning" if new in WARNING_PHASES else "Normal",
        "source": {"component": "draledger"},
        "reportingComponent": "draledger.dev/operator",
        "reportingInstance": "draledger",
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


async def post(api: KubeApi, node: str, uid: str, old: str, new: str, message: str, metrics: Metrics) -> None:
    try:
        await api.create(
            "/api/v1/namespaces/default/events", event_body(node, uid, old, new, message, now_rfc3339())
        )
        metrics.writes.labels("event").inc()
    except ApiError as error:  # events are best-effort: never block a ledger on them
        metrics.write_failures.labels("event", str(error.status)).inc()
        log.warning("event not posted", node=node, error=str(error))
