"""A ledger's ``spec`` (the freeze) read from every object the API hands back: found by the fault suite.

The writer records the resourceVersion of its own status write, and ledger events at or below it are taken as
already known. But the object its write produced also carries the spec as it is stored then: a resume
(``spec.frozen: false``) stored between the operator's last ledger event and its write came back only in that
object, and its own event was skipped as older. The node stayed Frozen, with new claim pods kept off it, until
something else changed the ledger (tests/faults, scenario ``watch-gaps``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from draledger.operator.config import OperatorConfig
from draledger.operator.metrics import Metrics
from draledger.operator.runtime import Runtime
from draledger.operator.writing import Writer
from tests.integration.harness import case_items

KIND = {"Node": "nodes", "Pod": "pods", "ResourceSlice": "resourceslices", "ResourceClaim": "resourceclaims"}


class AnsweringApi:
    """Answers each status patch with the stored object as the API would: ``spec`` and a new resourceVersion."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.patches = 0

    async def json_patch(self, path: str, ops: list[dict[str, Any]], **_: Any) -> Any:
        await asyncio.sleep(0)
        self.patches += 1
        status = next(op["value"] for op in ops if op["op"] == "add")
        return {"metadata": {"name": "n1", "uid": "ledger-1", "resourceVersion": "12"}, "spec": self.spec,
                "status": status}

    async def create(self, path: str, body: Any, **_: Any) -> Any:  # the phase-change Event
        return {}


def rebuilt_runtime() -> Runtime:
    runtime = Runtime(OperatorConfig(), Metrics(), lambda: 100.0)
    items = case_items("v08")
    for index, item in enumerate(items):
        item["metadata"].setdefault("uid", f"uid-{index}")
        runtime.listed_object(KIND[item["kind"]], item["metadata"]["uid"])
    for item in items:
        runtime.event(KIND[item["kind"]], None, item)
    for kind in KIND.values():
        runtime.listing_done(kind)
    return runtime


def ledger(rv: str, frozen: bool) -> dict[str, Any]:
    return {"metadata": {"name": "n1", "uid": "ledger-1", "resourceVersion": rv},
            "spec": {"frozen": frozen, "reason": "repairs"}, "status": {"ledgerVersion": 3, "phase": "Frozen"}}


class TestTheWrittenObjectsSpec:
    async def test_a_resume_seen_only_in_the_write_answer_unfreezes_the_node(self) -> None:
        """Frozen at rv 10, resumed at rv 11 (its event late), the status write at rv 12: the node is resumed."""
        runtime = rebuilt_runtime()
        writer = Writer(runtime, AnsweringApi({"frozen": False, "reason": "repairs"}))  # type: ignore[arg-type]
        writer.stored.ledger_event("ADDED", ledger("10", True))
        assert writer.flags("n1").frozen
        plan = writer.plan("n1", 0.0)
        assert plan is not None
        assert plan.body is not None
        runtime.dirty.clear()
        await writer.write_node("n1", plan)
        assert "n1" in runtime.dirty  # planned again: its ledger is no longer Frozen
        writer.stored.ledger_event("MODIFIED", ledger("11", False))  # the resume's own event, after the write
        assert not writer.flags("n1").frozen

    async def test_a_freeze_seen_only_in_the_write_answer_freezes_the_node(self) -> None:
        """The other way round: a freeze stored just before the write holds the node from then on."""
        runtime = rebuilt_runtime()
        writer = Writer(runtime, AnsweringApi({"frozen": True, "reason": "repairs"}))  # type: ignore[arg-type]
        writer.stored.ledger_event("ADDED", ledger("10", False))
        plan = writer.plan("n1", 0.0)
        assert plan is not None
        await writer.write_node("n1", plan)
        assert writer.flags("n1").frozen
