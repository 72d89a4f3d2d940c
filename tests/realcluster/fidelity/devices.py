"""The device kinds a generated case publishes, in one release's API shape: DeviceClasses and ResourceSlices.

Rules (generating rule 2):
1. One DeviceClass per kind, selecting the case's driver (or the second driver's) and the kind's attribute; every
   device of one kind carries the same mappings, so which device the scheduler picks never changes a charge.
2. Node-local kinds are published per node, one pool per node and driver (the pool is named after the node; the
   second driver's pool has the same name). ``core``: deviceMultiplier mappings, with v1.37 overhead;
   ``shared``: ``allowMultipleAllocations`` with capacity-key mappings; ``nic``: overhead only (v1.37 on);
   ``plain``: no mapping; ``part``: partitionable devices consuming a counter set of their pool (the counters in
   a slice of their own, as the API requires); ``bound``: devices with binding conditions; ``other``: the second
   driver's devices.
3. Network-attached kinds have one pool of their own: ``net`` is mapped and published with ``allNodes``, a
   ``nodeSelector`` on the case's label, or ``perDeviceNodeSelection`` (each device for one node or all);
   ``link`` (overhead only from v1.37, no mapping before) is published for all nodes, so one claim may be shared
   by pods on different nodes. They carry no NUMA attribute: they are on no node's NUMA zone.
4. Quantities include sub-millicore cpu (``µ`` amounts the scheduler rounds up per pod).
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass
from typing import Any, Final

from tests.realcluster.releases import Release

NUMA_ATTRIBUTES: Final = ("numaNode", "resource.kubernetes.io/numaNode", "dra.cpu/numaNodeID")
CPU_MULTIPLIERS: Final = ("1", "2", "500m", "250m", "1500m", "1500u", "333333n", "2500u")
LOCAL_KINDS: Final = ("core", "shared", "nic", "plain", "part", "bound", "other")
NETWORK_KINDS: Final = ("net", "link")
NET_LAYOUTS: Final = ("allNodes", "nodeSelector", "perDeviceNodeSelection")


@dataclass
class Kind:
    name: str
    mappings: dict[str, Any]  # resource -> entry in the release's shape
    count: int
    driver: str
    network: str = ""  # "" (node-local), or one of NET_LAYOUTS

    @property
    def mapped(self) -> bool:
        """Whether a device of this kind has a mapping part (a claim on it may not be shared across pods)."""
        return any("mapping" in e or "allocationMultiplier" in e or "capacityKey" in e for e in self.mappings.values())


class Shapes:
    """Builds one case's mappings, classes and slices in its release's shape."""

    def __init__(self, rng: random.Random, release: Release, namespace: str, driver: str, other: str) -> None:
        self.rng, self.release, self.ns, self.driver, self.other = rng, release, namespace, driver, other
        self.v136 = release.name == "v1.36"
        self.field = "nodeAllocatableResourceMappings" if self.v136 else "nodeAllocatableResources"

    def mapping(self, multiplier: str = "", capacity_key: str | None = None, per_pod: str | None = None,
                per_container: str | None = None) -> dict[str, Any]:
        """One resource's entry in the release's shape (v1.36 has no overhead)."""
        if self.v136:
            entry: dict[str, Any] = {"allocationMultiplier": multiplier} if multiplier else {}
            if capacity_key:
                entry["capacityKey"] = capacity_key
            return entry
        out: dict[str, Any] = {}
        if capacity_key:
            out["mapping"] = {"capacityKey": capacity_key, "capacityMultiplier": multiplier or "1"}
        elif multiplier:
            out["mapping"] = {"deviceMultiplier": multiplier}
        overhead = {k: v for k, v in (("perPod", per_pod), ("perContainer", per_container)) if v}
        if overhead:
            out["overhead"] = overhead
        return out

    # ----- kinds -----
    def kinds(self, features: set[str]) -> dict[str, Kind]:
        rng, kinds = self.rng, {}
        core: dict[str, Any] = {"cpu": self.mapping(rng.choice(CPU_MULTIPLIERS))}
        if rng.random() < 0.4:
            core["memory"] = self.mapping(rng.choice(["1Gi", "512Mi", "100M"]))
        if not self.v136 and rng.random() < 0.4:
            mapped = core.get("memory", {}).get("mapping", {}).get("deviceMultiplier", "")
            core["memory"] = self.mapping(mapped, per_pod=rng.choice(["32Mi", "100Mi"]),
                                          per_container=rng.choice([None, "8Mi", "10M"]))
            features.add("per-pod and per-container overhead")
        kinds["core"] = Kind("core", core, rng.randint(3, 8), self.driver)
        if rng.random() < 0.5:
            shared = {"cpu": self.mapping(rng.choice(["1", "2", "500m", "1500u"]), capacity_key="cpu")}
            if rng.random() < 0.5:
                shared["hugepages-2Mi"] = self.mapping("1", capacity_key="hugepages")
            kinds["shared"] = Kind("shared", shared, 1, self.driver)
            features.add("capacity keys")
        if not self.v136 and rng.random() < 0.35:
            kinds["nic"] = Kind("nic", {"memory": self.mapping(per_pod="64Mi", per_container="16Mi")}, 2, self.driver)
            features.add("overhead-only devices")
        if rng.random() < 0.2:
            kinds["plain"] = Kind("plain", {}, 2, self.driver)
            features.add("devices without mappings")
        if rng.random() < 0.2:
            kinds["part"] = Kind("part", {"cpu": self.mapping(rng.choice(["1", "500m"]))}, 3, self.driver)
            features.add("partitionable devices with counters")
        if rng.random() < 0.15:
            kinds["bound"] = Kind("bound", {"cpu": self.mapping("1")}, 2, self.driver)
            features.add("binding conditions")
        if rng.random() < 0.2:
            kinds["other"] = Kind("other", {"memory": self.mapping(rng.choice(["256Mi", "1Gi"]))}, 2, self.other)
            features.add("two drivers sharing a pool name")
        if rng.random() < 0.3:
            layout = rng.choice((*NET_LAYOUTS, "perDeviceNodeSelection"))
            kinds["net"] = Kind("net", {"cpu": self.mapping(rng.choice(["1", "250m", "1500u"]))}, 3, self.driver,
                                layout)
            features.add(f"network-attached devices: {layout}")
        if rng.random() < 0.3:
            link = {} if self.v136 else {"memory": self.mapping(per_pod="32Mi", per_container="4Mi")}
            kinds["link"] = Kind("link", link, 1, self.driver, "allNodes")
            features.add("network-attached devices: allNodes")
        if any(k.mappings.get("cpu", {}) and _sub_milli(k.mappings["cpu"]) for k in kinds.values()):
            features.add("sub-millicore quantities")
        if any(k.mapped for k in kinds.values()):
            features.add("device multipliers")
        return kinds

    def device_class(self, kind: Kind, extended: str = "") -> dict[str, Any]:
        spec: dict[str, Any] = {"selectors": [{"cel": {"expression": (
            f'device.driver == "{kind.driver}" && device.attributes["{kind.driver}"].kind == "{kind.name}"')}}]}
        if extended:
            spec["extendedResourceName"] = extended
        suffix = "-ext" if extended else ""
        return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                "metadata": {"name": f"{self.ns}-{kind.name}{suffix}"}, "spec": spec}

    # ----- devices -----
    def device(self, kind: Kind, index: int, zone: int | None, name: str = "") -> dict[str, Any]:
        device: dict[str, Any] = {"name": name or f"{kind.name}-{index}", "attributes": {"kind": {"string": kind.name}}}
        if zone is not None:
            device["attributes"][self.rng.choice(NUMA_ATTRIBUTES)] = {"int": zone}
        if kind.mappings:
            device[self.field] = copy.deepcopy(kind.mappings)  # each its own: a mutated one stays alone
        if kind.name == "shared":
            device["allowMultipleAllocations"] = True
            device["capacity"] = {
                "cpu": {"value": "8", "requestPolicy": {"default": "1", "validRange": {"min": "500m", "step": "500m"}}},
                "hugepages": {"value": "512Mi", "requestPolicy": {"default": "2Mi",
                                                                  "validRange": {"min": "2Mi", "step": "2Mi"}}},
            }
        if kind.name == "part":
            share = {0: "8Gi", 1: "4Gi", 2: "4Gi"}[index % 3]
            device["consumesCounters"] = [{"counterSet": "gpu", "counters": {"mem": {"value": share}}}]
        if kind.name == "bound":
            device["bindingConditions"] = ["fidelity.draledger.dev/ready"]
            device["bindingFailureConditions"] = ["fidelity.draledger.dev/failed"]
        return device

    def local_slices(self, node: str, kinds: dict[str, Kind], features: set[str]) -> list[dict[str, Any]]:
        """The node's pools: the case driver's (maybe in two slices, plus a counters slice) and the second
        driver's, both named after the node."""
        rng = self.rng
        devices: list[dict[str, Any]] = []
        other: list[dict[str, Any]] = []
        for kind in kinds.values():
            if kind.network:
                continue
            for i in range(kind.count):
                # v1.36.3 looks a device up by pool and name whatever the driver (a listed difference): the second
                # driver's devices get names of their own there, and the first driver's names from v1.37 on.
                name = f"core-{i}" if kind.name == "other" and not self.v136 and "core" in kinds else ""
                made = self.device(kind, i, i % 2, name)
                (other if kind.name == "other" else devices).append(made)
        rng.shuffle(devices)
        split = len(devices) // 2 if rng.random() < 0.3 and len(devices) > 1 else len(devices)
        parts = [devices[:split], devices[split:]] if split < len(devices) else [devices]
        if len(parts) == 2:
            features.add("two slices in a pool")
        counters = "part" in kinds
        count = len(parts) + counters
        out = [self.slice(f"{node}-{i}", self.driver, node, count, {"nodeName": node}, part)
               for i, part in enumerate(parts)]
        if counters:
            counter = self.slice(f"{node}-counters", self.driver, node, count, {"nodeName": node}, None)
            counter["spec"]["sharedCounters"] = [{"name": "gpu", "counters": {"mem": {"value": "8Gi"}}}]
            out.append(counter)
        if other:
            out.append(self.slice(f"{node}-b", self.other, node, 1, {"nodeName": node}, other))
        return out

    def network_slices(self, nodes: list[str], kinds: dict[str, Kind], label: str) -> list[dict[str, Any]]:
        out = []
        for kind in kinds.values():
            if not kind.network:
                continue
            pool = f"{self.ns}-{kind.name}"
            devices = [self.device(kind, i, None) for i in range(kind.count)]
            if kind.network == "allNodes":
                where: dict[str, Any] = {"allNodes": True}
            elif kind.network == "nodeSelector":
                where = {"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": label, "operator": "In", "values": [self.ns]}]}]}}
            else:
                where = {"perDeviceNodeSelection": True}
                for i, device in enumerate(devices):
                    if i < len(nodes):
                        device["nodeName"] = nodes[i]
                    else:
                        device["allNodes"] = True
            out.append(self.slice(pool, self.driver, pool, 1, where, devices))
        return out

    def slice(self, name: str, driver: str, pool: str, count: int, where: dict[str, Any],
              devices: list[dict[str, Any]] | None) -> dict[str, Any]:
        spec: dict[str, Any] = {"driver": driver, **where,
                                "pool": {"name": pool, "generation": 1, "resourceSliceCount": count}}
        if devices is not None:
            spec["devices"] = devices
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


def _sub_milli(entry: dict[str, Any]) -> bool:
    value = entry.get("allocationMultiplier") or (entry.get("mapping") or {}).get("deviceMultiplier") or (
        entry.get("mapping") or {}).get("capacityMultiplier") or ""
    return value.endswith(("u", "n"))
