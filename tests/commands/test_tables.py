"""Tables for people (commands/tables.py): PROBLEMS counts every problem the ledger shows (the figures' rules are
core/figures.py's: tests/core/test_figures.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from draledger.commands import audit, tables
from draledger.commands.dumps import load_paths
from draledger.core.accounting.ledger import Flags
from strategies import as_list, claim_obj, claims_with_problems, container, direct, node_obj, pod_obj, result


def ledgers(tmp_path: Path, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(as_list(items)))
    return audit.ledgers_of(load_paths([str(path)], None), Flags(), "2026-01-01T00:00:00Z")


def problems_column(table: str) -> list[str]:
    return [re.split(r"\s{3,}", line.strip())[-2] for line in table.splitlines()[1:]]


class TestProblems:
    def test_claim_problems_the_node_list_does_not_repeat_are_counted(self, tmp_path: Path) -> None:
        """A claim shared by two pods and a claim no container references: 2 problems shown, 2 counted."""
        items = claims_with_problems()
        (ledger,) = ledgers(tmp_path, items)
        shown = sorted(r for claim in ledger["status"]["claims"] for r in claim["problems"])
        assert ["SharedAcrossPods", "UnreferencedClaim"] == shown
        assert [] == ledger["status"]["problems"]
        assert ["2"] == problems_column(tables.ledger_table([ledger]))

    def test_a_problem_listed_twice_counts_once(self, tmp_path: Path) -> None:
        """A claim's MissingResourceSlice is in the node's list as well: it counts once."""
        items = [node_obj("n1"), claim_obj("gone", results=[result("gpu-0", pool="gpus")]),
                 pod_obj("p", containers=[container("c", claims=["x"])], resource_claims=[direct("x", "gone")])]
        (ledger,) = ledgers(tmp_path, items)
        assert 1 == len(ledger["status"]["problems"])
        assert ["1"] == problems_column(tables.ledger_table([ledger]))
