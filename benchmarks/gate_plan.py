"""The gate benchmark's cluster and bursts, as plain data derived from a seed (no I/O).

Rules:
1. Seeded: ``plan(seed, nodes, pods)`` gives the same pods, in the same order, with the same kinds, and the
   same devices on the same nodes, every time.
2. Four kinds of claim pod, each with one claim from a ResourceClaimTemplate (``KINDS``): a mapped core (its
   device maps to 2 cpu of the node, KEP-5517), an unmapped GPU, both in one claim, and a scarce unmapped
   device. The abundant devices are sized from the demand (at least 1.5 devices per claim that asks for them),
   so every pod of the first three kinds fits; the scarce device exists once for every three pods that ask for
   it, so two in three of those must wait (the scheduler holds them Unschedulable: none frees up, there is no
   kubelet).
3. A node's cpu covers its mapped cores and half a cpu for each pod the node could get (three times the average)
   with room to spare, so the node's own cpu never turns a fitting pod away.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass

MAPPED_CPU = 2  # cpu each core device maps to (allocationMultiplier / deviceMultiplier)
POD_CPU_MILLI = 500  # the container's own cpu request
POD_MEMORY = "64Mi"
MAX_PODS = 110  # the kubelet's default pods capacity

# kind -> the device classes its claim's requests name (one device each)
KINDS: dict[str, tuple[str, ...]] = {
    "core": ("cores",),
    "gpu": ("gpus",),
    "core-gpu": ("cores", "gpus"),
    "scarce": ("scarce",),
}
SHARES = (("core", 0.5), ("gpu", 0.25), ("core-gpu", 0.15), ("scarce", 0.10))
MAPPED = frozenset({"cores"})  # the classes whose devices map to node allocatable cpu


@dataclass(frozen=True, slots=True)
class Plan:
    """What the benchmark creates: the nodes' devices, and the kind of each pod of a burst, in order."""

    seed: int
    nodes: int
    kinds: tuple[str, ...]  # one per pod of a burst
    devices: dict[str, int]  # device class -> devices per node (abundant classes)
    scarce_nodes: int  # nodes 0 .. scarce_nodes-1 have one scarce device each
    node_cpu: int

    @property
    def pods(self) -> int:
        return len(self.kinds)

    def demand(self, device_class: str) -> int:
        return sum(KINDS[kind].count(device_class) for kind in self.kinds)

    def bound(self, kinds: tuple[str, ...] | None = None) -> int:
        """How many of ``kinds`` (default: the whole burst) the scheduler can bind (rule 2)."""
        counts = Counter(self.kinds if kinds is None else kinds)
        return sum(n for kind, n in counts.items() if kind != "scarce") + min(counts["scarce"], self.scarce_nodes)

    def waiting(self) -> int:
        return self.pods - self.bound()

    def node_devices(self, index: int) -> dict[str, int]:
        """Device class -> devices on node ``index``."""
        out = dict(self.devices)
        if index < self.scarce_nodes:
            out["scarce"] = 1
        return out


def plan(seed: int, nodes: int, pods: int) -> Plan:
    """The seeded plan (rule 1) for a burst of ``pods`` over ``nodes``."""
    if nodes < 1 or pods < 1:
        raise ValueError(f"--nodes and --pods must be at least 1 (got {nodes} and {pods})")
    if pods > nodes * MAX_PODS // 3:
        raise ValueError(f"--pods {pods} is more than a third of the pods {nodes} nodes can hold ({MAX_PODS} each)")
    rng = random.Random(seed)
    names = [name for name, _ in SHARES]
    kinds = tuple(rng.choices(names, weights=[share for _, share in SHARES], k=pods))
    demand = Counter(device_class for kind in kinds for device_class in KINDS[kind])
    devices = {name: max(2, math.ceil(1.5 * demand[name] / nodes)) for name in ("cores", "gpus")}
    scarce_nodes = min(nodes, math.ceil(demand["scarce"] / 3)) if demand["scarce"] else 0
    per_node = min(MAX_PODS, math.ceil(3 * pods / nodes))
    node_cpu = MAPPED_CPU * devices["cores"] + math.ceil(per_node * POD_CPU_MILLI / 1000) + 4
    return Plan(seed, nodes, kinds, devices, scarce_nodes, node_cpu)
