"""Accounting fidelity, differentially: generated clusters on the real kube-scheduler, judged against the project.

The seeded generator (fidelity/generating.py) builds small DRA clusters in the release's API shape; the real
scheduler allocates, binds and writes its statuses; the project's ledgers and planned statuses are then judged
against what it did (fidelity/judging.py states every rule). ``DRALEDGER_FIDELITY_SEEDS`` sets the number of
seeds per release (default 200), ``DRALEDGER_FIDELITY_FIRST`` the first one. A disagreement is reduced to a
minimal case on the real cluster and printed as a dump that ``draledger audit`` reads.
"""

from __future__ import annotations

import itertools
import json
import os
from collections import Counter
from pathlib import Path

import pytest

from tests.realcluster.cluster import Api
from tests.realcluster.fidelity.generating import Case, generate
from tests.realcluster.fidelity.judging import Disagreement, judge, ledgers
from tests.realcluster.fidelity.running import (
    Outcome,
    apply,
    clean,
    dump,
    ensure_runtime_classes,
    probe,
    resize,
    settle,
)
from tests.realcluster.launcher import ControlPlane
from tests.realcluster.releases import Release

pytestmark = pytest.mark.realcluster
SEEDS = int(os.environ.get("DRALEDGER_FIDELITY_SEEDS", "200"))
FIRST = int(os.environ.get("DRALEDGER_FIDELITY_FIRST", "0"))
BATCH = 40
REDUCE_ATTEMPTS = 12


def run_batch(api: Api, release: Release, cases: list[Case]) -> dict[str, Outcome]:
    """Apply, settle, resize, read back, probe every node, judge: the outcomes, probes included."""
    outcomes = apply(api, release, cases)
    namespaces = [c.namespace for c in cases]
    pods = settle(api, namespaces)
    if resize(api, outcomes, pods):
        settle(api, namespaces)
    dump(api, outcomes)
    for outcome in outcomes.values():
        for node, ledger in ledgers(outcome.dump, outcome.case.release).items():
            for resource in ("cpu", "memory"):
                line = ledger.resources.get(resource)
                if line is None or line.free_units < 0:
                    continue  # judge_charges names a ledger that says the scheduler's bindings do not fit
                unit = "m" if resource == "cpu" else ""
                stem = f"probe-{node.rsplit('-', 1)[1]}-{resource}"
                probe(api, outcome, node, resource, f"{line.free_units + 1}{unit}", f"{stem}-over")
                if line.free_units > 0:
                    probe(api, outcome, node, resource, f"{line.free_units}{unit}", f"{stem}-exact")
    for pod in settle(api, namespaces):
        if pod["metadata"]["name"].startswith("probe-"):
            outcomes[pod["metadata"]["namespace"]].probes.append(pod)
    return outcomes


def reduce(api: Api, release: Release, case: Case, first: Disagreement) -> tuple[Case, Outcome]:
    """A smaller case with the same disagreement (same rule and subject), found by dropping pods one at a time."""
    best, outcome = case, None
    trials = itertools.count(1)  # a namespace of its own per trial: a deleted one lingers while it terminates
    for _ in range(REDUCE_ATTEMPTS):
        pods = [o for o in best.objects if o["kind"] == "Pod" and f"Pod/{o['metadata']['name']}" != first.subject]
        if not pods:
            break
        shrunk = False
        for pod in pods:
            trial = Case(best.seed, best.namespace, best.driver, best.nodes, [
                o for o in best.objects if o is not pod], best.resizes, best.invalid, best.release)
            trial = _renamed(trial, f"{case.namespace}r{next(trials)}")
            outcomes = run_batch(api, release, [trial])
            try:
                again = [d for d in judge(outcomes[trial.namespace])
                         if (d.rule, d.subject) == (first.rule, first.subject)]
            finally:
                clean(api, outcomes)
            if again:
                best, outcome, shrunk = trial, outcomes[trial.namespace], True
                break
        if not shrunk:
            break
    if outcome is None:
        outcomes = run_batch(api, release, [_renamed(best, f"{case.namespace}r{next(trials)}")])
        outcome = next(iter(outcomes.values()))
        clean(api, outcomes)
    return best, outcome


def _renamed(case: Case, namespace: str) -> Case:
    """The same case under another namespace, node and driver names (so it can run next to the original)."""
    text = json.dumps({"nodes": case.nodes, "objects": case.objects}).replace(case.namespace, namespace)
    body = json.loads(text)
    return Case(case.seed, namespace, case.driver.replace(case.namespace, namespace), body["nodes"],
                body["objects"], case.resizes, case.invalid, case.release)


def test_the_project_agrees_with_the_real_scheduler(control_plane: ControlPlane, tmp_path: Path) -> None:
    """Over every seed: statuses, charges, fit, probes and rejections agree with the real API and scheduler."""
    api, release = control_plane.api(), control_plane.release
    ensure_runtime_classes(api)
    disagreements: list[Disagreement] = []
    cases: dict[str, Case] = {}
    outcomes_kept: dict[str, Outcome] = {}
    stats: Counter[str] = Counter()
    for start in range(FIRST, FIRST + SEEDS, BATCH):
        batch = [generate(seed, release) for seed in range(start, min(start + BATCH, FIRST + SEEDS))]
        outcomes = run_batch(api, release, batch)
        try:
            for ns, outcome in outcomes.items():
                found = judge(outcome)
                cases[ns] = outcome.case
                stats["cases"] += 1
                stats["agreeing cases"] += not found
                stats["pods"] += len(outcome.case.pods())
                stats["bound pods"] += sum(1 for p in outcome.dump if p["kind"] == "Pod" and p["spec"].get("nodeName"))
                stats["probes"] += len(outcome.probes)
                stats["objects refused by the API"] += len(outcome.rejected)
                if found:
                    outcomes_kept[ns] = outcome
                disagreements.extend(found)
        finally:
            clean(api, outcomes)
    report = {"release": release.name, **stats,
              "agreement": f"{stats['agreeing cases']}/{stats['cases']}",
              "by rule": dict(Counter(d.rule for d in disagreements))}
    print(f"\nfidelity {release.name}: {json.dumps(report)}")
    (tmp_path / "report.json").write_text(json.dumps(report, indent=2))
    if disagreements:
        first = disagreements[0]
        case, outcome = reduce(api, release, cases[first.case], first)
        reproduction = tmp_path / f"{first.case}-minimal.json"
        reproduction.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": outcome.dump}, indent=1))
        shown = "\n".join(str(d) for d in disagreements[:25])
        pytest.fail(f"{len(disagreements)} disagreement(s) in {release.name} ({report['agreement']} cases agree):\n"
                    f"{shown}\nminimal reproduction ({len(case.pods())} pod(s)): {reproduction}\n"
                    f"{json.dumps(outcome.dump)[:6000]}", pytrace=False)


def test_the_generator_is_deterministic() -> None:
    """The same seed gives the same case."""
    from tests.realcluster.releases import RELEASES

    first = generate(7, RELEASES["v1.37"])
    assert json.dumps(first.objects) == json.dumps(generate(7, RELEASES["v1.37"]).objects)
