"""The gate benchmark's figures, from what one run recorded (no I/O, no clock).

Rules:
1. Every time is a pod's own, on one monotonic clock (``CLOCK_MONOTONIC``, shared by the benchmark's processes):
   ``sent`` (its POST left), ``answered`` (the create's answer came back: admission done), ``released`` (the
   first watch event without our gate; the answer's time for a pod created without it) and ``bound`` (the first
   watch event with ``spec.nodeName``). Time to bind is ``bound - sent``.
2. Percentiles are nearest-rank over the pods of every burst of one configuration (all rounds pooled).
3. A configuration's binding throughput is its bound pods over the time from the first POST to the last
   binding, summed over its bursts; the ratio of a gate is its throughput over the ungated one of the same run.
4. "Added" is the gated configuration's percentile minus the ungated one's; the faster gate is the one of
   dra-ledger's two with the smaller added p50 (then p99).
5. The floor (``FLOOR``) is the policy's gate released by a process that does nothing else (gate_floor.py): its
   added percentiles and throughput ratio are what any gate-based design pays here. A dra-ledger gate's cost
   over the floor is its percentile minus the floor's (its added less the floor's added) and its throughput over
   the floor's: what dra-ledger's own design costs.
   The Kopf floor (``KOPF_FLOOR``, with ``--kopf-floor``) is the same releaser handed its pods by a Kopf operator
   that watches what dra-ledger watches (gate_floor.py rule 6): its cost over the floor is Kopf's delivery of
   those events, and a dra-ledger gate's cost over it (``over_kopf_floor``) is what its design costs beyond the
   framework it is built on.
6. Waiting on our gate while the scheduler is idle: at each sample of kube-scheduler's own queue gauges where
   its active and backoff queues are both empty (nothing it could work on), the pods created with our gate more
   than ``GRACE`` ago and not released yet. The target is 0 at every sample.
7. A configuration's operator CPU is its releasing process's (``operator_process``): dra-ledger's, or the
   floor's releaser's.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

GRACE = 0.25  # seconds a new pod may wait on the gate before it counts against rule 6
PERCENTILES = (("p50", 0.50), ("p90", 0.90), ("p99", 0.99))
GATES = ("policy", "webhook")  # dra-ledger's
UNGATED = "none"
FLOOR = "floor"
KOPF_FLOOR = "kopf-floor"
FLOORS = (FLOOR, KOPF_FLOOR)
CONFIGURATIONS = (UNGATED, *FLOORS, *GATES)
HEADLINE = ("added_p50_ms", "added_p99_ms", "throughput_ratio", "operator_cpu_s")  # the faster gate's
FLOOR_HEADLINE = {"floor_added_p50_ms": "added_p50_ms", "floor_added_p99_ms": "added_p99_ms",
                  "floor_throughput_ratio": "throughput_ratio", "floor_releaser_cpu_s": "operator_cpu_s",
                  "floor_max_waiting_while_idle": "max_waiting_while_idle"}
OVER_FLOOR = ("added_p50_ms", "added_p99_ms", "throughput_ratio")  # the faster gate's, as over_floor_<key>
KOPF_FLOOR_HEADLINE = {f"kopf_{key}": name for key, name in FLOOR_HEADLINE.items()}


def operator_process(config: str) -> str:
    """Rule 7: the process whose CPU is the configuration's operator CPU (a key of ``Burst.cpu``)."""
    return "releaser" if config in FLOORS else "draledger"


@dataclass(slots=True)
class PodRecord:
    name: str
    kind: str
    sent: float
    answered: float = math.nan
    gated: bool = False  # created with our gate (the create's answer)
    released: float | None = None
    bound: float | None = None
    node: str = ""


@dataclass(frozen=True, slots=True)
class QueueSample:
    """kube-scheduler's ``scheduler_pending_pods`` by queue, read at ``at``."""

    at: float
    active: int
    backoff: int
    unschedulable: int
    gated: int

    @property
    def idle(self) -> bool:
        return self.active == 0 and self.backoff == 0


@dataclass(slots=True)
class Burst:
    config: str  # none | floor | policy | webhook | restart | failover | handover
    round: int
    pods: list[PodRecord]
    samples: list[QueueSample] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)  # process -> CPU seconds over the burst (rule 7)
    done: float = math.nan  # when the last expected event was seen (or the deadline passed)
    complete: bool = True
    disruption: tuple[float, float] | None = None  # restart / failover: from the stop to the successor's lead

    @property
    def start(self) -> float:
        return min(pod.sent for pod in self.pods)

    def bound(self) -> list[PodRecord]:
        return [pod for pod in self.pods if pod.bound is not None]

    def throughput(self) -> float:
        bound = self.bound()
        if not bound:
            return 0.0
        return len(bound) / max(1e-9, max(pod.bound for pod in bound if pod.bound is not None) - self.start)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (rule 2); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))]


def spread(seconds: list[float]) -> dict[str, float | None]:
    """p50, p90, p99 and max of ``seconds``, in milliseconds, with the count (None for no values: JSON has no NaN)."""
    if not seconds:
        return {**{name: None for name, _ in PERCENTILES}, "max": None, "n": 0}
    out: dict[str, float | None] = {name: round(percentile(seconds, q) * 1000, 1) for name, q in PERCENTILES}
    out["max"] = round(max(seconds) * 1000, 1)
    out["n"] = len(seconds)
    return out


def records(burst: Burst) -> dict[str, Any]:
    """A burst's pods as rows (times in seconds from the burst's first POST), for a closer look."""
    start = burst.start

    def rel(at: float | None) -> float | None:
        return None if at is None or math.isnan(at) else round(at - start, 4)

    return {"config": burst.config, "round": burst.round, "complete": burst.complete,
            "disruption": [rel(at) for at in burst.disruption] if burst.disruption else None,
            "columns": ["name", "kind", "sent", "answered", "gated", "released", "bound", "node"],
            "pods": [[p.name, p.kind, rel(p.sent), rel(p.answered), p.gated, rel(p.released), rel(p.bound), p.node]
                     for p in burst.pods],
            "queue": [[rel(s.at), s.active, s.backoff, s.unschedulable, s.gated] for s in burst.samples]}


def times(pods: list[PodRecord]) -> dict[str, list[float]]:
    """The per-pod intervals of rule 1, for the pods that reached each step."""
    out: dict[str, list[float]] = {"bind": [], "release": [], "release_to_bind": [], "create": []}
    for pod in pods:
        if not math.isnan(pod.answered):
            out["create"].append(pod.answered - pod.sent)
        if pod.released is not None and pod.gated:
            out["release"].append(pod.released - pod.sent)
        if pod.bound is not None:
            out["bind"].append(pod.bound - pod.sent)
            if pod.released is not None and pod.gated:
                out["release_to_bind"].append(pod.bound - pod.released)
    return out


def waiting_while_idle(burst: Burst, grace: float = GRACE) -> dict[str, Any]:
    """Rule 6 over one burst: how many samples found the scheduler idle, and our gate holding pods then."""
    held = [(pod.answered, pod.released) for pod in burst.pods if pod.gated and not math.isnan(pod.answered)]
    idle = [s for s in burst.samples if burst.start <= s.at <= burst.done and s.idle]
    counts = [sum(1 for answered, released in held
                  if answered + grace <= s.at and (released is None or released > s.at)) for s in idle]
    return {"samples": sum(1 for s in burst.samples if burst.start <= s.at <= burst.done),
            "idle_samples": len(idle), "samples_with_waiting": sum(1 for n in counts if n),
            "max_waiting": max(counts, default=0)}


def configuration(bursts: list[Burst]) -> dict[str, Any]:
    """The pooled figures of one configuration's bursts (rules 2 and 3)."""
    pods = [pod for burst in bursts for pod in burst.pods]
    intervals = times(pods)
    bound = sum(len(burst.bound()) for burst in bursts)
    seconds = sum(max(pod.bound for pod in burst.bound() if pod.bound is not None) - burst.start
                  for burst in bursts if burst.bound())
    cpu: dict[str, list[float]] = {}
    for burst in bursts:
        for name, value in burst.cpu.items():
            cpu.setdefault(name, []).append(value)
    idle = [waiting_while_idle(burst) for burst in bursts]
    return {
        "bursts": len(bursts),
        "pods": len(pods),
        "bound": bound,
        "created_gated": sum(1 for pod in pods if pod.gated),
        "never_released": sum(1 for pod in pods if pod.gated and pod.released is None),
        "incomplete_bursts": sum(1 for burst in bursts if not burst.complete),
        "time_to_bind_ms": spread(intervals["bind"]),
        "time_to_release_ms": spread(intervals["release"]),
        "release_to_bind_ms": spread(intervals["release_to_bind"]),
        "create_ms": spread(intervals["create"]),
        "throughput_pods_s": round(bound / seconds, 2) if seconds else 0.0,
        "throughput_by_round": [round(burst.throughput(), 2) for burst in bursts],
        "cpu_s_per_burst": {name: round(statistics.fmean(values), 2) for name, values in sorted(cpu.items())},
        "waiting_while_idle": {
            "samples": sum(i["samples"] for i in idle), "idle_samples": sum(i["idle_samples"] for i in idle),
            "samples_with_waiting": sum(i["samples_with_waiting"] for i in idle),
            "max_waiting": max((i["max_waiting"] for i in idle), default=0)},
    }


def _less(mine: dict[str, Any], base: dict[str, Any], key: str) -> float | None:
    gated, ungated = mine["time_to_bind_ms"][key], base["time_to_bind_ms"][key]
    return None if gated is None or ungated is None else round(gated - ungated, 1)


def _ratios(mine: dict[str, Any], base: dict[str, Any], rounds: list[float], base_rounds: list[float]
            ) -> tuple[float | None, float | None]:
    """Pooled throughput over ``base``'s, and the median of the rounds' ratios (rule 3)."""
    ratios = [g / u for g, u in zip(rounds, base_rounds, strict=False) if u]
    pooled = round(mine["throughput_pods_s"] / base["throughput_pods_s"], 3) if base["throughput_pods_s"] else None
    return pooled, round(statistics.median(ratios), 3) if ratios else None


def gate_costs(configs: dict[str, dict[str, Any]], by_round: dict[str, list[float]]) -> dict[str, dict[str, Any]]:
    """Per gate and for each floor (rules 4 and 5): added time to bind at p50/p99 and the throughput ratio, against
    the ungated runs; for the Kopf floor and dra-ledger's gates also ``over_floor``, the same figures against the
    floor's runs, and for the gates ``over_kopf_floor``, against the Kopf floor's."""
    base = configs[UNGATED]
    out: dict[str, dict[str, Any]] = {}
    for config in (*GATES, *FLOORS):
        if config not in configs:
            continue
        mine = configs[config]
        pooled, median = _ratios(mine, base, by_round.get(config, []), by_round.get(UNGATED, []))
        out[config] = {
            "added_p50_ms": _less(mine, base, "p50"),
            "added_p99_ms": _less(mine, base, "p99"),
            "throughput_ratio": pooled,
            "throughput_ratio_median_of_rounds": median,
            "operator_cpu_s": mine["cpu_s_per_burst"].get(operator_process(config)),
            "max_waiting_while_idle": mine["waiting_while_idle"]["max_waiting"],
        }
        beneath = (FLOOR, KOPF_FLOOR) if config in GATES else (FLOOR,) if config == KOPF_FLOOR else ()
        for floor_config in beneath:
            if floor_config in configs:
                floor = configs[floor_config]
                pooled, median = _ratios(mine, floor, by_round.get(config, []), by_round.get(floor_config, []))
                out[config][f"over_{floor_config.replace('-', '_')}"] = {
                    "added_p50_ms": _less(mine, floor, "p50"), "added_p99_ms": _less(mine, floor, "p99"),
                    "throughput_ratio": pooled, "throughput_ratio_median_of_rounds": median}
    return out


def faster(costs: dict[str, dict[str, Any]]) -> str:
    """The gate with the smaller added p50, then p99 (rule 4)."""
    def key(gate: str) -> tuple[float, float]:
        p50, p99 = costs[gate]["added_p50_ms"], costs[gate]["added_p99_ms"]
        return (math.inf if p50 is None else p50, math.inf if p99 is None else p99)

    return min(costs, key=key)


def disrupted(burst: Burst) -> dict[str, Any]:
    """A restart or failover burst: time to bind of the pods created while no operator was leading, against the
    pods of the same burst created before the stop."""
    assert burst.disruption is not None
    stop, lead = burst.disruption
    during = [pod for pod in burst.pods if stop <= pod.sent <= lead]
    before = [pod for pod in burst.pods if pod.sent < stop]
    after = [pod for pod in burst.pods if pod.sent > lead]
    return {
        "gap_ms": round((lead - stop) * 1000, 1),
        "during": spread(times(during)["bind"]),
        "before": spread(times(before)["bind"]),
        "after": spread(times(after)["bind"]),
        "never_released": sum(1 for pod in burst.pods if pod.gated and pod.released is None),
        "bound": len(burst.bound()),
        "pods": len(burst.pods),
        "complete": burst.complete,
        "cpu_s": {name: round(value, 2) for name, value in sorted(burst.cpu.items())},
    }


def summarize(bursts: list[Burst], disruptions: dict[str, Burst]) -> dict[str, Any]:
    """Every figure of a run: per configuration, per gate, the faster gate's headline (``HEADLINE``), the floor's
    (``FLOOR_HEADLINE``; None without floor bursts), the faster gate's cost over the floor (``over_floor_*``) and
    each disruption; ``complete`` is False when any burst reached its deadline."""
    present = [config for config in CONFIGURATIONS if any(b.config == config for b in bursts)]
    configs = {config: configuration([b for b in bursts if b.config == config]) for config in present}
    by_round = {config: [b.throughput() for b in bursts if b.config == config] for config in present}
    costs = gate_costs(configs, by_round)
    floor, kopf_floor = costs.pop(FLOOR, None), costs.pop(KOPF_FLOOR, None)
    best = faster(costs)
    over, over_kopf = costs[best].get("over_floor") or {}, costs[best].get("over_kopf_floor") or {}
    return {
        "faster_gate": best, **{key: costs[best][key] for key in HEADLINE},
        **{key: floor[name] if floor else None for key, name in FLOOR_HEADLINE.items()},
        **{f"over_floor_{key}": over.get(key) for key in OVER_FLOOR},
        **{key: kopf_floor[name] if kopf_floor else None for key, name in KOPF_FLOOR_HEADLINE.items()},
        **{f"over_kopf_floor_{key}": over_kopf.get(key) for key in OVER_FLOOR},
        "gates": costs, "floor": floor, "kopf_floor": kopf_floor, "configurations": configs,
        **{name: disrupted(burst) for name, burst in disruptions.items()},
        "complete": all(b.complete for b in [*bursts, *disruptions.values()]),
    }
