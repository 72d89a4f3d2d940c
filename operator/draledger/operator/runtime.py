"""The operator's runtime: the incremental state, the dirty set, rebuild and freshness bookkeeping.

Rules:
1. Handlers only translate events into calls here; each call updates the state and marks the nodes it
   touches dirty. Nothing here writes to the API (the writer does).
2. Rebuild: every kind's initial LIST must be complete (``Bookmark.LISTED``) and every listed object
   processed before ``rebuilt`` is set; until then every ledger is Rebuilding and nothing acts on them.
3. A relist (after 410 Gone) forgets the objects of that kind that the new list no longer contains (by uid:
   a name deleted and created again during the gap is the new object, and stays); a relist of the ledgers
   forgets the stored ledgers it no longer contains, so they are created again.
4. Malformed objects never raise out of here: they become problems in the ledgers of their nodes.
5. What is stored is read back: every event of a ledger updates what the writer believes the API holds
   (versions, content), so a ledger deleted or edited behind the operator's back is written again. The
   object a status write returns is read back too (its ``spec``: a freeze or resume stored just before the
   write shows there, and its own event, older than the write, is skipped).
6. A ResourceSlice whose pool generation goes back is refused, and the refusal is kept per slice (and in
   the ledgers, which seed it again after a restart) until the driver publishes the generation again.
7. Stream health is judged now: ``streams_unhealthy`` names any watch that is broken, relisting or
   reconnecting this moment (its stream ended and no new request has been answered yet: Kopf retries a
   failing one inside a single call, and an attempt answered with an error breaks the stream at once,
   ``watching``), or silent for the freshness window; the gate release asks it before every pass. Even an
   ordinary renewal of a watch request (every ``--watch-timeout``) holds releases for its few milliseconds:
   a change made while a stream is down arrives only with the next request, and a decision taken meanwhile
   would rest on a picture that lacks it (the fault suite met it: a ledger frozen as its stream was cut, the
   pod released 0.1 s later). Such a renewal is quiet (``renewing``): the release pass waits for it without
   deciding anything, so no pod gets an Event for it; a reconnection that lasts ``RECONNECT_GRACE`` is no
   renewal, and holds pods as ``WatchUnhealthy``. A stream that makes contact again after being held against
   wakes the writer, so that the pods held meanwhile are looked at again at once.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from draledger.core.accounting.ledger import Flags, RejectedSlice
from draledger.core.accounting.release import GATE
from draledger.core.state import ClusterState, GenerationRegression
from draledger.core.views import SliceView, read_claim, read_node, read_pod, read_slice
from draledger.core.views.slices import DeviceMemo
from draledger.operator.config import OperatorConfig
from draledger.operator.metrics import Metrics
from draledger.operator.selectors import parse_selector
from draledger.operator.watching import KINDS, LEDGERS_KIND, StreamHealth

log = structlog.get_logger("draledger")
RECONNECT_GRACE = 0.25  # seconds: a shorter reconnection is an ordinary renewal of a watch request (rule 7)
VOLATILE = ("observedTime", "ledgerVersion", "mappingVersion")


def semantic_content(status: Mapping[str, Any]) -> str:
    """The status without versions and timestamps, serialized deterministically."""
    content = {k: v for k, v in status.items() if k not in VOLATILE}
    content["conditions"] = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"}
        for c in status.get("conditions") or []
        if isinstance(c, dict)
    ]
    return json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)


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
    content: str = ""  # deterministic serialization of the semantic content
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

    def read(self, obj: Mapping[str, Any]) -> None:
        """Take what the API shows of the object (a LIST item, a GET answer or a watch event)."""
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
        self.content = semantic_content(status) if status else ""
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


class Runtime:
    def __init__(self, config: OperatorConfig, metrics: Metrics, clock: Callable[[], float]) -> None:
        self.config = config
        self.metrics = metrics
        self.clock = clock
        self.state = ClusterState()
        self.memo = DeviceMemo()  # republished slices keep their devices unread (views.slices, rule 4)
        self.dirty: dict[str, float] = {}  # node -> when it first turned dirty (for write latency)
        self.touched: set[str] = set()  # nodes marked since the gate releaser last looked (it drains it)
        self.wakeup = asyncio.Event()
        self.rebuilt = asyncio.Event()
        self.started_at = clock()
        self.rebuild_seconds: float | None = None
        self.stored: dict[str, Stored] = {}
        self.health = {kind: StreamHealth() for kind in (*KINDS, LEDGERS_KIND)}
        self._listed: dict[str, bool] = dict.fromkeys(KINDS, False)
        self._listed_once: set[str] = set()  # kinds (ledgers too) whose first listing is complete
        self._listing: dict[str, set[str]] = {kind: set() for kind in (*KINDS, LEDGERS_KIND)}  # uids
        self._relisting: set[str] = set()  # kinds whose relist (after a broken watch) is under way
        self._pending: set[tuple[str, str]] = set()  # listed but not yet processed (kind, uid)
        self._uids: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}  # uid -> state key
        self._node_filter = parse_selector(config.node_selector)
        self.outside: set[str] = set()  # nodes seen but not selected (outside the canary): not ours
        self.gated: set[tuple[str, str]] = set()  # pods that carry our scheduling gate
        self.stale_reason = ""
        self.backfill_disabled = ""  # why backfill stopped (the API server drops the field), once detected
        self.shape_seen = ""  # "v1.36" | "v1.37": what the server speaks, from pod statuses and slices
        self.rejected: dict[str, tuple[RejectedSlice, frozenset[str]]] = {}  # slice -> refusal, its nodes
        self.floors: dict[str, RejectedSlice] = {}  # refusals read back from the stored ledgers
        self.primed: dict[str, str] = {}  # kind -> resourceVersion of our own LIST (operator.priming)
        self.priming_done = asyncio.Event()

    # ----- dirtiness -----
    def mark(self, nodes: Iterable[str]) -> None:
        dirty, touched = self.dirty, self.touched
        now = None
        marked = False
        for node in nodes:
            if not node:
                continue
            marked = True
            touched.add(node)
            if node not in dirty:
                if now is None:
                    now = self.clock()
                dirty[node] = now
        if marked:
            self.wakeup.set()

    def mark_all(self) -> None:
        self.mark(set(self.state.nodes) | set(self.stored))

    def flags(self, node: str) -> Flags:
        stored = self.stored.get(node)
        rejected = tuple(
            sorted((r for r, nodes in self.rejected.values() if node in nodes), key=lambda r: r.name)
        ) if self.rejected else ()
        return Flags(
            rebuilding=not self.rebuilt.is_set(),
            frozen=self.config.frozen or bool(stored and stored.frozen),
            watch_stale=self.stale_reason,
            numa_attributes=self.config.numa_attributes,
            pod_status=self.pod_status_condition(),
            rejected_slices=rejected,
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
                if self.shape_seen == "v1.37" and state.api != "v1.37":
                    self.mark(state.set_api("v1.37"))
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
                self.outside.add(node.name)
                self.mark(state.delete_node(node.name))
                return
            self.outside.discard(node.name)
            self._uids[kind][uid] = node.name
            self.mark(state.upsert_node(node))
        elif kind == "resourceclaims":
            claim = read_claim(body)
            self._uids[kind][uid] = claim.key
            self.mark(state.upsert_claim(claim))
            if self.gated:  # a held pod may have been waiting for this claim (ClaimNotSeen, pinning, room)
                self.wakeup.set()
        else:
            view = read_slice(body, self.memo)
            if view.shape == "v1.37" and view.devices:
                self.shape_seen = self.shape_seen or "v1.37"
            if self.shape_seen == "v1.37" and state.api != "v1.37":  # the server's rules, once it shows them
                self.mark(state.set_api("v1.37"))
            self._upsert_slice(view)
            self._uids[kind][uid] = view.name

    def _upsert_slice(self, view: SliceView) -> None:
        state = self.state
        floor = self.floors.get(view.name)
        if floor is not None and (floor.driver, floor.pool) == view.pool_key and view.generation < floor.generation:
            self._refuse(view, floor.generation)  # refused before a restart: still refused
            return
        self.floors.pop(view.name, None)
        try:
            dirty = state.upsert_slice(view)
        except GenerationRegression as error:
            old = state.slices[view.name]
            self._refuse(view, old.generation)
            log.warning("slice generation regression rejected", slice=view.name, reason=str(error))
            return
        self.mark(dirty)
        self._accept(view.name)

    def _refuse(self, view: SliceView, generation: int) -> None:
        record = RejectedSlice(view.name, view.driver, view.pool, generation, view.generation)
        before = self.rejected.get(view.name)
        if before is not None and before[0] == record:
            return
        nodes = {view.node_name} if view.node_name else set()
        nodes |= self.state.pool_nodes(view.pool_key)
        if before is not None:
            nodes |= before[1]
        self.rejected[view.name] = (record, frozenset(nodes))
        self.metrics.slice_regressions.inc()
        self.mark(nodes)

    def _accept(self, name: str) -> None:
        """The slice is current again: its refusal, if any, goes."""
        before = self.rejected.pop(name, None)
        if before is not None:
            self.mark(before[1])

    def seed_refusals(self, node: str, records: Iterable[RejectedSlice]) -> None:
        """Refusals read back from a stored ledger: the slice stays refused below its generation."""
        for record in records:
            self.floors[record.name] = record
            before = self.rejected.get(record.name)
            nodes = (before[1] if before else frozenset()) | {node}
            self.rejected[record.name] = (record, nodes)

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
            self.outside.discard(key)
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
        self.floors.pop(key, None)
        self.memo.forget(key)
        self._accept(key)
        return state.delete_slice(key)

    def forget_node(self, name: str) -> None:
        """The API says the Node is gone (the writer checked before creating its ledger): drop it now, rather
        than when the nodes watch says so."""
        for uid, key in list(self._uids["nodes"].items()):
            if key == name:
                del self._uids["nodes"][uid]
        self.mark(self._forget("nodes", name))

    # ----- the ledgers' own events (spec.frozen, deletion, foreign status edits) -----
    def ledger_event(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        meta = _dict(body.get("metadata"))
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            return
        uid = str(meta.get("uid") or "")
        rv = str(meta.get("resourceVersion") or "")
        self.health[LEDGERS_KIND].contact(self.clock())
        stored = self.stored.get(name)
        if event_type == "DELETED":
            if stored is not None and (not uid or not stored.uid or stored.uid == uid):
                stored.exists, stored.content, stored.has_status, stored.uid = False, "", False, ""
                stored.resource_version = ""
                self.mark({name})
            return
        if stored is None:
            stored = self.stored[name] = Stored(mapping_changed_at=self.clock())
        same = stored.exists and stored.uid == uid
        if same and rv and stored.resource_version and not newer(rv, stored.resource_version):
            return  # our own write, or an event older than it
        status = _dict(body.get("status"))
        if same and _int(status.get("ledgerVersion")) == stored.guard_version and (
            (semantic_content(status) if status else "") == stored.content
        ):
            stored.resource_version = rv
            if stored.read_spec(_dict(body.get("spec"))):
                self.mark({name})
            return
        # New, edited or rewritten behind the writer's back: take what is stored (versions never go back);
        # the next plan compares against it.
        versions = (stored.ledger_version, stored.mapping_version)
        mapping_changed_at = stored.mapping_changed_at
        stored.read(body)
        stored.ledger_version = max(stored.ledger_version, versions[0])
        stored.mapping_version = max(stored.mapping_version, versions[1])
        stored.mapping_changed_at = mapping_changed_at
        self.mark({name})

    # ----- watching.Observer -----
    def listed_object(self, kind: str, uid: str) -> None:
        if kind in self._listing:
            self._listing[kind].add(uid)
            if kind in self._listed_once:
                self._relisting.add(kind)
            if kind in self._listed and not self.rebuilt.is_set():
                self._pending.add((kind, uid))

    def listing_done(self, kind: str) -> None:
        if kind not in self._listing:
            return
        listed, self._listing[kind] = self._listing[kind], set()
        self._relisting.discard(kind)
        self._listed_once.add(kind)
        self.health[kind].contact(self.clock())
        if kind == LEDGERS_KIND:  # reconcile what the writer believes is stored
            for name, stored in self.stored.items():
                if stored.exists and stored.uid and stored.uid not in listed:
                    stored.exists, stored.content, stored.has_status, stored.uid = False, "", False, ""
                    self.mark({name})
            return
        if self._listed[kind]:  # a relist: forget what vanished during the gap
            self.metrics.watch_restarts.labels(kind).inc()
            self.forget_unlisted(kind, listed)
        self._listed[kind] = True
        self._check_rebuilt()

    def forget_unlisted(self, kind: str, listed: set[str]) -> None:
        """A complete list of ``kind`` holds the uids ``listed``: forget every other object of that kind."""
        uids = self._uids[kind]
        gone = [uid for uid in uids if uid not in listed]
        if gone:  # a name deleted and created again during the gap lives on under its new uid: keep it
            kept = {uids[uid] for uid in listed if uid in uids}
            for uid in gone:
                key = uids.pop(uid)
                if key not in kept:
                    self.mark(self._forget(kind, key))

    async def resume_from(self, kind: str) -> str | None:
        """The resourceVersion Kopf's watch of ``kind`` starts from instead of its first LIST (taken once); for
        the four kinds, once the priming is over (Kopf runs meanwhile: its webhook must gate new pods)."""
        if kind in self._listed:
            await self.priming_done.wait()
        return self.primed.pop(kind, None)

    def contact(self, kind: str) -> None:
        if kind in self.health:
            health, now = self.health[kind], self.clock()
            if self.gated and (health.broken_since is not None or health.reconnecting):
                self.wakeup.set()  # releases held while this stream was down are tried again now
            health.contact(now)

    def connecting(self, kind: str) -> None:
        if kind in self.health:
            self.health[kind].connecting(self.clock())

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

    def renewing(self) -> bool:
        """Whether the only streams down are being renewed, each for less than ``RECONNECT_GRACE`` (rule 7)."""
        now = self.clock()
        window = self.config.freshness_window
        renewing = False
        for kind in (*KINDS, LEDGERS_KIND):
            health = self.health[kind]
            if kind in self._relisting or health.broken_since is not None:
                return False
            since = health.connecting_since
            if since is not None:
                if now - since >= RECONNECT_GRACE:
                    return False
                renewing = True
            elif health.last_contact is None or now - health.last_contact > window:
                return False
        return renewing

    def streams_unhealthy(self) -> str:
        """Why a decision made now could rest on old data ("" when every stream is healthy this moment)."""
        now = self.clock()
        window = self.config.freshness_window
        reasons = []
        for kind in (*KINDS, LEDGERS_KIND):
            health = self.health[kind]
            if kind in self._relisting:
                reasons.append(f"the {kind} watch is relisting")
            elif health.broken_since is not None:
                reasons.append(f"the {kind} watch is broken ({health.broken_reason})")
            elif health.reconnecting:
                reasons.append(f"the {kind} watch is reconnecting")
            elif health.last_contact is None or now - health.last_contact > window:
                reasons.append(f"no recent contact with the {kind} watch")
        return "; ".join(reasons)
