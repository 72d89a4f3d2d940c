"""The operator's runtime: the incremental state, the dirty set, rebuild and freshness bookkeeping.

Rules:
1. Handlers only translate events into calls here; each call updates the state and marks the nodes it
   touches dirty. Nothing here writes to the API (the writer does).
2. Rebuild: every kind's initial LIST must be complete (``Bookmark.LISTED``) and every listed object
   processed before ``rebuilt`` is set; until then every ledger is Rebuilding and nothing acts on them.
3. A relist (after 410 Gone) forgets the objects of that kind that the new list no longer contains.
4. Malformed objects never raise out of here: they become problems in the ledgers of their nodes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from draledger.accounting.ledger import Flags
from draledger.accounting.release import GATE
from draledger.config import OperatorConfig
from draledger.metrics import Metrics
from draledger.selectors import parse_selector
from draledger.state import ClusterState, GenerationRegression
from draledger.views import read_claim, read_node, read_pod, read_slice
from draledger.watching import KINDS, StreamHealth

log = structlog.get_logger("draledger")


@dataclass
class Stored:
    """What the API holds for one node's ledger (read back at start, updated after each write)."""

    exists: bool = False
    ledger_version: int = 0
    mapping_version: int = 0
    fingerprint: str = ""
    content: str = ""  # deterministic serialization of the semantic content
    phase: str = ""
    conditions: list[dict[str, Any]] = field(default_factory=list)
    frozen: bool = False
    mapping_changed_at: float = 0.0
    uid: str = ""


class Runtime:
    def __init__(self, config: OperatorConfig, metrics: Metrics, clock: Callable[[], float]) -> None:
        self.config = config
        self.metrics = metrics
        self.clock = clock
        self.state = ClusterState()
        self.dirty: dict[str, float] = {}  # node -> when it first turned dirty (for write latency)
        self.wakeup = asyncio.Event()
        self.rebuilt = asyncio.Event()
        self.started_at = clock()
        self.rebuild_seconds: float | None = None
        self.stored: dict[str, Stored] = {}
        self.health = {kind: StreamHealth() for kind in KINDS}
        self._listed: dict[str, bool] = dict.fromkeys(KINDS, False)
        self._listing: dict[str, set[str]] = {kind: set() for kind in KINDS}  # uids of the current list
        self._pending: set[tuple[str, str]] = set()  # listed but not yet processed (kind, uid)
        self._uids: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}  # uid -> state key
        self._node_filter = parse_selector(config.node_selector)
        self.gated: set[tuple[str, str]] = set()  # pods that carry our scheduling gate
        self.stale_reason = ""
        self.backfill_disabled = ""  # why backfill stopped (the API server drops the field), once detected
        self.shape_seen = ""  # "v1.36" | "v1.37": what the server speaks, from pod statuses and slices

    # ----- dirtiness -----
    def mark(self, nodes: set[str]) -> None:
        if not nodes:
            return
        dirty = self.dirty
        now = None
        for node in nodes:
            if node and node not in dirty:
                if now is None:
                    now = self.clock()
                dirty[node] = now
        self.wakeup.set()

    def mark_all(self) -> None:
        self.mark(set(self.state.nodes) | set(self.stored))

    def flags(self, node: str) -> Flags:
        stored = self.stored.get(node)
        return Flags(
            rebuilding=not self.rebuilt.is_set(),
            frozen=self.config.frozen or bool(stored and stored.frozen),
            watch_stale=self.stale_reason,
            numa_attributes=self.config.numa_attributes,
            pod_status=self.pod_status_condition(),
        )

    def pod_status_condition(self) -> tuple[str, str, str]:
        if self.config.pod_status == "observe":
            return (
                "False",
                "Observe",
                "--pod-status=observe: missing pod statuses are reported, not written",
            )
        if self.backfill_disabled:
            return ("False", "ServerDropsField", self.backfill_disabled)
        return ("True", "Backfill", "missing status.nodeAllocatableResourceClaimStatuses are filled in")

    # ----- events -----
    def event(self, kind: str, event_type: str | None, body: Mapping[str, Any]) -> None:
        """One watch event of one of the four kinds; never raises."""
        meta = body.get("metadata")
        if not isinstance(meta, dict):
            meta = {}
        uid = meta.get("uid", "")
        if type(uid) is not str:
            uid = str(uid)
        try:
            if event_type == "DELETED":
                self._delete(kind, uid, body)
            else:
                self._upsert(kind, uid, body)
        except Exception:  # a reader bug must never stop the watch
            log.exception("event not applied", kind=kind, uid=uid, name=meta.get("name") if meta else None)
        finally:
            self.metrics.count_event(kind)
            self.health[kind].contact(self.clock())
            pending = self._pending
            if pending and (kind, uid) in pending:  # empty once rebuilt: no tuple built per event
                pending.discard((kind, uid))
                self._check_rebuilt()

    def _upsert(self, kind: str, uid: str, body: Mapping[str, Any]) -> None:
        state = self.state
        if kind == "pods":  # the most frequent kind first
            pod = read_pod(body)
            key = pod.key
            statuses = pod.claim_statuses
            if statuses:  # the last entry's shape, as a loop over them would leave it
                self.shape_seen = statuses[-1].shape
            if GATE in pod.scheduling_gates:
                self.gated.add(key)
                self.wakeup.set()
            elif self.gated:
                self.gated.discard(key)
            self._uids[kind][uid] = key
            self.mark(state.upsert_pod(pod))
        elif kind == "nodes":
            node = read_node(body)
            if not self._node_filter(node.labels):
                self.mark(state.delete_node(node.name))
                return
            self._uids[kind][uid] = node.name
            self.mark(state.upsert_node(node))
        elif kind == "resourceclaims":
            claim = read_claim(body)
            self._uids[kind][uid] = claim.key
            self.mark(state.upsert_claim(claim))
            if self.gated:  # a held pod may have been waiting for this claim (ClaimNotSeen, pinning, room)
                self.wakeup.set()
        else:
            name = meta.get("name") if isinstance(meta := body.get("metadata"), dict) else None
            view = read_slice(body, keyed=True, previous=state.slices.get(name) if isinstance(name, str) else None)
            if view.shape == "v1.37" and view.devices:
                self.shape_seen = self.shape_seen or "v1.37"
            try:
                self.mark(state.upsert_slice(view))
            except GenerationRegression as error:
                self.metrics.slice_regressions.inc()
                log.warning("slice generation regression rejected", slice=view.name, reason=str(error))
                return
            self._uids[kind][uid] = view.name

    def _delete(self, kind: str, uid: str, body: Mapping[str, Any]) -> None:
        key = self._uids[kind].pop(uid, None)
        if key is None:  # never seen (or seen under another uid): fall back to the name
            meta = body.get("metadata") or {}
            name, namespace = meta.get("name", ""), meta.get("namespace", "")
            key = (namespace, name) if kind in ("pods", "resourceclaims") else name
        self.mark(self._forget(kind, key))

    def _forget(self, kind: str, key: Any) -> set[str]:
        state = self.state
        if kind == "nodes":
            self.stored.pop(key, None)
            self.metrics.forget_node(key)
            return state.delete_node(key)
        if kind == "pods":
            self.gated.discard(key)
            return state.delete_pod(key)
        if kind == "resourceclaims":
            if self.gated:
                self.wakeup.set()
            return state.delete_claim(key)
        return state.delete_slice(key)

    # ----- the ledgers' own events (spec.frozen, deletion, foreign status edits) -----
    def ledger_event(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        name = (body.get("metadata") or {}).get("name", "")
        stored = self.stored.setdefault(name, Stored())
        if event_type == "DELETED":
            stored.exists = False
            stored.content = ""
            self.mark({name})
            return
        stored.exists = True
        stored.uid = (body.get("metadata") or {}).get("uid", stored.uid)
        frozen = bool((body.get("spec") or {}).get("frozen"))
        if frozen != stored.frozen:
            stored.frozen = frozen
            self.mark({name})

    # ----- watching.Observer -----
    def listed_object(self, kind: str, uid: str) -> None:
        if kind in self._listing:
            self._listing[kind].add(uid)
            if not self.rebuilt.is_set():
                self._pending.add((kind, uid))

    def listing_done(self, kind: str) -> None:
        if kind not in self._listing:
            return
        listed, self._listing[kind] = self._listing[kind], set()
        if self._listed[kind]:  # a relist: forget what vanished during the gap
            self.metrics.watch_restarts.labels(kind).inc()
            gone = [uid for uid in self._uids[kind] if uid not in listed]
            for uid in gone:
                self.mark(self._forget(kind, self._uids[kind].pop(uid)))
        self._listed[kind] = True
        self.health[kind].contact(self.clock())
        self._check_rebuilt()

    def contact(self, kind: str) -> None:
        if kind in self.health:
            self.health[kind].contact(self.clock())

    def broken(self, kind: str, reason: str) -> None:
        if kind in self.health:
            self.health[kind].broken(self.clock(), reason)
            log.warning("watch stream broken", kind=kind, reason=reason)

    def _check_rebuilt(self) -> None:
        if self.rebuilt.is_set() or not all(self._listed.values()) or self._pending:
            return
        self.rebuild_seconds = self.clock() - self.started_at
        self.metrics.rebuild_seconds.set(self.rebuild_seconds)
        log.info(
            "ledgers rebuilt",
            seconds=round(self.rebuild_seconds, 3),
            nodes=len(self.state.nodes),
            pods=len(self.state.pods),
            claims=len(self.state.claims),
            slices=len(self.state.slices),
        )
        self.rebuilt.set()
        self.mark_all()

    # ----- freshness -----
    def check_freshness(self) -> None:
        now = self.clock()
        reasons = [
            r for kind in KINDS if (r := self.health[kind].stale_reason(kind, now, self.config.freshness_window))
        ]
        reason = "; ".join(reasons)
        if reason != self.stale_reason:
            self.stale_reason = reason
            if reason:
                log.warning("ledgers stale: watch data older than the freshness window", reason=reason)
            else:
                log.info("watch streams recovered; ledgers fresh again")
            self.mark_all()
