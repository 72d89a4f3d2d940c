"""The components the demo plays: the API server admitting new objects, and kube-scheduler placing pods.

Rules:
1. The operator plays itself: nothing here writes a ledger status or removes a gate.
2. The scheduler places only pods the operator released, on a node their required node affinity allows
   (the release may have added one), the allowed node with the most free cpu first; what it allocates and
   charges is :func:`draledger.demo.scheduler.bind`'s, which follows the core's rules.
3. Each action that the operator must see before the next one waits for it (:meth:`Pacer.until`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from draledger.core.keys import ClaimKey
from draledger.core.quantities import QuantityError, parse_quantity
from draledger.demo import objects, scheduler
from draledger.demo.emulator import ClusterEmulator
from draledger.demo.frames import Board, describe_devices
from draledger.demo.observing import CLAIMS, PODS, SLICES, Observer
from draledger.demo.waiting import DemoFailed, Pacer
from draledger.operator import clocks

__all__ = ["Components", "rfc3339_now"]


def rfc3339_now() -> str:
    return clocks.now_rfc3339()


def allowed_nodes(obj: Mapping[str, Any]) -> list[str]:
    """The nodes the pod's required node affinity admits (only matchFields on metadata.name here)."""
    affinity = (obj["spec"].get("affinity") or {}).get("nodeAffinity") or {}
    terms = (affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
    if not terms:
        return list(objects.NODES)
    allowed = []
    for node in objects.NODES:
        for term in terms:
            requirements = term.get("matchFields") or []
            if all(
                (node in r.get("values", [])) == (r.get("operator") == "In")
                for r in requirements
                if r.get("key") == "metadata.name"
            ):
                allowed.append(node)
                break
    return allowed


def release_note(obj: Mapping[str, Any]) -> str:
    """How the operator released the pod, read from the node affinity it added."""
    affinity = (obj["spec"].get("affinity") or {}).get("nodeAffinity") or {}
    terms = (affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    for term in terms:
        for requirement in term.get("matchFields") or []:
            values = ", ".join(requirement.get("values") or [])
            if requirement.get("operator") == "NotIn":
                return f"kept away from {values}"
            if requirement.get("operator") == "In":
                return f"pinned to {values}"
    return "no node restriction"


class Components:
    """kube-scheduler and the API server's admission, as the steps call on them."""

    def __init__(self, emulator: ClusterEmulator, observer: Observer, board: Board, pacer: Pacer) -> None:
        self.emulator = emulator
        self.observer = observer
        self.board = board
        self.pacer = pacer

    def _claims_of(self, namespace: str) -> dict[str, dict[str, Any]]:
        return {
            obj["metadata"]["name"]: obj
            for obj in self.observer.live(CLAIMS)
            if obj["metadata"]["namespace"] == namespace
        }

    def _free_cpu(self, node: str) -> Decimal:
        line = (self.observer.status(node).get("resources") or {}).get("cpu") or {}
        try:
            return parse_quantity(line.get("free") or "0").value
        except QuantityError:
            return Decimal(0)

    def schedule(self, key: str) -> str:
        """Play kube-scheduler for a released pod: allocate its claims, reserve them, bind it, start it."""
        obj = self.observer.pod(key)
        namespace = obj["metadata"]["namespace"]
        claims = self._claims_of(namespace)
        slices = list(self.observer.live(SLICES))
        pods = list(self.observer.live(PODS))
        started = rfc3339_now()
        candidates = sorted(allowed_nodes(obj), key=lambda node: (-self._free_cpu(node), node))
        for node in candidates:
            binding = scheduler.bind(obj, node, claims, slices, started, pods=pods)
            if binding is None:
                continue
            for name, status in binding.claims.items():
                self.emulator.patch_object(CLAIMS, name, {"status": status}, namespace=namespace, subresource="status")
            name = obj["metadata"]["name"]
            self.emulator.patch_object(PODS, name, {"spec": {"nodeName": node}}, namespace=namespace)
            self.emulator.patch_object(PODS, name, {"status": binding.pod_status}, namespace=namespace,
                                       subresource="status")
            devices = [r["device"] for c in binding.claims.values() for r in c["allocation"]["devices"]["results"]]
            return f"{node} ({describe_devices(devices)})" if devices else node
        raise DemoFailed(f"the demo scheduler found no node for {key} among {candidates}")

    async def admit(self, objects: Sequence[dict[str, Any]]) -> None:
        """Create objects as the API server would after admission (the webhook already added the gate).

        Claims come first, and the pods only once the operator has seen the claims' allocations: in a real
        cluster a claim allocated ahead of its pod is long known, while here the claims and the pods arrive on
        two watch streams within milliseconds of each other.
        """
        claims = [obj for obj in objects if obj["kind"] == "ResourceClaim"]
        for obj in claims:
            status = obj.pop("status", None)
            self.emulator.load_objects([obj])
            if status:
                self.emulator.patch_object(CLAIMS, obj["metadata"]["name"], {"status": status},
                                           namespace=obj["metadata"]["namespace"], subresource="status")
                obj["status"] = status
        keys = [(o["metadata"]["namespace"], o["metadata"]["name"], bool(o.get("status"))) for o in claims]
        runtime = self.observer.operator.runtime
        await self.pacer.until(
            "the operator has seen the new claims",
            lambda: all(
                (view := runtime.state.claims.get(ClaimKey((namespace, name)))) is not None
                and view.allocated == allocated
                for namespace, name, allocated in keys
            ),
        )
        self.emulator.load_objects([obj for obj in objects if obj["kind"] != "ResourceClaim"])

    async def release_and_place(self, *keys: str) -> None:
        """Wait for the operator to release each pod, then place it; done when the ledgers count them."""
        for key in keys:
            await self.pacer.until(f"{key} released by the operator", self.observer.released(key))
            how = release_note(self.observer.pod(key))
            self.board.note(f"released {key} ({how}); the scheduler puts it on {self.schedule(key)}")
        await self.pacer.until("the ledgers count the new claims", self.observer.counted(*keys))
