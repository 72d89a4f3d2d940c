"""Prometheus metrics, all named ``draledger_*``, in the operator's own registry."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from draledger.core.accounting.ledger import Ledger, ResourceLine
from draledger.core.phases import PHASES
from draledger.core.quantities import NANO, Quantity

disable_created_metrics()  # type: ignore[no-untyped-call]  # *_created series only double the scrape size
FIGURES = ("allocatable", "requested", "free", "claims", "divergence")


def _number(quantity: Quantity) -> float:
    """Prometheus speaks float64; this is the only place a quantity becomes a float, for export. Python's
    integer true division rounds correctly: the nearest float to the exact value, as ``float(quantity.value)``
    gives, without the Decimal."""
    return quantity.nanos / NANO


def _figures(line: ResourceLine) -> tuple[float, ...]:
    """One resource line's ``FIGURES``, as exported."""
    return (
        _number(line.allocatable),
        _number(line.requested),
        _number(line.free),
        _number(line.claims),
        _number(line.claims - line.scheduler_charged),
    )


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


@dataclass(slots=True)
class _Node:
    lines: dict[str, tuple[float, ...]] = field(default_factory=dict)  # resource -> FIGURES, as exported
    claims: tuple[int, int, int] | None = None  # shared, NUMA-spanning, divergent
    phase: str = ""


class _NodeSeries(Collector):
    """The per-node series, built at scrape time from what each node's last ledger showed:
    ``draledger_node_resource``, ``draledger_shared_claims``, ``draledger_numa_spanning_claims``,
    ``draledger_divergent_claims`` and ``draledger_ledger_phase``. As labelled prometheus-client children
    (an object and a lock per series, 28 series a node) they cost 24 KiB a node: 117 MiB at 5,000 nodes."""

    def __init__(self) -> None:
        self.nodes: dict[str, _Node] = {}

    def collect(self) -> Iterable[GaugeMetricFamily]:
        resource = GaugeMetricFamily(
            "draledger_node_resource",
            "Ledger figures per node and resource, in base units (cores, bytes)",
            labels=["node", "resource", "figure"],
        )
        shared = GaugeMetricFamily(
            "draledger_shared_claims", "Claims consumed by several counted pods (SharedAcrossPods)", labels=["node"]
        )
        spanning = GaugeMetricFamily(
            "draledger_numa_spanning_claims", "Claims whose devices span NUMA zones", labels=["node"]
        )
        divergent = GaugeMetricFamily(
            "draledger_divergent_claims",
            "Claims whose ledger charge differs from what the scheduler charged",
            labels=["node"],
        )
        phase = GaugeMetricFamily(
            "draledger_ledger_phase", "1 for the node's current ledger phase", labels=["node", "phase"]
        )
        for node, seen in self.nodes.items():
            for name, values in seen.lines.items():
                for figure, value in zip(FIGURES, values, strict=True):
                    resource.add_metric([node, name, figure], value)
            claims = seen.claims
            if claims is not None:
                for family, count in zip((shared, spanning, divergent), claims, strict=True):
                    family.add_metric([node], count)
            current = seen.phase
            if current:
                for name in PHASES:
                    phase.add_metric([node, name], 1.0 if name == current else 0.0)
        yield from (resource, shared, spanning, divergent, phase)


class _PhaseCounts(Collector):
    """``draledger_ledgers{phase}``, counted at scrape time from the stored ledgers of the nodes the operator
    accounts for (operator/running.py, rule 2): counting them after every write pass cost a pass over every node
    (1.5 ms at 5,000 nodes, about 75 µs a pod event at 100/s)."""

    def __init__(self) -> None:
        self.phases: Callable[[], Iterable[str]] = lambda: ()

    def collect(self) -> Iterable[GaugeMetricFamily]:
        counts: dict[str, int] = dict.fromkeys(PHASES, 0)
        for phase in self.phases():
            counts[phase] = counts.get(phase, 0) + 1
        family = GaugeMetricFamily(
            "draledger_ledgers", "Ledgers of the nodes this operator accounts for, by phase", labels=["phase"]
        )
        for phase, count in counts.items():
            family.add_metric([phase], count)
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


class _BuildInfo(Collector):
    """``draledger_build_info{version,commit,release} 1``, as Kubernetes components export ``kubernetes_build_info``:
    the build (operator/builds.py) and the Kubernetes release whose rules are in force, read at each scrape
    from ``Metrics.release`` (``unknown`` until the runtime sets it)."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterable[GaugeMetricFamily]:
        from draledger.operator import builds

        family = GaugeMetricFamily(
            "draledger_build_info",
            "1, labelled with the operator's version and commit and the Kubernetes release whose rules apply",
            labels=["version", "commit", "release"],
        )
        family.add_metric([builds.version(), builds.commit(), self._metrics.release or builds.UNKNOWN], 1.0)
        yield family


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        # The Kubernetes release whose accounting rules are in force (``v1.37``), for draledger_build_info.
        self.release = "unknown"
        r.register(_BuildInfo(self))
        self._phase_counts = _PhaseCounts()
        r.register(self._phase_counts)
        self.slice_regressions = Counter(
            "draledger_slice_generation_regressions",
            "ResourceSlice updates rejected for an older pool generation",
            registry=r,
        )
        self.watch_restarts = Counter("draledger_watch_restarts", "Relists after a broken watch", ["kind"], registry=r)
        self.rebuild_seconds = Gauge(
            "draledger_rebuild_duration_seconds", "Time from start to rebuilt ledgers", registry=r
        )
        # Watch events applied, per kind. Filled on a kind's first event, so no series appears before it.
        self.event_counts: dict[str, int] = {}
        r.register(_EventCounts(self.event_counts))
        self._nodes = _NodeSeries()
        r.register(self._nodes)
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
        self.gated = Gauge(
            "draledger_gated_pods",
            "Pods held by the draledger.dev/ledger-ready gate, by reason",
            ["reason"],
            registry=r,
        )
        self.gated_oldest = Gauge(
            "draledger_gated_pod_oldest_seconds", "Age of the oldest pod still held by the gate", registry=r
        )
        self._gated_reasons: set[str] = set()  # every reason ever counted: one no pod has any more reads 0
        self.admissions = Counter(
            "draledger_webhook_admissions",
            "Pod CREATE reviews the gating webhook answered: gated, or passed (and why)",
            ["result"],
            registry=r,
        )
        self.gate_releases = Counter(
            "draledger_gate_releases", "Gates removed (pods released to the scheduler)", registry=r
        )
        self.events_dropped = Counter(
            "draledger_events_dropped",
            "Events not sent: what they reported (a pod held for a reason) had passed before their turn came",
            registry=r,
        )
        self.release_passes = Counter(
            "draledger_gate_release_passes", "Passes of the gate releaser over the held pods", registry=r
        )
        self.frozen = Gauge("draledger_frozen", "1 when admission of new claim pods is frozen cluster-wide", registry=r)
        self.leader = Gauge(
            "draledger_leader",
            "1 on the replica that writes: the holder of the leader Lease (or any replica without leader election)",
            registry=r,
        )
        self.leader.set_function(lambda: 1.0)  # until an elector says otherwise (Operator)
    def set_gated(self, counts: Mapping[str, int], oldest: float) -> None:
        """The pods held by the gate now, by reason, and the age of the oldest."""
        self._gated_reasons.update(counts)
        for reason in self._gated_reasons:
            self.gated.labels(reason).set(counts.get(reason, 0))
        self.gated_oldest.set(oldest)

    def count_event(self, kind: str) -> None:
        counts = self.event_counts
        counts[kind] = counts.get(kind, 0) + 1

    def watch_mapping_ages(self, ages: Callable[[], Iterable[tuple[str, float]]]) -> None:
        """``draledger_mapping_age_seconds{node}`` reports what ``ages`` gives at each scrape (for the nodes the
        operator accounts for)."""
        self.registry.register(_MappingAge(ages))

    def observe_ledger(self, ledger: Ledger) -> None:
        seen = self._nodes.nodes.get(ledger.node_name)
        if seen is None:
            seen = self._nodes.nodes[ledger.node_name] = _Node()
        lines = {name: _figures(line) for name, line in ledger.resources.items()}
        if lines != seen.lines:
            seen.lines = lines
        claims = ledger.claims
        seen.claims = (
            sum("SharedAcrossPods" in c.problems for c in claims),
            sum(len(c.zones) > 1 for c in claims),
            sum(c.resources != c.scheduler_charged for c in claims),
        )

    def set_phase(self, node: str, phase: str) -> None:
        seen = self._nodes.nodes.get(node)
        if seen is None:
            seen = self._nodes.nodes[node] = _Node()
        seen.phase = phase

    def watch_phases(self, phases: Callable[[], Iterable[str]]) -> None:
        """``draledger_ledgers`` counts what ``phases`` gives at each scrape (the phases of the stored ledgers the
        operator accounts for)."""
        self._phase_counts.phases = phases

    def forget_node(self, node: str) -> None:
        self._nodes.nodes.pop(node, None)
