"""Admission: the webhook that adds ``draledger.dev/ledger-ready`` to claim pods as they are created.

Rules:
1. The webhook adds the gate unconditionally (it runs outside Kopf's watch barrier and may see a partial
   state): to CREATEd pods with ``spec.resourceClaims`` in namespaces not excluded, unless the pod is
   created already bound (``spec.nodeName``), which the API server would refuse with a gate. The decision to let a
   pod go is made at release time (``gating``), never at admission.
2. Any body that is not an AdmissionReview request gets a clear 400, never a crash.
"""

from __future__ import annotations

from typing import Any

import kopf

from draledger.core.accounting.release import GATE
from draledger.operator.kopfcompat import CheckedWebhookServer
from draledger.operator.metrics import Metrics


def refusal(data: Any) -> str:
    """Why a decoded body is no AdmissionReview request Kopf can serve ("" when it is one: rule 2)."""
    review = data.get("request") if isinstance(data, dict) else None
    if not isinstance(review, dict) or not isinstance(review.get("uid"), str):
        return "not an AdmissionReview: no request.uid"
    for key in ("object", "oldObject"):
        if review.get(key) is not None and not isinstance(review[key], dict):
            return f"request.{key} is not an object"
    if not isinstance(review.get("userInfo", {}), dict):
        return "request.userInfo is not an object"
    return ""


class GatingWebhookServer(CheckedWebhookServer):
    """Kopf's HTTPS webhook server, answering 400 to any body that is not an AdmissionReview request (rule 2):
    Kopf itself answers 400 only to unparseable JSON and 500 to, e.g., a JSON string; an API server must always
    get a clear answer."""

    refusal = staticmethod(refusal)


def admission(spec: dict[str, Any], namespace: str, excluded: frozenset[str]) -> str:
    """What the webhook does with a pod being created: ``gated``, or why it passes untouched."""
    if not spec.get("resourceClaims"):
        return "no-claims"
    if namespace in excluded:
        return "excluded-namespace"
    if spec.get("nodeName"):  # the API server refuses a scheduling gate on a pod created bound
        return "already-bound"
    if any(isinstance(g, dict) and g.get("name") == GATE for g in spec.get("schedulingGates") or []):
        return "already-gated"
    return "gated"


def register_webhook(registry: kopf.OperatorRegistry, excluded: frozenset[str], metrics: Metrics) -> None:
    @kopf.on.mutate(
        "v1",
        "pods",
        operations=["CREATE"],
        id="gate-pods",
        registry=registry,
        ignore_failures=True,
        side_effects=False,
    )
    async def gate_pods(body: kopf.Body, patch: kopf.Patch, namespace: str | None, **_: Any) -> None:
        spec = dict(body.get("spec") or {})
        result = admission(spec, namespace or "", excluded)
        metrics.admissions.labels(result).inc()
        if result == "gated":
            gates = [dict(g) for g in spec.get("schedulingGates") or [] if isinstance(g, dict)]
            patch.spec["schedulingGates"] = [*gates, {"name": GATE}]
