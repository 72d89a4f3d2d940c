"""Clusters of ledgers for the report's tests: realistic figures from the audit benchmark's generator.

``benchmarks/bench_audit.py`` writes dumps shaped like a real ``kubectl get ... -o json`` (allocatable
``517794616Ki``, two NUMA zones, DRA CPU cores and GPUs); the ledgers are computed from them exactly as
``draledger audit`` does. Large clusters repeat a generated base under new node names (generating and
auditing 5,000 nodes takes minutes; the picture only needs their figures), with a few nodes made
overcommitted, frozen or rebuilding so that every kind of card appears.
"""

from __future__ import annotations

import copy
import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from draledger.commands.audit import ledgers_of
from draledger.core.accounting.ledger import Flags
from draledger.core.loading import load
from draledger.core.quantities import parse_quantity

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_audit.py"
NOW = "2026-12-02T10:00:00Z"
BASE = 120  # distinct generated nodes


def _benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_audit", BENCHMARK)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {BENCHMARK}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


@cache
def generated(nodes: int = BASE, seed: int = 7) -> tuple[dict[str, Any], ...]:
    """The ledgers of a generated dump of ``nodes`` nodes (about 15 ms a node)."""
    synth = _benchmark().Synth(seed, nodes)
    items = [item for index in range(nodes) for objects in synth.node_objects(index).values() for item in objects]
    loaded = load(items, "bench_audit")
    return tuple(ledgers_of(loaded, Flags(), NOW))


def _named(ledger: dict[str, Any], name: str) -> dict[str, Any]:
    out = copy.deepcopy(ledger)
    out["metadata"]["name"] = name
    out["status"]["nodeName"] = name
    return out


def _overcommit(ledger: dict[str, Any]) -> None:
    """Requests past allocatable on cpu, as a node that lost capacity under running pods."""
    cpu = ledger["status"]["resources"]["cpu"]
    requested = parse_quantity(cpu["requested"])
    cpu["allocatable"] = str(requested - parse_quantity("2"))
    cpu["free"] = "-2"
    ledger["status"]["phase"] = "Overcommitted"
    ledger["status"]["problems"] = [{"reason": "Overcommitted", "message": "cpu requested past allocatable"}]


def cluster(nodes: int) -> list[dict[str, Any]]:
    """``nodes`` ledgers named ``worker-00000``…: the generated base, repeated, with about 1 node in 100
    overcommitted, 1 in 110 stale with problems, 1 in 150 Frozen and 1 in 200 Rebuilding."""
    base = generated()
    out = []
    for index in range(nodes):
        ledger = _named(base[index % len(base)], f"worker-{index:05d}")
        status = ledger["status"]
        if index % 97 == 13:
            _overcommit(ledger)
        elif index % 113 == 60:
            status["phase"] = "Stale"
            status["problems"] = [{"reason": "MissingResourceSlice", "message": "a claim's device is in no slice"}]
        elif index % 151 == 40:
            status["phase"] = "Frozen"
        elif index % 199 == 100:
            status["phase"] = "Rebuilding"
        out.append(ledger)
    return out
