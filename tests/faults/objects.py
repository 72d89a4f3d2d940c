"""The fault suite's cluster objects, as plain Kubernetes dicts (pure builders), and how a pod's node affinity
and a claim's allocation select nodes (In, NotIn, Exists, DoesNotExist on labels and ``metadata.name``).

Nodes ``n1..`` (8 cpu, 16Gi); per node a one-slice cpu pool (6 devices, each charging ``cpu: 1``, or the
multiplier given) and a two-slice memory pool (4 devices, ``memory: 1Gi`` each); claims allocated on one
device of a node's pool; pods with one claim, bound or gated.
"""

from __future__ import annotations

from typing import Any

NS = "faults"
NODES = "v1/nodes"
PODS = "v1/pods"
SLICES = "resource.k8s.io/v1/resourceslices"
CLAIMS = "resource.k8s.io/v1/resourceclaims"
LEDGERS = "draledger.dev/v1alpha1/nodeallocatableledgers"
CPU = "cpu.faults.example.com"
MEM = "mem.faults.example.com"
FOREIGN_GATE = "faults.example.com/hold"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
CPU_DEVICES = 6
MEM_DEVICES = 4  # two per slice


def node_body(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                       "capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}


def cpu_slice(node: str, generation: int, multiplier: str = "1") -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-cpu"},
            "spec": {"driver": CPU, "nodeName": node,
                     "pool": {"name": f"{node}-cpu", "generation": generation, "resourceSliceCount": 1},
                     "devices": [{"name": f"c{i}", "nodeAllocatableResourceMappings": {
                         "cpu": {"allocationMultiplier": multiplier}}} for i in range(CPU_DEVICES)]}}


def mem_slice(node: str, index: int, generation: int) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-mem-{index}"},
            "spec": {"driver": MEM, "nodeName": node,
                     "pool": {"name": f"{node}-mem", "generation": generation, "resourceSliceCount": 2},
                     "devices": [{"name": f"m{i}", "nodeAllocatableResourceMappings": {
                         "memory": {"allocationMultiplier": "1Gi"}}} for i in (2 * index, 2 * index + 1)]}}


def allocation(node: str, driver: str, device: str) -> dict[str, Any]:
    pool = f"{node}-cpu" if driver == CPU else f"{node}-mem"
    return {"devices": {"results": [{"request": "dev", "driver": driver, "pool": pool, "device": device}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}


def claim_body(name: str, alloc: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                            "metadata": {"name": name, "namespace": NS},
                            "spec": {"devices": {"requests": [{"name": "dev", "exactly": {
                                "deviceClassName": "faults.example.com"}}]}}}
    if alloc is not None:
        body["status"] = {"allocation": alloc}
    return body


def pod_body(name: str, cpu: str, *, node: str | None = None, claim: str | None = None,
             gates: tuple[str, ...] = (), affinity: dict[str, Any] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}}
    spec: dict[str, Any] = {"containers": [container]}
    if claim:
        container["resources"]["claims"] = [{"name": "dev"}]
        spec["resourceClaims"] = [{"name": "dev", "resourceClaimName": claim}]
    if node:
        spec["nodeName"] = node
    if gates:
        spec["schedulingGates"] = [{"name": gate} for gate in gates]
    if affinity:
        spec["affinity"] = affinity
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec,
            "status": {"phase": "Running" if node else "Pending"}}


def gate_names(pod: dict[str, Any]) -> list[str]:
    return [g.get("name") for g in (pod.get("spec") or {}).get("schedulingGates") or [] if isinstance(g, dict)]


def claim_names(pod: dict[str, Any]) -> list[str]:
    return [c["resourceClaimName"] for c in (pod.get("spec") or {}).get("resourceClaims") or []
            if isinstance(c, dict) and c.get("resourceClaimName")]


def node_terms_allow(terms: list[Any], node: dict[str, Any]) -> bool:
    """Whether a node matches any of these nodeSelectorTerms (In, NotIn, Exists, DoesNotExist)."""
    labels = node["metadata"].get("labels") or {}
    fields = {"metadata.name": node["metadata"]["name"]}

    def holds(requirement: dict[str, Any], values: dict[str, str]) -> bool:
        key, operator, wanted = requirement.get("key"), requirement.get("operator"), requirement.get("values") or []
        if operator == "In":
            return key in values and values[key] in wanted
        if operator == "NotIn":
            return key not in values or values[key] not in wanted
        if operator == "Exists":
            return key in values
        if operator == "DoesNotExist":
            return key not in values
        return False

    for term in terms:
        expressions, matches = term.get("matchExpressions") or [], term.get("matchFields") or []
        if (expressions or matches) and all(holds(r, labels) for r in expressions) and all(
                holds(r, fields) for r in matches):
            return True
    return False


def affinity_allows(pod: dict[str, Any], node: dict[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    selector = spec.get("nodeSelector") or {}
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in selector.items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(REQUIRED)
    if not required:
        return True
    return node_terms_allow(required.get("nodeSelectorTerms") or [], node)
