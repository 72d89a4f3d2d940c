"""The runtime without Kopf or HTTP: rebuild bookkeeping, relists, freshness, malformed events."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from prometheus_client import generate_latest

from draledger.core.loading import load
from draledger.operator.config import OperatorConfig
from draledger.operator.metrics import Metrics
from draledger.operator.runtime import Runtime
from tests.integration.harness import case_items


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def runtime(**overrides: Any) -> tuple[Runtime, Clock]:
    clock = Clock()
    return Runtime(OperatorConfig(**overrides), Metrics(), clock), clock


KIND = {"Node": "nodes", "Pod": "pods", "ResourceSlice": "resourceslices", "ResourceClaim": "resourceclaims"}


def listed(rt: Runtime, items: list[dict[str, Any]]) -> None:
    for index, item in enumerate(items):
        item.setdefault("metadata", {}).setdefault("uid", f"uid-{index}")
        rt.listed_object(KIND[item["kind"]], item["metadata"]["uid"])


class TestRebuild:
    async def test_rebuilt_only_when_every_kind_is_listed_and_processed(self) -> None:
        """Listing done for all four kinds is not enough: every listed object must have been processed."""
        rt, _ = runtime()
        items = case_items("v02")
        listed(rt, items)
        for kind in KIND.values():
            rt.listing_done(kind)
        assert not rt.rebuilt.is_set()
        for item in items[:-1]:
            rt.event(KIND[item["kind"]], None, item)
        assert not rt.rebuilt.is_set()
        rt.event(KIND[items[-1]["kind"]], None, items[-1])
        assert rt.rebuilt.is_set()

    async def test_events_during_the_list_never_double_count_a_claim(self) -> None:
        """A pod and its claim updated while the list is processed are counted once, as last seen."""
        rt, _ = runtime()
        items = case_items("v01")
        listed(rt, items)
        pod = next(i for i in items if i["kind"] == "Pod")
        newer = copy.deepcopy(pod)
        newer["metadata"]["resourceVersion"] = "99"
        rt.event("pods", "MODIFIED", newer)  # Kopf may deliver the newer event before the listed one
        for item in items:
            rt.event(KIND[item["kind"]], None, item)
        rt.event("pods", "MODIFIED", newer)
        for kind in KIND.values():
            rt.listing_done(kind)
        ledger = rt.state.ledger("n1")
        assert ledger is not None
        assert ["claim-a", "claim-b"] == [c.name for c in ledger.claims]
        assert "6" == str(ledger.resources["cpu"].claims)

    async def test_relist_forgets_vanished_objects(self) -> None:
        """After a relist, objects of that kind that the new list lacks are forgotten."""
        rt, _ = runtime()
        items = case_items("v08")
        listed(rt, items)
        for item in items:
            rt.event(KIND[item["kind"]], None, item)
        for kind in KIND.values():
            rt.listing_done(kind)
        pods = [i for i in items if i["kind"] == "Pod"]
        for pod in pods[1:]:
            rt.listed_object("pods", pod["metadata"]["uid"])
        rt.listing_done("pods")
        assert {("t", "p2"), ("t", "p3")} == set(rt.state.pods)
        assert 1 == rt.metrics.watch_restarts.labels("pods")._value.get()

    async def test_a_relist_is_under_way_until_every_object_it_listed_is_applied(self) -> None:
        """Kopf's workers apply a relist's objects after the stream ends the listing: until the last is applied,
        the stream is relisting (a decision would rest on the picture from before the gap)."""
        rt, _ = runtime()
        items = case_items("v08")
        listed(rt, items)
        for item in items:
            rt.event(KIND[item["kind"]], None, item)
        for kind in (*KIND.values(), "nodeallocatableledgers"):
            rt.contact(kind)
            rt.listing_done(kind)
        nodes = [i for i in items if i["kind"] == "Node"]
        rt.listing_started("nodes")
        for node in nodes:
            rt.listed_object("nodes", node["metadata"]["uid"])
        rt.listing_done("nodes")
        for node in nodes[:-1]:
            rt.event("nodes", None, node)
        assert "the nodes watch is relisting" == rt.streams_unhealthy()
        rt.event("nodes", None, nodes[-1])
        assert "" == rt.streams_unhealthy()

    async def test_a_malformed_event_never_raises(self) -> None:
        """A body that breaks a reader is logged and skipped; the runtime keeps going."""
        rt, _ = runtime()
        rt.event("pods", "ADDED", {"metadata": {"name": "x", "namespace": "t", "uid": "u"}, "spec": "nonsense"})
        rt.event("nodes", "ADDED", {"metadata": "nonsense"})
        assert {"pods": 1, "nodes": 1} == rt.metrics.event_counts

    async def test_events_are_exported_per_kind(self) -> None:
        """The plain per-kind counts reach the scrape as the counter ``draledger_events_processed_total``."""
        rt, _ = runtime()
        registry = rt.metrics.registry
        assert registry.get_sample_value("draledger_events_processed_total", {"kind": "pods"}) is None
        for _ in range(3):
            rt.event("pods", "ADDED", {"metadata": {"name": "x", "namespace": "t", "uid": "u"}})
        rt.event("pods", "DELETED", {"metadata": {"name": "x", "namespace": "t", "uid": "u"}})
        assert 4 == registry.get_sample_value("draledger_events_processed_total", {"kind": "pods"})
        assert b"# TYPE draledger_events_processed_total counter" in generate_latest(registry)


class TestSlices:
    @pytest.mark.parametrize("attributes", [("numaNode",), ("coreID",)])
    async def test_devices_keep_only_the_configured_numa_attributes(self, attributes: tuple[str, ...]) -> None:
        """The runtime reads slices keeping only ``--numa-attributes`` (slices rule 6)."""
        rt, _ = runtime(numa_attributes=attributes)
        body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s", "uid": "u"},
                "spec": {"driver": "dra.cpu", "nodeName": "n1", "pool": {"name": "n1", "generation": 1},
                         "devices": [{"name": "c0", "attributes": {"numaNode": {"int": 1}, "coreID": {"int": 5}}}]}}
        rt.event("resourceslices", None, body)
        assert set(attributes) == set(rt.state.slices["s"].devices[0].attributes)

    async def test_its_views_are_those_a_dump_gives(self) -> None:
        """The operator and ``audit`` read a slice by one path: with the same NUMA attributes, the same view."""
        attributes = ("numaNode",)
        rt, _ = runtime(numa_attributes=attributes)
        items = case_items("v02")
        for item in items:
            rt.event(KIND[item["kind"]], None, item)
        assert load(items, "dump", attributes=attributes).state.slices == rt.state.slices


class TestFreshness:
    async def test_broken_stream_turns_stale_after_the_window_and_recovers(self) -> None:
        """Broken for longer than the window: stale, with a stable message; contact clears it."""
        rt, clock = runtime(freshness_window=60)
        for kind in KIND.values():
            rt.contact(kind)
        rt.broken("pods", "watch error 500")
        clock.now += 30
        rt.check_freshness()
        assert "" == rt.stale_reason
        clock.now += 31
        for kind in ("nodes", "resourceslices", "resourceclaims"):
            rt.contact(kind)
        rt.check_freshness()
        first = rt.stale_reason
        assert "pods watch has been broken" in first
        clock.now += 10
        for kind in ("nodes", "resourceslices", "resourceclaims"):
            rt.contact(kind)
        rt.check_freshness()
        assert first == rt.stale_reason
        rt.contact("pods")
        rt.check_freshness()
        assert "" == rt.stale_reason
