"""Priming's pruned pages (operator.pages): every view read from a pruned object equals the view read from the
whole object, a page the schema refuses is decoded whole, and the pruning leaves out what no view reads."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draledger.core.views import read_claim, read_node, read_pod, read_slice
from draledger.operator.priming import decode
from tests.core.test_slice_memo import broken

ROOT = Path(__file__).resolve().parents[2]
KINDS = {"Pod": "pods", "Node": "nodes", "ResourceClaim": "resourceclaims", "ResourceSlice": "resourceslices"}
READERS = {"pods": read_pod, "nodes": read_node, "resourceclaims": read_claim, "resourceslices": read_slice}
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def page_of(items: list[Any]) -> bytes:
    return json.dumps({"kind": "List", "metadata": {"resourceVersion": "42", "continue": "abc"},
                       "items": items}).encode()


def assert_same_views(kind: str, items: list[Any]) -> list[Any]:
    """The page decoded for ``kind`` reads to the same views as the whole page; the decoded items."""
    data = page_of(items)
    pruned, whole = decode(data, kind), json.loads(data)
    assert pruned["metadata"] == whole["metadata"]
    assert len(pruned["items"]) == len(whole["items"])
    read = READERS[kind]
    for mine, theirs in zip(pruned["items"], whole["items"], strict=True):
        assert read(mine) == read(theirs)
    return list(pruned["items"])


@SETTINGS
@given(st.sampled_from(sorted(KINDS)).flatmap(lambda kind: st.tuples(st.just(kind), broken(kind))))
def test_a_pruned_object_reads_as_the_whole_one(case: tuple[str, dict[str, Any]]) -> None:
    """Generated objects of the four kinds, up to three fields spoiled with junk or deleted."""
    kind, raw = case
    assert_same_views(KINDS[kind], [raw])


def conformance_items() -> list[dict[str, Any]]:
    items = []
    for path in sorted((ROOT / "tests" / "conformance").glob("*.json")):
        items += json.loads(path.read_text(encoding="utf-8"))["dump"]["items"]
    return items


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_conformance_objects_read_the_same(kind: str) -> None:
    items = [i for i in conformance_items() if i.get("kind") == kind]
    assert items
    assert_same_views(KINDS[kind], items)


@pytest.fixture(scope="module")
def realistic() -> Any:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from bench_operator import generate
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return generate(7, 3, 60, 20)


def test_realistic_objects_read_the_same_and_lose_what_no_view_reads(realistic: Any) -> None:
    pods = assert_same_views("pods", realistic.pods)
    claims = assert_same_views("resourceclaims", realistic.claims)
    assert_same_views("nodes", realistic.nodes)
    assert_same_views("resourceslices", realistic.slices)
    whole = realistic.pods[0]
    assert {"managedFields", "labels"} <= set(whole["metadata"])
    assert "env" in whole["spec"]["containers"][0]
    assert not {"managedFields", "labels"} & set(pods[0]["metadata"])
    assert "env" not in pods[0]["spec"]["containers"][0]
    assert "volumes" not in pods[0]["spec"]
    assert len(json.dumps(pods, default=lambda raw: bytes(raw).decode())) * 4 < len(json.dumps(realistic.pods))
    assert "managedFields" not in claims[0]["metadata"]
    assert "spec" not in claims[0]


def test_a_gated_pods_annotations_are_known_to_exist_and_never_decoded() -> None:
    """A release adds its record to the annotations or creates them: priming keeps whether there are any
    (undecoded, however large), and the view says the same as for the whole object."""
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "x", **extra},
             "spec": {"containers": [{"name": "c"}], "schedulingGates": [{"name": "draledger.dev/ledger-ready"}]}}
            for name, extra in (("bare", {}), ("noted", {"annotations": {"a": "b" * 10_000}}))]
    items = assert_same_views("pods", pods)
    assert [False, True] == [read_pod(item).gate_info.has_annotations for item in items]  # type: ignore[union-attr]
    assert isinstance(items[1]["metadata"]["annotations"], msgspec.Raw)


def test_a_page_the_schema_refuses_is_decoded_whole(realistic: Any) -> None:
    """One pod whose spec is not an object: the page is read untyped, and that pod's view names the defect."""
    bad = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad", "namespace": "x"}, "spec": "oops"}
    items = assert_same_views("pods", [realistic.pods[0], bad])
    assert "env" in items[0]["spec"]["containers"][0]  # decoded whole
    assert [p.field for p in read_pod(items[1]).problems] == ["spec"]


@pytest.mark.parametrize("kind", sorted(READERS))
def test_a_page_msgspec_refuses_goes_to_json(kind: str) -> None:
    """An integer beyond 64 bits where a view looks: neither msgspec decoder takes it; json.loads does, as
    Kopf's client does (and the reader names it)."""
    data = page_of([{"metadata": {"name": "big", "namespace": "x", "uid": 1 << 70}}])
    assert decode(data, kind)["items"][0]["metadata"]["uid"] == 1 << 70
    assert_same_views(kind, [{"metadata": {"name": "big", "namespace": "x", "uid": 1 << 70}}])
