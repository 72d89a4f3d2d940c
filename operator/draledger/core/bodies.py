"""The NodeAllocatableLedger resource: its names and the translation of an accounting ``Ledger`` into the
status body the API holds (its pydantic model, from which the CRD schema is generated, is ``core.models``).

Rules:
1. Quantities are written in canonical Kubernetes form (``9600m``, ``8Gi``); zone ids are integers.
2. Serialization is deterministic (sorted keys and lists), so an unchanged ledger serializes to the same
   bytes and the operator can skip the write.
3. Versions and timestamps are inputs: this module never reads a clock.
4. ``summary`` repeats a few figures for people (``kubectl get nal``'s columns): what ``audit``'s table prints,
   by the same functions (``core.figures.humanize_pair``, ``problem_count``); nothing reads it back, and it
   changes only when the exact figures do.
5. PROBLEMS (``problem_count``) counts every problem the ledger shows: those of ``status.problems`` and, once each,
   a claim's problems that the node's list does not repeat (``SharedAcrossPods``, ``UnreferencedClaim``).
6. No pydantic here: ``draledger audit`` builds every body without importing it; tests hold the bodies
   equal to the model's own dump (``core.models``).
7. A dump has no history: the objects ``audit`` prints (``dump_objects``) carry versions 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from draledger.core.accounting.ledger import Condition, Ledger, ResourceLine
from draledger.core.figures import humanize_pair
from draledger.core.phases import Phase
from draledger.core.views import Problem

GROUP = "draledger.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "NodeAllocatableLedger"
PLURAL = "nodeallocatableledgers"
SHORT_NAME = "nal"




def condition_bodies(
    conditions: tuple[Condition, ...], previous: list[dict[str, Any]] | None, now: str
) -> list[dict[str, str]]:
    """metav1.Condition semantics: lastTransitionTime moves only when the status changes."""
    before = {c.get("type"): c for c in previous or () if isinstance(c, dict)}
    out = []
    for cond in conditions:
        old = before.get(cond.type)
        since = old.get("lastTransitionTime") if old and old.get("status") == cond.status else None
        out.append(
            {
                "type": cond.type,
                "status": cond.status,
                "reason": cond.reason,
                "message": cond.message,
                "lastTransitionTime": since or now,
            }
        )
    return out


def status_body(
    ledger: Ledger,
    *,
    ledger_version: int,
    mapping_version: int,
    now: str,
    previous_conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The status body as the API holds it, built without the models (the writer's hot path).

    The same keys in the same order as the model's own dump, ``None`` fields left out; tests hold
    ``status_json(status_of(...))`` (this body read back through the model) equal to it, key order
    included, so the body always validates against the model the CRD schema is generated from.
    """
    body = {
        "nodeName": ledger.node_name,
        "phase": Phase(ledger.phase).value,
        "release": ledger.release,
        "ledgerVersion": ledger_version,
        "mappingVersion": mapping_version,
        "mappingFingerprint": ledger.mapping_fingerprint,
        "observedTime": now,
        "claimCount": len(ledger.claims),
        "resources": {name: line_figures(line) for name, line in ledger.resources.items()},
        "numaZones": [
            {
                "id": zone,
                "resources": {
                    r: {"capacity": str(z.capacity), "claims": str(z.claims), "free": str(z.free)}
                    for r, z in lines.items()
                },
            }
            for zone, lines in ledger.zones.items()
        ],
        "claims": [
            {
                "namespace": c.namespace,
                "name": c.name,
                "uid": c.uid,
                "pods": list(c.pods),
                "devices": [
                    {"driver": d.driver, "pool": d.pool, "device": d.device}
                    if d.zone is None
                    else {"driver": d.driver, "pool": d.pool, "device": d.device, "numaZone": d.zone}
                    for d in c.devices
                ],
                "resources": {r: str(q) for r, q in sorted(c.resources.items())},
                "schedulerCharged": {r: str(q) for r, q in sorted(c.scheduler_charged.items())},
                "problems": list(c.problems),
            }
            for c in ledger.claims
        ],
        "problems": [problem_body(p) for p in ledger.problems],
        "conditions": condition_bodies(ledger.conditions, previous_conditions, now),
    }
    body["summary"] = summary(ledger, body)
    if ledger.rejected_slices:
        body["rejectedSlices"] = [
            {
                "name": r.name,
                "driver": r.driver,
                "pool": r.pool,
                "generation": r.generation,
                "rejectedGeneration": r.rejected,
            }
            for r in ledger.rejected_slices
        ]
    return body


def summary(ledger: Ledger, status: Mapping[str, Any]) -> dict[str, Any]:
    """The ``summary`` for ``kubectl get nal`` (rule 4) of ``ledger``, whose status body is ``status``."""

    def pair(name: str) -> str:
        line = ledger.resources.get(name)
        return humanize_pair(name, line.requested, line.allocatable) if line else "-"

    in_sync = any(c.type == "SchedulerInSync" and c.status == "True" for c in ledger.conditions)
    return {"cpu": pair("cpu"), "memory": pair("memory"), "scheduler": "InSync" if in_sync else "Diverged",
            "problems": problem_count(status)}


def problem_count(status: Mapping[str, Any]) -> int:
    """Every problem a ledger's status shows (rule 5)."""
    problems = status.get("problems") or ()
    listed = {(p.get("reason"), p.get("kind"), p.get("namespace"), p.get("name")) for p in problems}
    extra = {(reason, "ResourceClaim", claim.get("namespace"), claim.get("name"))
             for claim in status.get("claims") or () for reason in claim.get("problems") or ()} - listed
    return len(problems) + len(extra)


def line_figures(line: ResourceLine) -> dict[str, str]:
    """One resource line of the status, in canonical text (the ``ResourceFigures`` fields, by alias)."""
    return {
        "allocatable": str(line.allocatable),
        "podRequests": str(line.pod_requests),
        "claims": str(line.claims),
        "requested": str(line.requested),
        "free": str(line.free),
        "schedulerCharged": str(line.scheduler_charged),
        "schedulerRequested": str(line.scheduler_requested),
    }


def problem_body(problem: Problem) -> dict[str, Any]:
    ref = problem.obj
    body = {"reason": problem.reason, "message": problem.message}
    optional = {
        "kind": ref.kind if ref else None,
        "namespace": (ref.namespace or None) if ref else None,
        "name": ref.name if ref else None,
        "field": problem.field or None,
        "value": problem.value or None,
    }
    body.update((k, v) for k, v in optional.items() if v is not None)
    return body


def ledger_object(
    body: dict[str, Any],
    node_uid: str = "",
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole resource as the API (and ``audit -o json``) shows it; owned by its Node. ``body`` is what
    ``status_body`` builds (or the model's dump, ``models.status_json``: the same, key order included)."""
    name = body["nodeName"]
    metadata: dict[str, Any] = {"name": name}
    if node_uid:
        metadata["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": node_uid}]
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": metadata,
        "spec": {"frozen": False} if spec is None else spec,
        "status": body,
    }


def dump_objects(ledgers: Iterable[Ledger], now: str) -> list[dict[str, Any]]:
    """Each ledger's whole object as ``audit`` prints it (rule 7), in the order given."""
    return [ledger_object(status_body(ledger, ledger_version=1, mapping_version=1, now=now), ledger.node_uid)
            for ledger in ledgers]
