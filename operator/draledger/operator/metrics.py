"""Prometheus metrics, all named ``draledger_*``, in the operator's own registry."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from draledger.core.accounting.ledger import PHASES, Ledger, ResourceLine
from draledger.core.quantities import Quantity

disable_created_metrics()  # type: ignore[no-untyped-call]  # *_created series only double the scrape size
FIGURES = ("allocatable", "requested", "free", "claims", "divergence")


def _number(quantity: Quantity) -> float:
    """Prometheus speaks float64; this is the only place a quantity becomes a float, for export."""
    return float(quantity.value)


class _MappingAge(Collector):
    def __init__(self, ages: Callable[[], Iterable[tuple[str, float]]]) -> None:
        self._ages = ages

    def collect(self) -> Iterable[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "draledger_mapping_age_seconds",
            "Seconds since the node's mappingVersion last changed",
            labels=["node"],
        )
        for node, age in self._ages():
            family.add_metric([node], age)
        yield family


class _EventCounts(Collector):
    """``draledger_events_processed_total``, read from plain counts at scrape time. A prometheus Counter
    takes a lock per increment (about 2 µs), once per watch event: a thirtieth of the core's cost."""

    def __init__(self, counts: dict[str, int]) -> None:
        self._counts = counts

    def collect(self) -> Iterable[CounterMetricFamily]:
        family = CounterMetricFamily("draledger_events_processed", "Watch events applied to the state", labels=["kind"])
        for kind, count in list(self._counts.items()):  # list(): one atomic copy against the event loop
            family.add_metric([kind], count)
        yield family


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.resource = Gauge(
            "draledger_node_resource",
            "Ledger figures per node and resource, in base units (cores, bytes)",
            ["node", "resource", "figure"],
            registry=r,
        )
        self.ledgers = Gauge("draledger_ledgers", "Ledgers by phase", ["phase"], registry=r)
        self.slice_regressions = Counter(
            "draledger_slice_generation_regressions",
            "ResourceSlice updates rejected for an older pool generation",
            registry=r,
        )
        self.shared_claims = Gauge(
            "draledger_shared_claims",
            "Claims consumed by several counted pods (SharedAcrossPods)",
            ["node"],
            registry=r,
        )
        self.numa_spanning = Gauge(
            "draledger_numa_spanning_claims", "Claims whose devices span NUMA zones", ["node"], registry=r
        )
        self.watch_restarts = Counter("draledger_watch_restarts", "Relists after a broken watch", ["kind"], registry=r)
        self.rebuild_seconds = Gauge(
            "draledger_rebuild_duration_seconds", "Time from start to rebuilt ledgers", registry=r
        )
        # Watch events applied, per kind. Filled on a kind's first event, so no series appears before it.
        self.event_counts: dict[str, int] = {}
        r.register(_EventCounts(self.event_counts))
        self.writes = Counter("draledger_status_writes", "API writes by target", ["target"], registry=r)
        self.write_failures = Counter(
            "draledger_status_write_failures",
            "Failed API writes by target and code",
            ["target", "code"],
            registry=r,
        )
        self.write_latency = Histogram(
            "draledger_write_latency_seconds",
            "From a node turning dirty to its ledger write completing",
            registry=r,
            buckets=(0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 2, 5, 10),
        )
        self.backfill_disabled = Gauge(
            "draledger_pod_status_backfill_disabled",
            "1 when the API server drops status.nodeAllocatableResourceClaimStatuses (gate off)",
            registry=r,
        )
        self.divergent_claims = Gauge(
            "draledger_divergent_claims",
            "Claims whose ledger charge differs from what the scheduler charged",
            ["node"],
            registry=r,
        )
        self.phase = Gauge(
            "draledger_ledger_phase", "1 for the node's current ledger phase", ["node", "phase"], registry=r
        )
        self.gated = Gauge(
            "draledger_gated_pods",
            "Pods held by the draledger.dev/ledger-ready gate, by reason",
            ["reason"],
            registry=r,
        )
        self.gated_oldest = Gauge(
            "draledger_gated_pod_oldest_seconds", "Age of the oldest pod still held by the gate", registry=r
        )
        self.admissions = Counter(
            "draledger_webhook_admissions",
            "Pod CREATE reviews the gating webhook answered: gated, or passed (and why)",
            ["result"],
            registry=r,
        )
        self.gate_releases = Counter(
            "draledger_gate_releases", "Gates removed (pods released to the scheduler)", registry=r
        )
        self.frozen = Gauge("draledger_frozen", "1 when admission of new claim pods is frozen cluster-wide", registry=r)
        self.leader = Gauge(
            "draledger_leader",
            "1 on the replica that writes: the holder of the leader Lease (or any replica without leader election)",
            registry=r,
        )
        self.leader.set_function(lambda: 1.0)  # until an elector says otherwise (Operator)
        for phase in PHASES:
            self.ledgers.labels(phase).set(0)
        # (gauge, label values) -> that child's bound ``set``: a ledger write sets about twenty series.
        self._setters: dict[tuple[Gauge, tuple[str, ...]], Callable[[float], None]] = {}
        self._lines: dict[tuple[str, str], ResourceLine] = {}  # (node, resource) -> the line last set

    def count_event(self, kind: str) -> None:
        counts = self.event_counts
        counts[kind] = counts.get(kind, 0) + 1

    def watch_mapping_ages(self, ages: Callable[[], Iterable[tuple[str, float]]]) -> None:
        self.registry.register(_MappingAge(ages))

    def _setter(self, gauge: Gauge, *labels: str) -> Callable[[float], None]:
        """``gauge.labels(*labels).set``, looked up once (``labels`` takes a lock and checks every value)."""
        key = (gauge, labels)
        setter = self._setters.get(key)
        if setter is None:
            setter = self._setters[key] = gauge.labels(*labels).set
        return setter

    def observe_ledger(self, ledger: Ledger) -> None:
        node = ledger.node_name
        setter = self._setter
        seen = self._lines
        for name, line in ledger.resources.items():
            if seen.get((node, name)) == line:
                continue
            seen[(node, name)] = line
            values = (
                line.allocatable,
                line.requested,
                line.free,
                line.claims,
                line.claims - line.scheduler_charged,
            )
            for figure, value in zip(FIGURES, values, strict=True):
                setter(self.resource, node, name, figure)(_number(value))
        setter(self.shared_claims, node)(sum("SharedAcrossPods" in c.problems for c in ledger.claims))
        setter(self.numa_spanning, node)(sum(len(c.zones) > 1 for c in ledger.claims))
        setter(self.divergent_claims, node)(sum(c.resources != c.scheduler_charged for c in ledger.claims))

    def set_phase(self, node: str, phase: str) -> None:
        for name in PHASES:
            self.phase.labels(node, name).set(1 if name == phase else 0)

    def count_phases(self, phases: Iterable[str]) -> None:
        counts = dict.fromkeys(PHASES, 0)
        for phase in phases:
            counts[phase] = counts.get(phase, 0) + 1
        for phase, count in counts.items():
            self.ledgers.labels(phase).set(count)

    def forget_node(self, node: str) -> None:
        self._lines = {k: v for k, v in self._lines.items() if k[0] != node}
        self._setters = {k: v for k, v in self._setters.items() if not k[1] or k[1][0] != node}
        for gauge in (self.shared_claims, self.numa_spanning, self.divergent_claims):
            with contextlib.suppress(KeyError):
                gauge.remove(node)
        for phase in PHASES:
            with contextlib.suppress(KeyError):
                self.phase.remove(node, phase)
        for labels in list(self.resource._metrics):
            if labels[0] == node:
                self.resource.remove(*labels)
