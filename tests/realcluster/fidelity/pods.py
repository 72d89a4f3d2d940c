"""The pods of a generated case, their claims and templates, and what a kubelet later does to them (resizes).

Rules:
1. A claim asks with ``exactly`` requests (a count, or capacity of a shared device), ``firstAvailable`` subrequests
   (the first that fits wins), or ``adminAccess`` (the namespace is labelled for it; such a result blocks no
   device). A pod's claims are direct or from templates; two ``spec.resourceClaims`` entries may name one claim.
2. Containers ask for cpu (sub-millicore too), memory, hugepages (requests equal to limits, as the API wants) and
   the case's DRA extended resource; init containers and sidecars reference claims like containers; a container
   may reference one claim twice (by two of its requests).
3. Pod-level requests cover the containers' (validation refuses less); a resize changes a container or the
   pod-level requests, and the kubelet's answer is written as it writes it (fidelity/running.py).
4. Pods ``outside`` are bound by ``nodeName``: no scheduler looks at them, and they may use a claim another pod
   holds (which the scheduler would have refused for a mapped one).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from tests.realcluster.fidelity.devices import Kind

if TYPE_CHECKING:
    from tests.realcluster.fidelity.generating import Case
from tests.realcluster.releases import Release

IMAGE = "registry.k8s.io/pause:3.10"  # never pulled: there is no kubelet
NODE_LABEL = "fidelity.draledger.dev/node"
RUNTIME_CLASS_NAMES = ("fidelity-large", "fidelity-small")
CPU = ("0", "100m", "250m", "1", "1500m", "1500u", "250500u", None)
CLAIMABLE = ("core", "shared", "nic", "plain", "part", "bound", "other", "net", "link")


class Pods:
    def __init__(self, rng: random.Random, release: Release, case: Case, kinds: dict[str, Kind], nodes: list[str],
                 extended: str) -> None:
        self.rng, self.release, self.case, self.kinds, self.nodes = rng, release, case, kinds, nodes
        self.extended = extended
        self.ns = case.namespace
        self.hugepages = any("hugepages-2Mi" in n["allocatable"] for n in case.nodes)

    def add(self, obj: dict[str, Any], stage: str = "") -> None:
        (self.case.later.setdefault(stage, []) if stage else self.case.objects).append(obj)

    # ----- claims -----
    def request(self, index: int) -> dict[str, Any]:
        rng, features = self.rng, self.case.features
        kind = rng.choice(sorted(k for k in self.kinds if k in CLAIMABLE))
        exact: dict[str, Any] = {"deviceClassName": f"{self.ns}-{kind}"}
        if kind == "shared":
            if rng.random() < 0.7:
                exact["capacity"] = {"requests": {"cpu": rng.choice(["500m", "1", "1200m", "2"])}}
        elif kind not in ("link",) and rng.random() < 0.4:
            exact["allocationMode"], exact["count"] = "ExactCount", rng.choice([1, 2])
        roll = rng.random()
        if roll < 0.12 and kind != "shared":
            features.add("adminAccess")
            self.case.namespace_labels["resource.kubernetes.io/admin-access"] = "true"
            return {"name": f"r{index}", "exactly": {**exact, "adminAccess": True}}
        if roll < 0.3 and len(self.kinds) > 1:
            features.add("firstAvailable subrequests")
            other = rng.choice(sorted(k for k in self.kinds if k in CLAIMABLE and k != kind) or [kind])
            big = {**exact, "allocationMode": "ExactCount", "count": 3} if kind != "shared" else exact
            return {"name": f"r{index}", "firstAvailable": [{"name": "a", **big},
                                                            {"name": "b", "deviceClassName": f"{self.ns}-{other}"}]}
        return {"name": f"r{index}", "exactly": exact}

    def claim_spec(self) -> dict[str, Any]:
        return {"devices": {"requests": [self.request(i) for i in range(self.rng.choice([1, 1, 2]))]}}

    def claim(self, name: str, spec: dict[str, Any], stage: str = "") -> None:
        self.add({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                  "metadata": {"name": name, "namespace": self.ns}, "spec": spec}, stage)

    # ----- pods -----
    def pod(self, name: str, node: str, stage: str = "") -> None:
        rng, features = self.rng, self.case.features
        pod_claims: list[dict[str, Any]] = []
        claim_requests: dict[str, list[str]] = {}
        for c in range(rng.choice([0, 1, 1, 2])):
            spec = self.claim_spec()
            claim_requests[f"c{c}"] = [r["name"] for r in spec["devices"]["requests"]]
            if rng.random() < 0.3:
                template = f"{name}-t{c}"
                self.add({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                          "metadata": {"name": template, "namespace": self.ns}, "spec": {"spec": spec}}, stage)
                pod_claims.append({"name": f"c{c}", "resourceClaimTemplateName": template})
                features.add("template claims")
            else:
                self.claim(f"{name}-c{c}", spec, stage)
                pod_claims.append({"name": f"c{c}", "resourceClaimName": f"{name}-c{c}"})
                if rng.random() < 0.15:  # a second entry naming the same claim (rule 1)
                    features.add("two claim entries naming one claim")
                    pod_claims.append({"name": f"c{c}x", "resourceClaimName": f"{name}-c{c}"})
                    claim_requests[f"c{c}x"] = claim_requests[f"c{c}"]
        containers = [self.container(f"app{i}", claim_requests) for i in range(rng.choice([1, 1, 2, 3]))]
        spec: dict[str, Any] = {"nodeSelector": {NODE_LABEL: node}, "containers": containers,
                                "terminationGracePeriodSeconds": 0}
        if rng.random() < 0.4:
            spec["initContainers"] = [self.container(f"init{i}", claim_requests, sidecar=rng.random() < 0.5)
                                      for i in range(rng.choice([1, 2]))]
            features.add("init containers")
            if any(c.get("restartPolicy") for c in spec["initContainers"]):
                features.add("sidecars")
        everyone = (*spec["containers"], *spec.get("initContainers", ()))
        referenced = {ref["name"] for c in everyone for ref in c["resources"].get("claims", ())}
        if any(pc["name"] not in referenced for pc in pod_claims):
            features.add("unreferenced claims")
        if pod_claims:
            spec["resourceClaims"] = pod_claims
        if rng.random() < 0.3:
            spec["runtimeClassName"] = rng.choice(RUNTIME_CLASS_NAMES)
            features.add("RuntimeClass overhead")
        if rng.random() < 0.2:
            self.pod_level(spec)
        self.add({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": self.ns}, "spec": spec},
                 stage)
        if not stage and rng.random() < (0.7 if "resources" in spec else 0.3):
            self.resize(name, spec)
        spec.get("resources", {}).pop("_floor", None)
        spec.get("resources", {}).pop("_extra", None)

    def pod_level(self, spec: dict[str, Any]) -> None:
        """Pod-level cpu and memory that cover the containers' (rule 3): the sum of all of them, and some more."""
        self.case.features.add("pod-level resources")
        cpu = memory = 0.0
        for container in (*spec["containers"], *spec.get("initContainers", ())):
            requests = container["resources"].get("requests", {})
            cpu += _cores(requests.get("cpu", "0"))
            memory += _bytes(requests.get("memory", "0"))
        floor = (int(cpu * 1000) + 1, int(memory // 2**20) + 1)  # millicores, Mi
        extra = (1000 * self.rng.choice([1, 2, 5]), self.rng.choice([512, 4096]))
        spec["resources"] = {"requests": {"cpu": f"{floor[0] + extra[0]}m", "memory": f"{floor[1] + extra[1]}Mi"},
                             "_floor": floor, "_extra": extra}

    def resize(self, name: str, spec: dict[str, Any]) -> None:
        """After binding, a kubelet resizes a container in place, or the pod-level requests (rule 3)."""
        rng = self.rng
        if "resources" in spec:
            (cpu, memory), (more_cpu, more_memory) = spec["resources"].pop("_floor"), spec["resources"].pop("_extra")
            if rng.random() < 0.8:
                self.case.features.add("pod-level resize with status maps")
                self.case.resizes[name] = {"": {
                    "cpu": f"{cpu + rng.choice([more_cpu // 2, more_cpu + 1500])}m",
                    "memory": f"{memory + rng.choice([more_memory // 2, more_memory + 8192])}Mi"}}
            return
        sized = [c for c in spec["containers"] if c["resources"].get("requests", {}).get("cpu")]
        if sized:
            self.case.features.add("in-place resize")
            container = rng.choice(sized)
            self.case.resizes[name] = {container["name"]: {"cpu": rng.choice(["100m", "1", "2500m"]),
                                                           "memory": rng.choice(["128Mi", "1Gi"])}}

    def container(self, name: str, claim_requests: dict[str, list[str]], sidecar: bool = False) -> dict[str, Any]:
        rng, features = self.rng, self.case.features
        requests = {r: q for r, q in (("cpu", rng.choice(CPU)), ("memory", rng.choice(["64Mi", "1Gi", "100M", None])))
                    if q}
        if any(requests.get("cpu", "").endswith(s) for s in ("u", "n")):
            features.add("sub-millicore quantities")
        limits: dict[str, str] = {}
        if self.hugepages and rng.random() < 0.2:
            requests.setdefault("memory", "64Mi")
            requests["hugepages-2Mi"] = limits["hugepages-2Mi"] = rng.choice(["2Mi", "64Mi"])
            features.add("hugepages requests")
        if self.extended and not sidecar and rng.random() < 0.35:
            requests[self.extended] = limits[self.extended] = "1"
        resources: dict[str, Any] = {"requests": requests}
        if limits:
            resources["limits"] = limits
        container: dict[str, Any] = {"name": name, "image": IMAGE, "resources": resources}
        if sidecar:
            container["restartPolicy"] = "Always"
        refs: list[dict[str, str]] = []
        for claim, request_names in claim_requests.items():
            roll = rng.random()
            if roll < 0.45:
                refs.append({"name": claim})
            elif roll < 0.6 and len(request_names) > 1:  # the same claim twice, by two of its requests
                refs += [{"name": claim, "request": request} for request in request_names[:2]]
                features.add("a container naming a claim twice")
        if refs:
            resources["claims"] = refs
        return container

    def shared_pair(self, node: str, nodes: list[str]) -> None:
        """Two pods that consume one claim: for a mapped claim the scheduler refuses the second. On a network
        device for every node (``link``), the second may be on another node."""
        kinds = self.kinds
        spec = self.claim_spec()
        second = node
        if "link" in kinds and self.rng.random() < 0.8:
            spec = {"devices": {"requests": [{"name": "r0", "exactly": {"deviceClassName": f"{self.ns}-link"}}]}}
            second = nodes[-1] if nodes[-1] != node else nodes[0]
            if second != node:
                self.case.features.add("a claim shared across nodes")
        self.case.features.add("a claim shared by two pods")
        self.claim("shared-c", spec)
        for name, where in (("s0", node), ("s1", second)):
            self.add({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": self.ns},
                      "spec": {"nodeSelector": {NODE_LABEL: where}, "terminationGracePeriodSeconds": 0,
                               "resourceClaims": [{"name": "x", "resourceClaimName": "shared-c"}],
                               "containers": [{"name": "app", "image": IMAGE, "resources": {
                                   "requests": {"cpu": "100m"}, "claims": [{"name": "x"}]}}]}})

    def outside(self, node: str) -> None:
        """A pod bound by ``nodeName`` (rule 4), using a claim of the first pod when there is one."""
        self.case.features.add("pods bound by nodeName")
        first = next((o for o in self.case.objects if o["kind"] == "Pod" and o["spec"].get("resourceClaims")), None)
        claims = [c for c in (first or {}).get("spec", {}).get("resourceClaims", ()) if c.get("resourceClaimName")]
        spec: dict[str, Any] = {"nodeName": first["spec"]["nodeSelector"][NODE_LABEL] if claims and first else node,
                                "terminationGracePeriodSeconds": 0,
                                "containers": [{"name": "app", "image": IMAGE,
                                                "resources": {"requests": {"cpu": "200m", "memory": "64Mi"}}}]}
        if claims and self.rng.random() < 0.7:
            spec["resourceClaims"] = [{"name": "x", "resourceClaimName": claims[0]["resourceClaimName"]}]
            spec["containers"][0]["resources"]["claims"] = [{"name": "x"}]
        self.add({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "o0", "namespace": self.ns}, "spec": spec},
                 "outside")


def _cores(text: str) -> float:
    for suffix, scale in (("n", 1e-9), ("u", 1e-6), ("m", 1e-3)):
        if text.endswith(suffix):
            return float(text[:-1]) * scale
    return float(text)


def _bytes(text: str) -> float:
    for suffix, scale in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if text.endswith(suffix):
            return float(text[:-len(suffix)]) * scale
    return float(text)
