"""The operator's runtime: the incremental state, the dirty set, rebuild and freshness bookkeeping.

Rules:
1. Handlers only translate events into calls here; each call updates the state and marks the nodes it
   touches dirty. Nothing here writes to the API (the writer does).
2. Rebuild: every kind's initial LIST must be complete (``Bookmark.LISTED``) and every listed object
   processed before ``rebuilt`` is set; until then every ledger is Rebuilding and nothing acts on them.
3. A relist (after 410 Gone) forgets the objects of that kind that the new list no longer contains (by uid:
   a name deleted and created again during the gap is the new object, and stays). It is under way from its
   first LIST request until the stream has ended it and every object it listed has been applied. The
   ledgers' stream is watched for its health here; what it says of the stored ledgers is the writer's
   (``stored``).
4. Malformed objects never raise out of here: they become problems in the ledgers of their nodes.
5. Flags that belong to other parts come from them: a ledger's freeze from what is stored (the writer's
   mirror), the pod-status backfill's condition from the backfill; ``flags`` takes both.
6. A ResourceSlice whose pool generation goes back is refused, and the refusal is kept per slice (and in
   the ledgers, which seed it again after a restart) until the driver publishes the generation again. A process
   that never saw the newer version (a restart) counts the stored one, as a recompute of the stored objects
   does, and keeps the refusal: the node stays Stale with GenerationRegression until the driver republishes.
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
   wakes the releaser, so that the pods held meanwhile are looked at again at once. A watch request that is
   answered is not yet contact: resumed from an expired resourceVersion, it is answered 200 and refused by its
   first event (410 Gone). It counts as renewing until its first event, or ``RECONNECT_GRACE`` with none.
8. A decision rests on a picture that holds every event the streams delivered before it: Kopf hands each
   event to a per-object worker and applies it later, so the streams count what they deliver and this runtime
   what it applies; the gate releaser waits (``applied_up_to``) until the events delivered before its pass are
   applied.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import structlog

from draledger.core.accounting.ledger import Flags, RejectedSlice
from draledger.core.releases import Release
from draledger.core.state import ClusterState, GenerationRegression
from draledger.core.views import SliceView, read_claim, read_node, read_pod, read_slice
from draledger.core.views.pods import GATE
from draledger.core.views.slices import DeviceMemo
from draledger.operator.config import OperatorConfig
from draledger.operator.metrics import Metrics
from draledger.operator.selectors import parse_selector
from draledger.operator.watching import KINDS, LEDGERS_KIND, StreamHealth

log = structlog.get_logger("draledger")
RECONNECT_GRACE = 0.25  # seconds: a shorter reconnection is an ordinary renewal of a watch request (rule 7)
class Runtime:
    def __init__(self, config: OperatorConfig, metrics: Metrics, clock: Callable[[], float]) -> None:
        self.config = config
        self.metrics = metrics
        self.clock = clock
        self.state = ClusterState()
        self.memo = DeviceMemo()  # republished slices keep their devices unread (views.slices, rule 4)
        self.dirty: dict[str, float] = {}  # node -> when it first turned dirty (for write latency)
        self.generations: dict[str, int] = {}  # node -> how many times it was marked (the releaser compares)
        self.wakeup = asyncio.Event()  # the writer's: something is dirty
        self.release_wakeup = asyncio.Event()  # the gate releaser's: a held pod may have become releasable
        # Events of each kind the streams delivered, and those applied here (rule 8): Kopf's workers apply them later.
        self.delivered_count: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.applied_count: dict[str, int] = dict.fromkeys(KINDS, 0)
        self._caught_up = asyncio.Event()
        self.rebuilt = asyncio.Event()
        self.started_at = clock()
        self.rebuild_seconds: float | None = None
        self.health = {kind: StreamHealth() for kind in (*KINDS, LEDGERS_KIND)}
        self._listed: dict[str, bool] = dict.fromkeys(KINDS, False)
        self._listed_once: set[str] = set()  # kinds (ledgers too) whose first listing is complete
        self._listing: dict[str, set[str]] = {kind: set() for kind in KINDS}  # uids of a listing under way
        self._relisting: set[str] = set()  # kinds whose relist (after a broken watch) is under way
        self._pending: set[tuple[str, str]] = set()  # listed but not yet processed (kind, uid)
        self._pending_of: dict[str, int] = dict.fromkeys(KINDS, 0)  # how many of ``_pending`` per kind
        self._listed_all: set[str] = set()  # kinds whose relist has ended in the stream: over once processed
        self._uids: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}  # uid -> state key
        self._node_filter = parse_selector(config.node_selector)
        self.outside: set[str] = set()  # nodes seen but not selected (outside the canary): not ours
        self.stale_reason = ""
        self.release_why = ""  # why the state follows its release (operator.releasing)
        self.reconnected = asyncio.Event()  # a broken stream made contact again: the release is read again
        self.rejected: dict[str, tuple[RejectedSlice, frozenset[str]]] = {}  # slice -> refusal, its nodes
        self.floors: dict[str, RejectedSlice] = {}  # refusals read back from the stored ledgers
        self.primed: dict[str, str] = {}  # kind -> resourceVersion of our own LIST (operator.priming)
        self.priming_done = asyncio.Event()

    # ----- the release in force (operator.releasing) -----
    @property
    def release(self) -> Release:
        return self.state.release

    def set_release(self, release: Release, why: str) -> bool:
        """Follow ``release``'s rules from now on; whether that changed anything (every node is then dirty)."""
        changed = release != self.state.release or not self.release_why
        if changed:
            log.info("accounting rules", release=release, why=why, before=self.state.release)
        self.release_why = why
        self.metrics.release = release  # draledger_build_info{release}
        self.mark(self.state.set_release(release))
        return changed and bool(self.state.nodes)

    # ----- dirtiness -----
    def mark(self, nodes: Iterable[str]) -> None:
        """The nodes' inputs changed: each is dirty for the writer and one generation newer for the releaser
        (a ledger computed at an older generation is not the node's picture now)."""
        dirty, generations = self.dirty, self.generations
        now = None
        marked = False
        for node in nodes:
            if not node:
                continue
            marked = True
            generations[node] = generations.get(node, 0) + 1
            if node not in dirty:
                if now is None:
                    now = self.clock()
                dirty[node] = now
        if marked:
            self.wakeup.set()

    def mark_all(self) -> None:
        self.mark(self.state.nodes)

    def flags(self, node: str, frozen: bool = False, pod_status: tuple[str, str, str] | None = None) -> Flags:
        """The node's flags: ``frozen`` (its stored ledger's ``spec.frozen``) and ``pod_status`` (the backfill's
        condition) come from their owners (rule 5)."""
        rejected = tuple(
            sorted((r for r, nodes in self.rejected.values() if node in nodes), key=lambda r: r.name)
        ) if self.rejected else ()
        return Flags(
            rebuilding=not self.rebuilt.is_set(),
            frozen=self.config.frozen or frozen,
            watch_stale=self.stale_reason,
            numa_attributes=self.config.numa_attributes,
            pod_status=pod_status,
            rejected_slices=rejected,
        )

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
            if pending and (kind, uid) in pending:  # empty but during listings: no tuple built per event
                pending.discard((kind, uid))
                self._pending_of[kind] -= 1
                self._check_rebuilt()
                self._check_relisted(kind)

    def _upsert(self, kind: str, uid: str, body: Mapping[str, Any]) -> None:
        state = self.state
        if kind == "pods":  # the most frequent kind first
            pod = read_pod(body)
            key = pod.key
            if GATE in pod.scheduling_gates:
                self.release_wakeup.set()  # a pod for the release to look at
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
            if state.held:  # a held pod may have been waiting for this claim (ClaimNotSeen, pinning, room)
                self.release_wakeup.set()
        else:
            view = read_slice(body, self.memo, self.config.numa_attributes)  # only the attributes zones use
            self._upsert_slice(view)
            self._uids[kind][uid] = view.name

    def _upsert_slice(self, view: SliceView) -> None:
        state = self.state
        floor = self.floors.get(view.name)
        if floor is not None and (floor.driver, floor.pool) == view.pool_key and view.generation < floor.generation:
            # Refused before a restart: the newer version it was refused against is gone with that process, so
            # the figures are those of the stored object (what a recompute of the stored objects gives), and the
            # refusal still stands as the node's phase demands (rule 6).
            self.mark(state.upsert_slice(view))
            self._refuse(view, floor.generation)
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
            self.metrics.forget_node(key)
            return state.delete_node(key)
        if kind == "pods":
            return state.delete_pod(key)
        if kind == "resourceclaims":
            if state.held:
                self.release_wakeup.set()
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

    # ----- what has been applied (rule 8) -----
    def delivered(self, kind: str) -> None:
        """A stream handed an event of ``kind`` to Kopf's queue (``watching``)."""
        if kind in self.delivered_count:
            self.delivered_count[kind] += 1

    def applied(self, kind: str) -> None:
        """Kopf's worker handed that event to ``event`` (``handlers``; priming's objects are not counted)."""
        self.applied_count[kind] = self.applied_count.get(kind, 0) + 1
        self._caught_up.set()

    def behind(self, target: Mapping[str, int]) -> bool:
        """Whether some event delivered up to ``target`` (a copy of ``delivered_count``) is not applied yet."""
        applied = self.applied_count
        return any(applied.get(kind, 0) < count for kind, count in target.items())

    async def applied_up_to(self, target: Mapping[str, int], within: float) -> bool:
        """Until every event delivered up to ``target`` is applied (rule 8); False after ``within`` seconds,
        when the counts are taken as even (an event Kopf never handed over must not hold releases for ever)."""
        loop = asyncio.get_running_loop()  # a real wait: the deadline is the loop's, whatever clock the state reads
        deadline = loop.time() + within
        while self.behind(target):
            left = deadline - loop.time()
            if left <= 0:
                log.warning("events delivered but not applied; deciding without them",
                            behind={k: c - self.applied_count.get(k, 0) for k, c in target.items()
                                    if self.applied_count.get(k, 0) < c})
                for kind, count in target.items():
                    self.applied_count[kind] = max(self.applied_count.get(kind, 0), count)
                return False
            self._caught_up.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await self._caught_up.wait()
        return True

    # ----- watching.Observer -----
    def listing_started(self, kind: str) -> None:
        """A LIST request for ``kind``: after its first listing, a relist is under way (rule 3) from now on."""
        if kind in self._listed_once:
            self._relisting.add(kind)

    def listed_object(self, kind: str, uid: str) -> None:
        if kind in self._listed_once:
            self._relisting.add(kind)
        if kind in self._listing:
            self._listing[kind].add(uid)
            if (kind, uid) not in self._pending:  # Kopf's workers apply it later than the stream shows it
                self._pending.add((kind, uid))
                self._pending_of[kind] += 1

    def listing_done(self, kind: str) -> None:
        if kind not in self.health:
            return
        self._listed_all.add(kind)
        self._check_relisted(kind)
        self._listed_once.add(kind)
        self.health[kind].contact(self.clock())
        if kind not in self._listing:  # the ledgers: their stored set is the writer's (rule 3)
            return
        listed, self._listing[kind] = self._listing[kind], set()
        if self._listed[kind]:  # a relist: forget what vanished during the gap
            self.metrics.watch_restarts.labels(kind).inc()
            self.forget_unlisted(kind, listed)
        self._listed[kind] = True
        self._check_rebuilt()

    def _check_relisted(self, kind: str) -> None:
        """A relist is over once the stream has ended it and every object it listed has been applied (rule 3):
        Kopf's workers apply listed objects after the stream's end of the listing."""
        if kind not in self._listed_all or self._pending_of.get(kind):
            return
        self._listed_all.discard(kind)
        if kind in self._relisting:
            self._relisting.discard(kind)
            if self.state.held:
                self.release_wakeup.set()

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
            if self.state.held and (health.broken_since is not None or health.reconnecting
                                    or health.answered_at is not None):
                self.release_wakeup.set()  # releases held while this stream was down are tried again now
            if health.broken_since is not None:
                self.reconnected.set()  # the API server may have been upgraded meanwhile (operator.releasing)
            health.contact(now)

    def answered(self, kind: str) -> None:
        """Its watch request was answered; until its first event (or ``RECONNECT_GRACE``) it is not trusted."""
        if kind in self.health:
            self.contact(kind)
            self.health[kind].answered(self.clock())

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

    def _stream_issues(self) -> list[tuple[str, bool]]:
        """Each stream that is not healthy this moment: why, and whether it is only being renewed (reconnecting
        for less than ``RECONNECT_GRACE``, rule 7)."""
        now = self.clock()
        window = self.config.freshness_window
        issues = []
        for kind in (*KINDS, LEDGERS_KIND):
            health = self.health[kind]
            since = health.connecting_since
            if kind in self._relisting:
                issues.append((f"the {kind} watch is relisting", False))
            elif health.broken_since is not None:
                issues.append((f"the {kind} watch is broken ({health.broken_reason})", False))
            elif since is not None:
                issues.append((f"the {kind} watch is reconnecting", now - since < RECONNECT_GRACE))
            elif health.answered_at is not None and now - health.answered_at < RECONNECT_GRACE:
                issues.append((f"the {kind} watch is resuming", True))  # its first event may be a 410
            elif health.last_contact is None or now - health.last_contact > window:
                issues.append((f"no recent contact with the {kind} watch", False))
        return issues

    def renewing(self) -> bool:
        """Whether the only streams down are being renewed, each for less than ``RECONNECT_GRACE`` (rule 7)."""
        issues = self._stream_issues()
        return bool(issues) and all(renewal for _, renewal in issues)

    def streams_unhealthy(self) -> str:
        """Why a decision made now could rest on old data ("" when every stream is healthy this moment)."""
        return "; ".join(reason for reason, _ in self._stream_issues())
