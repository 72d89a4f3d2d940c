"""The record a gate release leaves on its pod: ``draledger.dev/released-on`` (docs/operations.md, "What a
release relied on"), written and read here only.

Rules:
1. A pinned release (the pod's claims are allocated) names each node it may go to and the ``ledgerVersion``
   of that node's ledger as stored when the release was decided: ``worker-3@ledgerVersion=42``, several
   joined by commas; a node outside the operator's ``--node-selector`` has no ledger of ours: ``node@outside``.
2. A release for the scheduler to place names no node: ``*@resourceVersion=R``, every node of ours its
   affinity allows had a ledger stored Ready as the ledgers stood at resourceVersion ``R`` (the newest of them
   the operator knew), and every node of ours that had not is named in its ``NotIn`` term.
3. ``check`` judges a record against the ledgers a dump holds, afterwards: the pod must be bound where the
   record allows, and a named ledger can only have moved on (versions never go back).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

ANNOTATION = "draledger.dev/released-on"
OUTSIDE = "outside"
_VERSION = "ledgerVersion="
_REVISION = "resourceVersion="


@dataclass(frozen=True, slots=True)
class Record:
    """What one release relied on: ``nodes`` (name -> ledgerVersion, None when outside) for a pinned one, or
    ``scheduled`` with the ledgers' ``revision``."""

    nodes: Mapping[str, int | None]
    scheduled: bool = False
    revision: str = ""

    def text(self) -> str:
        if self.scheduled:
            return f"*@{_REVISION}{self.revision}" if self.revision else "*"
        return ",".join(f"{node}@{OUTSIDE}" if version is None else f"{node}@{_VERSION}{version}"
                        for node, version in self.nodes.items())


def parse(text: str) -> Record | None:
    """The record in ``text``; None when it is not one (rules 1 and 2)."""
    if text == "*" or text.startswith(f"*@{_REVISION}"):
        return Record({}, True, text[len(f"*@{_REVISION}"):] if text != "*" else "")
    nodes: dict[str, int | None] = {}
    for part in text.split(","):
        node, at, where = part.partition("@")
        if not node or not at:
            return None
        if where == OUTSIDE:
            nodes[node] = None
        elif where.startswith(_VERSION) and where[len(_VERSION):].isdigit():
            nodes[node] = int(where[len(_VERSION):])
        else:
            return None
    return Record(nodes) if nodes else None


@dataclass(frozen=True, slots=True)
class Stored:
    """A ledger as a dump holds it."""

    phase: str
    ledger_version: int


def check(record: Record | None, text: str, node: str, excluded: Sequence[str],
          ledgers: Mapping[str, Stored]) -> str:
    """Rule 3 for a pod released on ``text`` and bound to ``node`` ("": not bound yet), kept away from
    ``excluded`` by its NotIn term: "" when the record holds, else why not."""
    if record is None:
        return f"{ANNOTATION} {text!r} is not a record of a release"
    if not node:
        return ""
    if record.scheduled:
        if node in excluded:
            return f"bound to {node}, which its release kept it away from"
        return ""
    if node not in record.nodes:
        return f"bound to {node}, but released on {text} only"
    version = record.nodes[node]
    stored = ledgers.get(node)
    if version is None or stored is None:
        return ""  # outside the selector, or a dump without that ledger: nothing to compare
    if stored.ledger_version < version:
        return f"{node}'s ledger is at ledgerVersion {stored.ledger_version}, below the {version} it was released on"
    return ""


@dataclass(frozen=True, slots=True)
class Released:
    """A released pod as a dump holds it: its record, where it is bound, and the nodes its release excluded."""

    namespace: str
    name: str
    text: str
    node: str
    excluded: tuple[str, ...]


def _dict(value: object) -> Mapping[str, object]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def released(body: Mapping[str, object]) -> Released | None:
    """The release record of a raw Pod (None when it carries none); never raises on a malformed body."""
    meta, spec = _dict(body.get("metadata")), _dict(body.get("spec"))
    text = _dict(meta.get("annotations")).get(ANNOTATION)
    if not isinstance(text, str):
        return None
    required = _dict(_dict(_dict(spec.get("affinity")).get("nodeAffinity")).get(
        "requiredDuringSchedulingIgnoredDuringExecution"))
    excluded: set[str] = set()
    for term in _list(required.get("nodeSelectorTerms")):
        for requirement in _list(_dict(term).get("matchFields")):
            requirement = _dict(requirement)
            if requirement.get("key") == "metadata.name" and requirement.get("operator") == "NotIn":
                excluded.update(str(v) for v in _list(requirement.get("values")))
    node = spec.get("nodeName")
    return Released(str(meta.get("namespace") or ""), str(meta.get("name") or ""), text,
                    node if isinstance(node, str) else "", tuple(sorted(excluded)))


def stored(body: Mapping[str, object]) -> tuple[str, Stored] | None:
    """A raw NodeAllocatableLedger's name and what its status says (None without a name)."""
    name = _dict(body.get("metadata")).get("name")
    status = _dict(body.get("status"))
    version = status.get("ledgerVersion")
    if not isinstance(name, str) or not name:
        return None
    return name, Stored(str(status.get("phase") or ""), version if type(version) is int else 0)
