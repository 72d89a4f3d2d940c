"""The writer's status body, built without the models, equals the model's own dump and validates against it.

``status_body`` is the hot path of every ledger write; ``status_json(status_of(...))`` is the reference
(the CRD schema is generated from the same model), so the two must never drift apart: same keys, same key
order, same values, the same fields left out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings

from draledger.core.bodies import status_body
from draledger.core.loading import load
from draledger.core.models import NodeAllocatableLedgerStatus, status_json, status_of
from strategies import Raw, clusters

CASES = sorted((Path(__file__).parents[1] / "conformance").glob("*.json"))
NOW = "2026-12-02T10:00:00Z"
EARLIER = "2026-12-01T08:00:00Z"


def both(ledger: Any, previous: list[dict[str, Any]] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    args = {"ledger_version": 7, "mapping_version": 3, "now": NOW, "previous_conditions": previous}
    return status_body(ledger, **args), status_json(status_of(ledger, **args))


def same(ledger: Any, previous: list[dict[str, Any]] | None = None) -> None:
    fast, reference = both(ledger, previous)
    assert json.dumps(fast) == json.dumps(reference)  # order included, not only equality
    assert NodeAllocatableLedgerStatus.model_validate(fast) == status_of(
        ledger, ledger_version=7, mapping_version=3, now=NOW, previous_conditions=previous
    )


def ledgers(items: list[Raw]) -> list[Any]:
    loaded = load(items, "test")
    return [loaded.state.ledger(name) for name in sorted(loaded.state.nodes)]


def test_every_conformance_ledger() -> None:
    seen = 0
    for case in CASES:
        for ledger in ledgers(json.loads(case.read_text())["dump"]["items"]):
            same(ledger)
            seen += 1
    assert seen >= len(CASES)


def test_transition_times_follow_the_previous_conditions() -> None:
    ledger = ledgers(json.loads(CASES[0].read_text())["dump"]["items"])[0]
    fresh, _ = both(ledger, None)
    previous = [dict(c, lastTransitionTime=EARLIER) for c in fresh["conditions"]]
    previous[0] = dict(previous[0], status="Unknown")  # this one changed: it moves to now
    same(ledger, previous)
    kept, _ = both(ledger, previous)
    assert [c["lastTransitionTime"] for c in kept["conditions"]] == [NOW] + [EARLIER] * (len(previous) - 1)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_generated_clusters(items: list[Raw]) -> None:
    for ledger in ledgers(items):
        same(ledger)
