"""A seeded generator of small DRA clusters, in one release's API shape, for the differential against the scheduler.

Rules:
1. A case is self-contained: its own namespace, Nodes (labelled with the case), drivers, DeviceClasses and
   ResourceSlices, so that many cases run side by side in one cluster without touching each other; every pod is
   pinned by ``nodeSelector`` to one node of its case (or bound there by ``nodeName``), so a pod that does not fit
   has exactly one node to blame.
2. Within a case, every device of one kind carries the same mappings (fidelity/devices.py): which devices the
   scheduler picks never changes what a claim charges, so a pod that stays pending can be judged from its
   would-be allocation (fidelity/allocating.py).
3. The same seed gives the same case (``random.Random(seed)``); names carry the seed.
4. A case runs in stages, the same for every case of a batch (fidelity/running.py): ``objects`` first; then
   ``resizes`` and the ``open`` republication (a pool's newest generation incomplete) with the ``window`` pods and
   the ``outside`` pods (bound by ``nodeName``); then the ``close`` republication; then, with the scheduler's gate
   off, the ``gate-off`` pods, and the gate on again.
5. Each case names its features (fidelity/features.py): the rows of the agreement table. Some objects are
   invalid on purpose (fidelity/refusing.py); the real API's verdict on them is recorded, not assumed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from tests.realcluster.fidelity.devices import Kind, Shapes
from tests.realcluster.fidelity.pods import Pods
from tests.realcluster.fidelity.refusing import maybe_invalid
from tests.realcluster.releases import Release

CASE_LABEL = "fidelity.draledger.dev/case"
NODE_LABEL = "fidelity.draledger.dev/node"
ADMIN_LABEL = "resource.kubernetes.io/admin-access"
RUNTIME_CLASSES = {  # created once per cluster (tests/realcluster/fidelity/running.py)
    "fidelity-small": {"cpu": "250m", "memory": "64Mi"},
    "fidelity-large": {"cpu": "1", "memory": "1Gi"},
}
STAGES = ("window", "outside", "gate-off")


@dataclass
class Case:
    seed: int
    namespace: str
    driver: str
    nodes: list[dict[str, Any]]  # Node objects, created with tests.realcluster.cluster.create_node
    objects: list[dict[str, Any]]  # in creation order: DeviceClasses, slices, templates, claims, pods
    resizes: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)  # pod -> container ("" pod) -> req
    release: str = "v1.36"  # the release the case runs on: whose rules judge it
    invalid: dict[str, str] = field(default_factory=dict)  # "Kind/name" -> what was made invalid
    features: set[str] = field(default_factory=set)
    later: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # stage -> objects created then (rule 4)
    republish: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # "open"/"close" -> slice updates
    namespace_labels: dict[str, str] = field(default_factory=dict)

    def pods(self) -> list[dict[str, Any]]:
        return [o for o in (*self.objects, *(o for s in STAGES for o in self.later.get(s, ()))) if o["kind"] == "Pod"]

    @property
    def drivers(self) -> tuple[str, str]:
        return self.driver, f"b.{self.driver}"


class Generator:
    def __init__(self, seed: int, release: Release) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.release = release
        self.ns = f"fid-{release.name.replace('.', '')}-{seed}"
        self.driver = f"{self.ns}.fidelity.draledger.dev"
        self.case = Case(seed, self.ns, self.driver, [], [], release=release.name)
        self.shapes = Shapes(self.rng, release, self.ns, self.driver, self.case.drivers[1])

    def build(self) -> Case:
        rng, case, shapes = self.rng, self.case, self.shapes
        features = case.features
        kinds = shapes.kinds(features)
        classes = [shapes.device_class(kind) for kind in kinds.values()]
        extended = ""
        if rng.random() < 0.2:
            target = kinds[rng.choice([k for k in kinds if k in ("core", "plain", "shared")])]
            extended = f"{self.ns}.fidelity.draledger.dev/ext"
            classes.append(shapes.device_class(target, extended))
            features.add("DRA extended resources")
        nodes = [f"{self.ns}-n{i}" for i in range(rng.choice([1, 1, 2]))]
        if any(k.network for k in kinds.values()) and len(nodes) == 1 and rng.random() < 0.8:
            nodes.append(f"{self.ns}-n1")
        slices: list[dict[str, Any]] = []
        for node in nodes:
            allocatable = {"cpu": rng.choice(["4", "8", "16", "7500m"]),
                           "memory": rng.choice(["16Gi", "64Gi", "32000Mi"]), "pods": "110"}
            if "shared" in kinds or rng.random() < 0.4:
                allocatable["hugepages-2Mi"] = rng.choice(["256Mi", "1Gi"])
            case.nodes.append({"name": node, "allocatable": allocatable,
                               "labels": {CASE_LABEL: self.ns, NODE_LABEL: node}})
            slices += shapes.local_slices(node, kinds, features)
        slices += shapes.network_slices(nodes, kinds, CASE_LABEL)
        if any(k.mappings and not k.network for k in kinds.values()):
            features.add("NUMA zones")
        case.objects += classes + slices
        pods = Pods(rng, self.release, case, kinds, nodes, extended)
        for index in range(rng.randint(1, 4)):
            pods.pod(f"p{index}", rng.choice(nodes))
        if rng.random() < (0.5 if "link" in kinds else 0.2):
            pods.shared_pair(rng.choice(nodes), nodes)
        self.later_stages(pods, kinds, nodes, slices)
        self.as_v1beta2()
        maybe_invalid(rng, self.release, case, shapes)
        return case

    def later_stages(self, pods: Pods, kinds: dict[str, Kind], nodes: list[str],
                     slices: list[dict[str, Any]]) -> None:
        """Rule 4: a republished pool, pods bound by nodeName, pods created while the gate is off."""
        rng, case = self.rng, self.case
        if rng.random() < 0.25:
            self.republished(rng.choice(nodes), slices, pods)
        if rng.random() < 0.2:
            pods.outside(rng.choice(nodes))
        if rng.random() < 0.2:
            case.features.add("the gate toggled off and on")
            for index in range(rng.randint(1, 2)):
                pods.pod(f"g{index}", rng.choice(nodes), stage="gate-off")

    def republished(self, node: str, slices: list[dict[str, Any]], pods: Pods) -> None:
        """The node's pool (of the case's driver) at generation 2, slice by slice: the first update opens a window
        where the newest generation is incomplete (when the pool has two slices or more), the rest closes it.
        Devices and mappings stay as they were: a driver restarting, not a driver changing its mind."""
        case = self.case
        mine = [s for s in slices if s["spec"].get("nodeName") == node and s["spec"]["driver"] == self.driver]
        updates = []
        for obj in mine:
            update = {**obj, "spec": {**obj["spec"], "pool": {**obj["spec"]["pool"], "generation": 2}}}
            if "devices" in update["spec"]:
                update["spec"]["devices"] = list(reversed(update["spec"]["devices"]))
            updates.append(update)
        case.features.add("republished pools (generation > 1)")
        case.republish["open"] = updates[:1]
        case.republish["close"] = updates[1:]
        if len(updates) > 1:
            case.features.add("the incomplete-pool window")
            for index in range(self.rng.randint(1, 2)):
                pods.pod(f"w{index}", node, stage="window")

    def as_v1beta2(self) -> None:
        """Now and then the case's DeviceClasses, ResourceSlices, templates and claims go in as v1beta2 (the same
        fields there); the run serves that version (fidelity/running.py)."""
        if self.rng.random() >= 0.2:
            return
        self.case.features.add("v1beta2 objects")
        for obj in self.case.objects:
            if obj["apiVersion"] == "resource.k8s.io/v1" and self.rng.random() < 0.6:
                obj["apiVersion"] = "resource.k8s.io/v1beta2"


def generate(seed: int, release: Release) -> Case:
    return Generator(seed, release).build()
