"""Tables for people (commands/tables.py): whole binary amounts print exactly, PROBLEMS counts every problem
the ledger shows."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from draledger.commands import audit, tables
from draledger.commands.dumps import load_paths
from draledger.core.accounting.ledger import Flags
from strategies import CPU1, as_list, claim_obj, container, device, direct, node_obj, pod_obj, result, slice_obj


class TestFigures:
    @pytest.mark.parametrize(("resource", "used", "total", "shown"), [
        pytest.param("hugepages-2Mi", "64Mi", "1Gi", "64Mi/1Gi", id="whole-mebibytes-not-0.06Gi"),
        pytest.param("memory", "512Mi", "4Gi", "512Mi/4Gi", id="half-a-gibibyte-as-written"),
        pytest.param("memory", "1Mi", "128Gi", "1Mi/128Gi", id="not-<0.01Gi"),
        pytest.param("memory", "16Gi", "16Gi", "16Gi/16Gi", id="whole-in-the-pairs-unit"),
        pytest.param("memory", "28992Mi", "256Gi", "28.3Gi/256Gi", id="five-digits-are-rounded"),
        pytest.param("memory", "517794616Ki", "517794616Ki", "494Gi/494Gi", id="odd-kibibytes-are-rounded"),
        pytest.param("memory", "1536Mi", "8Gi", "1.5Gi/8Gi", id="1536Mi-reads-1.5Gi"),
        pytest.param("memory", "100M", "1Gi", "0.09Gi/1Gi", id="decimal-units-are-not-binary"),
        pytest.param("memory", "0", "2Gi", "0/2Gi", id="zero"),
        pytest.param("cpu", "512", "1024", "512/1024", id="cpu-is-not-bytes"),
        pytest.param("cpu", "13250m", "64", "13.3/64", id="cpu-rounded"),
    ])
    def test_pairs(self, resource: str, used: str, total: str, shown: str) -> None:
        """A whole number below 1000 of a binary unit prints exactly; everything else to three digits."""
        assert shown == tables.pair(resource, used, total)


def ledgers(tmp_path: Path, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(as_list(items)))
    return audit.ledgers_of(load_paths([str(path)], None), Flags(), "2026-01-01T00:00:00Z")


def problems_column(table: str) -> list[str]:
    return [re.split(r"\s{3,}", line.strip())[-2] for line in table.splitlines()[1:]]


class TestProblems:
    def test_claim_problems_the_node_list_does_not_repeat_are_counted(self, tmp_path: Path) -> None:
        """A claim shared by two pods and a claim no container references: 2 problems shown, 2 counted."""
        cores = slice_obj("cores", pool="cores", devices=[device(f"core-{i}", v136=CPU1) for i in range(2)])
        items = [node_obj("n1"), cores,
                 claim_obj("shared", results=[result("core-0", pool="cores")]),
                 claim_obj("idle", results=[result("core-1", pool="cores")]),
                 pod_obj("a", containers=[container("c", claims=["x"])], resource_claims=[direct("x", "shared")]),
                 pod_obj("b", containers=[container("c", claims=["x"])], resource_claims=[direct("x", "shared")]),
                 pod_obj("d", containers=[container("c")], resource_claims=[direct("y", "idle")])]
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
