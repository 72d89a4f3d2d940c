"""The fault suite's seeds and its report: one row per fault, summed over every scenario and seed run.

``DRALEDGER_FAULT_SEEDS``: ``N`` runs seeds 1..N, ``3,17,42`` runs those (default: 1). ``table()`` is the
Markdown table of docs/operations.md: for each fault, the scenario runs it fired in, how many times it fired,
how many of those runs survived every check, and the releases those runs checked and found wrong, by each
judge (a run's releases count for every fault that fired in it): against the objects behind the ledgers, and
against the record alone (the ledgers as stored at the moment of each release).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

from tests.faults.world import Outcome


def seeds() -> list[int]:
    raw = os.environ.get("DRALEDGER_FAULT_SEEDS", "1").strip()
    if "," in raw:
        return [int(s) for s in raw.split(",") if s.strip()]
    return list(range(1, int(raw) + 1))


@dataclass
class Run:
    scenario: str
    seed: int
    outcome: Outcome
    seconds: float


RUNS: list[Run] = []
WRITE_KINDS = ("ledger create", "ledger status patch", "pod gate removal", "pod status backfill", "Events")
WATCHED = ("nodes", "pods", "resourceslices", "resourceclaims", "nodeallocatableledgers")
ORDER = (  # the rows of the table, in this order
    "SIGKILL + restart during churn",
    "SIGKILL during the rebuild",
    *(f"409/422/429/500/503 on {kind}" for kind in WRITE_KINDS),
    *(f"watch gap ending in 410: {kind}" for kind in WATCHED),
    "watch journal outrun: 410 relists under fast churn",
    "watch ERROR events and 5xx on reconnection",
    "duplicated and reordered events",
    "API server stopped and restarted",
    "ResourceSlice deleted",
    "pool generation regressed",
    "Node deleted during a nodes-watch gap",
)


def table(runs: list[Run]) -> str:
    rows: dict[str, Counter[str]] = {}
    for run in runs:
        for label, count in run.outcome.faults.items():
            row = rows.setdefault(label, Counter())
            row["scenarios"] += 1
            row["injected"] += count
            row["survived"] += run.outcome.survived
            row["releases"] += run.outcome.releases
            row["wrong"] += len(run.outcome.wrong)
            row["by record"] += len(run.outcome.wrong_by_record)
    lines = ["| fault | scenarios run | faults injected | survived | releases checked | wrong, by the objects | "
             "wrong, by the record |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for label, row in sorted(rows.items(), key=lambda item: (*ORDER, item[0]).index(item[0])):
        lines.append(f"| {label} | {row['scenarios']} | {row['injected']} | {row['survived']} | "
                     f"{row['releases']} | {row['wrong']} | {row['by record']} |")
    total = (len(runs), sum(sum(r.outcome.faults.values()) for r in runs), sum(r.outcome.survived for r in runs),
             sum(r.outcome.releases for r in runs), sum(len(r.outcome.wrong) for r in runs),
             sum(len(r.outcome.wrong_by_record) for r in runs))
    lines.append("| **all scenarios** | {} | {} | {} | {} | {} | {} |".format(*total))
    seconds = sum(r.seconds for r in runs)
    summary = f"{len(runs)} scenario runs, seeds {sorted({r.seed for r in runs})}, {seconds:.0f} s"
    return "\n".join(lines) + f"\n\n{summary}\n"
