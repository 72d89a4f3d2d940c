"""Gating: the admission webhook that adds ``draledger.dev/ledger-ready``, and the release of that gate.

Rules:
1. The webhook adds the gate unconditionally (it runs outside Kopf's watch barrier and may see a partial
   state): to CREATEd pods with ``spec.resourceClaims`` in namespaces not excluded, unless the pod is
   created already bound (``spec.nodeName``), which the API server would refuse with a gate. The decision to let a
   pod go is made at release time, never at admission.
2. Release removes only our gate and tightens node affinity in the same guarded JSON patch
   (accounting.release), decided from every node's standing computed now. A conflict (422) is retried on
   the next pass with fresh state; a failing API is tried once more, never long: the pass goes on. While
   a watch request is being renewed (``Runtime.renewing``) the pass stops and decides nothing, so that
   pods held for it get no Event; the stream's answer wakes the next pass.
3. A pod held back gets an Event with the reason when the reason changes, and is counted by reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import aiohttp.web
import kopf
import structlog

from draledger.core.accounting.ledger import Flags, Ledger
from draledger.core.accounting.release import GATE, NodeStanding, decide
from draledger.core.views import PodView
from draledger.operator import events
from draledger.operator.kubeapi import ApiError, Conflict, KubeApi
from draledger.operator.metrics import Metrics

if TYPE_CHECKING:
    from draledger.operator.runtime import Runtime

log = structlog.get_logger("draledger")


class GatingWebhookServer(kopf.WebhookServer):
    """Kopf's HTTPS webhook server, answering 400 to any body that is not an AdmissionReview request.

    Kopf itself answers 400 only to unparseable JSON and crashes with a 500 on, e.g., a JSON string;
    an API server must always get a clear answer.
    """

    @staticmethod
    async def _serve(fn: Any, request: aiohttp.web.Request) -> aiohttp.web.Response:
        try:
            data = json.loads(await request.text())
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise aiohttp.web.HTTPBadRequest(reason=f"not JSON: {error}") from None
        review = data.get("request") if isinstance(data, dict) else None
        if not isinstance(review, dict) or not isinstance(review.get("uid"), str):
            raise aiohttp.web.HTTPBadRequest(reason="not an AdmissionReview: no request.uid")
        for key in ("object", "oldObject"):
            if review.get(key) is not None and not isinstance(review[key], dict):
                raise aiohttp.web.HTTPBadRequest(reason=f"request.{key} is not an object")
        if not isinstance(review.get("userInfo", {}), dict):
            raise aiohttp.web.HTTPBadRequest(reason="request.userInfo is not an object")
        return await kopf.WebhookServer._serve(fn, request)


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


class Releaser:
    """Decides, pod by pod, from the standing of every node computed now (never from what was last written).

    ``standing`` holds each node's phase and free resources; a node marked since it was computed (an event,
    a flag, the rebuild) is computed again before the next decision, so a decision never rests on a node's
    old picture, nor on an empty one. The pods to look at are the state's ``held`` index, less the ones
    released whose event has not come back yet (``released``: the view each was released in).
    """

    def __init__(self, runtime: Runtime, api: KubeApi, flags: Callable[[str], Flags]) -> None:
        self.runtime = runtime
        self.api = api
        self.flags = flags  # a node's flags, as the writer composes them
        self.standing: dict[str, NodeStanding] = {}
        self.released: dict[tuple[str, str], PodView] = {}
        self.reasons: dict[tuple[str, str], str] = {}
        # A pass that met a failed patch or an unhealthy stream: the next one comes without waiting for an
        # event (nothing else would wake the writer for a 422 that changed nothing).
        self.retry_soon = False

    def note(self, node: str, ledger: Ledger | None) -> None:
        """The writer computed this node's ledger just now."""
        if ledger is None:
            self.standing.pop(node, None)
        else:
            self.standing[node] = NodeStanding(
                ledger.phase, {r: line.free_units for r, line in ledger.resources.items()}
            )

    def refresh(self) -> None:
        """Compute again every node touched since the last look; forget nodes that are gone."""
        runtime = self.runtime
        touched, runtime.touched = runtime.touched, set()
        for node in touched:
            self.note(node, runtime.state.ledger(node, self.flags(node)))
        nodes = runtime.state.nodes
        if len(self.standing) != len(nodes):
            for node in [n for n in self.standing if n not in nodes]:
                del self.standing[node]
            for node in [n for n in nodes if n not in self.standing]:
                self.note(node, runtime.state.ledger(node, self.flags(node)))

    def waiting(self) -> list[tuple[str, str]]:
        """The held pods to look at, in order; a released pod whose view changed since is forgotten."""
        pods, released = self.runtime.state.pods, self.released
        for key in [k for k, view in released.items() if pods.get(k) is not view]:
            del released[key]
        return sorted(key for key in self.runtime.state.held if key not in released)

    async def release_pass(self) -> None:
        runtime = self.runtime
        state = runtime.state
        counts: dict[str, int] = {}
        oldest = 0.0
        now = datetime.now(UTC)
        rebuilt = runtime.rebuilt.is_set()  # once per pass: a rebuild completing mid-pass waits for the next
        self.retry_soon = False
        waiting = self.waiting()
        for key in waiting:
            pod = state.pods.get(key)
            if pod is None or GATE not in pod.scheduling_gates:  # changed during this pass's patches
                continue
            unhealthy = ""
            if rebuilt:
                self.refresh()  # events may have arrived while the previous pod's patch was on the way
                unhealthy = runtime.streams_unhealthy()
                if unhealthy and runtime.renewing():  # an ordinary renewal: wait for it, deciding nothing
                    self.retry_soon = True
                    return
            decision = decide(
                pod,
                self.standing,
                state,
                rebuilt=rebuilt,
                cluster_frozen=runtime.config.frozen,
                numa_attributes=runtime.config.numa_attributes,
                streams_unhealthy=unhealthy,
                outside=runtime.outside,
            )
            if decision.release and decision.patch is not None:
                if await self._release(pod.namespace, pod.name, decision.patch, decision.message):
                    self.released[key] = pod
                    self.reasons.pop(key, None)
                    continue
                decision_reason = "Conflict"  # a failed patch, of any kind: tried again soon
            else:
                decision_reason = decision.reason
                if self.reasons.get(key) != decision_reason:
                    self.reasons[key] = decision_reason
                    await self._event(pod.namespace, pod.name, pod.uid, decision_reason, decision.message)
            counts[decision_reason] = counts.get(decision_reason, 0) + 1
            if pod.gate_info and pod.gate_info.created:
                try:
                    created = datetime.fromisoformat(pod.gate_info.created.replace("Z", "+00:00"))
                    oldest = max(oldest, (now - created).total_seconds())
                except ValueError:
                    pass
        self.retry_soon = bool(counts.get("Conflict") or counts.get("WatchUnhealthy"))
        for reason in set(counts) | {labels[0] for labels in runtime.metrics.gated._metrics}:
            runtime.metrics.gated.labels(reason).set(counts.get(reason, 0))
        runtime.metrics.gated_oldest.set(oldest)
        if len(self.reasons) > 2 * len(state.held) + 100:
            self.reasons = {k: v for k, v in self.reasons.items() if k in state.held}

    async def _release(self, namespace: str, name: str, patch: list[dict[str, Any]], message: str) -> bool:
        try:
            await self.api.json_patch(f"/api/v1/namespaces/{namespace}/pods/{name}", patch, attempts=1)
        except Conflict:
            self.runtime.metrics.write_failures.labels("pod-gate", "conflict").inc()
            log.info("pod changed before release; will retry", pod=f"{namespace}/{name}")
            return False
        except ApiError as error:
            self.runtime.metrics.write_failures.labels("pod-gate", str(error.status)).inc()
            log.warning("gate release failed", pod=f"{namespace}/{name}", error=str(error))
            return False
        self.runtime.metrics.writes.labels("pod-gate").inc()
        self.runtime.metrics.gate_releases.inc()
        log.info("gate released", pod=f"{namespace}/{name}", placement=message)
        return True

    async def _event(self, namespace: str, name: str, uid: str, reason: str, message: str) -> None:
        if self.runtime.config.events:
            await events.post_pod(self.api, namespace, name, uid, reason, f"held by {GATE}: {message}",
                                  self.runtime.metrics)
