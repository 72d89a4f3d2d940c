"""``draledger run``: wire the runtime, the writer, the probes and Kopf together, and run until stopped.

Rules:
1. The operator never exits on API errors: writes retry on the next cycle, watches retry forever.
2. The ledger metrics (``draledger_ledgers``, ``draledger_mapping_age_seconds``) count the stored ledgers of the
   nodes this operator accounts for: once the rebuild is complete, the selected Nodes it knows
   (``--node-selector``; every Node without one). The writer's mirror holds every ledger the API holds, those of
   nodes outside the selection too, and keeps them while a standby or until a plan drops them; they are no
   replica's to count (docs/operations.md, "Metrics"). Until the rebuild is complete the Nodes may not all be
   listed yet: every stored ledger counts then, but for the nodes already seen outside the selection, so that a
   restart's Rebuilding marks show at once (``DraLedgerRebuildSlow`` reads them).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Iterator
from typing import Any

import kopf
import structlog

from draledger.operator import events, gating, handlers, kopfcompat, priming, probes
from draledger.operator.config import OperatorConfig
from draledger.operator.connecting import Source, credentials
from draledger.operator.electing import FencedApi, elector_for
from draledger.operator.metrics import Metrics
from draledger.operator.releasing import Releasing
from draledger.operator.runtime import Runtime
from draledger.operator.stored import Stored
from draledger.operator.watching import HOOKS
from draledger.operator.writing import Writer

READS = 4  # reads of the operator's client that may be in flight besides its writes' (``client_connections``)
log = structlog.get_logger("draledger")


def client_connections(config: OperatorConfig) -> int:
    """The operator's client has a connection for every request that may be in flight at once, so that none
    waits for another's: the writes, the releases, the Events' lane, and the reads (a LIST, /version) besides."""
    return config.write_concurrency + gating.RELEASE_CONCURRENCY + events.CONCURRENCY + READS


def source_of(config: OperatorConfig) -> Source:
    return Source(config.server, config.kubeconfig, config.context)


def connection_info(config: OperatorConfig) -> kopf.ConnectionInfo:
    """The credentials to start with; a CredentialsError reaches the command line as its one line, exit 2."""
    return credentials(source_of(config))


class Operator:
    """One operator instance; ``run()`` returns when ``stop`` is set."""

    def __init__(self, config: OperatorConfig, stop: asyncio.Event | None = None) -> None:
        kopfcompat.check_version()  # before anything relies on Kopf's internals (one line naming the pin)
        self.config = config
        self.stop = stop or asyncio.Event()
        # Kopf stops on SIGINT/SIGTERM by itself. Given a stop flag as well, Kopf 1.45.2 leaves its task that
        # waits for the flag running when a signal stops it, and waits 5 s for that "hung" task before it exits
        # (seen on a real control plane: every SIGTERM took 5 s). So the flag goes to Kopf only when a caller
        # holds it to stop the operator (the demo, tests, benchmarks); ``draledger run`` stops by signal.
        self.stop_flag: asyncio.Event | None = stop
        self.metrics = Metrics()
        self.runtime = Runtime(config, self.metrics, asyncio.get_running_loop().time)

        def login() -> kopf.ConnectionInfo:  # fresh credentials, after a 401
            return connection_info(config)

        # Leader election (operator.leadership): only the Lease holder writes; without it, always this one.
        election = config.leader_election
        info = self.info = connection_info(config)  # once: an exec plugin runs once at the start, for every client
        self.elector = elector_for(election, info, login, self.runtime.clock, lambda _: self.runtime.wakeup.set())
        self.api = FencedApi(info, self.elector.write_window, login=login, connections=client_connections(config))
        self.writer = Writer(self.runtime, self.api, leads=self.elector.leads if election.enabled else None)
        self.releasing = Releasing(self.runtime, self.api, self.elector.leads if election.enabled else lambda: True)
        self.metrics.leader.set_function(self.elector.leads)
        self.port = 0
        self._writer_task: asyncio.Task[Any] | None = None
        self.metrics.watch_mapping_ages(self._mapping_ages)
        self.metrics.watch_phases(lambda: [s.phase for _, s in self.accounted()])
        self.metrics.frozen.set(1 if config.frozen else 0)

    def accounted(self) -> Iterator[tuple[str, Stored]]:
        """The stored ledgers of the nodes this operator accounts for (rule 2)."""
        runtime = self.runtime
        stored = self.writer.stored.existing()
        if runtime.rebuilt.is_set():
            nodes = runtime.state.nodes
            return ((name, ledger) for name, ledger in stored if name in nodes)
        outside = runtime.outside
        return ((name, ledger) for name, ledger in stored if name not in outside)

    def _mapping_ages(self) -> list[tuple[str, float]]:
        now = self.runtime.clock()
        return [(n, now - s.mapping_changed_at) for n, s in self.accounted()]

    def alive(self) -> bool:
        return self._writer_task is not None and not self._writer_task.done()

    async def _freshness(self) -> None:
        while True:
            await asyncio.sleep(min(1.0, self.config.freshness_window / 4))
            self.runtime.check_freshness()

    async def _start_writing(self) -> None:
        while True:
            try:
                await self.writer.load_stored()
                await self.elector.decided.wait()  # leading from the start or not (leader election)
                await self.writer.take_lead()  # a leader marks the stored ledgers Rebuilding; a standby waits
                return
            except Exception as error:  # the API may not be up yet: keep trying, never exit
                log.warning("cannot read stored ledgers yet; retrying", error=str(error))
                await asyncio.sleep(2.0)

    async def _freeze_rebuilt(self) -> None:
        """Once the rebuilt ledgers are written, collect once and move what the rebuild built (the writer's
        mirror, the state's caches, every view read since the priming) out of the collector's generations, as
        priming does with what it read (``tune_gc``)."""
        await self.writer.caught_up.wait()
        gc.collect()
        gc.freeze()
        log.info("rebuilt state frozen out of the collector", objects=gc.get_freeze_count())

    async def _prime(self) -> None:
        await self.releasing.first()  # before the first ledger is computed (operator.releasing, rule 2)
        await priming.prime(self.runtime, self.api, self.config)

    async def run(self) -> None:
        registry = kopf.OperatorRegistry()
        logins = iter([self.info])  # the credentials already loaded serve the first login; later ones load afresh
        handlers.register(registry, self.runtime, self.writer.stored,
                          lambda: next(logins, None) or connection_info(self.config))
        role = (lambda: self.elector.role) if self.config.leader_election.enabled else None
        app = probes.application(self.metrics, self.alive, self.runtime.rebuilt.is_set, role)
        runner, self.port = await probes.serve(app, self.config.metrics_host, self.config.metrics_port)
        log.info(
            "draledger operator starting",
            metrics_port=self.port,
            pod_status=self.config.pod_status,
            node_selector=self.config.node_selector or "<all>",
        )
        tasks: list[asyncio.Task[Any]] = [asyncio.create_task(self.elector.run(), name="draledger-elector")]
        try:
            with HOOKS.observing(self.runtime), HOOKS.observing(self.writer.stored):
                # The objects are read while the stored ledgers are marked Rebuilding and while Kopf starts: its
                # webhook gates the pods created meanwhile, its watches wait for the priming (operator.priming).
                tasks.append(asyncio.create_task(self._prime(), name="draledger-priming"))
                await self._start_writing()
                self._writer_task = asyncio.create_task(self.writer.run(), name="draledger-writer")
                tasks += [
                    self._writer_task,
                    asyncio.create_task(self._freshness(), name="draledger-freshness"),
                    asyncio.create_task(self.writer.releaser.run(), name="draledger-gate-releaser"),
                    asyncio.create_task(self._freeze_rebuilt(), name="draledger-freeze"),
                    asyncio.create_task(self.releasing.follow(), name="draledger-release"),
                ]
                await kopf.operator(
                    registry=registry,
                    settings=handlers.settings_for(self.runtime),
                    clusterwide=True,
                    standalone=True,
                    stop_flag=self.stop_flag,
                )
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            await self.elector.stop()  # the writer is stopped: give the Lease up for the standby
            await runner.cleanup()
            await self.api.close()


def tune_gc(config: OperatorConfig) -> None:
    """Raise the collector's generation-0 threshold (process-wide; the other generations keep theirs).

    The state holds no reference cycles; the cyclic collector only has the watch machinery's garbage to
    find, and a larger young generation lets most of each decoded event die by reference counting before
    any collection scans it. What lives as long as the state is frozen out of the collector twice: what
    priming read (``priming``), and what the rebuild built once its ledgers are written
    (``Operator._freeze_rebuilt``). Each full collection walks every object in the oldest generation, and
    Kopf promotes the decoded body of every watched object it keeps a stream for into it: with the rebuild's
    objects left there, full collections at 5,000 nodes cost about a third of the operator's CPU per event
    (benchmarks/results/scale.md).
    """
    if config.gc_threshold > 0:
        _, second, third = gc.get_threshold()
        gc.set_threshold(config.gc_threshold, second, third)


async def run_operator(config: OperatorConfig) -> None:
    tune_gc(config)
    await Operator(config).run()
