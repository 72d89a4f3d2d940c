"""DRA scheduling with node-allocatable mappings on the real scheduler: the plumbing the operator relies on.

Each test registers its own kubelet-less Node, driver, DeviceClass and ResourceSlice (four per-core devices,
each mapping to 2 cpu in the release's shape), so tests sharing a cluster never compete for devices.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.realcluster.cluster import (
    NOT_READY_TAINT,
    RESOURCE_API,
    Api,
    ApiError,
    create_node,
    ensure_namespace,
    publish_device_class,
    publish_slice,
    unique,
    wait_until,
)
from tests.realcluster.launcher import ControlPlane
from tests.realcluster.releases import Release

IMAGE = "registry.k8s.io/pause:3.10"  # never pulled: there is no kubelet
BIND_WITHIN = 90.0


@dataclass
class Driver:
    """One node with a fake CPU driver's devices, and what to delete afterwards."""

    api: Api
    release: Release
    node: str
    driver: str
    device_class: str
    namespace: str
    cleanup: list[str] = field(default_factory=list)


@pytest.fixture
def driver(control_plane: ControlPlane) -> Iterator[Driver]:
    """A Ready, untainted node (cpu 16, memory 64Gi, pods 110) with four cores that each map to 2 cpu."""
    api = control_plane.api()
    release = control_plane.release
    suffix = unique("dra")
    setup = Driver(api, release, node=f"{suffix}-node", driver=f"cpu.{suffix}.realcluster.draledger.dev",
                   device_class=f"{suffix}-cores", namespace=suffix)
    try:
        create_node(api, setup.node, release=release)
        setup.cleanup.append(f"/api/v1/nodes/{setup.node}")
        publish_device_class(api, setup.device_class, setup.driver)
        setup.cleanup.append(f"{RESOURCE_API}/deviceclasses/{setup.device_class}")
        devices = [{"name": f"core-{index}", "attributes": {"index": {"int": index}},
                    **release.device_mapping("cpu", "2")} for index in range(4)]
        publish_slice(api, f"{suffix}-slice", driver=setup.driver, node=setup.node, devices=devices)
        setup.cleanup.append(f"{RESOURCE_API}/resourceslices/{suffix}-slice")
        ensure_namespace(api, setup.namespace)
        setup.cleanup.append(f"/api/v1/namespaces/{setup.namespace}")
        yield setup
    finally:
        for path in reversed(setup.cleanup):
            try:
                api.request("DELETE", path + "?gracePeriodSeconds=0")
            except ApiError as error:
                if error.status != 404:
                    raise


def claim_spec(device_class: str, count: int) -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "cores", "exactly": {
        "deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}}]}}


def pod(name: str, claim_source: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": IMAGE,
                                     "resources": {"requests": {"cpu": "500m", "memory": "64Mi"},
                                                   "claims": [{"name": "cores"}]}}],
                     "resourceClaims": [{"name": "cores", **claim_source}],
                     "terminationGracePeriodSeconds": 0}}


def bound(api: Api, path: str) -> dict[str, Any] | None:
    got: dict[str, Any] = api.get(path)
    return got if got["spec"].get("nodeName") and got["status"].get("nodeAllocatableResourceClaimStatuses") else None


def written_by_scheduler(pod_object: dict[str, Any]) -> bool:
    return any(entry.get("manager") == "kube-scheduler"
               and "nodeAllocatableResourceClaimStatuses" in json.dumps(entry.get("fieldsV1", {}))
               for entry in pod_object["metadata"].get("managedFields", []))


class TestNodeHelper:
    def test_the_node_is_ready_and_schedulable(self, driver: Driver) -> None:
        """The registered node is Ready, has its capacity and carries no not-ready taint."""
        node = driver.api.get(f"/api/v1/nodes/{driver.node}")
        ready = [entry["status"] for entry in node["status"]["conditions"] if entry["type"] == "Ready"]
        assert ["True"] == ready
        assert {"cpu": "16", "memory": "64Gi", "pods": "110"} == node["status"]["allocatable"]
        assert NOT_READY_TAINT not in [taint["key"] for taint in node["spec"].get("taints", [])]

    def test_the_slice_keeps_the_release_mapping_shape(self, driver: Driver) -> None:
        """The apiserver stores each device's node-allocatable mapping as published (its gate is on)."""
        slices = driver.api.get(f"{RESOURCE_API}/resourceslices?fieldSelector=spec.nodeName={driver.node}")["items"]
        devices = slices[0]["spec"]["devices"]
        expected = driver.release.device_mapping("cpu", "2")
        key = next(iter(expected))
        assert [expected[key]] * 4 == [device.get(key) for device in devices]


    def test_v137_refuses_mapped_slices_for_nodes_without_the_declared_feature(self, driver: Driver) -> None:
        """From v1.37 a node must declare DRANodeAllocatableResources before mapped slices may name it."""
        bare = f"{driver.node}-bare"
        create_node(driver.api, bare, release=driver.release, declared_features=[])
        try:
            devices = [{"name": "core-0", **driver.release.device_mapping("cpu", "2")}]
            if driver.release.declared_features:
                with pytest.raises(ApiError, match="does not support DRANodeAllocatableResources") as refused:
                    publish_slice(driver.api, f"{bare}-slice", driver=driver.driver, node=bare, devices=devices)
                assert 403 == refused.value.status
            else:
                publish_slice(driver.api, f"{bare}-slice", driver=driver.driver, node=bare, devices=devices)
                driver.api.delete(f"{RESOURCE_API}/resourceslices/{bare}-slice")
        finally:
            driver.api.delete(f"/api/v1/nodes/{bare}")


class TestScheduling:
    def test_a_claim_is_allocated_and_the_pod_bound_with_its_node_allocatable_status(self, driver: Driver) -> None:
        """Two cores allocated, the pod bound to the node, and the scheduler's status charges 2 × 2 = 4 cpu."""
        api, namespace = driver.api, driver.namespace
        claims = f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"
        api.create(claims, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                            "metadata": {"name": "two-cores"}, "spec": claim_spec(driver.device_class, 2)})
        api.create(f"/api/v1/namespaces/{namespace}/pods", pod("direct", {"resourceClaimName": "two-cores"}))

        scheduled = wait_until(lambda: bound(api, f"/api/v1/namespaces/{namespace}/pods/direct"),
                               within=BIND_WITHIN, what="the pod to be bound with a node-allocatable status")

        assert driver.node == scheduled["spec"]["nodeName"]
        assert [driver.release.claim_status("two-cores", ["app"], {"cpu": "4"})] == \
            scheduled["status"]["nodeAllocatableResourceClaimStatuses"]
        assert written_by_scheduler(scheduled)
        claim = api.get(f"{claims}/two-cores")
        results = claim["status"]["allocation"]["devices"]["results"]
        assert [(driver.driver, driver.node)] * 2 == [(result["driver"], result["pool"]) for result in results]
        assert ["direct"] == [entry["name"] for entry in claim["status"]["reservedFor"]]

    def test_a_template_claim_is_generated_allocated_and_charged(self, driver: Driver) -> None:
        """The controller-manager generates the pod's claim from its template; the scheduler charges 1 × 2 cpu."""
        api, namespace = driver.api, driver.namespace
        api.create(f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaimtemplates",
                   {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                    "metadata": {"name": "one-core"}, "spec": {"spec": claim_spec(driver.device_class, 1)}})
        api.create(f"/api/v1/namespaces/{namespace}/pods", pod("templated", {"resourceClaimTemplateName": "one-core"}))

        scheduled = wait_until(lambda: bound(api, f"/api/v1/namespaces/{namespace}/pods/templated"),
                               within=BIND_WITHIN, what="the templated pod to be bound with a node-allocatable status")

        generated = [entry for entry in scheduled["status"].get("resourceClaimStatuses", [])
                     if entry["name"] == "cores"]
        assert 1 == len(generated)
        assert generated[0]["resourceClaimName"].startswith("templated-cores-")
        claim_name = generated[0]["resourceClaimName"]
        assert driver.node == scheduled["spec"]["nodeName"]
        assert [driver.release.claim_status(claim_name, ["app"], {"cpu": "2"})] == \
            scheduled["status"]["nodeAllocatableResourceClaimStatuses"]
        claim = api.get(f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{claim_name}")
        assert [{"apiVersion": "v1", "kind": "Pod", "name": "templated", "uid": scheduled["metadata"]["uid"],
                 "controller": True}] == claim["metadata"]["ownerReferences"]
        assert 1 == len(claim["status"]["allocation"]["devices"]["results"])
