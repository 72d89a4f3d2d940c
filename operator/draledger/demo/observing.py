"""What the story reads: the emulated cluster's objects and the running operator's metrics.

Rules:
1. Only reads: nothing here writes an object (the steps and :mod:`draledger.demo.acting` do).
2. Conditions are returned as callables (``phase_is``, ``released``, ``held_for``, ``counted``), for
   :meth:`draledger.demo.waiting.Pacer.until` to poll: each call reads the store afresh.
3. A pod the story relies on that is gone is :class:`DemoFailed`, never a ``KeyError``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from draledger.core.accounting.release import GATE
from draledger.demo import objects
from draledger.demo.emulator import ClusterEmulator
from draledger.demo.waiting import DemoFailed
from draledger.operator.running import Operator

__all__ = ["CLAIMS", "EVENTS", "LEDGERS", "PODS", "SLICES", "Observer", "complete"]

LEDGERS: Final = "draledger.dev/v1alpha1/nodeallocatableledgers"
PODS: Final = "v1/pods"
CLAIMS: Final = "resource.k8s.io/v1/resourceclaims"
SLICES: Final = "resource.k8s.io/v1/resourceslices"
EVENTS: Final = "v1/events"


def complete(ledger: Mapping[str, Any]) -> dict[str, Any]:
    """A ledger object whose status has every field ``tables.ledger_table`` reads (new ones may not yet)."""
    status = dict(ledger.get("status") or {})
    status.setdefault("nodeName", (ledger.get("metadata") or {}).get("name", ""))
    status.setdefault("phase", "-")
    for key, default in (("resources", {}), ("numaZones", []), ("conditions", []), ("problems", [])):
        status.setdefault(key, default)
    status.setdefault("claimCount", len(status.get("claims") or []))
    return {**ledger, "status": status}


class Observer:
    """The cluster as the emulator stores it, and the operator's gauges and counters."""

    def __init__(self, emulator: ClusterEmulator, operator: Operator) -> None:
        self.emulator = emulator
        self.operator = operator

    def live(self, resource: str) -> Iterator[dict[str, Any]]:
        return self.emulator.store.live(self.emulator.require(resource).resource)

    def ledgers(self) -> list[dict[str, Any]]:
        return sorted((complete(o) for o in self.live(LEDGERS)), key=lambda o: o["status"]["nodeName"])

    def status(self, node: str) -> dict[str, Any]:
        obj = self.emulator.get_object(LEDGERS, node)
        return dict((obj or {}).get("status") or {})

    def phase_is(self, phase: str, *nodes: str) -> Callable[[], bool]:
        wanted = nodes or objects.NODES
        return lambda: all(self.status(node).get("phase") == phase for node in wanted)

    def pod(self, key: str) -> dict[str, Any]:
        namespace, name = key.split("/")
        obj = self.emulator.get_object(PODS, name, namespace=namespace)
        if obj is None:
            raise DemoFailed(f"pod {key} is gone")
        return obj

    def gated(self, key: str) -> bool:
        return GATE in [g.get("name") for g in self.pod(key)["spec"].get("schedulingGates") or []]

    def held(self) -> list[tuple[str, str, str]]:
        """(pod, reason, message) of every pod our gate holds, the reason from its latest gate Event."""
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        for event in self.live(EVENTS):
            involved = event.get("involvedObject") or {}
            if involved.get("kind") == "Pod" and str(event.get("reason", "")).startswith("LedgerGate"):
                key = (str(involved.get("namespace")), str(involved.get("name")))
                rv = int(event["metadata"].get("resourceVersion") or 0)
                if key not in latest or rv > int(latest[key]["metadata"].get("resourceVersion") or 0):
                    latest[key] = event
        out = []
        for obj in sorted(self.live(PODS), key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"])):
            gates = [g.get("name") for g in obj["spec"].get("schedulingGates") or []]
            if GATE not in gates:
                continue
            meta = obj["metadata"]
            last = latest.get((meta["namespace"], meta["name"]))
            reason = str(last["reason"]).removeprefix("LedgerGate") if last else "(not looked at yet)"
            message = str(last["message"]).removeprefix(f"held by {GATE}: ") if last else ""
            out.append((f"{meta['namespace']}/{meta['name']}", reason, message))
        return out

    def holds(self) -> int:
        """How many times the gate held a pod (one Event each; a release has its own, LedgerGateReleased)."""
        return sum(1 for event in self.live(EVENTS)
                   if str(event.get("reason", "")).startswith("LedgerGate") and event["reason"] != "LedgerGateReleased")

    def released(self, key: str) -> Callable[[], bool]:
        return lambda: not self.gated(key)

    def held_for(self, key: str, reason: str) -> Callable[[], bool]:
        """The pod is held, its latest Event gives this reason, and the operator's gauge counts it."""
        return lambda: self.gauge(reason) >= 1 and any(pod == key and why == reason for pod, why, _ in self.held())

    def counted(self, *keys: str) -> Callable[[], bool]:
        """The pods' claims are in their node's ledger (the operator saw the binding)."""

        def check() -> bool:
            for key in keys:
                obj = self.pod(key)
                node = obj["spec"].get("nodeName")
                if not node:
                    return False
                names = {f"{c['namespace']}/{c['name']}" for c in self.status(node).get("claims") or []}
                namespace = obj["metadata"]["namespace"]
                for entry in obj["spec"].get("resourceClaims") or []:
                    if f"{namespace}/{entry.get('resourceClaimName')}" not in names:
                        return False
            return True

        return check

    def gated_counts(self) -> dict[str, int]:
        """The operator's draledger_gated_pods gauge, by reason (zeros left out)."""
        counts: dict[str, int] = {}
        for family in self.operator.metrics.registry.collect():
            for sample in family.samples:
                if sample.name == "draledger_gated_pods" and sample.value:
                    counts[sample.labels["reason"]] = int(sample.value)
        return dict(sorted(counts.items()))

    def gauge(self, reason: str) -> int:
        value = self.operator.metrics.registry.get_sample_value("draledger_gated_pods", {"reason": reason})
        return int(value or 0)

    def counter(self, name: str, labels: Mapping[str, str] | None = None) -> int:
        value = self.operator.metrics.registry.get_sample_value(name, dict(labels or {}))
        return int(value or 0)
