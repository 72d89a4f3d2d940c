"""A relist after a watch gap keeps an object deleted and created again under the same name during the gap:
found by the fault suite (tests/faults, scenario ``watch-gaps``: a memory slice deleted in a slices-watch
gap and published again).

The relist forgot the old object by its uid, but through its name: it removed the new object the relist had
just read, so the node's pool stayed incomplete (for a pod, such as a StatefulSet's, recreated during a gap,
the pod would no longer be counted on its node).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from draledger.operator.config import OperatorConfig
from draledger.operator.metrics import Metrics
from draledger.operator.runtime import Runtime
from tests.integration.harness import case_items

KIND = {"Node": "nodes", "Pod": "pods", "ResourceSlice": "resourceslices", "ResourceClaim": "resourceclaims"}


def rebuilt(items: list[dict[str, Any]]) -> Runtime:
    runtime = Runtime(OperatorConfig(), Metrics(), lambda: 100.0)
    for index, item in enumerate(items):
        item["metadata"].setdefault("uid", f"uid-{index}")
        runtime.listed_object(KIND[item["kind"]], item["metadata"]["uid"])
    for item in items:
        runtime.event(KIND[item["kind"]], None, item)
    for kind in KIND.values():
        runtime.listing_done(kind)
    return runtime


def relist(runtime: Runtime, kind: str, items: list[dict[str, Any]]) -> None:
    for item in items:
        runtime.listed_object(kind, item["metadata"]["uid"])
    for item in items:
        runtime.event(kind, None, item)
    runtime.listing_done(kind)


class TestRelistAfterAGap:
    @pytest.mark.parametrize("kind", ["ResourceSlice", "Pod", "ResourceClaim", "Node"])
    def test_an_object_created_again_under_its_name_is_kept(self, kind: str) -> None:
        """The old uid is gone from the relist, the name is not: the object the relist read stays."""
        items = case_items("v08")
        runtime = rebuilt(items)
        same_kind = [i for i in items if i["kind"] == kind]
        again = copy.deepcopy(same_kind[0])
        again["metadata"]["uid"] = "created-again"
        relist(runtime, KIND[kind], [again, *same_kind[1:]])
        name, namespace = again["metadata"]["name"], again["metadata"].get("namespace", "")
        held = {"ResourceSlice": runtime.state.slices, "Node": runtime.state.nodes,
                "Pod": runtime.state.pods, "ResourceClaim": runtime.state.claims}[kind]
        assert (name if kind in ("ResourceSlice", "Node") else (namespace, name)) in held

    def test_an_object_deleted_during_the_gap_is_still_forgotten(self) -> None:
        """The fix keeps names that live on, nothing else: a slice absent from the relist goes."""
        items = case_items("v08")
        runtime = rebuilt(items)
        slices = [i for i in items if i["kind"] == "ResourceSlice"]
        relist(runtime, "resourceslices", slices[1:])
        assert slices[0]["metadata"]["name"] not in runtime.state.slices
