"""``draledger_ledgers`` and ``draledger_mapping_age_seconds`` count the nodes this operator accounts for
(operator/running.py, rule 2), whatever else the writer's mirror holds: no Kopf, no HTTP, the mirror fed by hand.

Found on the real control plane (tests/realcluster/test_helm_install.py): after ``helm upgrade --set
canary.enabled=true`` the new operator selected one node of two, yet ``draledger_ledgers`` said 2, because the
mirror holds every stored ledger and a ledger event brings the other one back after each plan drops it.
"""

from __future__ import annotations

from typing import Any

from draledger.operator.config import OperatorConfig
from draledger.operator.running import Operator

CANARY = "draledger.dev/canary=true"


def config(node_selector: str = "") -> OperatorConfig:
    return OperatorConfig(server="http://127.0.0.1:1", metrics_host="127.0.0.1", metrics_port=0,
                          node_selector=node_selector)


def node(name: str, canary: bool) -> dict[str, Any]:
    labels = {"draledger.dev/canary": "true"} if canary else {}
    return {"metadata": {"name": name, "uid": f"uid-{name}", "labels": labels},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"cpu": "4"}}}


def stored(name: str, phase: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": f"ledger-{name}", "resourceVersion": "7"},
            "status": {"phase": phase, "ledgerVersion": 3, "mappingVersion": 1}}


def scraped(operator: Operator) -> tuple[dict[str, float], list[str]]:
    """What a scrape shows: ``draledger_ledgers`` by phase (the non-zero ones), the nodes with a mapping age."""
    phases: dict[str, float] = {}
    aged: list[str] = []
    for family in operator.metrics.registry.collect():
        for sample in family.samples:
            if sample.name == "draledger_ledgers" and sample.value:
                phases[sample.labels["phase"]] = sample.value
            elif sample.name == "draledger_mapping_age_seconds":
                aged.append(sample.labels["node"])
    return phases, sorted(aged)


def started(selector: str, ledgers: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> Operator:
    """An operator whose writer has read ``ledgers`` from the API and whose runtime has seen ``nodes``."""
    operator = Operator(config(selector))
    for obj in ledgers:
        operator.writer.stored.load(obj)
    for body in nodes:
        operator.runtime.event("nodes", None, body)
    return operator


class TestLedgersCounted:
    async def test_a_ledger_outside_the_selection_is_not_counted(self) -> None:
        """Rebuilt with a node selector: the stored ledger of the node it does not select is neither counted
        nor aged, although the writer's mirror (a standby's, too) still holds it."""
        operator = started(CANARY, [stored("worker-1", "Ready"), stored("worker-2", "Ready")], [])
        operator.runtime.rebuilt.set()
        operator.runtime.event("nodes", None, node("worker-1", canary=True))

        assert ({"Ready": 1.0}, ["worker-1"]) == scraped(operator)
        assert ["worker-1", "worker-2"] == sorted(name for name, _ in operator.writer.stored.existing())

    async def test_a_ledger_whose_node_is_gone_is_not_counted(self) -> None:
        """Rebuilt without a selector: every Node's ledger counts, a ledger left of a deleted Node does not."""
        operator = started("", [stored("worker-1", "Ready"), stored("gone", "Stale")],
                           [node("worker-1", canary=False)])
        operator.runtime.rebuilt.set()

        assert ({"Ready": 1.0}, ["worker-1"]) == scraped(operator)

    async def test_until_rebuilt_every_ledger_counts_but_those_seen_outside(self) -> None:
        """While rebuilding, the Nodes may not all be listed: the stored ledgers count (their Rebuilding marks
        show at once), but for those of nodes already seen outside the selection."""
        operator = started(CANARY, [stored("worker-1", "Rebuilding"), stored("worker-2", "Ready"),
                                    stored("worker-3", "Rebuilding")],
                           [node("worker-1", canary=True), node("worker-2", canary=False)])

        assert ({"Rebuilding": 2.0}, ["worker-1", "worker-3"]) == scraped(operator)

    async def test_a_node_that_leaves_the_selection_leaves_the_count(self) -> None:
        """A selected node whose label is removed (its Node seen again, unselected) is counted no more."""
        operator = started(CANARY, [stored("worker-1", "Ready"), stored("worker-2", "Ready")],
                           [node("worker-1", canary=True), node("worker-2", canary=True)])
        operator.runtime.rebuilt.set()
        before = scraped(operator)
        operator.runtime.event("nodes", None, node("worker-2", canary=False))

        assert ({"Ready": 2.0}, ["worker-1", "worker-2"]) == before
        assert ({"Ready": 1.0}, ["worker-1"]) == scraped(operator)
