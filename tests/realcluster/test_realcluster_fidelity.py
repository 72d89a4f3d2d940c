"""Accounting fidelity, differentially: generated clusters on the real kube-scheduler, judged against the project.

The seeded generator (fidelity/generating.py) builds small DRA clusters in the release's API shape; the real
scheduler allocates, binds and writes its statuses, through every stage of a case (fidelity/running.py: resizes,
a pool republished, pods bound by nodeName, the scheduler's gate turned off and on again); the project's ledgers
and planned statuses are then judged against what it did (fidelity/judging.py and fidelity/shaping.py state every
rule). ``DRALEDGER_FIDELITY_SEEDS`` sets the number of seeds per release (default 200), ``DRALEDGER_FIDELITY_FIRST``
the first one; ``DRALEDGER_FIDELITY_TABLE=1`` writes the release's column of the agreement table into
docs/accounting.md (fidelity/table.py). A disagreement is reduced to a minimal case on the real cluster and printed
as a dump that ``draledger audit`` reads; ``DRALEDGER_FIDELITY_REDUCE=0`` lists every disagreement instead, with
the dumps of their cases; ``DRALEDGER_FIDELITY_KEEP=<file>`` writes every case's outcome there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realcluster.cluster import Api
from tests.realcluster.fidelity import table
from tests.realcluster.fidelity.features import FEATURES, exercised
from tests.realcluster.fidelity.generating import STAGES, Case, generate
from tests.realcluster.fidelity.judging import Disagreement, ledgers
from tests.realcluster.fidelity.running import (
    PROBED,
    Outcome,
    apply,
    clean,
    create_stage,
    each,
    ensure_runtime_classes,
    pods_of,
    probe,
    probe_amounts,
    read_back,
    republish,
    resize,
    settle,
)
from tests.realcluster.fidelity.shaping import judge
from tests.realcluster.launcher import ControlPlane
from tests.realcluster.releases import RELEASES

SEEDS = int(os.environ.get("DRALEDGER_FIDELITY_SEEDS", "200"))
FIRST = int(os.environ.get("DRALEDGER_FIDELITY_FIRST", "0"))
WRITE_TABLE = os.environ.get("DRALEDGER_FIDELITY_TABLE", "") == "1"
REDUCE = os.environ.get("DRALEDGER_FIDELITY_REDUCE", "1") != "0"  # 0: report the disagreements as found
KEEP = os.environ.get("DRALEDGER_FIDELITY_KEEP", "")  # a file: every case's outcome is written there
BATCH = 40
REDUCE_ATTEMPTS = 12
GATE = "DRANodeAllocatableResources"
V1BETA2 = "resource.k8s.io/v1beta2=true"
SHORT = {"cpu": "cpu", "memory": "mem", "hugepages-2Mi": "hp"}  # pod names are lower case


def bound(pods: list[dict[str, object]]) -> set[tuple[str, str]]:
    return {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods  # type: ignore[index]
            if p["spec"].get("nodeName")}  # type: ignore[index, union-attr]


def gate_off_stage(plane: ControlPlane, outcomes: dict[str, Outcome], namespaces: list[str],
                   conditions: bool) -> None:
    """The scheduler restarted with its gate off; the gate-off pods created; the gate on again (generating rule 4).
    Every pod that was bound meanwhile got no status from it."""
    if not any(o.case.later.get("gate-off") for o in outcomes.values()):
        return
    api = plane.api()
    before = bound(pods_of(api, namespaces))
    plane.restart("kube-scheduler", feature_gates={GATE: False})
    try:
        create_stage(api, outcomes, "gate-off")
        for ns, name in bound(settle(api, namespaces, quiet=2.0, conditions=conditions)) - before:
            outcomes[ns].gate_off.add(name)
    finally:
        plane.restart("kube-scheduler", feature_gates={GATE: True})
    settle(api, namespaces, quiet=2.0, conditions=conditions)


TIMES: Counter[str] = Counter()  # seconds by stage, over a run: the report says where the time goes


@contextlib.contextmanager
def timed(stage: str) -> Iterator[None]:
    start = time.monotonic()
    try:
        yield
    finally:
        TIMES[stage] += time.monotonic() - start


def run_batch(plane: ControlPlane, cases: list[Case]) -> dict[str, Outcome]:
    """Every stage, then read back, probe every node, read the probes: the outcomes, ready to judge."""
    api, release = plane.api(), plane.release
    with timed("apply"):
        outcomes = apply(api, release, cases)
    namespaces = [c.namespace for c in cases]
    conditions = any("binding conditions" in c.features for c in cases)
    with timed("settle0"):
        pods = settle(api, namespaces, conditions=conditions)
    changed = resize(api, outcomes, pods)
    opened = republish(api, outcomes, "open")
    changed |= create_stage(api, outcomes, "window") | create_stage(api, outcomes, "outside")
    if changed or opened:
        with timed("settle1"):
            settle(api, namespaces, conditions=conditions)
    if opened:
        window = read_back(api, outcomes)
        for ns, outcome in outcomes.items():
            outcome.window = window[ns] if outcome.case.republish.get("open") else []
    if republish(api, outcomes, "close"):
        with timed("settle2"):
            settle(api, namespaces, quiet=3.0, conditions=conditions)
    with timed("gate"):
        gate_off_stage(plane, outcomes, namespaces, conditions)
    with timed("read"):
        for ns, items in read_back(api, outcomes).items():
            outcomes[ns].dump = items
    with timed("probing"):
        each(outcomes.values(), lambda outcome: probe_nodes(api, outcome))
    with timed("probes"):
        probed = settle(api, namespaces, conditions=conditions)
    for pod in probed:
        if pod["metadata"]["name"].startswith("probe-"):
            outcomes[pod["metadata"]["namespace"]].probes.append(pod)
    return outcomes


def probe_nodes(api: Api, outcome: Outcome) -> None:
    """Two probes per node and resource (running rule 5)."""
    for node, ledger in ledgers(outcome.dump, outcome.case.release).items():
        for resource in PROBED:
            line = ledger.resources.get(resource)
            if line is None or line.scheduler_free_units < 0:
                continue  # judge_charges names a ledger that says the scheduler's bindings do not fit
            over, exact = probe_amounts(resource, line.scheduler_free_units)
            stem = f"probe-{node.rsplit('-', 1)[1]}-{SHORT[resource]}"
            probe(api, outcome, node, resource, over, f"{stem}-over")
            if exact > 0:
                probe(api, outcome, node, resource, exact, f"{stem}-exact")


def renamed(case: Case, namespace: str) -> Case:
    """The same case under another namespace, node and driver names (so it can run next to the original)."""
    fields = ("nodes", "objects", "later", "republish")
    text = json.dumps({f: getattr(case, f) for f in fields}).replace(case.namespace, namespace)
    return dataclasses.replace(case, namespace=namespace, driver=case.driver.replace(case.namespace, namespace),
                               **json.loads(text))


def reduce(plane: ControlPlane, case: Case, first: Disagreement) -> tuple[Case, Outcome]:
    """A smaller case with the same disagreement (same rule and subject), found by dropping pods one at a time."""
    best, outcome = case, None
    trials = itertools.count(1)  # a namespace of its own per trial: a deleted one lingers while it terminates
    for _ in range(REDUCE_ATTEMPTS):
        pods = [o for o in best.pods() if f"Pod/{o['metadata']['name']}" != first.subject]
        shrunk = False
        for pod in pods:
            trial = renamed(dataclasses.replace(
                best, objects=[o for o in best.objects if o is not pod],
                later={s: [o for o in best.later.get(s, ()) if o is not pod] for s in STAGES}),
                f"{case.namespace}r{next(trials)}")
            outcomes = run_batch(plane, [trial])
            try:
                again = [d for d in judge(outcomes[trial.namespace]) if (d.rule, d.subject) == (first.rule,
                                                                                                  first.subject)]
            finally:
                clean(plane.api(), outcomes)
            if again:
                best, outcome, shrunk = trial, outcomes[trial.namespace], True
                break
        if not shrunk:
            break
    if outcome is None:
        outcomes = run_batch(plane, [renamed(best, f"{case.namespace}r{next(trials)}")])
        outcome = next(iter(outcomes.values()))
        clean(plane.api(), outcomes)
    return best, outcome


def serving_v1beta2(plane: ControlPlane) -> bool:
    """Rule of the generator ("v1beta2 objects where served"): v1beta2 is off by default in every release here,
    so kube-apiserver is restarted with it on for this test (and restored after)."""
    if plane.api().get_or_none("/apis/resource.k8s.io/v1beta2") is not None:
        return False
    plane.restart("kube-apiserver", flags={"--runtime-config": V1BETA2})
    return True


def test_the_project_agrees_with_the_real_scheduler(control_plane: ControlPlane, tmp_path: Path) -> None:
    """Over every seed: statuses, charges, fit, probes, refusals, zones, pools and windows agree with the real API
    and scheduler."""
    started = time.monotonic()
    TIMES.clear()
    release = control_plane.release
    with timed("v1beta2"):
        restore = serving_v1beta2(control_plane)
    api = control_plane.api()
    ensure_runtime_classes(api)
    disagreements: list[Disagreement] = []
    cases: dict[str, Case] = {}
    dumps: dict[str, object] = {}
    stats: Counter[str] = Counter()
    features: Counter[str] = Counter()
    agreeing: Counter[str] = Counter()
    try:
        for start in range(FIRST, FIRST + SEEDS, BATCH):
            batch = [generate(seed, release) for seed in range(start, min(start + BATCH, FIRST + SEEDS))]
            outcomes = run_batch(control_plane, batch)
            try:
                for ns, outcome in outcomes.items():
                    with timed("judge"):
                        found = judge(outcome)
                    cases[ns] = outcome.case
                    stats["pods"] += len(outcome.case.pods())
                    stats["bound pods"] += sum(1 for p in outcome.dump if p["kind"] == "Pod"
                                               and p["spec"].get("nodeName"))
                    stats["probes"] += len(outcome.probes)
                    stats["objects refused by the API"] += len(outcome.rejected)
                    for feature in (table.ALL, *exercised(outcome.case.features, outcome.dump, set(outcome.rejected),
                                                          outcome.resized)):
                        features[feature] += 1
                        agreeing[feature] += not found
                    disagreements.extend(found)
                    if found or KEEP:
                        dumps[ns] = {"dump": outcome.dump, "window": outcome.window, "gate_off": sorted(
                            outcome.gate_off), "rejected": outcome.rejected, "probes": outcome.probes}
            finally:
                with timed("clean"):
                    clean(api, outcomes)
    finally:
        if restore:
            control_plane.restart("kube-apiserver", flags={"--runtime-config": None})
    seconds = time.monotonic() - started
    report = {"release": release.name, "cases": features[table.ALL], **stats, "seconds": round(seconds),
              "seconds by stage": {stage: round(t) for stage, t in TIMES.items()},
              "agreement": f"{agreeing[table.ALL]}/{features[table.ALL]}",
              "by rule": dict(Counter(d.rule for d in disagreements)),
              "by feature": {f: f"{agreeing[f]}/{features[f]}" for f in FEATURES if features[f]}}
    print(f"\nfidelity {release.name}: {json.dumps(report)}")
    (tmp_path / "report.json").write_text(json.dumps(report, indent=2))
    if KEEP:
        Path(KEEP).write_text(json.dumps(dumps))
    if WRITE_TABLE:
        table.write(release.name, {f: (features[f], agreeing[f]) for f in features}, f"{FIRST}-{FIRST + SEEDS - 1}")
    if disagreements and not REDUCE:
        (tmp_path / "dumps.json").write_text(json.dumps(dumps))
        pytest.fail(f"{len(disagreements)} disagreement(s) in {release.name} ({report['agreement']} cases agree):\n"
                    + "\n".join(str(d) for d in disagreements) + f"\ndumps: {tmp_path / 'dumps.json'}", pytrace=False)
    if disagreements:
        first = disagreements[0]
        case, outcome = reduce(control_plane, cases[first.case], first)
        reproduction = tmp_path / f"{first.case}-minimal.json"
        reproduction.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": outcome.dump}, indent=1))
        shown = "\n".join(str(d) for d in disagreements[:25])
        pytest.fail(f"{len(disagreements)} disagreement(s) in {release.name} ({report['agreement']} cases agree):\n"
                    f"{shown}\nminimal reproduction ({len(case.pods())} pod(s)): {reproduction}\n"
                    f"{json.dumps(outcome.dump)[:6000]}", pytrace=False)


def test_the_generator_is_deterministic() -> None:
    """The same seed gives the same case."""
    first = generate(7, RELEASES["v1.37"])
    again = generate(7, RELEASES["v1.37"])
    assert (json.dumps(first.objects), sorted(first.features)) == (json.dumps(again.objects), sorted(again.features))
