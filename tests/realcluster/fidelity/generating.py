"""A seeded generator of small DRA clusters, in one release's API shape, for the differential against the scheduler.

Rules:
1. A case is self-contained: its own namespace, Nodes (labelled with the case), driver, DeviceClasses and
   ResourceSlices, so that many cases run side by side in one cluster without touching each other; every pod is
   pinned by ``nodeSelector`` to one node of its case, so a pod that does not fit has exactly one node to blame.
2. Within a case, every device of one class carries the same mappings: which devices the scheduler picks never
   changes what a claim charges, so a pod that stays pending can be judged from its would-be allocation.
3. The same seed gives the same case (``random.Random(seed)``); names carry the seed.
4. It covers what the ledger's rules are about: per-device and capacity-key mappings with multipliers, v1.37
   per-pod and per-container overhead, NUMA attributes, direct and template claims, init containers and
   sidecars, RuntimeClass overhead, pod-level resources, a container that references a claim twice (by two
   requests), claims no container references, claims shared by two pods, and in-place resizes as a kubelet
   writes them. Some objects are invalid on purpose (``invalid`` marks what was mutated): the real API's verdict
   on them is recorded, not assumed.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from typing import Any

from tests.realcluster.releases import Release

CASE_LABEL = "fidelity.draledger.dev/case"
NODE_LABEL = "fidelity.draledger.dev/node"
RUNTIME_CLASSES = {  # created once per cluster (tests/realcluster/fidelity/running.py)
    "fidelity-small": {"cpu": "250m", "memory": "64Mi"},
    "fidelity-large": {"cpu": "1", "memory": "1Gi"},
}
NUMA_ATTRIBUTES = ("numaNode", "resource.kubernetes.io/numaNode", "dra.cpu/numaNodeID")
IMAGE = "registry.k8s.io/pause:3.10"  # never pulled: there is no kubelet


@dataclass
class Case:
    seed: int
    namespace: str
    driver: str
    nodes: list[dict[str, Any]]  # Node objects, created with tests.realcluster.cluster.create_node
    objects: list[dict[str, Any]]  # in creation order: DeviceClasses, slices, templates, claims, pods
    resizes: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)  # pod -> container -> requests
    release: str = "v1.36"  # the release the case runs on: whose rules judge it
    invalid: dict[str, str] = field(default_factory=dict)  # "Kind/name" -> what was made invalid

    def pods(self) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == "Pod"]


class Generator:
    def __init__(self, seed: int, release: Release) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.release = release
        self.ns = f"fid-{release.name.replace('.', '')}-{seed}"
        self.driver = f"{self.ns}.fidelity.draledger.dev"
        self.case = Case(seed, self.ns, self.driver, [], [], release=release.name)

    # ----- the pieces -----
    def mapping(self, resource: str, multiplier: str, capacity_key: str | None = None,
                per_pod: str | None = None, per_container: str | None = None) -> dict[str, Any]:
        """One resource's node-allocatable entry in the release's shape (v1.36 has no overhead)."""
        if self.release.shape == "mappings":
            entry: dict[str, Any] = {"allocationMultiplier": multiplier} if multiplier else {}
            if capacity_key:
                entry["capacityKey"] = capacity_key
            return entry
        out: dict[str, Any] = {}
        if multiplier or capacity_key:
            out["mapping"] = ({"capacityKey": capacity_key, "capacityMultiplier": multiplier} if capacity_key
                              else {"deviceMultiplier": multiplier})
            if capacity_key and not multiplier:
                del out["mapping"]["capacityMultiplier"]
        overhead = {k: v for k, v in (("perPod", per_pod), ("perContainer", per_container)) if v}
        if overhead:
            out["overhead"] = overhead
        return out

    def device_fields(self, mappings: dict[str, dict[str, Any]]) -> dict[str, Any]:
        field_name = "nodeAllocatableResourceMappings" if self.release.shape == "mappings" else (
            "nodeAllocatableResources")
        return {field_name: mappings} if mappings else {}

    def classes(self) -> dict[str, dict[str, Any]]:
        """Per device kind, the mappings every device of that kind carries in this case."""
        rng = self.rng
        kinds: dict[str, dict[str, Any]] = {}
        core: dict[str, Any] = {"cpu": self.mapping("cpu", rng.choice(["1", "2", "500m", "250m", "1500m"]))}
        if rng.random() < 0.4:
            core["memory"] = self.mapping("memory", rng.choice(["1Gi", "512Mi", "100M"]))
        if self.release.shape == "resources" and rng.random() < 0.4:
            mapped = core.get("memory", {}).get("mapping", {}).get("deviceMultiplier", "")
            core["memory"] = self.mapping("memory", mapped, per_pod=rng.choice(["32Mi", "100Mi"]),
                                          per_container=rng.choice([None, "8Mi", "10M"]))
        kinds["core"] = core
        if rng.random() < 0.6:
            kinds["shared"] = {"cpu": self.mapping("cpu", rng.choice(["1", "2", "500m"]), capacity_key="cpu")}
            if rng.random() < 0.5:
                kinds["shared"]["hugepages-2Mi"] = self.mapping("hugepages-2Mi", "1", capacity_key="hugepages")
        if self.release.shape == "resources" and rng.random() < 0.5:
            kinds["nic"] = {"memory": self.mapping("memory", "", per_pod="64Mi", per_container="16Mi")}
        if rng.random() < 0.2:
            kinds["plain"] = {}  # a device without mappings: its claims charge nothing
        return kinds

    def device(self, kind: str, index: int, mappings: dict[str, Any], zone: int) -> dict[str, Any]:
        numa = self.rng.choice(NUMA_ATTRIBUTES)
        device: dict[str, Any] = {
            "name": f"{kind}-{index}",
            "attributes": {"kind": {"string": kind}, numa: {"int": zone}},
            **copy.deepcopy(self.device_fields(mappings)),  # each device its own: an invalid one stays alone
        }
        if kind == "shared":
            device["allowMultipleAllocations"] = True
            device["capacity"] = {
                "cpu": {"value": "8", "requestPolicy": {"default": "1",
                                                        "validRange": {"min": "500m", "step": "500m"}}},
                "hugepages": {"value": "512Mi", "requestPolicy": {"default": "2Mi",
                                                                  "validRange": {"min": "2Mi", "step": "2Mi"}}},
            }
        return device

    # ----- the case -----
    def build(self) -> Case:
        rng, case = self.rng, self.case
        kinds = self.classes()
        for kind in kinds:
            case.objects.append({
                "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": f"{self.ns}-{kind}"},
                "spec": {"selectors": [{"cel": {"expression":
                                                f'device.driver == "{self.driver}" && '
                                                f'device.attributes["{self.driver}"].kind == "{kind}"'}}]}})
        nodes = [f"{self.ns}-n{i}" for i in range(rng.choice([1, 1, 2]))]
        for node in nodes:
            allocatable = {"cpu": rng.choice(["4", "8", "16", "7500m"]),
                           "memory": rng.choice(["16Gi", "64Gi", "32000Mi"]), "pods": "110"}
            if "shared" in kinds or rng.random() < 0.3:
                allocatable["hugepages-2Mi"] = rng.choice(["256Mi", "1Gi"])
            case.nodes.append({"name": node, "allocatable": allocatable,
                               "labels": {CASE_LABEL: self.ns, NODE_LABEL: node}})
            devices = []
            for kind, mappings in kinds.items():
                count = {"core": rng.randint(2, 8), "shared": 1, "nic": 2, "plain": 2}[kind]
                devices += [self.device(kind, i, mappings, i % 2) for i in range(count)]
            rng.shuffle(devices)
            split = len(devices) // 2 if rng.random() < 0.3 and len(devices) > 1 else len(devices)
            parts = [devices[:split], devices[split:]] if split < len(devices) else [devices]
            for index, part in enumerate(parts):
                case.objects.append({
                    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                    "metadata": {"name": f"{node}-{index}"},
                    "spec": {"driver": self.driver, "nodeName": node,
                             "pool": {"name": node, "generation": 1, "resourceSliceCount": len(parts)},
                             "devices": part}})
        for index in range(rng.randint(1, 4)):
            self.pod(index, rng.choice(nodes), kinds)
        if rng.random() < 0.2:
            self.shared_claim_pair(rng.choice(nodes), kinds)
        self.maybe_invalid(kinds)
        return case

    def claim_spec(self, kinds: dict[str, Any]) -> dict[str, Any]:
        rng = self.rng
        requests = []
        for index in range(rng.choice([1, 1, 2])):
            kind = rng.choice(sorted(kinds))
            exact: dict[str, Any] = {"deviceClassName": f"{self.ns}-{kind}"}
            if kind == "shared":
                if rng.random() < 0.7:
                    exact["capacity"] = {"requests": {"cpu": rng.choice(["500m", "1", "1200m", "2"])}}
            elif rng.random() < 0.5:
                exact["allocationMode"], exact["count"] = "ExactCount", rng.choice([1, 2])
            requests.append({"name": f"r{index}", "exactly": exact})
        return {"devices": {"requests": requests}}

    def pod(self, index: int, node: str, kinds: dict[str, Any]) -> None:
        rng, ns = self.rng, self.ns
        name = f"p{index}"
        pod_claims: list[dict[str, Any]] = []
        claim_requests: dict[str, list[str]] = {}
        for c in range(rng.choice([0, 1, 1, 2])):
            spec = self.claim_spec(kinds)
            claim_requests[f"c{c}"] = [r["name"] for r in spec["devices"]["requests"]]
            if rng.random() < 0.3:
                template = f"{name}-t{c}"
                self.case.objects.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                                          "metadata": {"name": template, "namespace": ns}, "spec": {"spec": spec}})
                pod_claims.append({"name": f"c{c}", "resourceClaimTemplateName": template})
            else:
                claim = f"{name}-c{c}"
                self.case.objects.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                          "metadata": {"name": claim, "namespace": ns}, "spec": spec})
                pod_claims.append({"name": f"c{c}", "resourceClaimName": claim})
        containers = [self.container(f"app{i}", claim_requests) for i in range(rng.choice([1, 1, 2, 3]))]
        spec: dict[str, Any] = {"nodeSelector": {NODE_LABEL: node}, "containers": containers,
                                "terminationGracePeriodSeconds": 0}
        if rng.random() < 0.4:
            spec["initContainers"] = [self.container(f"init{i}", claim_requests, sidecar=rng.random() < 0.5)
                                      for i in range(rng.choice([1, 2]))]
        if pod_claims:
            spec["resourceClaims"] = pod_claims
        if rng.random() < 0.3:
            spec["runtimeClassName"] = rng.choice(sorted(RUNTIME_CLASSES))
        if rng.random() < 0.15:
            spec["resources"] = {"requests": {"cpu": rng.choice(["2", "4", "6500m"]),
                                              "memory": rng.choice(["2Gi", "6Gi"])}}
            for container in (*spec["containers"], *spec.get("initContainers", ())):
                container["resources"].pop("requests", None)  # containers may not exceed the pod's
        self.case.objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
                                  "spec": spec})
        sized = [c for c in containers if c["resources"].get("requests")]
        if sized and rng.random() < 0.25:  # after binding, a kubelet resizes a container in place
            container = rng.choice(sized)
            self.case.resizes[name] = {container["name"]: {"cpu": rng.choice(["100m", "1", "2500m"]),
                                                           "memory": rng.choice(["128Mi", "1Gi"])}}

    def container(self, name: str, claim_requests: dict[str, list[str]], sidecar: bool = False) -> dict[str, Any]:
        rng = self.rng
        requests = {r: q for r, q in (("cpu", rng.choice(["0", "100m", "250m", "1", "1500m", None])),
                                      ("memory", rng.choice(["64Mi", "1Gi", "100M", None]))) if q}
        container: dict[str, Any] = {"name": name, "image": IMAGE, "resources": {"requests": requests}}
        if sidecar:
            container["restartPolicy"] = "Always"
        refs: list[dict[str, str]] = []
        for claim, request_names in claim_requests.items():
            roll = rng.random()
            if roll < 0.5:
                refs.append({"name": claim})
            elif roll < 0.65 and len(request_names) > 1:  # the same claim twice, by two of its requests
                refs += [{"name": claim, "request": request} for request in request_names[:2]]
        if refs:
            container["resources"]["claims"] = refs
        return container

    def shared_claim_pair(self, node: str, kinds: dict[str, Any]) -> None:
        """Two pods that consume one claim: for a mapped claim the scheduler refuses the second."""
        claim = "shared-c"
        self.case.objects.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                  "metadata": {"name": claim, "namespace": self.ns}, "spec": self.claim_spec(kinds)})
        for name in ("s0", "s1"):
            self.case.objects.append({
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": self.ns},
                "spec": {"nodeSelector": {NODE_LABEL: node}, "terminationGracePeriodSeconds": 0,
                         "resourceClaims": [{"name": "x", "resourceClaimName": claim}],
                         "containers": [{"name": "app", "image": IMAGE,
                                         "resources": {"requests": {"cpu": "100m"}, "claims": [{"name": "x"}]}}]}})

    def maybe_invalid(self, kinds: dict[str, Any]) -> None:
        """Now and then one slice or pod made invalid in a way the ledger's rules care about."""
        rng = self.rng
        if rng.random() > 0.25:
            return
        slices = [o for o in self.case.objects if o["kind"] == "ResourceSlice"]
        target = rng.choice(slices)
        device = rng.choice(target["spec"]["devices"])
        key = "nodeAllocatableResourceMappings" if self.release.shape == "mappings" else "nodeAllocatableResources"
        choice = rng.choice(["extended", "negative", "garbage", "both"])
        if choice == "extended":
            device.setdefault(key, {})["example.com/widgets"] = self.mapping("example.com/widgets", "1")
        elif choice == "negative":
            device.setdefault(key, {})["cpu"] = self.mapping("cpu", "-1")
        elif choice == "garbage":
            device.setdefault(key, {})["cpu"] = self.mapping("cpu", "1x")
        else:
            device.setdefault(key, {})["cpu"] = (
                {"capacityKey": "cpu", "allocationMultiplier": "1"} if self.release.shape == "mappings"
                else {"mapping": {"capacityKey": "cpu", "deviceMultiplier": "1", "capacityMultiplier": "1"}})
        self.case.invalid[f"ResourceSlice/{target['metadata']['name']}"] = f"{choice} mapping on {device['name']}"


def generate(seed: int, release: Release) -> Case:
    return Generator(seed, release).build()
