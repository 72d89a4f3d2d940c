"""A ledger create answered 409 for a ledger that is not there: found by the fault suite (tests/faults,
scenario ``write-errors``, its last step: a ledger deleted in a quiet cluster, its re-creation answered 409).

The writer took the 409 as "it exists after all", read the ledger back, found nothing, and counted the write
as done: the node had no ledger until some unrelated event on it. Now it is a failed write, retried after
the node's backoff.
"""

from __future__ import annotations

import asyncio
from typing import Any

from draledger.operator.config import OperatorConfig
from draledger.operator.kubeapi import Conflict, NotFound
from draledger.operator.metrics import Metrics
from draledger.operator.runtime import Runtime
from draledger.operator.writing import Writer
from tests.integration.harness import case_items

KIND = {"Node": "nodes", "Pod": "pods", "ResourceSlice": "resourceslices", "ResourceClaim": "resourceclaims"}


class ConflictingApi:
    """The Node exists; every ledger create is answered 409 and no ledger can be read."""

    def __init__(self, node_uid: str) -> None:
        self.node_uid = node_uid
        self.creates = 0

    async def get(self, path: str, **_: Any) -> Any:
        await asyncio.sleep(0)
        if path.endswith("/nodes/n1"):
            return {"metadata": {"name": "n1", "uid": self.node_uid}}
        raise NotFound(404, {"message": "not found"}, path)

    async def create(self, path: str, body: Any, **_: Any) -> Any:
        await asyncio.sleep(0)
        self.creates += 1
        raise Conflict(409, {"message": "already exists"}, path)


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


class TestCreateConflict:
    async def test_a_409_for_a_ledger_that_is_not_there_is_retried(self) -> None:
        """The node stays dirty, with a backoff, instead of being left without a ledger."""
        runtime = rebuilt_runtime()
        api = ConflictingApi(runtime.state.nodes["n1"].uid)
        writer = Writer(runtime, api)  # type: ignore[arg-type]
        plan = writer.plan("n1", 0.0)
        assert plan is not None
        runtime.dirty.clear()
        await writer._write_task("n1", plan)
        assert 1 == api.creates
        assert "n1" in runtime.dirty
        assert 1 == writer.backoffs.failures["n1"]
        assert 1.0 == runtime.metrics.write_failures.labels("ledger", "409")._value.get()
