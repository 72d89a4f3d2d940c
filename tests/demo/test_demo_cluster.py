"""The demo cluster builder: valid v1.36 objects whose audit gives the intended ledgers."""

from __future__ import annotations

import copy
import datetime
from typing import Any

import kubernetes_validate
import pytest

from draledger.commands.audit import ledgers_of
from draledger.core.accounting.ledger import Flags
from draledger.core.accounting.release import GATE
from draledger.core.loading import load
from draledger.demo import cluster, scheduler
from draledger.demo import objects as builders

NOW = datetime.datetime(2026, 12, 2, 10, 0, 0, tzinfo=datetime.UTC)


def objects() -> list[dict[str, Any]]:
    return cluster.build_cluster(NOW)


def audit(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    loaded = load(copy.deepcopy(items), "test")
    assert [] == loaded.problems
    return {obj["metadata"]["name"]: obj["status"] for obj in ledgers_of(loaded, Flags(), "2026-12-02T10:00:00Z")}


def of_kind(items: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {obj["metadata"]["name"]: obj for obj in items if obj["kind"] == kind}


def figures(status: dict[str, Any], resource: str) -> tuple[str, str, str, str]:
    line = status["resources"][resource]
    return line["podRequests"], line["claims"], line["requested"], line["schedulerCharged"]


class TestBuilder:
    def test_the_audit_gives_the_intended_numbers(self) -> None:
        """Each node's totals: ordinary requests, each claim once, and what the scheduler charged."""
        ledgers = audit(objects())
        assert ["worker-1", "worker-2", "worker-3"] == sorted(ledgers)
        assert ("3250m", "10", "13250m", "10") == figures(ledgers["worker-1"], "cpu")
        assert ("12608Mi", "16Gi", "28992Mi", "16Gi") == figures(ledgers["worker-1"], "memory")
        assert ("0", "512Mi", "512Mi", "512Mi") == figures(ledgers["worker-1"], "hugepages-2Mi")
        assert ("2650m", "10", "12650m", "10") == figures(ledgers["worker-2"], "cpu")
        assert ("0", "1Gi", "1Gi", "1Gi") == figures(ledgers["worker-2"], "hugepages-2Mi")
        assert ("2650m", "8", "10650m", "0") == figures(ledgers["worker-3"], "cpu")
        assert {"worker-1": "Ready", "worker-2": "Ready", "worker-3": "Ready"} == {
            name: status["phase"] for name, status in ledgers.items()
        }

    def test_the_legacy_pod_diverges_until_backfilled(self) -> None:
        """batch/legacy-etl carries no node-allocatable status: worker-3 is not in sync with the scheduler."""
        ledgers = audit(objects())
        sync = {
            name: next(c["status"] for c in status["conditions"] if c["type"] == "SchedulerInSync")
            for name, status in ledgers.items()
        }
        assert {"worker-1": "True", "worker-2": "True", "worker-3": "False"} == sync
        pods = of_kind(objects(), "Pod")
        assert "nodeAllocatableResourceClaimStatuses" not in pods["legacy-etl"]["status"]

    def test_numa_zones_split_the_devices(self) -> None:
        """Each node has two zones with 16 cores' and one GPU's worth of cpu, and 2Gi of hugepages each."""
        ledgers = audit(objects())
        for status in ledgers.values():
            assert [0, 1] == [zone["id"] for zone in status["numaZones"]]
            for zone in status["numaZones"]:
                assert ("18", "16Gi", "2Gi") == (
                    zone["resources"]["cpu"]["capacity"],
                    zone["resources"]["memory"]["capacity"],
                    zone["resources"]["hugepages-2Mi"]["capacity"],
                )
        zone_claims = {
            name: [z["resources"]["cpu"]["claims"] for z in status["numaZones"]] for name, status in ledgers.items()
        }
        assert {"worker-1": ["10", "0"], "worker-2": ["4", "6"], "worker-3": ["0", "8"]} == zone_claims

    def test_claims_are_counted_once_and_new_pods_are_gated(self) -> None:
        """The gated pods are unbound and their claims are in no ledger; the bound claims are all there."""
        items = objects()
        ledgers = audit(items)
        counted = sorted(f"{c['namespace']}/{c['name']}" for status in ledgers.values() for c in status["claims"])
        assert ["batch/legacy-etl-cores", "db/postgres-0-memory", "ml/inference-0-gpu",
                "ml/trainer-0-accel-x7k2p"] == counted
        pods = of_kind(items, "Pod")
        gated = sorted(name for name, obj in pods.items() if obj["spec"].get("schedulingGates"))
        assert ["nightly-etl", "notebook-a"] == gated
        for name in gated:
            assert [{"name": GATE}] == pods[name]["spec"]["schedulingGates"]
            assert "nodeName" not in pods[name]["spec"]
        assert 14 == len(pods)

    def test_deterministic(self) -> None:
        """The same clock gives the same objects (stable uids, names and timestamps)."""
        assert objects() == objects()
        assert len({obj["metadata"]["uid"] for obj in objects()}) == len(objects())

    def test_previous_ledgers(self) -> None:
        """The previous run's ledgers are owned by their Nodes and carry versions the restart must keep."""
        items = objects()
        nodes = of_kind(items, "Node")
        previous = cluster.previous_ledgers(items, NOW)
        assert list(builders.NODES) == [obj["metadata"]["name"] for obj in previous]
        for obj in previous:
            owner = obj["metadata"]["ownerReferences"][0]
            assert nodes[obj["metadata"]["name"]]["metadata"]["uid"] == owner["uid"]
            assert (41, 3) == (obj["status"]["ledgerVersion"], obj["status"]["mappingVersion"])


class TestValidation:
    @pytest.mark.parametrize("kind", ["Node", "Pod", "ResourceSlice", "ResourceClaim", "DeviceClass"])
    def test_objects_validate_against_v1_36(self, kind: str) -> None:
        """Every object validates strictly against the Kubernetes v1.36 schema (mappings included)."""
        items = [obj for obj in objects() if obj["kind"] == kind]
        assert items
        for obj in items:
            kubernetes_validate.validate(obj, "1.36.0", strict=True)

    def test_later_objects_and_bindings_validate(self) -> None:
        """The story's new pods, their claims and the scheduler's writes are valid v1.36 objects too."""
        items = objects()
        slices = list(of_kind(items, "ResourceSlice").values())
        claims = list(of_kind(items, "ResourceClaim").values())
        later = cluster.later_pods("stale", NOW, slices, claims) + cluster.later_pods("frozen", NOW, slices, claims)
        for obj in later:
            kubernetes_validate.validate(obj, "1.36.0", strict=True)
        pods = of_kind(later, "Pod")
        by_name = {obj["metadata"]["name"]: obj for obj in [*claims, *of_kind(later, "ResourceClaim").values()]}
        binding = scheduler.bind(pods["report-1"], "worker-1", by_name, slices, "2026-12-02T10:00:00Z")
        assert binding is not None
        bound = copy.deepcopy(pods["report-1"])
        bound["spec"]["nodeName"] = binding.node
        bound["status"] = binding.pod_status
        kubernetes_validate.validate(bound, "1.36.0", strict=True)
        claim = {**by_name["report-1-cores"], "status": binding.claims["report-1-cores"]}
        kubernetes_validate.validate(claim, "1.36.0", strict=True)


class TestScheduler:
    def setup_method(self) -> None:
        self.items = objects()
        self.slices = list(of_kind(self.items, "ResourceSlice").values())
        self.claims = of_kind(self.items, "ResourceClaim")

    def test_allocation_keeps_requests_on_one_numa_zone(self) -> None:
        """A GPU with cores goes where both fit in one zone: worker-1's zone 0 GPU is taken, so zone 1."""
        picked = scheduler.allocate(self.claims["notebook-a-gpu"], "worker-1", self.slices, self.claims.values())
        assert picked is not None
        devices = [r["device"] for r in picked["devices"]["results"]]
        assert ["gpu-1", "core-8", "core-9"] == devices
        assert [{"key": "metadata.name", "operator": "In", "values": ["worker-1"]}] == picked["nodeSelector"][
            "nodeSelectorTerms"][0]["matchFields"]

    def test_no_allocation_when_the_node_is_full(self) -> None:
        """With every GPU of a node allocated, a GPU claim does not fit there."""
        claims = dict(self.claims)
        for index in (0, 1):
            name = f"filler-{index}"
            filler = builders.claim("ml", name, [builders.gpus()], NOW)
            filler["status"] = {"allocation": scheduler.allocate(filler, "worker-3", self.slices, claims.values())}
            claims[name] = filler
        assert scheduler.allocate(claims["notebook-a-gpu"], "worker-3", self.slices, claims.values()) is None

    def test_bind_refuses_another_node_than_the_claims(self) -> None:
        """A pod whose claim is allocated on worker-2 cannot be bound to worker-1."""
        later = cluster.later_pods("stale", NOW, self.slices, self.claims.values())
        pod = of_kind(later, "Pod")["inference-1"]
        claims = {**self.claims, **of_kind(later, "ResourceClaim")}
        assert scheduler.bind(pod, "worker-1", claims, self.slices, "2026-12-02T10:00:00Z") is None
        binding = scheduler.bind(pod, "worker-2", claims, self.slices, "2026-12-02T10:00:00Z")
        assert binding is not None
        assert [{"resourceClaimName": "inference-1-gpu", "containers": ["server"],
                 "resources": {"cpu": "6", "memory": "16Gi"}}] == binding.pod_status[
            "nodeAllocatableResourceClaimStatuses"]
        assert ["inference-1"] == [r["name"] for r in binding.claims["inference-1-gpu"]["reservedFor"]]
