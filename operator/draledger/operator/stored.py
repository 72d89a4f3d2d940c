"""What the API holds of each node's ledger, as this operator last saw it: the writer's mirror.

The writer compares every plan against it (whether to write at all), takes the next versions from it and
guards every write with it; the ledgers' own stream keeps it true.

Rules:
1. It is read at start (the writer's LIST of the ledgers, before the first write), and updated by every
   write, every answer to a write and every event of the ledgers' stream (``StoredLedgers`` is a
   ``watching`` observer of that stream only).
2. A ledger deleted or edited behind the operator's back is believed as the API shows it, and its node is
   marked, so that it is written again; versions never go back below the highest seen or written.
3. A relist of the ledgers forgets the stored ledgers it no longer contains, so they are created again.
4. An event older than what a write of ours returned is skipped (its ``resourceVersion`` is not newer): the
   write's answer already showed the object as it is, ``spec`` included.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
import structlog

from draledger.core.accounting.ledger import RejectedSlice
from draledger.operator.kubeapi import KubeApi, NotFound
from draledger.operator.watching import LEDGERS_KIND

log = structlog.get_logger("draledger")

VOLATILE = ("observedTime", "ledgerVersion", "mappingVersion")


def semantic_content(status: Mapping[str, Any]) -> bytes:
    """A digest of the status without versions and timestamps, serialized deterministically: all the writer
    compares, 16 bytes kept per node instead of the whole serialization (kilobytes)."""
    content = {k: v for k, v in status.items() if k not in VOLATILE}
    content["conditions"] = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"}
        for c in status.get("conditions") or []
        if isinstance(c, dict)
    ]
    return hashlib.blake2b(_SORTED.encode(content), digest_size=16).digest()


_SORTED = msgspec.json.Encoder(order="sorted", enc_hook=str)  # semantic_content: deterministic, ~10x json.dumps


class _WrittenMeta(msgspec.Struct):
    resourceVersion: str = ""


class _Written(msgspec.Struct):
    """What the writer reads of its own write's answer: the status it sent is skipped, never built."""

    metadata: _WrittenMeta = msgspec.field(default_factory=_WrittenMeta)
    spec: dict[str, Any] | None = None


_WRITTEN = msgspec.json.Decoder(_Written)


def decode_written(raw: bytes) -> dict[str, Any]:
    """The answer to a status write: its ``resourceVersion`` and ``spec`` (operator.writing, rule 9). An answer
    these types do not fit (a server that breaks its own schema) is read whole, as any other answer."""
    try:
        written = _WRITTEN.decode(raw)
    except msgspec.MsgspecError:
        return json.loads(raw)  # type: ignore[no-any-return]
    return {"metadata": {"resourceVersion": written.metadata.resourceVersion}, "spec": written.spec}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return value if type(value) is int and value >= 0 else 0


@dataclass
class Stored:
    """What the API holds for one node's ledger (read at start, updated by every write and every event)."""

    exists: bool = False
    ledger_version: int = 0  # the highest seen or written: the next write carries one more
    guard_version: int = 0  # the ledgerVersion the API holds now: the next write's precondition
    mapping_version: int = 0
    fingerprint: str = ""
    content: bytes = b""  # digest of the semantic content (``semantic_content``)
    phase: str = ""
    conditions: list[dict[str, Any]] = field(default_factory=list)
    frozen: bool = False
    frozen_reason: str = ""
    mapping_changed_at: float = 0.0
    uid: str = ""
    resource_version: str = ""
    has_status: bool = False

    def read_spec(self, spec: Mapping[str, Any]) -> bool:
        """Take the freeze the API shows; whether it changed."""
        before = (self.frozen, self.frozen_reason)
        self.frozen = spec.get("frozen") is True
        self.frozen_reason = _str(spec.get("reason"))
        return (self.frozen, self.frozen_reason) != before

    def forget(self) -> None:
        """Nothing is stored (deleted, or never created); the versions seen stay, so they never go back."""
        self.exists, self.content, self.has_status, self.uid, self.resource_version = False, b"", False, "", ""

    def take(self, obj: Mapping[str, Any]) -> None:
        """Believe what the API shows of the object, versions never going back below the highest seen or
        written (rule 2): the one place stored versions are merged."""
        versions = (self.ledger_version, self.mapping_version)
        self.read(obj)
        self.ledger_version = max(self.ledger_version, versions[0])
        self.mapping_version = max(self.mapping_version, versions[1])

    async def reread(self, api: KubeApi, path: str) -> None:
        """What the API holds now (one attempt); versions never go back below what this operator wrote."""
        try:
            obj = await api.get(path, attempts=1)
        except NotFound:
            self.forget()
            return
        self.take(obj)

    def read(self, obj: Mapping[str, Any]) -> None:
        """Take what the API shows of the object (a LIST item, a GET answer or a watch event), as it is."""
        meta = _dict(obj.get("metadata"))
        spec = _dict(obj.get("spec"))
        status = _dict(obj.get("status"))
        self.exists = True
        self.uid = str(meta.get("uid") or self.uid)
        self.resource_version = str(meta.get("resourceVersion") or "")
        self.read_spec(spec)
        self.has_status = bool(status)
        self.ledger_version = self.guard_version = _int(status.get("ledgerVersion"))
        self.mapping_version = _int(status.get("mappingVersion"))
        self.fingerprint = str(status.get("mappingFingerprint") or "")
        self.content = semantic_content(status) if status else b""
        self.phase = str(status.get("phase") or "")
        conditions = status.get("conditions")
        self.conditions = [c for c in conditions if isinstance(c, dict)] if isinstance(conditions, list) else []


def newer(version: str, than: str) -> bool:
    """Whether resourceVersion ``version`` is later than ``than``: by number where both are numbers (etcd's
    revisions are), otherwise any difference counts as later."""
    if version.isdigit() and than.isdigit():
        return int(version) > int(than)
    return version != than


def stored_from(obj: Mapping[str, Any], now: float) -> Stored:
    stored = Stored(mapping_changed_at=now)
    stored.read(obj)
    return stored


def rejected_records(obj: Mapping[str, Any]) -> list[RejectedSlice]:
    """The refused slice regressions a stored ledger keeps (``status.rejectedSlices``); malformed ones skipped."""
    status = _dict(obj.get("status"))
    records = status.get("rejectedSlices")
    out = []
    for record in records if isinstance(records, list) else ():
        if not isinstance(record, dict):
            continue
        name, driver, pool = _str(record.get("name")), _str(record.get("driver")), _str(record.get("pool"))
        generation, rejected = record.get("generation"), record.get("rejectedGeneration")
        if name and driver and pool and type(generation) is int and type(rejected) is int:
            out.append(RejectedSlice(name, driver, pool, generation, rejected))
    return out


class StoredLedgers:
    """The mirror, node by node; ``mark`` marks nodes dirty (the runtime's), ``clock`` is the runtime's."""

    def __init__(self, clock: Callable[[], float], mark: Callable[[Iterable[str]], None]) -> None:
        self.clock = clock
        self.mark = mark
        self.by_node: dict[str, Stored] = {}
        self._listing: set[str] = set()  # uids of the ledgers' relist under way

    def __iter__(self) -> Iterator[str]:
        return iter(self.by_node)

    def __len__(self) -> int:
        return len(self.by_node)

    def of(self, node: str) -> Stored:
        """The node's entry, a new one (nothing stored) the first time."""
        stored = self.by_node.get(node)
        if stored is None:
            stored = self.by_node[node] = Stored(mapping_changed_at=self.clock())
        return stored

    async def read(self, api: KubeApi, path: str, seed: Callable[[str, list[RejectedSlice]], None]) -> None:
        """Rule 1: every ledger stored, read at start or on taking over (one page alive at a time), so versions
        continue from them and the first writes compare against what they hold; ``seed`` gets the refusals each
        keeps. What was known and is no longer listed was deleted since it was seen."""
        listed: set[str] = set()
        async for items, _ in api.list_pages(path, json.loads):
            for obj in items:
                name = self.load(obj)
                if name is not None:
                    listed.add(name)
                    seed(name, rejected_records(obj))
        for name, stored in list(self.existing()):
            if name not in listed:
                stored.forget()
        log.info("stored ledgers read", count=len(self))

    def load(self, obj: Mapping[str, Any]) -> str | None:
        """One ledger of the writer's LIST (at start, or at a takeover); its node's name."""
        name = _dict(obj.get("metadata")).get("name")
        if not isinstance(name, str) or not name:
            return None
        stored = self.by_node.get(name)
        if stored is None:
            self.by_node[name] = stored_from(obj, self.clock())
        else:
            stored.take(obj)
        return name

    def forget(self, node: str) -> None:
        """The Node is gone: its ledger goes with it (by ownerReference)."""
        self.by_node.pop(node, None)

    def frozen(self, node: str) -> bool:
        stored = self.by_node.get(node)
        return bool(stored and stored.frozen)

    def existing(self) -> Iterator[tuple[str, Stored]]:
        return ((name, stored) for name, stored in self.by_node.items() if stored.exists)

    # ----- watching.Observer: the ledgers' stream -----
    def listed_object(self, kind: str, uid: str) -> None:
        if kind == LEDGERS_KIND:
            self._listing.add(uid)

    def listing_done(self, kind: str) -> None:
        if kind != LEDGERS_KIND:
            return
        listed, self._listing = self._listing, set()
        for name, stored in self.by_node.items():
            if stored.exists and stored.uid and stored.uid not in listed:
                stored.forget()
                self.mark({name})

    def ledger_event(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        """One event of the ledgers' stream (a ``spec.frozen`` change, a deletion, a foreign status edit)."""
        meta = _dict(body.get("metadata"))
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            return
        uid = str(meta.get("uid") or "")
        rv = str(meta.get("resourceVersion") or "")
        stored = self.by_node.get(name)
        if event_type == "DELETED":
            if stored is not None and (not uid or not stored.uid or stored.uid == uid):
                stored.forget()
                self.mark({name})
            return
        if stored is None:
            stored = self.by_node[name] = Stored(mapping_changed_at=self.clock())
        same = stored.exists and stored.uid == uid
        if same and rv and stored.resource_version and not newer(rv, stored.resource_version):
            return  # our own write, or an event older than it
        status = _dict(body.get("status"))
        if same and _int(status.get("ledgerVersion")) == stored.guard_version and (
            (semantic_content(status) if status else b"") == stored.content
        ):
            stored.resource_version = rv
            if stored.read_spec(_dict(body.get("spec"))):
                self.mark({name})
            return
        # New, edited or rewritten behind the writer's back: take what is stored (versions never go back);
        # the next plan compares against it.
        stored.take(body)
        self.mark({name})
