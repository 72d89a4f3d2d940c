"""The demo cluster, as plain Kubernetes objects: a pure builder (no I/O, no clock, no randomness).

Three nodes ``worker-1..3``, each with two NUMA zones, and three DRA drivers publishing one ResourceSlice per
node each (``resource.k8s.io/v1``, with v1.36 ``nodeAllocatableResourceMappings``):

- ``cpu.dra.example.com``: 16 cores (8 per zone), each charging 2 cpu (``allocationMultiplier: "2"``: two
  hyperthreads) to node allocatable;
- ``gpu.dra.example.com``: 2 GPUs (one per zone), each costing 16Gi of host memory and 2 cpu;
- ``mem.dra.example.com``: a 2Mi hugepage pool, one device per zone (``allowMultipleAllocations``, charged
  by ``consumedCapacity`` of ``size``).

Pods: ordinary ones (kube-proxy, node-exporter, a web frontend), bound claim pods whose claims are allocated
and reserved (with ``status.nodeAllocatableResourceClaimStatuses``, as the v1.36 scheduler writes it),
``batch/legacy-etl``, bound *before the gate was on* (no such status: the operator backfills it), and new,
unbound claim pods that already carry the ``draledger.dev/ledger-ready`` scheduling gate (as the webhook
adds it). :func:`later_pods` are the pods the story adds, :func:`allocate` and :func:`bind` play the
scheduler (what it charges is the core's rule, never one of its own: :func:`scheduler_statuses`), and
:func:`previous_ledgers` are the ledgers a previous run of the operator left behind.

UIDs are UUIDv5 of the object's identity and timestamps are relative to the ``now`` the caller passes.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from draledger.commands.audit import ledgers_of
from draledger.commands.dumps import Loaded, load_items
from draledger.core.accounting.ledger import Flags
from draledger.core.accounting.release import GATE
from draledger.core.accounting.statuses import planned_statuses
from draledger.core.quantities import Quantity, parse_quantity

__all__ = [
    "CPU_DRIVER",
    "GPU_DRIVER",
    "MEM_DRIVER",
    "NODES",
    "NUMA",
    "Binding",
    "allocate",
    "bind",
    "build_cluster",
    "device_classes",
    "later_pods",
    "previous_ledgers",
    "resource_slices",
    "scheduler_statuses",
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


# --- the scheduler's part: allocation and binding ---------------------------------------------------


def scheduler_statuses(
    obj: Mapping[str, Any],
    node_name: str,
    claims: Iterable[Mapping[str, Any]],
    slices: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]] = (),
) -> list[dict[str, Any]]:
    """``status.nodeAllocatableResourceClaimStatuses`` as kube-scheduler writes it when it binds the pod.

    The core's rule (:func:`draledger.core.accounting.statuses.planned_statuses`, the one the backfill and
    the fidelity suite use), over the pod bound to ``node_name``, the claims, the slices (whose shape picks
    v1.36 or v1.37) and the other pods (a claim they share changes the answer). Empty when the rule has no
    single answer (a mapped claim shared by several pods): then the scheduler writes nothing.
    """
    meta = obj["metadata"]
    bound = {**obj, "spec": {**obj["spec"], "nodeName": node_name},
             "status": {**(obj.get("status") or {}), "phase": "Running"}}
    loaded = Loaded()
    load_items([*slices, *claims, *pods, bound], "the demo scheduler", loaded)  # the bound pod last: it wins
    state = loaded.state
    pod_view = state.pods[(meta["namespace"], meta["name"])]
    return planned_statuses(pod_view, state, state.api, Flags().numa_attributes) or []


def _claim_name(obj: Mapping[str, Any], entry: Mapping[str, Any]) -> str | None:
    if entry.get("resourceClaimName"):
        return str(entry["resourceClaimName"])
    for status in (obj.get("status") or {}).get("resourceClaimStatuses") or []:
        if status.get("name") == entry.get("name"):
            return str(status.get("resourceClaimName") or "") or None
    return None


def _device_zone(device: Mapping[str, Any]) -> int | None:
    value = (device.get("attributes") or {}).get(NUMA) or {}
    zone = value.get("int")
    return int(zone) if zone is not None else None


def _used(claims: Iterable[Mapping[str, Any]], node_name: str) -> tuple[set[tuple[str, str]], dict[str, Quantity]]:
    """Devices allocated on the node (exclusive ones) and the hugepage capacity consumed per device."""
    taken: set[tuple[str, str]] = set()
    consumed: dict[str, Quantity] = {}
    for other in claims:
        for entry in (((other.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []:
            if entry.get("pool") != node_name:
                continue
            size = (entry.get("consumedCapacity") or {}).get("size")
            if size:
                device = str(entry["device"])
                consumed[device] = consumed.get(device, parse_quantity("0")) + parse_quantity(size)
            else:
                taken.add((str(entry["driver"]), str(entry["device"])))
    return taken, consumed


def allocate(
    obj: Mapping[str, Any],
    node_name: str,
    slices: Iterable[Mapping[str, Any]],
    claims: Iterable[Mapping[str, Any]],
    zones: Sequence[int] = (0, 1),
) -> dict[str, Any] | None:
    """The allocation the scheduler would pick for this claim on this node (one NUMA zone, first fit)."""
    node_slices = [s for s in slices if s["spec"].get("nodeName") == node_name]
    taken, consumed = _used(claims, node_name)
    requests = obj["spec"]["devices"]["requests"]
    for zone in zones:
        results: list[dict[str, Any]] = []
        for request in requests:
            exactly = request["exactly"]
            driver = CLASSES.get(exactly["deviceClassName"])
            devices = [
                d for s in node_slices if s["spec"]["driver"] == driver for d in s["spec"]["devices"]
                if _device_zone(d) == zone
            ]
            size = ((exactly.get("capacity") or {}).get("requests") or {}).get("size")
            if size:
                wanted = parse_quantity(size)
                fits = [
                    d for d in devices
                    if consumed.get(d["name"], parse_quantity("0")) + wanted
                    <= parse_quantity(d["capacity"]["size"]["value"])
                ]
                if not fits:
                    break
                share = uid("share", obj["metadata"]["namespace"], obj["metadata"]["name"], request["name"])
                results.append(result(request["name"], str(driver), node_name, fits[0]["name"], size, share))
                continue
            free = [d["name"] for d in devices if (driver, d["name"]) not in taken]
            count = int(exactly.get("count") or 1)
            if len(free) < count:
                break
            results += [result(request["name"], str(driver), node_name, name) for name in free[:count]]
        else:
            return allocation(node_name, results)
    return None


@dataclass(frozen=True, slots=True)
class Binding:
    """The writes that place a pod: claim statuses (allocation, reservation), then the pod's node and status."""

    node: str
    claims: dict[str, dict[str, Any]]  # claim name -> its new status
    pod_status: dict[str, Any]


def bind(
    obj: Mapping[str, Any],
    node_name: str,
    claims: Mapping[str, Mapping[str, Any]],
    slices: Iterable[Mapping[str, Any]],
    started: str,
    zones: Sequence[int] = (0, 1),
    *,
    pods: Iterable[Mapping[str, Any]] = (),
) -> Binding | None:
    """Allocate the pod's unallocated claims on ``node_name``, reserve them all for it, and describe its status
    (what it charged: :func:`scheduler_statuses`, given the other ``pods``).

    None when a claim does not fit there (or is allocated on another node).
    """
    everything = dict(claims)
    slices = list(slices)
    updates: dict[str, dict[str, Any]] = {}
    reference = {"resource": "pods", "name": obj["metadata"]["name"], "uid": obj["metadata"]["uid"]}
    for entry in obj["spec"].get("resourceClaims") or []:
        name = _claim_name(obj, entry)
        current = everything.get(name or "")
        if name is None or current is None:
            return None
        status = dict(current.get("status") or {})
        if status.get("allocation"):
            terms = status["allocation"]["nodeSelector"]["nodeSelectorTerms"]
            if node_name not in terms[0]["matchFields"][0]["values"]:
                return None
        else:
            picked = allocate(current, node_name, slices, everything.values(), zones)
            if picked is None:
                return None
            status["allocation"] = picked
        reserved = [r for r in status.get("reservedFor") or [] if r.get("uid") != reference["uid"]]
        status["reservedFor"] = [*reserved, reference]
        updates[name] = status
        everything[name] = {**current, "status": status}
    pod_status = running_status(obj, node_name, started)
    statuses = scheduler_statuses(obj, node_name, everything.values(), slices, pods) if updates else []
    if statuses:
        pod_status["nodeAllocatableResourceClaimStatuses"] = statuses
    return Binding(node_name, updates, pod_status)


def _bound(
    obj: dict[str, Any],
    node_name: str,
    claims: dict[str, dict[str, Any]],
    slices: list[dict[str, Any]],
    now: datetime.datetime,
    *,
    scheduler_status: bool = True,
    zones: Sequence[int] = (0, 1),
    pods: Iterable[Mapping[str, Any]] = (),
) -> list[dict[str, Any]]:
    """The pod bound to ``node_name``, with its claims allocated and reserved; returns the changed claims."""
    started = obj["metadata"]["creationTimestamp"]
    binding = bind(obj, node_name, claims, slices, started, zones, pods=pods)
    assert binding is not None, f"the demo cluster does not fit {obj['metadata']['name']} on {node_name}"
    obj["spec"]["nodeName"] = node_name
    if not scheduler_status:
        binding.pod_status.pop("nodeAllocatableResourceClaimStatuses", None)
    generated = (obj.get("status") or {}).get("resourceClaimStatuses")
    obj["status"] = binding.pod_status
    if generated:
        obj["status"]["resourceClaimStatuses"] = generated
    changed = []
    for name, status in binding.claims.items():
        claims[name]["status"] = status
        changed.append(claims[name])
    return changed


# --- the cluster ------------------------------------------------------------------------------------

_SYSTEM: Final = (
    ("kube-system", "kube-proxy", Box("kube-proxy", "100m", "128Mi", image="registry.k8s.io/kube-proxy:v1.36.0")),
    ("monitoring", "node-exporter", Box("node-exporter", "50m", "64Mi", image="quay.io/prometheus/node-exporter:v1.9")),
)


def build_cluster(now: datetime.datetime) -> list[dict[str, Any]]:
    """Every object of the demo cluster at the start of the story, in creation order."""
    slices = [s for name in NODES for s in resource_slices(name, now)]
    objects: list[dict[str, Any]] = [*(node(name, now) for name in NODES), *device_classes(now), *slices]
    claims: dict[str, dict[str, Any]] = {}
    pods: list[dict[str, Any]] = []
    days = datetime.timedelta(days=2)

    def add_claim(namespace: str, name: str, wants: Sequence[Want], **kwargs: Any) -> str:
        claims[name] = claim(namespace, name, wants, now, **kwargs)
        return name

    for name in NODES:
        for namespace, app, box in _SYSTEM:
            system_pod = pod(namespace, f"{app}-{name}", [box], now, labels={"k8s-app": app}, ago=days * 5)
            pods.append(system_pod)
            _bound(system_pod, name, claims, slices, now)

    # worker-1: a training job, GPU + cores + hugepages on NUMA zone 0, from a claim template
    trainer = pod("ml", "trainer-0", [Box("trainer", "1", "8Gi", ("accel",)), Box("log-shipper", "100m", "128Mi")],
                  now, templates={"accel": "gpu-with-cores"}, ago=days)
    generated = add_claim("ml", "trainer-0-accel-x7k2p", [gpus(), cores(4), hugepages("512Mi")], ago=days,
                          owner={"pod": "trainer-0", "uid": trainer["metadata"]["uid"], "claim": "accel"})
    trainer["status"] = {"resourceClaimStatuses": [{"name": "accel", "resourceClaimName": generated}]}
    frontend_1 = pod("web", "frontend-7d9f5-abcde", [Box("nginx", "2", "4Gi")], now, ago=days)
    # worker-2: inference on GPU 1 (zone 1) and a database with hugepages and cores
    inference = pod("ml", "inference-0", [Box("server", "500m", "2Gi", ("gpu",))], now,
                    claims={"gpu": add_claim("ml", "inference-0-gpu", [gpus(), cores(2)], ago=days)}, ago=days)
    database = pod("db", "postgres-0", [Box("postgres", "2", "8Gi", ("memory",))], now,
                   claims={"memory": add_claim("db", "postgres-0-memory", [cores(2), hugepages("1Gi")], ago=days)},
                   ago=days)
    # worker-3: an ETL job bound before the gate was on (no node-allocatable status), and a frontend
    legacy = pod("batch", "legacy-etl", [Box("etl", "500m", "2Gi", ("cores",))], now,
                 claims={"cores": add_claim("batch", "legacy-etl-cores", [cores(4)], ago=days * 3)}, ago=days * 3)
    frontend_3 = pod("web", "frontend-7d9f5-fghij", [Box("nginx", "2", "4Gi")], now, ago=days)

    placed = [(trainer, "worker-1", (0, 1)), (frontend_1, "worker-1", (0, 1)), (inference, "worker-2", (1, 0)),
              (database, "worker-2", (0, 1)), (frontend_3, "worker-3", (0, 1))]
    for obj, name, zones in placed:
        _bound(obj, name, claims, slices, now, zones=zones, pods=pods)
        pods.append(obj)
    _bound(legacy, "worker-3", claims, slices, now, scheduler_status=False, zones=(1, 0), pods=pods)
    pods.append(legacy)

    # new claim pods, admitted with the gate while the operator was down
    notebook = pod("ml", "notebook-a", [Box("jupyter", "1", "4Gi", ("gpu",))], now,
                   claims={"gpu": add_claim("ml", "notebook-a-gpu", [gpus(), cores(2)], ago=datetime.timedelta(
                       seconds=40))}, ago=datetime.timedelta(seconds=40))
    etl = pod("batch", "nightly-etl", [Box("etl", "500m", "1Gi", ("cores",))], now,
              claims={"cores": add_claim("batch", "nightly-etl-cores", [cores(4)], ago=datetime.timedelta(
                  seconds=25))}, ago=datetime.timedelta(seconds=25))
    pods += [gated(notebook), gated(etl)]
    return [*objects, *claims.values(), *pods]


def later_pods(
    step: str, now: datetime.datetime, slices: Sequence[Mapping[str, Any]], claims: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The objects the story adds at a step: new gated pods (and their claims, some allocated ahead).

    ``stale``: ``ml/inference-1`` joins a claim already allocated on worker-2 (held while worker-2 is Stale)
    and ``web/report-1`` asks for cores anywhere (released, kept away from worker-2).
    ``frozen``: ``ml/trainer-1`` has a claim allocated on worker-3 (held while worker-3 is Frozen).
    """
    existing = list(claims)
    if step == "stale":
        reserved = claim("ml", "inference-1-gpu", [gpus(), cores(2)], now)
        picked = allocate(reserved, "worker-2", slices, existing)
        assert picked is not None
        reserved["status"] = {"allocation": picked}
        report_claim = claim("web", "report-1-cores", [cores(2)], now)
        inference = pod("ml", "inference-1", [Box("server", "500m", "2Gi", ("gpu",))], now,
                        claims={"gpu": "inference-1-gpu"}, ago=datetime.timedelta(0))
        report = pod("web", "report-1", [Box("report", "250m", "512Mi", ("cores",))], now,
                     claims={"cores": "report-1-cores"}, ago=datetime.timedelta(0))
        return [reserved, report_claim, gated(inference), gated(report)]
    if step == "frozen":
        reserved = claim("ml", "trainer-1-accel", [gpus(), cores(4), hugepages("256Mi")], now)
        picked = allocate(reserved, "worker-3", slices, existing)
        assert picked is not None
        reserved["status"] = {"allocation": picked}
        trainer = pod("ml", "trainer-1", [Box("trainer", "1", "8Gi", ("accel",))], now,
                      claims={"accel": "trainer-1-accel"}, ago=datetime.timedelta(0))
        return [reserved, gated(trainer)]
    raise ValueError(f"no pods for step {step!r}")


def previous_ledgers(objects: Iterable[Mapping[str, Any]], now: datetime.datetime) -> list[dict[str, Any]]:
    """The ledgers the operator's previous run left behind (they turn Rebuilding when it starts again)."""
    loaded = Loaded()
    load_items([dict(obj) for obj in objects], "demo", loaded)
    written = stamp(now, datetime.timedelta(minutes=7))
    out = []
    for ledger in ledgers_of(loaded, Flags(), written):
        ledger["metadata"]["creationTimestamp"] = stamp(now, datetime.timedelta(days=12))
        ledger["metadata"]["uid"] = uid("NodeAllocatableLedger", "", ledger["metadata"]["name"])
        ledger["status"]["ledgerVersion"] = 41
        ledger["status"]["mappingVersion"] = 3
        out.append(ledger)
    return out
