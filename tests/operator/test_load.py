"""Behaviour under load: the writer's wait stretches while batches are slow, the collector setting, flags."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import tracemalloc
from collections.abc import Callable, Iterator

import pytest

from draledger.core.accounting.ledger import Ledger
from draledger.core.phases import PHASES
from draledger.operator.config import OperatorConfig, add_arguments, from_args
from draledger.operator.metrics import FIGURES, Metrics
from draledger.operator.planning import next_pause
from draledger.operator.running import tune_gc
from draledger.operator.runtime import Runtime
from draledger.operator.writing import Writer
from tests.integration.harness import case_items

KIND = {"Node": "nodes", "Pod": "pods", "ResourceSlice": "resourceslices", "ResourceClaim": "resourceclaims"}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class TestNextPause:
    def test_an_idle_operator_keeps_the_window(self) -> None:
        assert next_pause(0.2, 1.0, 0.0) == 0.2
        assert next_pause(0.2, 1.0, 0.15) == 0.2

    def test_a_slow_batch_stretches_the_wait_to_its_own_length(self) -> None:
        assert next_pause(0.2, 1.0, 0.6) == 0.6

    def test_the_stretch_is_capped(self) -> None:
        assert next_pause(0.2, 1.0, 7.5) == 1.0

    def test_a_cap_below_the_window_never_shortens_it(self) -> None:
        assert next_pause(0.5, 0.1, 3.0) == 0.5


class SlowWriter(Writer):
    """Planning takes ``cost`` seconds of the runtime's clock per node; nothing is ever written."""

    def __init__(self, runtime: Runtime, clock: Clock, pauses: list[float]) -> None:
        async def sleep(seconds: float) -> None:
            pauses.append(seconds)

        super().__init__(runtime, api=None, sleep=sleep)  # type: ignore[arg-type]
        self.just_listed = True  # as after the start's LIST of the stored ledgers (there are none)
        self.clock = clock
        self.cost = 0.0
        self.written: list[str] = []

    def plan(self, node: str, dirty_since: float) -> None:
        self.clock.now += self.cost
        self.written.append(node)


async def batches(writer: SlowWriter, runtime: Runtime, plan: list[tuple[float, set[str]]]) -> None:
    """Run the writer through one batch per (cost per node, dirty nodes) entry, then stop it."""
    task = asyncio.create_task(writer.run())
    try:
        for cost, nodes in plan:
            writer.cost = cost
            done = len(writer.written) + len(nodes)
            runtime.mark(nodes)
            for _ in range(1000):
                if len(writer.written) >= done and not runtime.wakeup.is_set():
                    break
                await asyncio.sleep(0)
            assert len(writer.written) == done
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


class TestWriterUnderLoad:
    async def test_the_wait_follows_the_last_batch_and_returns_to_the_window(self) -> None:
        clock = Clock()
        runtime = Runtime(OperatorConfig(coalesce_window=0.2, coalesce_window_max=1.0), Metrics(), clock)
        runtime.rebuilt.set()
        pauses: list[float] = []
        writer = SlowWriter(runtime, clock, pauses)
        nodes = {f"worker-{i}" for i in range(10)}
        # Idle: 10 nodes at 1 ms. Saturated: 10 nodes at 50 ms (0.5 s), then at 300 ms (3 s, capped).
        # Then idle again: the wait falls back to the window.
        await batches(writer, runtime, [(0.001, nodes), (0.05, nodes), (0.3, nodes), (0.001, nodes),
                                        (0.001, nodes)])
        assert pauses == pytest.approx([0.2, 0.2, 0.5, 1.0, 0.2])

    async def test_every_dirty_node_is_still_written_once_per_batch(self) -> None:
        clock = Clock()
        runtime = Runtime(OperatorConfig(), Metrics(), clock)
        runtime.rebuilt.set()
        writer = SlowWriter(runtime, clock, [])
        await batches(writer, runtime, [(0.4, {"a", "b"}), (0.4, {"b", "c"})])
        assert writer.written == ["a", "b", "b", "c"]

    async def test_caught_up_only_once_the_rebuilt_ledgers_are_all_planned(self) -> None:
        """``caught_up`` (when the operator freezes what the rebuild built): not while the rebuild is
        incomplete, however long the dirty set waits; set once every dirty node is done."""
        clock = Clock()
        runtime = Runtime(OperatorConfig(), Metrics(), clock)
        writer = SlowWriter(runtime, clock, [])
        task = asyncio.create_task(writer.run())
        try:
            runtime.mark({"a", "b"})
            for _ in range(100):
                await asyncio.sleep(0)
            assert not writer.caught_up.is_set()
            assert writer.written == []
            runtime.rebuilt.set()
            runtime.wakeup.set()
            await asyncio.wait_for(writer.caught_up.wait(), timeout=5)
            assert writer.written == ["a", "b"]
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task


@pytest.fixture
def restored_gc() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


class TestCollector:
    def test_run_raises_only_the_young_generation_threshold(self, restored_gc: None) -> None:
        gc.set_threshold(700, 11, 12)
        tune_gc(OperatorConfig(gc_threshold=25_000))
        assert gc.get_threshold() == (25_000, 11, 12)

    def test_zero_keeps_what_python_has(self, restored_gc: None) -> None:
        gc.set_threshold(700, 10, 10)
        tune_gc(OperatorConfig(gc_threshold=0))
        assert gc.get_threshold() == (700, 10, 10)


def parsed(argv: list[str], monkeypatch: pytest.MonkeyPatch, **env: str) -> OperatorConfig:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return from_args(parser.parse_args(argv))


class TestFlags:
    def test_defaults(self, monkeypatch: pytest.MonkeyPatch) -> None:
        config = parsed([], monkeypatch)
        assert (config.coalesce_window, config.coalesce_window_max, config.gc_threshold) == (0.2, 1.0, 10_000)

    def test_flags_and_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        config = parsed(["--coalesce-window-max", "3"], monkeypatch, DRALEDGER_GC_THRESHOLD="0")
        assert (config.coalesce_window_max, config.gc_threshold) == (3.0, 0)

    def test_the_cap_is_never_below_the_window(self, monkeypatch: pytest.MonkeyPatch) -> None:
        config = parsed(["--coalesce-window", "0.5", "--coalesce-window-max", "0.1"], monkeypatch)
        assert config.coalesce_window_max == 0.5



def observed() -> tuple[Metrics, Ledger, Callable[[], float | None]]:
    """Metrics, the first node's ledger of case v01, and the node's ``requested`` cpu series as scraped."""
    runtime = Runtime(OperatorConfig(), Metrics(), Clock())
    for item in case_items("v01"):
        runtime.event(KIND[item["kind"]], None, item)
    node = sorted(runtime.state.nodes)[0]
    ledger = runtime.state.ledger(node)
    assert ledger is not None
    metrics = runtime.metrics

    def requested() -> float | None:
        return metrics.registry.get_sample_value(
            "draledger_node_resource", {"node": node, "resource": "cpu", "figure": "requested"}
        )

    return metrics, ledger, requested


class TestMetricSetters:
    def test_a_forgotten_node_comes_back_when_observed_again(self) -> None:
        """Setters are cached per series; forgetting a node must not leave them pointing at removed series."""
        metrics, ledger, requested = observed()
        metrics.observe_ledger(ledger)
        value = requested()
        assert value is not None
        assert value > 0
        metrics.forget_node(ledger.node_name)
        assert requested() is None
        metrics.observe_ledger(ledger)
        assert requested() == value

    def test_every_series_of_a_node_is_scraped_and_forgotten_with_it(self) -> None:
        metrics, ledger, _ = observed()
        node = ledger.node_name
        metrics.observe_ledger(ledger)
        metrics.set_phase(node, "Stale")
        get = metrics.registry.get_sample_value
        assert [get("draledger_ledger_phase", {"node": node, "phase": p}) for p in PHASES] == [
            1.0 if p == "Stale" else 0.0 for p in PHASES]
        for name in ("draledger_shared_claims", "draledger_numa_spanning_claims", "draledger_divergent_claims"):
            assert get(name, {"node": node}) == 0
        cpu = ledger.resources["cpu"]
        assert [get("draledger_node_resource", {"node": node, "resource": "cpu", "figure": f}) for f in FIGURES] == [
            float(cpu.allocatable.value), float(cpu.requested.value), float(cpu.free.value),
            float(cpu.claims.value), float((cpu.claims - cpu.scheduler_charged).value)]
        metrics.forget_node(node)
        assert not [s for f in metrics.registry.collect() for s in f.samples if s.labels.get("node") == node]

    def test_a_node_costs_a_few_hundred_bytes_of_series(self) -> None:
        """Labelled prometheus-client children cost 24 KiB a node (28 series); the scrape-time collector keeps
        the figures only."""
        metrics, ledger, _ = observed()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for index in range(200):
                name = f"ip-10-0-{index}-1.eu-west-1.compute.internal"
                metrics.observe_ledger(dataclasses.replace(ledger, node_name=name))
                metrics.set_phase(name, "Ready")
            per_node = (tracemalloc.get_traced_memory()[0] - before) / 200
        finally:
            tracemalloc.stop()
        assert per_node < 2048

    def test_an_unchanged_line_sets_nothing_and_a_changed_one_is_set(self) -> None:
        """Lines equal to the last ones observed are skipped (most writes change one resource); any change
        reaches its series."""
        metrics, ledger, requested = observed()
        metrics.observe_ledger(ledger)
        before = requested()
        assert before
        metrics.observe_ledger(ledger)
        assert before == requested()
        line = ledger.resources["cpu"]
        grown = dataclasses.replace(line, requested=line.requested + line.requested)
        metrics.observe_ledger(dataclasses.replace(ledger, resources={**ledger.resources, "cpu": grown}))
        assert 2 * before == requested()
