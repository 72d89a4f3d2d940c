"""The gate benchmark's pure parts (benchmarks/gate_plan.py, gate_figures.py, gate_report.py, and the floor's
releaser of gate_floor.py against a stand-in for the API): the seeded plan, the figures it reports, the targets it
judges, and what the floor's releaser sends. The benchmark itself needs a control plane; its smoke run is a step
of .ci/run."""

from __future__ import annotations

import asyncio
import math
import sys
from collections import Counter
from pathlib import Path

import jsonpatch
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import gate_figures as figures
import gate_floor
import gate_plan
import gate_report
from gate_figures import Burst, PodRecord, QueueSample


def pod(name: str, sent: float, *, answered: float | None = None, gated: bool = True,
        released: float | None = None, bound: float | None = None) -> PodRecord:
    return PodRecord(name, "core", sent, sent + 0.01 if answered is None else answered, gated, released, bound)


def idle_at(at: float) -> QueueSample:
    return QueueSample(at, 0, 0, 0, 0)


def busy_at(at: float) -> QueueSample:
    return QueueSample(at, 1, 0, 0, 0)


class TestPlan:
    def test_the_same_seed_gives_the_same_plan(self) -> None:
        """Two plans of one seed and size are equal, and another seed orders the kinds otherwise."""
        assert gate_plan.plan(7, 100, 300) == gate_plan.plan(7, 100, 300)
        assert gate_plan.plan(7, 100, 300).kinds != gate_plan.plan(8, 100, 300).kinds

    @pytest.mark.parametrize(("nodes", "pods"), [(10, 30), (100, 300), (1000, 3000), (3, 90)],
                             ids=["10x30", "100x300", "1000x3000", "dense"])
    def test_abundant_devices_and_cpu_cover_the_demand(self, nodes: int, pods: int) -> None:
        """Every claim for cores or GPUs has 1.5 devices or more, and a node's cpu covers its mapped cores and
        three times the average pods."""
        plan = gate_plan.plan(1, nodes, pods)

        for device_class in ("cores", "gpus"):
            assert plan.devices[device_class] * nodes >= 1.5 * plan.demand(device_class)
        assert plan.node_cpu >= gate_plan.MAPPED_CPU * plan.devices["cores"] + 1.5 * pods / nodes

    def test_two_in_three_scarce_pods_must_wait(self) -> None:
        """One scarce device exists for every three pods asking for one; every other pod can bind."""
        plan = gate_plan.plan(3, 100, 300)
        scarce = Counter(plan.kinds)["scarce"]

        assert math.ceil(scarce / 3) == plan.scarce_nodes
        assert scarce - plan.scarce_nodes == plan.waiting()
        assert plan.pods - plan.waiting() == plan.bound()
        assert {"scarce": 1, **plan.devices} == plan.node_devices(0)
        assert plan.devices == plan.node_devices(plan.scarce_nodes)

    @pytest.mark.parametrize(("nodes", "pods", "flag"), [(0, 10, "--nodes"), (10, 0, "--pods"),
                                                         (1, 100, "--pods 100")], ids=["nodes", "pods", "too-many"])
    def test_an_impossible_size_is_refused_naming_the_flag(self, nodes: int, pods: int, flag: str) -> None:
        """Sizes the cluster cannot hold are refused with a message naming the flag."""
        with pytest.raises(ValueError, match=flag):
            gate_plan.plan(1, nodes, pods)


class TestPercentiles:
    def test_nearest_rank(self) -> None:
        """The p-th percentile is the smallest value with at least p of the values at or below it."""
        values = [float(v) for v in range(1, 101)]

        assert 50.0 == figures.percentile(values, 0.50)
        assert 99.0 == figures.percentile(values, 0.99)
        assert 7.0 == figures.percentile([7.0], 0.99)

    def test_no_values_give_none_in_the_spread(self) -> None:
        """An empty spread is all None (JSON has no NaN) with a count of 0."""
        assert {"p50": None, "p90": None, "p99": None, "max": None, "n": 0} == figures.spread([])
        assert {"p50": 1000.0, "p90": 2000.0, "p99": 2000.0, "max": 2000.0, "n": 2} == figures.spread([1.0, 2.0])


class TestBurstFigures:
    def test_times_are_measured_from_the_post(self) -> None:
        """Time to bind and to release count from the POST; release to bind only for pods created gated."""
        pods = [pod("a", 10.0, released=10.2, bound=10.5), pod("b", 10.0, gated=False, released=10.01, bound=11.0)]

        intervals = figures.times(pods)

        assert [0.5, 1.0] == [round(t, 6) for t in intervals["bind"]]
        assert [0.2] == [round(t, 6) for t in intervals["release"]]
        assert [0.3] == [round(t, 6) for t in intervals["release_to_bind"]]

    def test_throughput_is_bound_pods_from_the_first_post_to_the_last_binding(self) -> None:
        """Three bound pods (one never bound) from t=0 to the last binding at t=2: 1.5 pods a second."""
        burst = Burst("none", 1, [pod("a", 0.0, bound=1.0), pod("b", 0.5, bound=2.0), pod("c", 0.6, bound=1.5),
                                  pod("d", 0.7)])

        assert 1.5 == burst.throughput()

    def test_waiting_counts_only_gated_pods_past_the_grace_while_the_scheduler_is_idle(self) -> None:
        """At an idle sample, pods created gated more than 250 ms before and not yet released count; a busy
        scheduler, a young pod, a released pod and an ungated pod do not."""
        pods = [pod("old", 0.0, answered=0.0, released=2.0), pod("young", 0.9, answered=0.9, released=2.0),
                pod("released", 0.0, answered=0.0, released=0.5), pod("ungated", 0.0, answered=0.0, gated=False)]
        burst = Burst("policy", 1, pods, [idle_at(1.0), busy_at(1.5), idle_at(1.8), idle_at(2.5)], done=2.6)

        assert {"samples": 4, "idle_samples": 3, "samples_with_waiting": 2, "max_waiting": 2} == \
            figures.waiting_while_idle(burst)

    def test_samples_outside_the_burst_are_left_out(self) -> None:
        """Samples before the first POST or after the last event seen are not the burst's."""
        burst = Burst("policy", 1, [pod("a", 1.0, answered=1.0)], [idle_at(0.5), idle_at(3.0)], done=2.0)

        assert {"samples": 0, "idle_samples": 0, "samples_with_waiting": 0, "max_waiting": 0} == \
            figures.waiting_while_idle(burst)

    def test_a_disruption_splits_pods_by_when_they_were_sent(self) -> None:
        """Pods sent between the stop and the successor's lead are "during"; the gap is in milliseconds."""
        pods = [pod("before", 0.0, released=0.1, bound=0.2), pod("during", 1.5, released=3.0, bound=3.5),
                pod("after", 4.0, released=4.1, bound=4.3)]
        burst = Burst("failover", 1, pods, done=4.3, disruption=(1.0, 3.0))

        split = figures.disrupted(burst)

        assert 2000.0 == split["gap_ms"]
        assert (200.0, 2000.0, 300.0) == (split["before"]["p50"], split["during"]["p50"], split["after"]["p50"])


def burst_of(config: str, round_: int, bind: float, operator_cpu: float = 0.0) -> Burst:
    pods = [pod(f"{config}-{i}", 0.0, gated=config != "none", released=0.05, bound=bind * (i + 1) / 10)
            for i in range(10)]
    return Burst(config, round_, pods, cpu={figures.operator_process(config): operator_cpu}, done=bind)


class TestSummary:
    def test_the_headline_is_the_faster_gates(self) -> None:
        """Added p50/p99 are the gate's percentiles less the ungated ones; the faster gate's are the headline."""
        bursts = [burst_of("none", 1, 1.0), burst_of("policy", 1, 1.1, 0.4), burst_of("webhook", 1, 1.5, 0.5)]

        summary = figures.summarize(bursts, {})

        assert "policy" == summary["faster_gate"]
        assert 50.0 == summary["added_p50_ms"]
        assert 100.0 == summary["added_p99_ms"]
        assert round(1.0 / 1.1, 3) == summary["throughput_ratio"]
        assert 0.4 == summary["operator_cpu_s"]
        assert 250.0 == summary["gates"]["webhook"]["added_p50_ms"]
        assert {"p50", "p90", "p99", "max", "n"} == set(summary["configurations"]["none"]["time_to_bind_ms"])
        assert summary["complete"]

    def test_the_floor_is_against_the_ungated_runs_and_the_gates_over_it(self) -> None:
        """The floor's added p50/p99 and throughput ratio are against the ungated runs and its CPU is the
        releaser's; a gate's cost over the floor is its percentile less the floor's and its throughput over the
        floor's; the faster gate is dra-ledger's even when the floor is faster."""
        bursts = [burst_of("none", 1, 1.0), burst_of("floor", 1, 1.05, 0.1), burst_of("policy", 1, 1.1, 0.4),
                  burst_of("webhook", 1, 1.5, 0.5)]

        summary = figures.summarize(bursts, {})

        assert "policy" == summary["faster_gate"]
        assert 25.0 == summary["floor_added_p50_ms"]
        assert 50.0 == summary["floor_added_p99_ms"]
        assert round(1.0 / 1.05, 3) == summary["floor_throughput_ratio"]
        assert 0.1 == summary["floor_releaser_cpu_s"]
        assert 0 == summary["floor_max_waiting_while_idle"]
        assert 25.0 == summary["over_floor_added_p50_ms"]
        assert 50.0 == summary["over_floor_added_p99_ms"]
        assert round(1.05 / 1.1, 3) == summary["over_floor_throughput_ratio"]
        assert 225.0 == summary["gates"]["webhook"]["over_floor"]["added_p50_ms"]
        assert round(1.05 / 1.5, 3) == summary["gates"]["webhook"]["over_floor"]["throughput_ratio_median_of_rounds"]
        assert {"p50", "p90", "p99", "max", "n"} == set(summary["configurations"]["floor"]["time_to_bind_ms"])

    def test_the_kopf_floor_is_over_the_floor_and_the_gates_over_both(self) -> None:
        """The Kopf floor's figures are against the ungated runs and its CPU is the releaser's; its cost over the
        floor is Kopf's delivery; each gate is measured over both floors, the faster gate's as the headline."""
        bursts = [burst_of("none", 1, 1.0), burst_of("floor", 1, 1.05, 0.1), burst_of("kopf-floor", 1, 1.08, 0.3),
                  burst_of("policy", 1, 1.1, 0.4), burst_of("webhook", 1, 1.5, 0.5)]

        summary = figures.summarize(bursts, {})

        assert "policy" == summary["faster_gate"]
        assert 40.0 == summary["kopf_floor_added_p50_ms"]
        assert round(1.0 / 1.08, 3) == summary["kopf_floor_throughput_ratio"]
        assert 0.3 == summary["kopf_floor_releaser_cpu_s"]
        assert 15.0 == summary["kopf_floor"]["over_floor"]["added_p50_ms"]
        assert "over_kopf_floor" not in summary["kopf_floor"]
        assert 10.0 == summary["over_kopf_floor_added_p50_ms"]
        assert 20.0 == summary["over_kopf_floor_added_p99_ms"]
        assert round(1.08 / 1.1, 3) == summary["over_kopf_floor_throughput_ratio"]
        assert 25.0 == summary["over_floor_added_p50_ms"]
        assert 210.0 == summary["gates"]["webhook"]["over_kopf_floor"]["added_p50_ms"]

    def test_a_run_without_the_floor_has_no_floor_figures(self) -> None:
        """Without floor bursts the floor's figures and the cost over it are None, not zero."""
        summary = figures.summarize([burst_of("none", 1, 1.0), burst_of("policy", 1, 1.1)], {})

        assert (None, None, None) == (summary["floor"], summary["floor_throughput_ratio"],
                                      summary["over_floor_throughput_ratio"])
        assert (None, None) == (summary["kopf_floor"], summary["over_kopf_floor_throughput_ratio"])

    def test_an_incomplete_burst_makes_the_run_incomplete(self) -> None:
        """One burst at its deadline marks the whole run incomplete."""
        late = burst_of("webhook", 1, 1.5)
        late.complete = False

        assert not figures.summarize([burst_of("none", 1, 1.0), burst_of("policy", 1, 1.1), late], {})["complete"]


class TestTargets:
    @pytest.mark.parametrize(("gate", "verdict"), [
        pytest.param({"added_p50_ms": 50.0, "added_p99_ms": 250.0, "throughput_ratio": 0.95,
                      "max_waiting_while_idle": 0}, [True, True, True, True], id="at-the-limits"),
        pytest.param({"added_p50_ms": 51.0, "added_p99_ms": 251.0, "throughput_ratio": 0.94,
                      "max_waiting_while_idle": 1}, [False, False, False, False], id="past-them"),
        pytest.param({"added_p50_ms": None, "added_p99_ms": None, "throughput_ratio": None,
                      "max_waiting_while_idle": 0}, [False, False, False, True], id="unmeasured"),
    ])
    def test_each_target_is_judged_on_the_faster_gate(self, gate: dict[str, float | None],
                                                      verdict: list[bool]) -> None:
        """≤ 50 ms added to p50, ≤ 250 ms to p99, ≥ 0.95 of the ungated rate, no pod waiting while idle; a
        figure that could not be measured is not met."""
        result = {"faster_gate": "policy", "gates": {"policy": gate}}

        assert verdict == list(gate_report.judged(result).values())


def cost(p50: float, p99: float, ratio: float, waiting: int = 0) -> dict[str, float | int]:
    return {"added_p50_ms": p50, "added_p99_ms": p99, "throughput_ratio": ratio, "max_waiting_while_idle": waiting}


class TestFloorVerdict:
    def test_a_target_the_floor_misses_is_stopped_by_the_floor(self) -> None:
        """The targets the floor itself misses are the ones it stops, whatever the gate did."""
        result = {"faster_gate": "policy", "gates": {"policy": cost(40.0, 900.0, 0.8)},
                  "floor": cost(30.0, 300.0, 0.9)}

        assert ["added_p99_ms", "throughput_ratio"] == gate_report.stopped_by_floor(result)

    def test_without_a_floor_no_target_is_shown_reachable(self) -> None:
        """A run with no floor stops every target: none is shown reachable."""
        assert list(gate_report.TARGET_NAMES) == gate_report.stopped_by_floor(
            {"faster_gate": "policy", "gates": {"policy": cost(0.0, 0.0, 1.0)}, "floor": None})

    def test_the_report_names_the_targets_the_floor_stops(self) -> None:
        """The targets table judges the faster gate and the floor, shows the gate's cost over the floor, and says
        which targets the floor stops."""
        gate = {**cost(400.0, 900.0, 0.8, 12), "over_floor": {"added_p50_ms": 370.0, "added_p99_ms": 600.0,
                                                             "throughput_ratio": 0.889}}
        result = {"faster_gate": "policy", "gates": {"policy": gate}, "floor": cost(30.0, 300.0, 0.9)}

        lines = gate_report.targets(result)

        assert "| added to p50 ≤ 50 ms | +400 ms: **not met** | +30 ms: **met** | +370 ms |" in lines
        assert "| throughput ≥ 0.95 × ungated | 0.800: **not met** | 0.900: **not met** | 0.889 × |" in lines
        assert ("Stopped by the floor (the floor itself misses them, so no gate-based design meets them on this "
                "machine): added to p99 ≤ 250 ms; throughput ≥ 0.95 × ungated.") == lines[-1]


    def test_the_report_judges_the_kopf_floor_and_names_what_only_it_stops(self) -> None:
        """With the Kopf floor, each target is judged on it as well, the faster gate's cost over it is shown, and
        the targets it misses that the floor meets are named as stopped by it."""
        over = {"added_p50_ms": 370.0, "added_p99_ms": 600.0, "throughput_ratio": 0.889}
        gate = {**cost(400.0, 900.0, 0.8, 12), "over_floor": over,
                "over_kopf_floor": {"added_p50_ms": 20.0, "added_p99_ms": 100.0, "throughput_ratio": 0.98}}
        result = {"faster_gate": "policy", "gates": {"policy": gate}, "floor": cost(30.0, 300.0, 0.9),
                  "kopf_floor": cost(380.0, 800.0, 0.82, 3)}

        lines = gate_report.targets(result)

        assert ("| added to p50 ≤ 50 ms | +400 ms: **not met** | +30 ms: **met** | +380 ms: **not met** | +370 ms "
                "| +20 ms |") in lines
        assert ("| no pod waiting on the gate while the scheduler is idle | up to 12: **not met** | 0: **met** "
                "| up to 3: **not met** | — | — |") in lines
        assert lines[-1].startswith("Stopped by the Kopf floor, beyond the floor")
        assert lines[-1].endswith(": added to p50 ≤ 50 ms; no pod waiting on the gate while the scheduler is idle.")


def floor_pod(version: str, gates: tuple[str, ...] = ("other.example/gate", gate_floor.GATE)) -> dict[str, object]:
    return {"metadata": {"name": "p", "resourceVersion": version},
            "spec": {"schedulingGates": [{"name": gate} for gate in gates]}}


class FakeApi(gate_floor.Releaser):
    """The floor's releaser with its PATCH answered by ``answers`` (resourceVersion -> status), recording what it
    sent; ``during`` is noted (as if from the watch) while the first patch is in flight; ``refused`` is set as a
    conflict is answered."""

    def __init__(self, answers: dict[str, int], during: dict[str, object] | None = None) -> None:
        super().__init__(None, "/api/v1/namespaces/gate-floor/pods")  # type: ignore[arg-type]
        self.answers, self.during = answers, during
        self.sent: list[tuple[str, list[dict[str, object]]]] = []
        self.refused = asyncio.Event()

    async def patch(self, name: str, ops: list[dict[str, object]]) -> tuple[int, str]:
        self.sent.append((name, ops))
        await asyncio.sleep(0)  # a real answer takes a turn of the loop
        if self.during is not None:
            self.note("MODIFIED", self.during, 0.0)
            self.during = None
        status = self.answers[str(ops[0]["value"])]
        if status in gate_floor.CONFLICT:
            self.refused.set()
        return status, ""


class TestFloorReleaser:
    def test_the_patch_removes_only_our_gate_if_the_pod_is_unchanged(self) -> None:
        """The patch tests the resourceVersion seen and removes our gate at its index; other gates stay."""
        pod = floor_pod("7")
        index = gate_floor.gate_index(pod)

        assert 1 == index
        patched = jsonpatch.apply_patch(pod, gate_floor.release_patch(pod, 1))
        assert [{"name": "other.example/gate"}] == patched["spec"]["schedulingGates"]
        with pytest.raises(jsonpatch.JsonPatchTestFailed):
            jsonpatch.apply_patch({**pod, "metadata": {"name": "p", "resourceVersion": "8"}},
                                  gate_floor.release_patch(pod, 1))

    @pytest.mark.parametrize("during", [True, False], ids=["newer-seen-in-flight", "newer-seen-later"])
    def test_a_conflict_is_tried_again_on_the_newer_pod_from_the_watch(self, during: bool) -> None:
        """A 422 is tried again once, on the newer version the watch brings (at once if it is already there,
        else when it comes), never again on the refused one; a pod without our gate is never patched."""
        async def scenario() -> FakeApi:
            api = FakeApi({"1": 422, "2": 200}, floor_pod("2") if during else None)
            api.note("ADDED", floor_pod("1"), 0.0)
            api.note("ADDED", {**floor_pod("5", ("other.example/gate",)), "metadata": {"name": "q",
                                                                                     "resourceVersion": "5"}}, 0.0)
            task = api.tasks["p"]
            if not during:
                await api.refused.wait()  # resumes once the release task waits for the watch again
                assert 1 == len(api.sent)
                api.note("MODIFIED", floor_pod("2"), 0.0)
            await asyncio.wait_for(task, timeout=5)
            return api

        api = asyncio.run(scenario())

        assert ["1", "2"] == [ops[0]["value"] for _, ops in api.sent]
        assert ["p", "p"] == [name for name, _ in api.sent]
        assert (1, 1, 0) == (api.released, api.conflicts, api.failures)
        assert {} == api.tasks


class TestKopfFloor:
    def test_only_the_namespaces_pods_reach_the_releaser_and_a_node_opens_it(self) -> None:
        """The Kopf floor's pod handler notes the pods of its namespace (a listed pod as ADDED) and starts their
        release; pods elsewhere and the other kinds' events are dropped; the first node event says it is open."""
        async def scenario() -> tuple[FakeApi, asyncio.Event]:
            api, opened = FakeApi({"1": 200}), asyncio.Event()
            feed = gate_floor.KopfFeed("gate-kopf-floor", api, opened)
            ours = {**floor_pod("1"), "metadata": {"name": "p", "namespace": "gate-kopf-floor",
                                                   "resourceVersion": "1"}}
            theirs = {**floor_pod("1"), "metadata": {"name": "q", "namespace": "elsewhere", "resourceVersion": "1"}}
            await feed.pod_event(event={"type": None, "object": ours})
            await feed.pod_event(event={"type": "ADDED", "object": theirs})
            await feed.other_event(event={"type": "ADDED", "object": {}})
            assert not opened.is_set()
            await feed.node_event(event={"type": None, "object": {}})
            await asyncio.wait_for(api.tasks["p"], timeout=5)
            return api, opened

        api, opened = asyncio.run(scenario())

        assert opened.is_set()
        assert ["p"] == [name for name, _ in api.sent]
        assert {"p"} == set(api.latest)

    def test_kopf_watches_what_the_operator_watches_with_its_settings(self) -> None:
        """The same four kinds with the same pod field selector and page size, and the settings that take the
        per-event work dra-ledger has none of out of Kopf (no scanning, posting, peering or diff base)."""
        from draledger.operator import handlers

        feed = gate_floor.KopfFeed("ns", FakeApi({}), asyncio.Event())
        _, settings = gate_floor.kopf_operator("https://127.0.0.1:1", "ca", "cert", "key", feed)

        assert [handlers.POD_FIELD_SELECTOR] == list(settings.watching.field_selectors.values())
        assert handlers.PAGE == settings.watching.chunk_size
        assert (True, False, True) == (settings.scanning.disabled, settings.posting.enabled,
                                       settings.peering.standalone)
        assert isinstance(settings.persistence.diffbase_storage, handlers.NoDiffBase)
