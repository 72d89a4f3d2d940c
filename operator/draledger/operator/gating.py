"""Gating: the release of ``draledger.dev/ledger-ready`` (admission adds it: ``admitting``).

The Releaser is a task of its own. It decides from what is stored (core.accounting.release): a node vouches
for a pod only when its ledger is Ready both as computed now and as stored, and a pinned pod only where the
stored ledger holds what is computed now.

Rules:
1. It runs when something may have made a held pod releasable: a held pod or a claim changed, a ledger was
   stored (the writer's answer, or a plan that found nothing to write), a stream made contact again, the
   writer's first round of a term ended. Never on a timer, except to retry a failed patch.
2. A pass first waits until every event the streams delivered before it has been applied (Kopf applies them in
   its workers, later: Runtime rule 8), then decides every held pod from one picture, with nothing awaited in
   between: the streams' health, the
   nodes' standings (``refresh``: nodes marked since they were last computed are computed again), what is
   stored. A release is sent the moment it is decided, without waiting for its answer, at most
   ``RELEASE_CONCURRENCY`` in flight. Once that many are in flight the pass decides no more: the pods after
   are decided, from a newer picture, when one is answered (a decision queued behind others would grow old),
   and meanwhile count for the reason they were last held for. So a pass costs the pods it releases and
   those held for a reason ahead of them, not every held pod: deciding all of them each pass made a burst
   cost the square of its size. A pod released whose event has not come back is not looked at again
   (``released``). Pods pinned to the same node in one pass share its room (``Standings.reserve``).
3. Write, then release: nothing is released until the writer has written (or found already stored) every
   ledger of its term (a start, a rebuild, a takeover: ``ready``). A pinned pod waiting for its node's newest
   ledger to be stored asks the writer to write that node first (``expedite``).
4. A release in flight is honoured by the writer: it does not store a ledger that stops vouching for a node a
   release relies on until that release is answered (``quiet``), and a node whose such write is in flight
   vouches for nothing (``demoting``). So the record shows every release after the Ready ledger it names.
5. Only the leader releases. A 422 (the pod changed) or a failing API is tried again on the next pass, soon;
   the pass goes on. While a watch request is being renewed (``Runtime.renewing``) the pass decides nothing,
   so that pods held for it get no Event; the stream's answer wakes the next pass.
6. A pod held back is counted by reason, and gets an Event with the reason once it has been held for it ``EVENT_AFTER``
   seconds, and again when it is held for a reason other than the last one it was told (a failed release, or a reason
   that passed untold, never tells a reason twice in a row); a pod that got one gets another when it is released, naming
   what it was released on. A pod released within ``EVENT_AFTER`` gets none: its story is in its ``released-on``
   annotation, and a burst costs no write a pod for Events. An Event whose reason no longer holds when its turn to be
   sent comes (the pod released, deleted, or held for another reason by then) is dropped. Events never hold a release. A
   pod counted that leaves the gate by another hand (deleted, its gate removed by someone else) wakes a pass that counts
   again, and a pass that finds no pod held, or a replica that does not lead, counts none: no count or age is left
   behind by a pod gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import structlog

from draledger.core.accounting.ledger import Flags, Ledger
from draledger.core.accounting.release import GATE, Computed, Decision, NodeStanding, Standings, age, decide
from draledger.core.keys import NodeName, PodKey
from draledger.core.views import PodView
from draledger.operator import clocks, events
from draledger.operator.kubeapi import ApiError, Conflict, KubeApi, transport_cause
from draledger.operator.stored import StoredLedgers, newer

if TYPE_CHECKING:
    from draledger.operator.runtime import Runtime

log = structlog.get_logger("draledger")
RELEASE_BATCH = 0.005  # seconds a woken releaser lets the events of a burst gather before its pass (rule 1)
# Gate patches in flight at once (rule 2). bench_gate.py at 100 nodes: 4 held gate removal at a p50 of 5.3 s behind a
# saturated API server (releases at ~42/s, the scheduler idle meanwhile), 16 at 3.8 s; more lets decisions age in a
# slow server's queue (the fault suite saw a 16th patch land 1.6 s after its decision): 8 between the two.
RELEASE_CONCURRENCY = 8
RELEASE_RETRY = 1.0  # seconds before a pass that met a failed patch or an unhealthy stream runs again
RENEWAL_RETRY = 0.1  # seconds before a pass that waited for a watch request being renewed runs again
APPLIED_WITHIN = 2.0  # seconds a pass waits for the events delivered before it to be applied (Runtime rule 8)
EVENT_AFTER = 0.5  # seconds a pod is held for one reason before its Event is posted (rule 6)


class Releaser:
    """Decides from every node's standing now, sends the releases, and keeps what they rely on in flight."""

    def __init__(self, runtime: Runtime, api: KubeApi, stored: StoredLedgers, flags: Callable[[str], Flags],
                 leads: Callable[[], bool], poster: events.Poster) -> None:
        self.runtime = runtime
        self.api = api
        self.events = poster  # the writer's: one lane for every Event of the process
        self.stored = stored  # the writer's mirror: what is stored
        self.flags = flags  # a node's flags, as the writer composes them
        self.leads = leads
        self.expedite: Callable[[Iterable[str]], None] = lambda nodes: None  # the writer's (rule 3)
        self.demoting: set[str] = set()  # nodes whose write of a non-Ready ledger is in flight (rule 4)
        self.computed: dict[str, Computed] = {}
        self.confirmed: dict[str, int] = {}  # node -> the generation its stored ledger holds (writer's word)
        # Each node's standing, built again only for the nodes ``changed`` since (``standings``).
        self._standings: dict[str, NodeStanding] = {}
        self._unsafe: set[str] = set()
        self._unsafe_sorted: list[str] = []
        self._revision = ""
        self.changed: set[str] = set()
        self.ready = asyncio.Event()  # the writer's term is written (rule 3)
        self.wake = runtime.release_wakeup
        self.released: dict[PodKey, PodView] = {}
        self.reasons: dict[PodKey, tuple[str, float, bool]] = {}  # pod -> (reason, since, said)
        self.told: dict[PodKey, str] = {}  # pod -> the reason its last Event said it was held for (rule 6)
        self.retry_soon = False
        self.retry_in = RELEASE_RETRY
        self.relying: dict[asyncio.Task[None], tuple[str, ...] | None] = {}  # patches in flight -> their nodes
        self._settled = asyncio.Event()
        self._settled.set()
        self._slots = asyncio.Semaphore(RELEASE_CONCURRENCY)
        self._retry_timer: asyncio.TimerHandle | None = None
        self.outside = runtime.not_ours
        runtime.ungated = self._ungated

    # ----- what the writer tells it -----
    def note(self, node: str, ledger: Ledger | None, generation: int) -> None:
        """The writer computed this node's ledger just now, at this generation."""
        if ledger is None:
            self.computed.pop(node, None)
            self.confirmed.pop(node, None)
        else:
            self.computed[node] = Computed(ledger, generation)
        self.changed.add(node)

    def confirm(self, node: str, generation: int) -> None:
        """The node's stored ledger holds what was computed at ``generation`` (written, or found equal)."""
        if generation > self.confirmed.get(node, -1):
            self.confirmed[node] = generation
        self.changed.add(node)
        if self.runtime.state.held:
            self.wake.set()

    def demote(self, node: str) -> None:
        """A write that stops the node's ledger vouching is about to be sent (rule 4)."""
        self.demoting.add(node)
        self.changed.add(node)

    def demoted(self, node: str) -> None:
        """That write is answered (or failed): the stored ledger says what it says."""
        if node in self.demoting:
            self.demoting.discard(node)
            self.changed.add(node)

    def forget_confirmations(self) -> None:
        """A new term (a takeover, a lost lead): what was confirmed before says nothing now."""
        self.confirmed.clear()
        self.changed.update(self.computed)
        self.ready.clear()

    async def quiet(self, node: str) -> None:
        """Until no release in flight relies on ``node`` (rule 4)."""
        while True:
            waiting = [task for task, nodes in self.relying.items() if nodes is None or node in nodes]
            if not waiting:
                return
            await asyncio.wait(waiting)

    # ----- the picture -----
    def refresh(self) -> None:
        """Compute again every node marked since it was last computed; forget nodes that are gone."""
        runtime = self.runtime
        generations, nodes, computed = runtime.generations, runtime.state.nodes, self.computed
        changed = self.changed
        if len(computed) != len(nodes):
            for node in [n for n in computed if n not in nodes]:
                del computed[node]
                changed.add(node)
        for node in nodes:
            generation = generations.get(node, 0)
            known = computed.get(node)
            if known is None or known.generation != generation:
                ledger = runtime.state.ledger(NodeName(node), self.flags(node))
                if ledger is not None:
                    computed[node] = Computed(ledger, generation)
                    changed.add(node)

    def standings(self) -> Standings:
        """Every node of ours now: computed (``refresh`` first) and stored (the mirror), with rule 4's demotions.
        Only the nodes changed since the last look are built again: a pass costs what changed, not the cluster."""
        stored, confirmed, demoting, computed = self.stored.by_node, self.confirmed, self.demoting, self.computed
        cache, unsafe = self._standings, self._unsafe
        changed, self.changed = self.changed, set()
        unsafe_before = len(unsafe)
        unsafe_moved = False
        for node in changed:
            known = computed.get(node)
            if known is None:
                cache.pop(node, None)
                if node in unsafe:
                    unsafe.discard(node)
                    unsafe_moved = True
                continue
            record = stored.get(node)
            stored_phase = record.phase if record is not None and record.exists and record.has_status else ""
            if node in demoting:
                stored_phase = ""  # its Ready is being taken back: it vouches for nothing now
            standing = cache[node] = NodeStanding(
                known.phase, known.free, known.scheduler_free, stored_phase,
                record.ledger_version if record is not None else 0,
                confirmed.get(node) == known.generation,
            )
            if standing.vouched:
                if node in unsafe:
                    unsafe.discard(node)
                    unsafe_moved = True
            elif node not in unsafe:
                unsafe.add(node)
                unsafe_moved = True
            if record is not None and stored_phase and record.resource_version and (
                not self._revision or newer(record.resource_version, self._revision)
            ):
                self._revision = record.resource_version
        if unsafe_moved or len(unsafe) != unsafe_before:
            self._unsafe_sorted = sorted(unsafe)
        return Standings(cache, self._unsafe_sorted, self._revision)

    def waiting(self) -> list[PodKey]:
        """The held pods to look at, in order; a released pod whose view changed since is forgotten."""
        pods, released = self.runtime.state.pods, self.released
        for key in [k for k, view in released.items() if pods.get(k) is not view]:
            del released[key]
        return sorted(key for key in self.runtime.state.held if key not in released)

    # ----- the task -----
    async def run(self) -> None:
        while True:
            if self.retry_soon:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.retry_in):  # not wait_for: on 3.11 it can lose a cancellation
                        await self.wake.wait()
            else:
                await self.wake.wait()
            await asyncio.sleep(RELEASE_BATCH)  # what else a burst brings joins this pass
            self.wake.clear()
            try:
                await self.release_pass()
            except Exception:
                log.exception("gate release pass failed; will retry")
                self.retry_soon = True

    async def release_pass(self) -> None:
        runtime = self.runtime
        state = runtime.state
        self.retry_soon, self.retry_in = False, RELEASE_RETRY
        if not state.held or not self.leads():
            runtime.metrics.set_gated({}, 0.0)  # rule 6: no count is left behind
            return
        runtime.metrics.release_passes.inc()
        if runtime.behind(target := dict(runtime.delivered_count)):  # Runtime rule 8: not from an older picture
            await runtime.applied_up_to(target, APPLIED_WITHIN)
        rebuilt = runtime.rebuilt.is_set() and self.ready.is_set()  # the term's end wakes the next pass (rule 3)
        unhealthy = runtime.streams_unhealthy() if rebuilt else ""
        if unhealthy and runtime.renewing():  # an ordinary renewal: wait for it, deciding nothing
            self.retry_soon, self.retry_in = True, RENEWAL_RETRY
            return
        if rebuilt:
            self.refresh()
        standings = self.standings() if rebuilt else Standings({})
        counts: dict[str, int] = {}
        oldest = 0.0
        now = clocks.now()
        waiting_on: set[str] = set()
        room = RELEASE_CONCURRENCY - len(self.relying)  # rule 2: a decision is sent as soon as it is made
        for key in self.waiting():
            pod = state.pods.get(key)
            if pod is None or GATE not in pod.scheduling_gates:
                continue
            if room <= 0:  # rule 2: no slot left; the rest are decided when one frees, and keep their last reason
                if (known := self.reasons.get(key)) is not None:
                    counts[known[0]] = counts.get(known[0], 0) + 1
                    oldest = max(oldest, age(pod, now))
                continue
            decision = decide(
                pod,
                standings,
                state.uses(pod),
                state.release,
                rebuilt=rebuilt,
                cluster_frozen=runtime.config.frozen,
                streams_unhealthy=unhealthy,
                outside=self.outside,
            )
            if decision.release and decision.patch is not None:
                room -= 1
                self._send(pod, decision)
                if decision.pinned is not None:
                    standings.reserve(decision.pinned, decision.needed)
                continue
            waiting_on.update(decision.waiting_on)
            self._held(pod, decision)
            counts[decision.reason] = counts.get(decision.reason, 0) + 1
            oldest = max(oldest, age(pod, now))
        if waiting_on:
            self.expedite(waiting_on)
        self.retry_soon = self.retry_soon or bool(counts.get("WatchUnhealthy"))
        runtime.metrics.set_gated(counts, oldest)
        if len(self.reasons) > 2 * len(state.held) + 100:
            self.reasons = {k: v for k, v in self.reasons.items() if k in state.held}
            self.told = {k: v for k, v in self.told.items() if k in state.held}

    def _ungated(self, key: PodKey) -> None:
        """Rule 6: a pod event without the gate. A pod counted as held has left it by another hand (this
        releaser's own releases are no longer counted once sent): a pass counts again."""
        if self.reasons.pop(key, None) is not None:
            self.told.pop(key, None)
            self.wake.set()

    def _held(self, pod: PodView, decision: Decision) -> None:
        """Rule 6: the Event says why, once the pod has been held for that reason ``EVENT_AFTER`` seconds (a
        burst's pods are held for a moment for reasons that pass: no Event for those)."""
        now = self.runtime.clock()
        reason, since, said = self.reasons.get(pod.key) or ("", now, False)
        if reason != decision.reason:
            self.reasons[pod.key] = (decision.reason, now, False)
            asyncio.get_running_loop().call_later(EVENT_AFTER, self.wake.set)
        elif not said and now - since >= EVENT_AFTER:
            self.reasons[pod.key] = (reason, since, True)
            if self.told.get(pod.key) == reason:
                return  # told already: held for it again after a failed release, or after a reason that passed
            self._event(pod, reason, f"held by {GATE}: {decision.message}",
                        still=functools.partial(self._still_held, pod.key, reason))

    def _still_held(self, key: PodKey, reason: str) -> bool:
        """Rule 6, asked when a held pod's Event is about to be sent: whether it is still held for ``reason``
        (if so, the pod is told, and its release will get an Event too)."""
        held = key in self.runtime.state.held and (self.reasons.get(key) or ("",))[0] == reason
        if held:
            self.told[key] = reason
        return held

    def _send(self, pod: PodView, decision: Decision) -> None:
        """Start the release's patch (rule 2); what it relies on stays in flight until it is answered."""
        self.released[pod.key] = pod
        self.reasons.pop(pod.key, None)
        task = asyncio.create_task(self._release(pod, decision, pod.key in self.told),
                                   name=f"draledger-release-{pod.name}")
        self.relying[task] = decision.pinned
        self._settled.clear()
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self.relying.pop(task, None)
        if not self.relying:
            self._settled.set()
        if self.runtime.state.held:
            self.wake.set()  # a slot is free: pods decided releasable but not sent are decided again

    async def _release(self, pod: PodView, decision: Decision, told: bool) -> None:
        assert decision.patch is not None
        where = f"{pod.namespace}/{pod.name}"
        metrics = self.runtime.metrics
        sent = self.runtime.clock()
        async with self._slots:
            try:
                await self.api.json_patch(f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}", decision.patch,
                                          attempts=1)
            except Conflict:
                metrics.write_failures.labels("pod-gate", "conflict").inc()
                log.info("pod changed before release; will retry", pod=where)
                self._retry(pod)
                return
            except ApiError as error:
                metrics.write_failures.labels("pod-gate", str(error.status)).inc()
                log.warning("gate release failed; will retry", pod=where, error=str(error))
                self._retry(pod)
                return
            except (OSError, TimeoutError) as error:  # aiohttp's connection errors are OSErrors
                metrics.write_failures.labels("pod-gate", "unreachable").inc()
                log.warning("gate release failed; will retry", pod=where, server=self.api.server,
                            cause=transport_cause(error))
                self._retry(pod)
                return
        metrics.writes.labels("pod-gate").inc()
        metrics.gate_releases.inc()
        log.info("gate released", pod=where, placement=decision.message, released_on=decision.released_on,
                 answered_in=round(self.runtime.clock() - sent, 3))
        self.told.pop(pod.key, None)
        if told:  # rule 6: the end of a story its Events began
            self._event(pod, "Released", f"released by {GATE}: {decision.message}")

    def _retry(self, pod: PodView) -> None:
        """The patch failed: the pod is decided again after ``RELEASE_RETRY``, from the picture then."""
        if self.released.get(pod.key) is pod:
            del self.released[pod.key]
        if self._retry_timer is None:
            self._retry_timer = asyncio.get_running_loop().call_later(RELEASE_RETRY, self._retry_now)

    def _retry_now(self) -> None:
        self._retry_timer = None
        self.wake.set()

    def _event(self, pod: PodView, reason: str, message: str, still: Callable[[], bool] | None = None) -> None:
        """Post an Event about the pod, in the background, unless ``still`` says by then that it no longer
        holds (rule 6)."""
        self.events.post(events.about_pod(pod.namespace, pod.name, pod.uid, reason, message), still)

    async def answered(self) -> None:
        """Until every release in flight is answered."""
        await self._settled.wait()

    async def settle(self) -> None:
        """Until every release and Event in flight is answered (tests, and a clean stop)."""
        await self._settled.wait()
        await self.events.settle()
