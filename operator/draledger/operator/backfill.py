"""Pod status backfill: write ``status.nodeAllocatableResourceClaimStatuses`` where the scheduler left it out.

Rules:
1. Only for a bound, counted pod without the field, whose claims all resolve (see accounting.statuses),
   after the rebuild, in ``--pod-status=backfill`` mode.
2. One JSON patch on ``pods/status``: a ``test`` of ``metadata.resourceVersion`` (the version in which the
   field was seen absent) and an ``add`` of the field. Never a value the scheduler wrote is overwritten:
   a changed pod fails the test (422) and is looked at again with its next event.
3. At most three attempts per pod resourceVersion (a 422 may be a passing conflict): no patch loops.
4. If the response lacks the field, the API server drops it (gate off): backfill stops for good, which is
   said once in the log, a metric and a ledger condition.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from draledger.core.accounting.statuses import planned_statuses
from draledger.core.keys import ClaimKey, NodeName
from draledger.operator.kubeapi import ApiError, Conflict, KubeApi

if TYPE_CHECKING:
    from draledger.operator.runtime import Runtime

log = structlog.get_logger("draledger")
FIELD = "nodeAllocatableResourceClaimStatuses"
MAX_ATTEMPTS = 3


class Backfill:
    def __init__(self, runtime: Runtime, api: KubeApi) -> None:
        self.runtime = runtime
        self.api = api
        self.attempted: dict[tuple[str, str], tuple[str, int]] = {}  # pod -> (resourceVersion, attempts)
        self.disabled = ""  # why backfill stopped (the API server drops the field), once detected

    def condition(self) -> tuple[str, str, str]:
        """The ledgers' ``PodStatusBackfill`` condition: (status, reason, message)."""
        if self.runtime.config.pod_status == "observe":
            return ("False", "Observe", "--pod-status=observe: missing pod statuses are reported, not written")
        if self.disabled:
            return ("False", "ServerDropsField", self.disabled)
        return ("True", "Backfill", "missing status.nodeAllocatableResourceClaimStatuses are filled in")

    def wanted(self, node: str) -> bool:
        """Whether a pod of the node may need its status filled in (checked without computing any status)."""
        runtime = self.runtime
        if self.disabled or not runtime.rebuilt.is_set():
            return False
        attempted = self.attempted
        for pod in runtime.state.special_pods(NodeName(node)).values():  # every pod with claims, unsorted: any()
            if pod.claim_statuses is None and pod.claims:
                version, attempts = attempted.get(pod.key, ("", 0))
                if version != pod.resource_version or attempts < MAX_ATTEMPTS:
                    return True
        return False

    async def node(self, node: str) -> None:
        runtime = self.runtime
        if self.disabled or not runtime.rebuilt.is_set():
            return
        state = runtime.state
        if len(self.attempted) > 2 * len(state.pods) + 1000:
            self.attempted = {k: v for k, v in self.attempted.items() if k in state.pods}
        for pod in state.pods_on(NodeName(node)):
            if pod.claim_statuses is not None or not pod.claims:
                continue
            version, attempts = self.attempted.get(pod.key, ("", 0))
            attempts = attempts if version == pod.resource_version else 0
            if attempts >= MAX_ATTEMPTS:
                continue
            entries = planned_statuses(pod, state.uses(pod), state.release)  # in the release's shape
            if not entries:
                continue
            self.attempted[pod.key] = (pod.resource_version, attempts + 1)
            ops: list[dict[str, Any]] = [
                {"op": "test", "path": "/metadata/resourceVersion", "value": pod.resource_version},
                {"op": "add", "path": f"/status/{FIELD}", "value": entries},
            ]
            path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status"
            try:
                answer = await self.api.json_patch(path, ops, attempts=1)
            except Conflict:
                runtime.metrics.write_failures.labels("pod-status", "conflict").inc()
                log.info(
                    "pod changed before backfill; will look again",
                    pod=f"{pod.namespace}/{pod.name}",
                    node=node,
                )
                runtime.mark({node})
                continue
            except ApiError as error:
                runtime.metrics.write_failures.labels("pod-status", str(error.status)).inc()
                log.warning("backfill failed", pod=f"{pod.namespace}/{pod.name}", node=node, error=str(error))
                continue
            runtime.metrics.writes.labels("pod-status").inc()
            if FIELD not in ((answer or {}).get("status") or {}):
                self._disable(
                    f"the API server dropped status.{FIELD} from pod {pod.namespace}/{pod.name}: "
                    "the DRANodeAllocatableResources gate is off in kube-apiserver"
                )
                return
            for entry in entries:
                log.info(
                    "pod status backfilled",
                    pod=f"{pod.namespace}/{pod.name}",
                    node=node,
                    claim=f"{pod.namespace}/{entry['resourceClaimName']}",
                    claim_uid=(state.claims.get(ClaimKey((pod.namespace, entry["resourceClaimName"]))) or _NoClaim).uid,
                )

    def _disable(self, reason: str) -> None:
        runtime = self.runtime
        self.disabled = reason
        runtime.metrics.backfill_disabled.set(1)
        log.warning("pod status backfill stopped", reason=reason)
        runtime.mark_all()


class _NoClaim:
    uid = ""
