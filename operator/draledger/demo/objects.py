"""The demo cluster's objects, one builder each: a pure module (no I/O, no clock, no randomness).

Three nodes ``worker-1..3``, each with two NUMA zones, and three DRA drivers publishing one ResourceSlice per
node each (``resource.k8s.io/v1``, with v1.36 ``nodeAllocatableResourceMappings``):

- ``cpu.dra.example.com``: 16 cores (8 per zone), each charging 2 cpu (``allocationMultiplier: "2"``: two
  hyperthreads) to node allocatable;
- ``gpu.dra.example.com``: 2 GPUs (one per zone), each costing 16Gi of host memory and 2 cpu;
- ``mem.dra.example.com``: a 2Mi hugepage pool, one device per zone (``allowMultipleAllocations``, charged
  by ``consumedCapacity`` of ``size``).

Claims are built from what they want (:func:`cores`, :func:`gpus`, :func:`hugepages`), pods from their
containers (:class:`Box`); :func:`gated` adds the ``draledger.dev/ledger-ready`` scheduling gate as the webhook
does, and :func:`running_status` is the status of a pod the kubelet runs. UIDs are UUIDv5 of the object's
identity and timestamps are relative to the ``now`` the caller passes.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from draledger.core.accounting.release import GATE

__all__ = [
    "CLASSES",
    "CPU_DRIVER",
    "GPU_DRIVER",
    "MEM_DRIVER",
    "NODES",
    "NUMA",
    "Box",
    "Want",
    "allocation",
    "claim",
    "cores",
    "device_classes",
    "gated",
    "gpus",
    "hugepages",
    "node",
    "pod",
    "resource_slices",
    "result",
    "running_status",
    "stamp",
    "uid",
]

NODES: Final = ("worker-1", "worker-2", "worker-3")
NUMA: Final = "resource.kubernetes.io/numaNode"
CPU_DRIVER: Final = "cpu.dra.example.com"
GPU_DRIVER: Final = "gpu.dra.example.com"
MEM_DRIVER: Final = "mem.dra.example.com"
HUGEPAGES_CLASS: Final = "hugepages-2mi.mem.dra.example.com"
CLASSES: Final = {CPU_DRIVER: CPU_DRIVER, GPU_DRIVER: GPU_DRIVER, HUGEPAGES_CLASS: MEM_DRIVER}
CORES_PER_ZONE: Final = 8
HUGEPAGES_PER_ZONE: Final = "2Gi"
ALLOCATABLE: Final = {"cpu": "64", "memory": "256Gi", "hugepages-2Mi": "4Gi", "pods": "110"}
CAPACITY: Final = {"cpu": "64", "memory": "264Gi", "hugepages-2Mi": "4Gi", "pods": "110"}
_UID_SPACE: Final = uuid.UUID("6f1f3b52-5c1e-4d0a-9d7e-0c6a1e2f3a4b")


def uid(*identity: str) -> str:
    """A stable uid for an object identity (kind, namespace, name)."""
    return str(uuid.uuid5(_UID_SPACE, "/".join(identity)))


def stamp(now: datetime.datetime, ago: datetime.timedelta) -> str:
    return (now - ago).astimezone(datetime.UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def _node_index(node: str) -> int:
    return NODES.index(node) + 1


# --- nodes and drivers ------------------------------------------------------------------------------


def node(name: str, now: datetime.datetime) -> dict[str, Any]:
    index = _node_index(name)
    created = stamp(now, datetime.timedelta(days=12))
    heartbeat = stamp(now, datetime.timedelta(seconds=20))
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": uid("Node", "", name),
            "creationTimestamp": created,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "gpu-2x-64c",
                "topology.kubernetes.io/zone": "demo-a",
            },
        },
        "spec": {"podCIDR": f"10.244.{index}.0/24", "podCIDRs": [f"10.244.{index}.0/24"]},
        "status": {
            "capacity": dict(CAPACITY),
            "allocatable": dict(ALLOCATABLE),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": heartbeat,
                    "lastTransitionTime": created,
                },
                *(
                    {
                        "type": kind,
                        "status": "False",
                        "reason": f"KubeletHasSufficient{kind.removesuffix('Pressure')}",
                        "message": f"kubelet has sufficient {kind.removesuffix('Pressure').lower()} available",
                        "lastHeartbeatTime": heartbeat,
                        "lastTransitionTime": created,
                    }
                    for kind in ("MemoryPressure", "DiskPressure", "PIDPressure")
                ),
            ],
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.0.{10 + index}"},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "machineID": uid("machine", name).replace("-", ""),
                "systemUUID": uid("system", name),
                "bootID": uid("boot", name),
                "kernelVersion": "6.8.0-60-generic",
                "osImage": "Ubuntu 24.04.2 LTS",
                "containerRuntimeVersion": "containerd://2.1.1",
                "kubeletVersion": "v1.36.0",
                "kubeProxyVersion": "",  # deprecated, no longer set by kubelet, still serialized
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }


def _slice(node_name: str, driver: str, devices: list[dict[str, Any]], now: datetime.datetime) -> dict[str, Any]:
    short = driver.split(".", 1)[0]
    name = f"{node_name}-{short}.dra.example.com"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {
            "name": name,
            "uid": uid("ResourceSlice", "", name),
            "creationTimestamp": stamp(now, datetime.timedelta(days=12)),
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": uid("Node", "", node_name),
                 "controller": True}
            ],
        },
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def _numa(zone: int) -> dict[str, Any]:
    return {NUMA: {"int": zone}}


def cpu_slice(node_name: str, now: datetime.datetime) -> dict[str, Any]:
    devices = [
        {
            "name": f"core-{core}",
            "attributes": {**_numa(core // CORES_PER_ZONE), "coreID": {"int": core}, "smt": {"bool": True}},
            "nodeAllocatableResourceMappings": {"cpu": {"allocationMultiplier": "2"}},
        }
        for core in range(2 * CORES_PER_ZONE)
    ]
    return _slice(node_name, CPU_DRIVER, devices, now)


def gpu_slice(node_name: str, now: datetime.datetime) -> dict[str, Any]:
    devices = [
        {
            "name": f"gpu-{index}",
            "attributes": {
                **_numa(index),
                "productName": {"string": "Example Accelerator X1"},
                "driverVersion": {"version": "1.8.0"},
            },
            "capacity": {"memory": {"value": "80Gi"}},
            "nodeAllocatableResourceMappings": {
                "memory": {"allocationMultiplier": "16Gi"},  # pinned host memory for the device's buffers
                "cpu": {"allocationMultiplier": "2"},  # its driver's service threads
            },
        }
        for index in (0, 1)
    ]
    return _slice(node_name, GPU_DRIVER, devices, now)


def mem_slice(node_name: str, now: datetime.datetime) -> dict[str, Any]:
    devices = [
        {
            "name": f"hugepages-2mi-{zone}",
            "attributes": {**_numa(zone), "pageSize": {"string": "2Mi"}},
            "capacity": {
                "size": {
                    "value": HUGEPAGES_PER_ZONE,
                    "requestPolicy": {
                        "default": "2Mi",
                        "validRange": {"min": "2Mi", "step": "2Mi", "max": HUGEPAGES_PER_ZONE},
                    },
                }
            },
            "allowMultipleAllocations": True,
            "nodeAllocatableResourceMappings": {"hugepages-2Mi": {"capacityKey": "size"}},
        }
        for zone in (0, 1)
    ]
    return _slice(node_name, MEM_DRIVER, devices, now)


def resource_slices(node_name: str, now: datetime.datetime) -> list[dict[str, Any]]:
    return [cpu_slice(node_name, now), gpu_slice(node_name, now), mem_slice(node_name, now)]


def device_classes(now: datetime.datetime) -> list[dict[str, Any]]:
    out = []
    for name, driver in CLASSES.items():
        selector = f'device.driver == "{driver}"'
        if name == HUGEPAGES_CLASS:
            selector += f' && device.attributes["{driver}"].pageSize == "2Mi"'
        out.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {
                    "name": name,
                    "uid": uid("DeviceClass", "", name),
                    "creationTimestamp": stamp(now, datetime.timedelta(days=12)),
                },
                "spec": {"selectors": [{"cel": {"expression": selector}}]},
            }
        )
    return out


# --- claims -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Want:
    """One device request of a claim: ``count`` devices of a class, or ``size`` of the hugepage pool."""

    request: str
    device_class: str
    count: int = 1
    size: str = ""  # hugepages: the capacity to consume

    def spec(self) -> dict[str, Any]:
        exactly: dict[str, Any] = {"deviceClassName": self.device_class}
        if self.size:
            exactly["capacity"] = {"requests": {"size": self.size}}
        else:
            exactly["allocationMode"] = "ExactCount"
            exactly["count"] = self.count
        return {"name": self.request, "exactly": exactly}


CORES: Final = "cores"
GPU: Final = "gpu"
HUGEPAGES: Final = "hugepages"


def cores(count: int) -> Want:
    return Want(CORES, CPU_DRIVER, count=count)


def gpus(count: int = 1) -> Want:
    return Want(GPU, GPU_DRIVER, count=count)


def hugepages(size: str) -> Want:
    return Want(HUGEPAGES, HUGEPAGES_CLASS, size=size)


def result(request: str, driver: str, node_name: str, device: str, size: str = "", share: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"request": request, "driver": driver, "pool": node_name, "device": device}
    if size:
        out["consumedCapacity"] = {"size": size}
        out["shareID"] = share
    return out


def allocation(node_name: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "devices": {"results": results},
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
            ]
        },
    }


def claim(
    namespace: str,
    name: str,
    wants: Sequence[Want],
    now: datetime.datetime,
    *,
    ago: datetime.timedelta = datetime.timedelta(0),
    owner: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """An unallocated claim; several requests are kept on one NUMA zone (``matchAttribute``)."""
    spec: dict[str, Any] = {"devices": {"requests": [want.spec() for want in wants]}}
    if len(wants) > 1:
        spec["devices"]["constraints"] = [{"requests": [w.request for w in wants], "matchAttribute": NUMA}]
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid("ResourceClaim", namespace, name),
        "creationTimestamp": stamp(now, ago),
    }
    if owner is not None:
        metadata["annotations"] = {"resource.kubernetes.io/pod-claim-name": owner["claim"]}
        metadata["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": owner["pod"], "uid": owner["uid"], "controller": True,
             "blockOwnerDeletion": True}
        ]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": metadata, "spec": spec}


# --- pods -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Box:
    """One container: its requests and the pod claims (by pod-local name) it references."""

    name: str
    cpu: str
    memory: str
    claims: tuple[str, ...] = ()
    image: str = "registry.example/app:1.0"


def _container(box: Box) -> dict[str, Any]:
    resources: dict[str, Any] = {
        "requests": {"cpu": box.cpu, "memory": box.memory},
        "limits": {"memory": box.memory},
    }
    if box.claims:
        resources["claims"] = [{"name": claim_name} for claim_name in box.claims]
    return {"name": box.name, "image": box.image, "resources": resources}


def pod(
    namespace: str,
    name: str,
    boxes: Sequence[Box],
    now: datetime.datetime,
    *,
    claims: Mapping[str, str] | None = None,  # pod claim name -> ResourceClaim name
    templates: Mapping[str, str] | None = None,  # pod claim name -> ResourceClaimTemplate name
    labels: Mapping[str, str] | None = None,
    ago: datetime.timedelta = datetime.timedelta(hours=3),
) -> dict[str, Any]:
    """An unbound pod without status (the API server sets ``phase: Pending``)."""
    spec: dict[str, Any] = {"containers": [_container(box) for box in boxes]}
    resource_claims = [{"name": k, "resourceClaimName": v} for k, v in (claims or {}).items()]
    resource_claims += [{"name": k, "resourceClaimTemplateName": v} for k, v in (templates or {}).items()]
    if resource_claims:
        spec["resourceClaims"] = resource_claims
    spec.update({"restartPolicy": "Always", "schedulerName": "default-scheduler", "terminationGracePeriodSeconds": 30})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid("Pod", namespace, name),
            "creationTimestamp": stamp(now, ago),
            "labels": dict(labels or {"app.kubernetes.io/name": name.split("-")[0]}),
        },
        "spec": spec,
    }


def gated(obj: dict[str, Any]) -> dict[str, Any]:
    """The pod as the webhook admits it: our scheduling gate, and the condition the API server sets."""
    obj["spec"]["schedulingGates"] = [{"name": GATE}]
    obj["status"] = {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
                "lastTransitionTime": obj["metadata"]["creationTimestamp"],
            }
        ],
        "qosClass": "Burstable",
    }
    return obj


def running_status(obj: Mapping[str, Any], node_name: str, started: str) -> dict[str, Any]:
    """What kubelet reports for a running pod on ``node_name``."""
    index = _node_index(node_name)
    last = sum(ord(char) for char in obj["metadata"]["name"]) % 200 + 10
    return {
        "phase": "Running",
        "conditions": [
            {"type": kind, "status": "True", "lastTransitionTime": started}
            for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
        ],
        "hostIP": f"10.0.0.{10 + index}",
        "hostIPs": [{"ip": f"10.0.0.{10 + index}"}],
        "podIP": f"10.244.{index}.{last}",
        "podIPs": [{"ip": f"10.244.{index}.{last}"}],
        "startTime": started,
        "qosClass": "Burstable",
        "containerStatuses": [
            {
                "name": container["name"],
                "image": container["image"],
                "imageID": "",
                "containerID": f"containerd://{uid('container', obj['metadata']['name'], container['name'])}",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": started}},
            }
            for container in obj["spec"]["containers"]
        ],
    }
