"""The operator's runtime: what the four watched kinds say, applied to the state, and what the shell makes of it.

Rules:
1. Handlers only translate events into ``event``; each applies the object to the state (``ClusterState.apply``,
   the one entry from raw objects, shared with ``audit``) and marks the nodes it touched dirty, one generation
   newer (``mark``). Nothing here writes to the API (the writer does).
2. Rebuild: every kind's initial LIST must be complete (``Bookmark.LISTED``) and every listed object applied before
   ``rebuilt`` is set; until then every ledger is Rebuilding and nothing acts on them.
3. A relist (after 410 Gone) forgets the objects of that kind that the new list no longer contains (by uid: a name
   deleted and created again during the gap is the new object, and stays). It is under way from its first LIST
   request until the stream has ended it and every object it listed has been applied. The ledgers' stream is
   watched for its health here; what it says of the stored ledgers is the writer's (``stored``).
4. Malformed objects never raise out of here: they become problems in the ledgers of their nodes.
5. Flags that belong to other parts come from them: a ledger's freeze from what is stored (the writer's mirror),
   the pod-status backfill's condition from the backfill, refused slices from ``refusals``; ``flags`` takes them.
6. Nodes outside ``--node-selector`` are not admitted (``outside``): their ledgers are not this operator's.
7. Stream health is ``health``'s; what the shell does with it is here: a stream that makes contact again after
   being held against wakes the releaser (the pods held meanwhile are looked at again at once), and after being
   broken has the release read again (``reconnected``: the API server may have been upgraded).
8. A decision rests on a picture that holds every event the streams delivered before it: Kopf hands each event to
   a per-object worker and applies it later, so the streams count what they deliver (``delivered``) and this
   runtime what it applies (``applied``); the gate releaser waits (``applied_up_to``) until the events delivered
   before its pass are applied.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

import structlog

from draledger.core.accounting.ledger import Flags, RejectedSlice
from draledger.core.keys import NodeName, PodKey
from draledger.core.releases import Release
from draledger.core.state import KINDS, Applied, ClusterState
from draledger.core.views import NodeView, PodView
from draledger.core.views.pods import GATE
from draledger.core.views.slices import DeviceMemo
from draledger.operator.config import OperatorConfig
from draledger.operator.health import Streams
from draledger.operator.metrics import Metrics
from draledger.operator.refusals import Refusals
from draledger.operator.selectors import parse_selector
from draledger.operator.watching import LEDGERS_KIND

__all__ = ["KINDS", "Runtime"]

log = structlog.get_logger("draledger")


class Runtime:
    def __init__(self, config: OperatorConfig, metrics: Metrics, clock: Callable[[], float]) -> None:
        self.config = config
        self.metrics = metrics
        self.clock = clock
        self.state = ClusterState(attributes=config.numa_attributes)
        self.memo = DeviceMemo()  # republished slices keep their devices unread (views.slices, rule 4)
        self.dirty: dict[str, float] = {}  # node -> when it first turned dirty (for write latency)
        self.generations: dict[str, int] = {}  # node -> how many times it was marked (the releaser compares)
        self.wakeup = asyncio.Event()  # the writer's: something is dirty
        self.release_wakeup = asyncio.Event()  # the gate releaser's: a held pod may have become releasable
        # The releaser's: a pod event without the gate (deleted, or ungated by another hand), whose pod it may have
        # counted as held (operator.gating, rule 6).
        self.ungated: Callable[[PodKey], None] = lambda key: None
        # Events of each kind the streams delivered, and those applied here (rule 8): Kopf's workers apply them later.
        self.delivered_count: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.applied_count: dict[str, int] = dict.fromkeys(KINDS, 0)
        self._caught_up = asyncio.Event()
        self.rebuilt = asyncio.Event()
        self.started_at = clock()
        self.rebuild_seconds: float | None = None
        self.health = Streams((*KINDS, LEDGERS_KIND))
        self.refusals = Refusals(self.state.pool_nodes)
        self._listed: dict[str, bool] = dict.fromkeys(KINDS, False)
        self._listed_once: set[str] = set()  # kinds (ledgers too) whose first listing is complete
        self._listing: dict[str, set[str]] = {kind: set() for kind in KINDS}  # uids of a listing under way
        self._pending: set[tuple[str, str]] = set()  # listed but not yet processed (kind, uid)
        self._pending_of: dict[str, int] = dict.fromkeys(KINDS, 0)  # how many of ``_pending`` per kind
        self._listed_all: set[str] = set()  # kinds whose relist has ended in the stream: over once processed
        self._uids: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}  # uid -> state key
        self._node_filter = parse_selector(config.node_selector)
        self.outside: set[str] = set()  # nodes seen but not selected (outside the canary): not ours (rule 6)
        self.not_ours = Outside(self)  # those, and with a selector the nodes never seen (the releaser asks)
        self.stale_reason = ""
        self.release_why = ""  # why the state follows its release (operator.releasing)
        self.reconnected = asyncio.Event()  # a broken stream made contact again: the release is read again
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
        return Flags(
            rebuilding=not self.rebuilt.is_set(),
            frozen=self.config.frozen or frozen,
            watch_stale=self.stale_reason,
            pod_status=pod_status,
            rejected_slices=self.refusals.of(NodeName(node)) if self.refusals.rejected else (),
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
                key = self._uids[kind].pop(uid, None)
                if key is None:  # never seen (or seen under another uid): by the body's name
                    self._applied(kind, self.state.apply(kind, event_type, body, self.memo))
                else:
                    self._applied(kind, self.state.delete(kind, key, self.memo))
            else:
                applied = self.state.apply(kind, event_type, body, self.memo, self._admit)
                if not applied.outside:
                    self._uids[kind][uid] = applied.key
                self._applied(kind, applied)
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

    def _admit(self, node: NodeView) -> bool:
        """Rule 6."""
        return self._node_filter(node.labels)

    def _applied(self, kind: str, applied: Applied) -> None:
        """What the shell makes of an object applied: marks, wake-ups, refusals, the nodes outside."""
        self.mark(applied.dirty)
        view = applied.view
        if kind == "pods":
            if isinstance(view, PodView) and GATE in view.scheduling_gates:
                self.release_wakeup.set()  # a pod for the release to look at
            else:
                self.ungated(cast(PodKey, applied.key))
        elif kind == "resourceclaims":
            if self.state.held:  # a held pod may have been waiting for this claim (ClaimNotSeen, pinning, room)
                self.release_wakeup.set()
        elif kind == "nodes":
            name = str(applied.key)
            if applied.outside:
                self.outside.add(name)
            else:
                self.outside.discard(name)
                if view is None:
                    self.metrics.forget_node(name)
        elif view is not None:
            nodes, new = self.refusals.applied(applied)
            if new:
                self.metrics.slice_regressions.inc()
            self.mark(nodes)
        else:
            self.mark(self.refusals.forget(str(applied.key)))

    def seed_refusals(self, node: str, records: Iterable[RejectedSlice]) -> None:
        """Refusals read back from a stored ledger: the slice stays refused below its generation."""
        self.refusals.seed(NodeName(node), records)

    def forget_node(self, name: str) -> None:
        """The API says the Node is gone (the writer checked before creating its ledger): drop it now, rather
        than when the nodes watch says so."""
        for uid, key in list(self._uids["nodes"].items()):
            if key == name:
                del self._uids["nodes"][uid]
        self._applied("nodes", self.state.delete("nodes", name))

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
            self.health.relisting.add(kind)

    def listed_object(self, kind: str, uid: str) -> None:
        if kind in self._listed_once:
            self.health.relisting.add(kind)
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
        if kind in self.health.relisting:
            self.health.relisting.discard(kind)
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
                    self._applied(kind, self.state.delete(kind, key, self.memo))

    async def resume_from(self, kind: str) -> str | None:
        """The resourceVersion Kopf's watch of ``kind`` starts from instead of its first LIST (taken once); for
        the four kinds, once the priming is over (Kopf runs meanwhile: its webhook must gate new pods)."""
        if kind in self._listed:
            await self.priming_done.wait()
        return self.primed.pop(kind, None)

    def contact(self, kind: str) -> None:
        if kind in self.health:
            health, now = self.health[kind], self.clock()
            if self.state.held and health.down:
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

    # ----- freshness and health (rule 7) -----
    def check_freshness(self) -> None:
        reason = self.health.stale(KINDS, self.clock(), self.config.freshness_window)
        if reason != self.stale_reason:
            self.stale_reason = reason
            if reason:
                log.warning("ledgers stale: watch data older than the freshness window", reason=reason)
            else:
                log.info("watch streams recovered; ledgers fresh again")
            self.mark_all()

    def renewing(self) -> bool:
        """Whether the only streams down are being renewed: reconnecting for less than ``RENEWAL_PATIENCE``, or
        resuming for less than ``RECONNECT_GRACE`` (health, rule 3)."""
        issues = self.health.issues(self.clock(), self.config.freshness_window)
        return bool(issues) and all(renewal for _, renewal in issues)

    def streams_unhealthy(self) -> str:
        """Why a decision made now could rest on old data ("" when every stream is healthy this moment)."""
        return "; ".join(reason for reason, _ in self.health.issues(self.clock(), self.config.freshness_window))


class Outside:
    """The nodes that are not this operator's: seen outside its ``--node-selector``, or, with a selector, not
    seen at all (the API server filters the nodes watch by the selector, so a node of ours is always seen once
    the rebuild is done; one it never delivers is outside, or does not exist and takes no pod)."""

    __slots__ = ("runtime",)

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def __contains__(self, node: object) -> bool:
        runtime = self.runtime
        return node in runtime.outside or (bool(runtime.config.node_selector) and node not in runtime.state.nodes)
