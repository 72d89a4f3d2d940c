"""What the real node's drivers publish and what the tests' pods ask for: one place, in each release's shape.

Rules:
1. ``DRIVER`` (``cpu.realnode.draledger.dev``, device metadata written by the Go helper) publishes one pool named
   after the node, in two slices, so that a republish of both is two writes and the pool is incomplete between
   them: four cores (NUMA 0, 0, 1, 1) that map 250m cpu each without a capacity key; ``mem-0`` (NUMA 0, shared
   with ``allowMultipleAllocations``, capacity ``size: 2Gi``) that maps memory through the capacity key ``size``;
   and, from v1.37, ``gpu-0`` (NUMA 1), which maps nothing but has a memory overhead of 64Mi per pod.
   ``Release.device_mapping`` writes the mapping in the release's shape; the overhead is v1.37's field.
2. ``META_DRIVER`` (``meta.realnode.draledger.dev``, metadata written by draledger.devicemetadata through the
   driver's ``--metadata=python`` mode) publishes two NICs with no mapping at all.
3. Every device carries ``kind`` (the DeviceClasses select on it), ``numaNode``, ``index``, ``model`` and a
   ``driverVersion`` that an upgrade moves; the metadata files carry exactly these attributes.
4. Pods are hostNetwork, run the busybox image with ``imagePullPolicy: Never``, mount no ServiceAccount token, and
   stop at once on SIGTERM (their shell traps it): pod deletions never wait for a grace period.
"""

from __future__ import annotations

from typing import Any

from tests.realcluster.releases import Release
from tests.realnode.image import IMAGE

DRIVER = "cpu.realnode.draledger.dev"
META_DRIVER = "meta.realnode.draledger.dev"
CORE_CPU = "250m"
MEM_CAPACITY = "2Gi"
GPU_OVERHEAD = "64Mi"
METADATA_ROOT = "/var/run/kubernetes.io/dra-device-attributes"
CLASSES = {"core": DRIVER, "mem": DRIVER, "gpu": DRIVER, "nic": META_DRIVER}


def attributes(kind: str, index: int, numa: int, version: str) -> dict[str, Any]:
    return {"kind": {"string": kind}, "index": {"int": index}, "numaNode": {"int": numa},
            "model": {"string": f"realnode-{kind}"}, "driverVersion": {"version": version}}


def cpu_pools(release: Release, node: str, *, version: str = "1.0.0", cores: int = 4,
              generation: int = 0) -> dict[str, Any]:
    """``DRIVER``'s pool (module rule 1), as driver.go's ``--devices`` reads it; ``cores`` beyond the first two go
    to the second slice (an upgrade adds one there)."""
    cores_ = [{"name": f"core-{index}", "attributes": attributes("core", index, min(index // 2, 1), version),
               **release.device_mapping("cpu", CORE_CPU)} for index in range(cores)]
    mem = {"name": "mem-0", "attributes": attributes("mem", 0, 0, version), "allowMultipleAllocations": True,
           "capacity": {"size": {"value": MEM_CAPACITY}}, **release.device_mapping("memory", "1", "size")}
    second = [*cores_[2:], mem]
    if release.shape == "resources":
        second.append({"name": "gpu-0", "attributes": attributes("gpu", 0, 1, version),
                       "nodeAllocatableResources": {"memory": {"overhead": {"perPod": GPU_OVERHEAD}}}})
    return {"pools": {node: {"generation": generation, "slices": [{"devices": cores_[:2]}, {"devices": second}]}}}


def meta_pools(node: str, *, version: str = "1.0.0") -> dict[str, Any]:
    """``META_DRIVER``'s pool (module rule 2)."""
    nics = [{"name": f"nic-{index}", "attributes": {
        **attributes("nic", index, index, version),
        "resource.kubernetes.io/pciBusID": {"string": f"0000:3b:00.{index}"}}} for index in range(2)]
    return {"pools": {node: {"generation": 0, "slices": [{"devices": nics}]}}}


def device_class(kind: str) -> dict[str, Any]:
    driver = CLASSES[kind]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": f"realnode-{kind}"},
            "spec": {"selectors": [{"cel": {"expression":
                f'device.driver == "{driver}" && device.attributes["{driver}"].kind == "{kind}"'}}]}}


def claim_spec(kind: str, count: int = 1, *, capacity: str = "") -> dict[str, Any]:
    """One request named ``kind`` for ``count`` devices of that kind (``capacity`` of ``size`` for ``mem``)."""
    exactly: dict[str, Any] = {"deviceClassName": f"realnode-{kind}", "allocationMode": "ExactCount", "count": count}
    if capacity:
        exactly["capacity"] = {"requests": {"size": capacity}}
    return {"devices": {"requests": [{"name": kind, "exactly": exactly}]}}


def pod(name: str, *, script: str = "", claims: list[dict[str, str]] | None = None,
        requests: dict[str, str] | None = None, limits: dict[str, str] | None = None, node: str = "",
        restart: str = "Always", node_selector: dict[str, str] | None = None,
        pod_resources: dict[str, Any] | None = None) -> dict[str, Any]:
    """A pod of module rule 4: ``script`` runs in sh after a SIGTERM trap (default: wait forever); each entry of
    ``claims`` is a ``spec.resourceClaims`` entry and every one of them is referenced by the container."""
    body = script or "while :; do sleep 1; done"
    resources: dict[str, Any] = {"requests": requests or {}}
    if limits:
        resources["limits"] = limits
    if claims:
        resources["claims"] = [{"name": claim["name"]} for claim in claims]
    spec: dict[str, Any] = {
        "hostNetwork": True, "automountServiceAccountToken": False, "enableServiceLinks": False,
        "terminationGracePeriodSeconds": 5, "restartPolicy": restart,
        "containers": [{"name": "app", "image": IMAGE, "imagePullPolicy": "Never",
                        "command": ["sh", "-c", f"trap 'exit 0' TERM; {body} & wait $!"],
                        "resources": resources}],
    }
    if claims:
        spec["resourceClaims"] = claims
    if node:
        spec["nodeName"] = node
    if node_selector:
        spec["nodeSelector"] = node_selector
    if pod_resources:
        spec["resources"] = pod_resources
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
