"""The monitoring component: a ServiceMonitor whose job is "draledger" and alert rules with runbooks."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from draledger.operator.metrics import Metrics
from tests.manifests.kustomized import Objects, one

RUNBOOKS = "https://github.com/dra-ledger/dra-ledger/blob/main/docs/operations.md#"
ALERTS = {
    "DraLedgerLedgerStale": "ledger-stale",
    "DraLedgerSchedulerDivergence": "scheduler-divergence",
    "DraLedgerPodsGatedTooLong": "pods-gated-too-long",
    "DraLedgerRebuildSlow": "rebuild-slow",
    "DraLedgerOperatorDownWhilePodsGated": "operator-down-while-pods-gated",
    "DraLedgerNoLeader": "no-leader",
}


def _rules(objects: Objects) -> dict[str, dict[str, Any]]:
    rule = one(objects, "PrometheusRule", "draledger")
    return {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"] if "alert" in r}


def _exported_names() -> set[str]:
    """Every series name the operator's registry can export (counters with _total, histograms with their parts)."""
    names = set()
    for family in Metrics().registry.collect():
        names.add(family.name)
        if family.type == "counter":
            names.add(f"{family.name}_total")
        if family.type == "histogram":
            names.update(f"{family.name}_{suffix}" for suffix in ("bucket", "sum", "count"))
    return names


@pytest.fixture(scope="module")
def alerts(render: Callable[[str], Objects]) -> dict[str, dict[str, Any]]:
    return _rules(render("production"))


class TestAlerts:
    def test_the_six_alerts(self, alerts: dict[str, dict[str, Any]]) -> None:
        """Stale ledger, scheduler divergence, pods gated too long, slow rebuild, operator down while pods are gated,
        replicas up but none leading."""
        assert set(ALERTS) == set(alerts)

    @pytest.mark.parametrize("name", sorted(ALERTS))
    def test_annotations(self, alerts: dict[str, dict[str, Any]], name: str) -> None:
        """Each alert has a summary, a description, a severity and a runbook_url at its docs/operations.md anchor."""
        rule = alerts[name]
        annotations = rule["annotations"]
        assert annotations["summary"].strip()
        assert annotations["description"].strip()
        assert RUNBOOKS + ALERTS[name] == annotations["runbook_url"]
        assert rule["labels"]["severity"] in {"info", "warning", "critical"}

    def test_thresholds(self, alerts: dict[str, dict[str, Any]]) -> None:
        """Stale for 5 minutes, gated for more than 10 minutes, rebuild over 35 ms a ledger (at least 120 s), for
        the last rebuild and for the time spent Rebuilding, down-while-gated as specified."""
        assert alerts["DraLedgerLedgerStale"]["for"] == "5m"
        assert 'phase="Stale"' in alerts["DraLedgerLedgerStale"]["expr"]
        assert "draledger_gated_pod_oldest_seconds) > 600" in alerts["DraLedgerPodsGatedTooLong"]["expr"]
        rebuild = " ".join(alerts["DraLedgerRebuildSlow"]["expr"].split())
        assert 2 == rebuild.count("> on (instance) clamp_min(0.035 * sum by (instance) (draledger_ledgers), 120)")
        down = alerts["DraLedgerOperatorDownWhilePodsGated"]["expr"]
        assert 'absent(up{job="draledger"} == 1)' in down
        assert 'scheduler_pending_pods{queue="gated"}' in down
        assert alerts["DraLedgerOperatorDownWhilePodsGated"]["labels"]["severity"] == "critical"
        assert "draledger_leader" in alerts["DraLedgerNoLeader"]["expr"]
        no_leader = alerts["DraLedgerNoLeader"]
        assert ("1m", "critical") == (no_leader["for"], no_leader["labels"]["severity"])

    def test_metric_names_exist(self, alerts: dict[str, dict[str, Any]]) -> None:
        """Every draledger_* series an alert reads is one the operator exports (draledger/operator/metrics.py)."""
        exported = _exported_names()
        used = {name for rule in alerts.values() for name in re.findall(r"\bdraledger_[a-z_]+", rule["expr"])}
        assert used
        assert used <= exported, used - exported


def test_job_is_named_draledger(render: Callable[[str], Objects]) -> None:
    """The ServiceMonitor scrapes Service "draledger", so Prometheus' job label is the one the alerts use."""
    objects = render("production")
    monitor = one(objects, "ServiceMonitor", "draledger")["spec"]
    service = one(objects, "Service", "draledger")
    assert monitor["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert "jobLabel" not in monitor
    assert [8080] == [p["port"] for p in service["spec"]["ports"]]
