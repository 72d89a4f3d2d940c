"""The per-node writer: dirty nodes -> one coalesced status write of each changed ledger.

Rules:
1. A burst of events on a node becomes one write: the writer waits ``coalesce_window`` after the first
   dirty mark, then plans every dirty node once. Under load the wait stretches: after a batch whose
   planning took longer than the window, the next batch waits as long as that one took, up to
   ``coalesce_window_max``.
2. Planning is synchronous (the ledger, its standing for the gate releaser, the status body); the writes
   run concurrently, at most ``write_concurrency`` at once, and nothing waits for them: one node's slow or
   failing writes never hold another node's, nor the gate releases. A node with a write in flight is
   planned again when it is done; a node whose write failed waits its own backoff (exponential, capped).
3. Write only on a semantic change: what to write is planned against what the API holds (operator.planning, a pure
   plan; ``stored``: read back at start and from every ledger event), and equal content means no request. The
   writer owns that mirror, and composes each node's flags from the runtime's, the mirror's freeze and the
   backfill's condition.
4. What is stored is exactly what was computed: the whole ``/status`` is replaced by one JSON patch, guarded
   by a ``test`` of the stored ``ledgerVersion`` (or of the object's uid when it has no status yet). A failed
   test re-reads the object and plans again; a 404 re-reads it and creates it.
5. ``ledgerVersion`` +1 per content change, ``mappingVersion`` +1 per mapping-fingerprint change; both
   continue from the stored object across restarts, re-reads and recreations, and never decrease.
6. A ledger is created only for a Node that exists now, with that Node's uid as its owner. A create
   answered 409 reads the ledger back; if there is none, the create failed and is tried again.
7. Until the rebuild is complete nothing is computed or written, except marking stored ledgers Rebuilding.
8. With leader election, a standby writes nothing (no ledger, release, backfill or Event): it keeps its dirty
   set, and what is stored is read back from the ledger watch as always (``stored``). On taking over it reads
   the stored ledgers again (what it relies on must be stored under its own leadership), then plans every
   node against them: no write where nothing changed, and no Rebuilding mark unless its own state is not
   rebuilt yet (draledger.operator.leadership).
9. Of a status write's answer only ``metadata.resourceVersion`` and ``spec`` are read (a freeze or resume
   stored just before the write shows there); the status it repeats is skipped undecoded. Bodies are
   encoded, and the semantic content serialized, with msgspec (benchmarks/results/scale.md: about 15% of the
   operator's CPU per steady pod event).
10. The gate releaser decides from what this writer stored (operator.gating): every plan tells it the node's
   ledger and generation, every answer (and every plan that finds the content stored already) confirms
   that generation. A term (the start once rebuilt, a takeover) ends when every node has been planned and
   its write answered: only then are gates released (``Releaser.ready``). A node a held pod waits for is
   written at once (``expedite``). A ledger that stops vouching for its node (Ready stored, not Ready now) is
   stored only after the releases in flight that rely on it are answered (``Releaser.quiet``).
11. An API server that is away is an expected state: a failed write is one warning line per node per
   backoff step, naming the server and the cause, with no traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import structlog

from draledger.core.accounting.ledger import Flags
from draledger.core.keys import NodeName
from draledger.core.phases import SAFE, Phase
from draledger.operator import creating, events, planning
from draledger.operator.backfill import Backfill
from draledger.operator.clocks import now_rfc3339
from draledger.operator.creating import LEDGERS
from draledger.operator.gating import Releaser
from draledger.operator.kubeapi import ApiError, Conflict, KubeApi, NotFound, transport_cause
from draledger.operator.planning import Backoffs, Plan, next_pause
from draledger.operator.runtime import Runtime
from draledger.operator.stored import VOLATILE, Stored, StoredLedgers, decode_written, semantic_content

__all__ = ["LEDGERS", "VOLATILE", "Writer", "next_pause", "semantic_content"]

log = structlog.get_logger("draledger")


class Writer:
    def __init__(
        self,
        runtime: Runtime,
        api: KubeApi,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        leads: Callable[[], bool] | None = None,
    ) -> None:
        """``leads``: whether this replica holds the leader Lease now (None: no election, it always writes)."""
        self.runtime = runtime
        self.api = api
        self.sleep = sleep
        self.leads = leads or (lambda: True)
        self.leading = False  # as of the last look: the first look that finds this replica leading takes over
        self.stored = StoredLedgers(runtime.clock, runtime.mark)
        self.backfill = Backfill(runtime, api)
        self.events = events.Poster(api, runtime.metrics, runtime.config.events)
        self.releaser = Releaser(runtime, api, self.stored, self.flags, self.leads, self.events)
        self.releaser.expedite = self.expedite
        self.term: set[str] | None = None  # nodes of this term not planned and answered yet (rule 10)
        self.urgent: set[str] = set()  # nodes a held pod waits for: written as soon as they can be
        self.just_listed = False  # the stored ledgers were just listed (the start's LIST): a takeover reads them again
        self.inflight: dict[str, asyncio.Task[None]] = {}
        # Set the first time every ledger is written after the rebuild: nothing dirty, nothing in flight.
        self.caught_up = asyncio.Event()
        self.backoffs = Backoffs()
        self._slots = asyncio.Semaphore(runtime.config.write_concurrency)

    def flags(self, node: str) -> Flags:
        """The node's flags: the runtime's, with its stored ledger's freeze and the backfill's condition."""
        return self.runtime.flags(node, frozen=self.stored.frozen(node), pod_status=self.backfill.condition())

    async def load_stored(self) -> None:
        """Read every stored ledger before the first write (``StoredLedgers.read``); refusals they keep are
        seeded again."""
        await self.stored.read(self.api, LEDGERS, self.runtime.seed_refusals)
        self.just_listed = True

    async def mark_rebuilding(self) -> None:
        """Mark the stored ledgers Rebuilding, ``write_concurrency`` at a time. With ``--node-selector``, only
        the ledgers of the Nodes that match it now: a ledger of a node outside the canary is not this
        operator's, and nothing would ever write it again."""
        names = sorted(name for name, stored in self.stored.existing() if stored.phase != Phase.REBUILDING)
        selector = self.runtime.config.node_selector
        if selector and names:
            selected = {(obj.get("metadata") or {}).get("name")
                        for obj in await self.api.list_all("/api/v1/nodes", labelSelector=selector)}
            names = [name for name in names if name in selected]
        await asyncio.gather(*(self._mark_rebuilding(name) for name in names))

    async def _mark_rebuilding(self, name: str) -> None:
        stored = self.stored.of(name)
        version = stored.ledger_version + 1
        patch = {"status": {"phase": Phase.REBUILDING.value, "ledgerVersion": version, "observedTime": now_rfc3339()}}
        async with self._slots:
            sent = await self._send(name, "rebuilding", self.api.merge_patch(f"{LEDGERS}/{name}/status", patch))
        if sent:
            old = stored.phase
            stored.ledger_version = stored.guard_version = version
            stored.phase, stored.content, stored.has_status = Phase.REBUILDING, b"", True
            self._phase_event(name, stored, old, "the operator (re)started; recounting every object")

    # ----- the loop -----
    async def run(self) -> None:
        runtime = self.runtime
        config = runtime.config
        pause = config.coalesce_window
        while True:
            await self._wait()
            runtime.wakeup.clear()
            await self.sleep(pause)
            if not await self.take_lead():
                continue  # a standby: the dirty set waits for a takeover (rule 8)
            if runtime.rebuilt.is_set():  # until then keep the dirty set: it is written once rebuilt
                started = runtime.clock()
                self.write_round()
                pause = next_pause(config.coalesce_window, config.coalesce_window_max, runtime.clock() - started)

    def write_round(self) -> None:
        """Plan every dirty node that is due and start its write (the loop's work, once rebuilt and leading)."""
        runtime = self.runtime
        if self.term is None:  # the term's first round: every node (rule 10)
            self.term = set(runtime.state.nodes) | set(runtime.dirty)
        for node in self._due(runtime.clock()):
            self._plan_and_send(node)
        self._note_caught_up()

    async def drain(self) -> None:
        """Until no write, and no Event of one, is in flight (tests, and the benchmarks' settled moments)."""
        while self.inflight:
            await asyncio.gather(*self.inflight.values(), return_exceptions=True)
        await self.events.settle()

    async def take_lead(self) -> bool:
        """Whether this replica writes now. Taking over (at start, too, without leader election): the stored
        ledgers are read again unless they were just listed, and marked Rebuilding if the state is not
        complete yet, and every node is planned (rules 8, 10)."""
        runtime = self.runtime
        leading = self.leads()
        if leading != self.leading:
            self.releaser.forget_confirmations()  # a new term, or none: nothing is vouched for until written
            self.term = None
        if leading and not self.leading:
            self.backoffs.clear()  # backoffs earned as a standby or a lost leader say nothing now
            if not self.just_listed:
                await self.load_stored()  # what the new leader relies on, read under its own leadership
            if not runtime.rebuilt.is_set():
                await self.releaser.answered()  # nothing in flight relies on a ledger about to say Rebuilding
                await self.mark_rebuilding()
            runtime.mark_all()
            runtime.mark(self.stored)  # ledgers whose Node is gone too: their entries go
        self.just_listed = False  # a later takeover reads the stored ledgers again
        self.leading = leading
        return leading

    def expedite(self, nodes: Iterable[str]) -> None:
        """Held pods wait for these nodes' newest ledgers to be stored: write them now (rule 10)."""
        if not self.leading or not self.runtime.rebuilt.is_set():
            return
        now = self.runtime.clock()
        for node in nodes:
            self.urgent.add(node)
            if node in self.runtime.dirty and node not in self.inflight and self.backoffs.due(node, now):
                self._plan_and_send(node)

    async def _wait(self) -> None:
        """Until something is marked, or the earliest backoff of a dirty node is over."""
        runtime = self.runtime
        if runtime.wakeup.is_set():
            return
        retry_at = self.backoffs.retry_at
        waiting = [retry_at[n] for n in runtime.dirty if n in retry_at and n not in self.inflight]
        if not waiting:
            await runtime.wakeup.wait()
            return
        delay = max(0.0, min(waiting) - runtime.clock())
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay):  # not wait_for: on 3.11 it can lose a cancellation (the stop's)
                await runtime.wakeup.wait()

    def _due(self, now: float) -> list[str]:
        """The dirty nodes to plan now: not written at this moment, not waiting out a backoff."""
        inflight, due = self.inflight, self.backoffs.due
        return sorted(n for n in self.runtime.dirty if n not in inflight and due(n, now))

    def _plan_and_send(self, node: str) -> None:
        since = self.runtime.dirty.pop(node)
        try:
            self._start(node, since)
        except Exception:
            log.exception("ledger not computed; will retry", node=node)
            self._failed(node, since)
            self._answered(node)

    def _start(self, node: str, dirty_since: float) -> None:
        plan = self.plan(node, dirty_since)
        if plan is None:
            self._answered(node)
            return
        needs_backfill = self.runtime.config.pod_status == "backfill" and self.backfill.wanted(node)
        if plan.body is None:
            self.releaser.confirm(node, plan.generation)  # what is stored is what is computed now
            if not needs_backfill:
                self.backoffs.succeeded(node)
                self._answered(node)
                return
        elif plan.ledger.phase != SAFE and self.stored.of(node).phase == SAFE:
            self.releaser.demote(node)  # rule 10: it stops vouching; releases wait for the answer
        task = asyncio.create_task(self._write_task(node, plan), name=f"draledger-write-{node}")
        self.inflight[node] = task

    async def _write_task(self, node: str, plan: Plan) -> None:
        runtime = self.runtime
        try:
            if node in self.releaser.demoting:
                await self.releaser.quiet(node)
            async with self._slots:
                await self.write_node(node, plan)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            delay = self._failed(node, plan.dirty_since)
            if isinstance(error, OSError | TimeoutError):  # the API server is away: expected (rule 11)
                log.warning("ledger write failed; will retry", node=node, server=self.api.server,
                            cause=transport_cause(error), retry_in=round(delay, 1))
            elif not isinstance(error, ApiError):  # an ApiError was logged where it was met
                log.exception("ledger write failed; will retry", node=node)
        else:
            self.backoffs.succeeded(node)
        finally:
            self.inflight.pop(node, None)
            self.releaser.demoted(node)
            self._answered(node)
            if node in runtime.dirty:
                if node in self.urgent and self.backoffs.due(node, runtime.clock()):
                    self._plan_and_send(node)  # a held pod waits for it (rule 10)
                else:
                    runtime.wakeup.set()
            self._note_caught_up()

    def _answered(self, node: str) -> None:
        """The node's plan of this round is over (written, found stored, or failed): the term may end."""
        if node not in self.runtime.dirty:
            self.urgent.discard(node)
        term = self.term
        if term:
            term.discard(node)
            if not term:
                self.releaser.ready.set()
                self.releaser.wake.set()

    def _note_caught_up(self) -> None:
        if not self.caught_up.is_set() and not self.inflight and not self.runtime.dirty:
            self.caught_up.set()
        if self.term is not None and not self.term and not self.releaser.ready.is_set():
            self.releaser.ready.set()  # a term with no node at all
            self.releaser.wake.set()

    def _failed(self, node: str, dirty_since: float) -> float:
        """The node waits its backoff, dirty; the seconds it waits."""
        runtime = self.runtime
        delay = self.backoffs.failed(node, runtime.clock())
        runtime.dirty.setdefault(node, dirty_since)
        runtime.wakeup.set()
        return delay

    # ----- one node -----
    def plan(self, node: str, dirty_since: float) -> Plan | None:
        """The node's ledger now, and the status write it needs (operator.planning), scheduled (synchronous: no
        event comes in between)."""
        runtime = self.runtime
        generation = runtime.generations.get(node, 0)
        ledger = runtime.state.ledger(NodeName(node), self.flags(node))
        self.releaser.note(node, ledger, generation)
        if ledger is None:
            self.stored.forget(node)  # the Node is gone (its ledger goes with it, by ownerReference) or not selected
            return None
        runtime.metrics.observe_ledger(ledger)
        body, content = planning.plan(ledger, self.stored.of(node), now_rfc3339())
        return Plan(ledger, body, content, dirty_since, generation)

    async def write_node(self, node: str, plan: Plan) -> None:
        """Send the plan: create the ledger if needed, replace its status, then backfill the node's pods."""
        runtime = self.runtime
        if plan.body is not None:
            await self._write(node, plan)
            runtime.metrics.write_latency.observe(max(0.0, runtime.clock() - plan.dirty_since))
        if runtime.config.pod_status == "backfill":
            await self.backfill.node(node)

    async def _write(self, node: str, plan: Plan) -> None:
        runtime = self.runtime
        stored = self.stored.of(node)
        body = plan.body
        assert body is not None
        if not stored.exists and not await creating.create(self.api, self.runtime, plan.ledger, stored, body):
            return
        ops: list[dict[str, Any]] = (
            [{"op": "test", "path": "/status/ledgerVersion", "value": stored.guard_version}]
            if stored.has_status
            else [{"op": "test", "path": "/metadata/uid", "value": stored.uid}]
        )
        ops.append({"op": "add", "path": "/status", "value": body})
        try:
            answer = await self.api.json_patch(f"{LEDGERS}/{node}/status", ops, attempts=1, decode=decode_written)
        except (Conflict, NotFound) as error:
            runtime.metrics.write_failures.labels("ledger", str(error.status)).inc()
            log.info("stored ledger differs from what was believed; reading it again", node=node, error=str(error))
            await stored.reread(self.api, f"{LEDGERS}/{node}")
            runtime.mark({node})
            return
        except ApiError as error:
            runtime.metrics.write_failures.labels("ledger", str(error.status)).inc()
            log.warning("write failed", node=node, target="ledger", error=str(error))
            raise
        runtime.metrics.writes.labels("ledger").inc()
        old_phase = stored.phase
        if body["mappingVersion"] != stored.mapping_version:
            stored.mapping_changed_at = runtime.clock()
        stored.ledger_version, stored.mapping_version = body["ledgerVersion"], body["mappingVersion"]
        stored.guard_version = body["ledgerVersion"]
        stored.fingerprint, stored.content, stored.phase = plan.ledger.mapping_fingerprint, plan.content, body["phase"]
        stored.conditions, stored.has_status = body["conditions"], True
        meta = (answer or {}).get("metadata") if isinstance(answer, dict) else None
        stored.resource_version = str((meta or {}).get("resourceVersion") or "")
        self.releaser.confirm(node, plan.generation)  # the answer is the read-back (rule 10)
        spec = answer.get("spec") if isinstance(answer, dict) else None
        if isinstance(spec, dict) and stored.read_spec(spec):
            runtime.mark({node})  # frozen or resumed since the last ledger event: that event is older than this
        runtime.metrics.set_phase(node, stored.phase)
        if old_phase != stored.phase:
            self._phase_event(node, stored, old_phase, events.phase_message(plan.ledger, stored.frozen_reason))

    async def _send(self, node: str, target: str, call: Awaitable[Any]) -> bool:
        try:
            await call
        except ApiError as error:
            self.runtime.metrics.write_failures.labels(target, str(error.status)).inc()
            log.warning("write failed", node=node, target=target, error=str(error))
            return False
        self.runtime.metrics.writes.labels(target).inc()
        return True

    def _phase_event(self, node: str, stored: Stored, old: str, message: str) -> None:
        self.events.post(events.phase_changed(node, stored.uid, old, stored.phase, message))

