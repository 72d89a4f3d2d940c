"""Raw Kubernetes objects for the tests: plain builders, and the Hypothesis strategies built on them.

The builders return JSON-shaped dicts exactly as ``kubectl get -o json`` prints them (v1.36 or v1.37 DRA
shapes), so every test goes through the same readers as ``draledger audit``. The strategies generate small
clusters (1-3 nodes) whose objects deliberately include the awkward cases: missing slices and devices,
incomplete pools, template claims not generated yet, claims shared across pods, unreferenced claims,
terminal and unbound pods, pod-level resources, overhead, init containers and sidecars.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hypothesis import strategies as st

Raw = dict[str, Any]

# ----------------------------------------------------------------------------------------------------------
# Builders
# ----------------------------------------------------------------------------------------------------------


def uid_of(*parts: str) -> str:
    """A stable UID derived from the object's identity (tests compare UIDs)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(parts)))


def node_obj(
    name: str = "n1",
    *,
    allocatable: Mapping[str, Any] | None = None,
    ready: bool | None = True,
    reason: str | None = None,
    kubelet: str | None = None,
) -> Raw:
    """A Node; ``ready=None`` leaves the Ready condition out; ``kubelet`` is its status.nodeInfo.kubeletVersion."""
    conditions = []
    if ready is not None:
        cond: Raw = {"type": "Ready", "status": "True" if ready else "False"}
        if reason is not None:
            cond["reason"] = reason
        conditions.append(cond)
    out: Raw = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": uid_of("node", name), "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "allocatable": dict(allocatable if allocatable is not None else {"cpu": "16", "memory": "64Gi"}),
            "conditions": conditions,
        },
    }
    if kubelet is not None:
        out["status"]["nodeInfo"] = {"kubeletVersion": kubelet}
    return out


def container(
    name: str,
    requests: Mapping[str, Any] | None = None,
    *,
    limits: Mapping[str, Any] | None = None,
    claims: Sequence[str] = (),
    restart_policy: str | None = None,
) -> Raw:
    resources: Raw = {}
    if requests is not None:
        resources["requests"] = dict(requests)
    if limits is not None:
        resources["limits"] = dict(limits)
    if claims:
        resources["claims"] = [{"name": c} for c in claims]
    out: Raw = {"name": name, "image": "registry.example/app:1", "resources": resources}
    if restart_policy is not None:
        out["restartPolicy"] = restart_policy
    return out


def direct(name: str, claim: str) -> Raw:
    """A ``spec.resourceClaims[]`` entry naming a ResourceClaim."""
    return {"name": name, "resourceClaimName": claim}


def templated(name: str, template: str = "tmpl") -> Raw:
    """A ``spec.resourceClaims[]`` entry generated from a ResourceClaimTemplate."""
    return {"name": name, "resourceClaimTemplateName": template}


def status_v136(claim: str, containers: Sequence[str], resources: Mapping[str, str]) -> Raw:
    return {"resourceClaimName": claim, "containers": list(containers), "resources": dict(resources)}


def status_v137(
    claim: str,
    containers: Sequence[str],
    mapping: Mapping[str, str] | None = None,
    overhead: Mapping[str, Mapping[str, str]] | None = None,
) -> Raw:
    out: Raw = {"resourceClaimName": claim, "containers": list(containers)}
    if mapping is not None:
        out["mapping"] = [{"name": r, "quantity": q} for r, q in sorted(mapping.items())]
    if overhead is not None:
        out["overhead"] = [{"name": r, **o} for r, o in sorted(overhead.items())]
    return out


def pod_obj(
    name: str,
    namespace: str = "t",
    *,
    node: str | None = "n1",
    containers: Sequence[Raw] = (),
    init_containers: Sequence[Raw] = (),
    resource_claims: Sequence[Raw] = (),
    generated: Mapping[str, str | None] | None = None,
    claim_statuses: Sequence[Raw] | None = None,
    phase: str | None = "Running",
    pod_level: Mapping[str, Any] | None = None,
    overhead: Mapping[str, Any] | None = None,
) -> Raw:
    """A Pod. ``generated`` maps pod claim names to generated claim names (status.resourceClaimStatuses)."""
    spec: Raw = {"containers": list(containers)}
    if init_containers:
        spec["initContainers"] = list(init_containers)
    if node:
        spec["nodeName"] = node
    if resource_claims:
        spec["resourceClaims"] = list(resource_claims)
    if pod_level is not None:
        spec["resources"] = {"requests": dict(pod_level)}
    if overhead is not None:
        spec["overhead"] = dict(overhead)
    status: Raw = {}
    if phase is not None:
        status["phase"] = phase
    entries = dict(generated or {})
    for entry in resource_claims:
        if "resourceClaimName" in entry:
            entries.setdefault(entry["name"], entry["resourceClaimName"])
    if entries:
        status["resourceClaimStatuses"] = [
            {"name": n, **({"resourceClaimName": c} if c else {})} for n, c in entries.items()
        ]
    if claim_statuses is not None:
        status["nodeAllocatableResourceClaimStatuses"] = list(claim_statuses)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": uid_of("pod", namespace, name)},
        "spec": spec,
        "status": status,
    }


def device(
    name: str,
    *,
    attributes: Mapping[str, Any] | None = None,
    capacity: Mapping[str, str] | None = None,
    v136: Mapping[str, Any] | None = None,
    v137: Mapping[str, Any] | None = None,
    multi: bool = False,
) -> Raw:
    """A device; ``attributes`` values that are ints become ``{int: v}``, strings ``{string: v}``."""
    out: Raw = {"name": name}
    if attributes:
        out["attributes"] = {
            k: ({"int": v} if isinstance(v, int) and not isinstance(v, bool) else {"string": v})
            for k, v in attributes.items()
        }
    if capacity:
        out["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    if multi:
        out["allowMultipleAllocations"] = True
    if v136 is not None:
        out["nodeAllocatableResourceMappings"] = dict(v136)
    if v137 is not None:
        out["nodeAllocatableResources"] = dict(v137)
    return out


def slice_obj(
    name: str,
    *,
    driver: str = "dra.example.com",
    pool: str = "n1",
    node: str | None = "n1",
    devices: Sequence[Raw] = (),
    generation: int = 1,
    count: int = 1,
    api_version: str = "resource.k8s.io/v1",
) -> Raw:
    """A ResourceSlice. For ``v1beta1`` the device fields move under ``basic``, as that version nests them."""
    if api_version.endswith("/v1beta1"):
        devices = [{"name": d["name"], "basic": {k: v for k, v in d.items() if k != "name"}} for d in devices]
    spec: Raw = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        "devices": list(devices),
    }
    if node:
        spec["nodeName"] = node
    else:
        spec["allNodes"] = True
    return {
        "apiVersion": api_version,
        "kind": "ResourceSlice",
        "metadata": {"name": name, "uid": uid_of("slice", name)},
        "spec": spec,
    }


def result(
    device_name: str,
    *,
    pool: str = "n1",
    driver: str = "dra.example.com",
    request: str = "req",
    consumed: Mapping[str, str] | None = None,
) -> Raw:
    out: Raw = {"request": request, "driver": driver, "pool": pool, "device": device_name}
    if consumed is not None:
        out["consumedCapacity"] = dict(consumed)
    return out


def claim_obj(
    name: str,
    namespace: str = "t",
    *,
    results: Sequence[Raw] | None = (),
    node: str | None = "n1",
) -> Raw:
    """A ResourceClaim; ``results=None`` leaves it unallocated."""
    status: Raw = {}
    if results is not None:
        allocation: Raw = {"devices": {"results": list(results)}}
        if node:
            allocation["nodeSelector"] = {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
            ]}
        status["allocation"] = allocation
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, "uid": uid_of("claim", namespace, name)},
        "spec": {"devices": {"requests": [{"name": "req", "exactly": {"deviceClassName": "example"}}]}},
        "status": status,
    }


def as_list(items: Iterable[Raw]) -> Raw:
    """A ``kind: List`` as ``kubectl get ... -o json`` prints it."""
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": list(items)}


def claims_with_problems(memory: str | None = None) -> list[Raw]:
    """Node n1 (4 cpu, 1Gi), two cores of a v1.36 driver, a claim two pods consume (``SharedAcrossPods``) and a
    claim no container references (``UnreferencedClaim``): two problems the claims show and the node's list does
    not; the first pod asks for ``memory``."""
    cores = slice_obj("cores", pool="cores", devices=[device(f"core-{i}", v136=CPU1) for i in range(2)])
    asks = {"memory": memory} if memory is not None else None
    return [node_obj("n1", allocatable={"cpu": "4", "memory": "1Gi"}), cores,
            claim_obj("shared", results=[result("core-0", pool="cores")]),
            claim_obj("idle", results=[result("core-1", pool="cores")]),
            pod_obj("a", containers=[container("c", asks, claims=["x"])], resource_claims=[direct("x", "shared")]),
            pod_obj("b", containers=[container("c", claims=["x"])], resource_claims=[direct("x", "shared")]),
            pod_obj("d", containers=[container("c")], resource_claims=[direct("y", "idle")])]


# ----------------------------------------------------------------------------------------------------------
# Strategies
#
# Drawing is kept cheap (a cluster takes ~200 draws): choices go through ``pick`` (one cached integers
# strategy per size) rather than building a fresh ``sampled_from`` at every draw.
# ----------------------------------------------------------------------------------------------------------

NODE_NAMES = ("n0", "n1", "n2")
GHOST_NODE = "gone"  # pods bound to a node that is not in the cluster (still consumers of their claims)
NAMESPACES = ("a", "b")
DRIVERS = ("cpu.example.com", "gpu.example.com")
RESOURCES = ("cpu", "memory", "hugepages-2Mi")
PHASES = ("Running", "Running", "Running", "Pending", "Succeeded", "Failed", None)
POD_NAMES = ("p0", "p1", "p2", "p3")
CLAIM_NAMES = ("c0", "c1", "c2")
NUMA_ATTRIBUTES = ("numaNode", "resource.kubernetes.io/numaNode", "dra.cpu/numaNodeID", "numaNodeID",
                   "{driver}/numaNode")
API_VERSIONS = ("resource.k8s.io/v1", "resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1")
LAYOUTS = ("one", "one", "two", "incomplete", "old-generation")
QUANTITIES_OF = {
    "cpu": ("0", "100m", "250m", "500m", "1", "2", "1500m", "4"),
    "memory": ("0", "128Mi", "256Mi", "1Gi", "2Gi", "1536Mi"),
    "hugepages-2Mi": ("0", "2Mi", "4Mi", "64Mi", "1Gi"),
}
MULTIPLIERS = ("1", "2", "500m", "1Gi", "3")
CAPACITY_KEYS = ("size", "{driver}/size")
CPU1 = {"cpu": {"allocationMultiplier": "1"}}  # a v1.36 mapping: 1 cpu per allocated device
RELEASES = ("v1.36", "v1.37", "v1.38")


def pick(draw: st.DrawFn, choices: Sequence[Any]) -> Any:
    """One of ``choices`` (shrinks towards the first)."""
    return choices[draw(st.integers(0, len(choices) - 1))]


def chance(draw: st.DrawFn, one_in: int = 2) -> bool:
    """True with probability about ``1/one_in`` (shrinks towards False)."""
    return draw(st.integers(0, one_in - 1)) == one_in - 1


def resource_list(
    draw: st.DrawFn, names: Sequence[str] = ("cpu", "memory"), at_least_one: bool = False
) -> dict[str, str]:
    out = {r: pick(draw, QUANTITIES_OF[r]) for r in names if chance(draw)}
    if at_least_one and not out:
        out[names[0]] = pick(draw, QUANTITIES_OF[names[0]])
    return out


def _mapping_entry(draw: st.DrawFn, shape: str, capacity_key: str | None) -> Raw:
    """One resource's node-allocatable entry, in the v1.36 or v1.37 shape, as the API accepts it: a capacity key
    names the device's capacity (``capacity_key``, None without one) exactly."""
    keyed = capacity_key is not None and chance(draw)
    multiplier = pick(draw, MULTIPLIERS)
    if shape == "v1.36":
        entry: Raw = {}
        if keyed:
            entry["capacityKey"] = capacity_key
        if not keyed or chance(draw):  # with a key, a missing allocationMultiplier means 1
            entry["allocationMultiplier"] = multiplier
        return entry
    out: Raw = {}
    if keyed:
        out["mapping"] = {"capacityKey": capacity_key, "capacityMultiplier": multiplier}
    elif not chance(draw, 3):
        out["mapping"] = {"deviceMultiplier": multiplier}
    if not out or chance(draw, 3):
        overhead: Raw = {}
        if chance(draw):
            overhead["perPod"] = pick(draw, ("100m", "1", "1Gi", "0"))
        if not overhead or chance(draw):
            overhead["perContainer"] = pick(draw, ("250m", "1", "512Mi"))
        out["overhead"] = overhead
    return out


def _with_driver(value: Any, driver: str) -> Any:
    """Substitute ``{driver}`` in a generated (nested) value."""
    if isinstance(value, str):
        return value.replace("{driver}", driver)
    if isinstance(value, dict):
        return {_with_driver(k, driver): _with_driver(v, driver) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_driver(v, driver) for v in value]
    return value


def _device(draw: st.DrawFn, name: str, driver: str, shape: str) -> Raw:
    with_capacity = chance(draw)
    key = pick(draw, CAPACITY_KEYS) if with_capacity else None
    capacity = {key: pick(draw, ("4", "8", "1Gi", "64Mi"))} if key is not None else None
    entries = {r: _mapping_entry(draw, shape, key) for r in RESOURCES if chance(draw, 3)}
    if not entries and not chance(draw, 4):  # most devices map something
        entries["cpu"] = _mapping_entry(draw, shape, key)
    attributes: Raw = {"model": "x"}
    if not chance(draw, 4):
        attributes[pick(draw, NUMA_ATTRIBUTES)] = draw(st.integers(0, 1))
    built = device(name, attributes=attributes, capacity=capacity, multi=with_capacity,
                   **({"v136": entries} if shape == "v1.36" else {"v137": entries}))
    return _with_driver(built, driver)  # type: ignore[no-any-return]


def _pool(draw: st.DrawFn, node: str, driver: str, shapes: Sequence[str]) -> list[Raw]:
    """The slices of one pool: usually one; sometimes two (one possibly missing), or an older generation."""
    pool = f"{node}-{driver.split('.')[0]}"
    shape = pick(draw, shapes)
    api_version = pick(draw, API_VERSIONS)
    layout = pick(draw, LAYOUTS)
    generation = draw(st.integers(1, 3))
    count = 2 if layout in ("two", "incomplete") else 1
    first = [_device(draw, f"d{i}", driver, shape) for i in range(draw(st.integers(1, 3)))]
    slices = [slice_obj(pool, driver=driver, pool=pool, node=node, devices=first, generation=generation,
                        count=count, api_version=api_version)]
    if layout == "two":
        second = [_device(draw, f"e{i}", driver, shape) for i in range(draw(st.integers(1, 2)))]
        slices.append(slice_obj(f"{pool}-b", driver=driver, pool=pool, node=node, devices=second,
                                generation=generation, count=2, api_version=api_version))
    if layout == "old-generation":
        old = [_device(draw, f"d{i}", driver, shape) for i in range(draw(st.integers(1, 2)))]
        slices.append(slice_obj(f"{pool}-old", driver=driver, pool=pool, node=node, devices=old,
                                generation=generation - 1, count=1, api_version=api_version))
    return slices


def plain_devices(slices: Iterable[Raw]) -> list[tuple[str, str, Raw]]:
    """(driver, pool, device) of every device of the given raw slices, un-nested from ``basic``."""
    out = []
    for item in slices:
        spec = item["spec"]
        for dev in spec["devices"]:
            flat = {"name": dev["name"], **dev["basic"]} if "basic" in dev else dev
            out.append((spec["driver"], spec["pool"]["name"], flat))
    return out


def _claim(draw: st.DrawFn, namespace: str, name: str, slices: Sequence[Raw], nodes: Sequence[str]) -> Raw:
    known = plain_devices(slices)
    if chance(draw, 6):
        return claim_obj(name, namespace, results=None)
    results = []
    for _ in range(draw(st.integers(1, 2))):
        if known and not chance(draw, 7):
            driver, pool, dev = pick(draw, known)
            consumed: dict[str, str] | None = None
            if dev.get("allowMultipleAllocations") and not chance(draw, 5):
                key = pick(draw, ("size", f"{driver}/size", "other"))
                consumed = {key: pick(draw, ("2", "4", "2Mi", "64Mi", "1"))}
            results.append(result(dev["name"], pool=pool, driver=driver, consumed=consumed))
        else:  # a device that no slice publishes: a missing device, or a pool with no slice at all
            driver = pick(draw, DRIVERS)
            pool = pick(draw, (*(f"{n}-{driver.split('.')[0]}" for n in nodes), "lost-pool"))
            results.append(result("ghost", pool=pool, driver=driver))
    return claim_obj(name, namespace, results=results, node=pick(draw, nodes))


def _pod(draw: st.DrawFn, namespace: str, name: str, claim_names: Sequence[str], nodes: Sequence[str],
         shape: str = "v1.36") -> Raw:
    node = pick(draw, (*nodes, *nodes, "", GHOST_NODE))
    phase = pick(draw, PHASES)
    names = [f"c{i}" for i in range(draw(st.integers(1, 3)))]
    init_names = [f"i{i}" for i in range(pick(draw, (0, 0, 1, 2)))]
    # pod claims rc0..: a ResourceClaim named directly, or through a template (sometimes not generated yet)
    pod_claims: list[Raw] = []
    generated: dict[str, str | None] = {}
    chosen = [pick(draw, claim_names) for _ in range(pick(draw, (0, 1, 1, 2, 3)))]
    for index, claim in enumerate(chosen):
        pod_claim = f"rc{index}"
        if not chance(draw, 4):
            pod_claims.append(direct(pod_claim, claim))
        else:
            pod_claims.append(templated(pod_claim))
            generated[pod_claim] = None if chance(draw, 6) else claim
    references: dict[str, list[str]] = {}
    for entry in pod_claims:  # 0..n containers (init containers too) reference each pod claim
        for user in names + init_names:
            if chance(draw):
                references.setdefault(user, []).append(entry["name"])
    containers = [container(c, resource_list(draw), claims=references.get(c, ())) for c in names]
    inits = [container(i, resource_list(draw), claims=references.get(i, ()),
                       restart_policy=pick(draw, (None, "Always"))) for i in init_names]
    pod_level = resource_list(draw, at_least_one=True) if chance(draw, 5) else None
    overhead = resource_list(draw, at_least_one=True) if chance(draw, 4) else None
    statuses: list[Raw] | None = None
    if chance(draw):
        statuses = []
        for claim in dict.fromkeys(chosen):
            if chance(draw):
                if shape == "v1.36":  # a server holds only its own shape
                    statuses.append(status_v136(claim, names[:1], resource_list(draw, RESOURCES)))
                else:
                    extra = {"cpu": {"perContainer": pick(draw, QUANTITIES_OF["cpu"])}} if chance(draw) else None
                    statuses.append(status_v137(claim, names[:1], resource_list(draw, RESOURCES), extra))
    return pod_obj(name, namespace, node=node, containers=containers, init_containers=inits,
                   resource_claims=pod_claims, generated=generated, claim_statuses=statuses, phase=phase,
                   pod_level=pod_level, overhead=overhead)


def _node(draw: st.DrawFn, name: str, release: str) -> Raw:
    allocatable = {"cpu": pick(draw, ("4", "8", "16", "64")), "memory": pick(draw, ("8Gi", "16Gi", "64Gi")),
                   "pods": "110"}
    if chance(draw):
        allocatable["hugepages-2Mi"] = pick(draw, ("0", "1Gi", "2Gi"))
    return node_obj(name, allocatable=allocatable, ready=not chance(draw, 5), kubelet=f"{release}.0")


@st.composite
def clusters(
    draw: st.DrawFn,
    min_nodes: int = 1,
    max_nodes: int = 3,
    releases: Sequence[str] = RELEASES,
    namespaces: Sequence[str] = NAMESPACES,
) -> list[Raw]:
    """A small cluster of one of ``releases`` as a list of raw objects: Nodes (whose kubelets report the release),
    then ResourceSlices, ResourceClaims and Pods, with device mappings and pod statuses in the release's shape.
    Fewer namespaces make claims shared across pods more likely."""
    release = pick(draw, releases)
    shapes = ("v1.36",) if release == "v1.36" else ("v1.37",)
    names = NODE_NAMES[: draw(st.integers(min_nodes, max_nodes))]
    items: list[Raw] = [_node(draw, n, release) for n in names]
    slices: list[Raw] = []
    for node in names:
        for driver in DRIVERS:
            if not chance(draw, 4):
                slices.extend(_pool(draw, node, driver, shapes))
    if chance(draw, 4):  # a network-attached pool: published for no node, consumable from any
        shape = pick(draw, shapes)
        fabric = [_device(draw, f"nic{i}", "net.example.com", shape) for i in range(draw(st.integers(1, 2)))]
        slices.append(slice_obj("fabric", driver="net.example.com", pool="fabric", node=None, devices=fabric))
    items += slices
    referable: dict[str, list[str]] = {}
    crowded = len(namespaces) == 1
    for namespace in namespaces:
        present = [c for c in (CLAIM_NAMES[:2] if crowded else CLAIM_NAMES) if not chance(draw, 3)]
        items += [_claim(draw, namespace, c, slices, names) for c in present]
        # a pod may name a claim that does not exist (in a crowded cluster, deletes make those)
        referable[namespace] = present if crowded and present else [*present, "missing"]
    for namespace in namespaces:
        items += [_pod(draw, namespace, p, referable[namespace], names, shapes[0]) for p in POD_NAMES
                  if not chance(draw, 4 if crowded else 2)]
    return items


def identity(item: Raw) -> tuple[str, str, str]:
    """(kind, namespace, name) of a raw object."""
    meta = item["metadata"]
    return item["kind"], meta.get("namespace", ""), meta["name"]


@st.composite
def interleavings(draw: st.DrawFn, events: Sequence[Any], key: Any) -> list[Any]:
    """A reordering of ``events`` that keeps each object's own events in order: out-of-order delivery across
    objects, as separate watches deliver them."""
    priorities = [draw(st.integers(0, 255)) for _ in events]
    slots: dict[Any, list[Any]] = {}
    for event in events:
        slots.setdefault(key(event), []).append(event)
    queues = {k: iter(v) for k, v in slots.items()}
    order = sorted(range(len(events)), key=lambda i: (priorities[i], i))
    return [next(queues[key(events[i])]) for i in order]


def _resized(draw: st.DrawFn, pod: Raw) -> Raw:
    """``pod`` with one container's requests drawn again, everything else as it was."""
    out = copy.deepcopy(pod)
    containers = out["spec"]["containers"]
    target = containers[draw(st.integers(0, len(containers) - 1))]
    target.setdefault("resources", {})["requests"] = resource_list(draw)
    return out


@st.composite
def event_streams(draw: st.DrawFn) -> list[tuple[str, Raw]]:
    """Upserts, updates and deletes over two generated versions of one small cluster, plus relists.

    Events are ``("upsert", raw)``, ``("delete", raw)`` and ``("relist", {})`` (re-upsert every object
    current at that point, as a watch restart does). Events for different objects arrive out of order; each
    object's own events stay in order.
    """
    namespaces = pick(draw, (("a",), ("a",), NAMESPACES))  # one namespace: more pods share each claim
    release = pick(draw, RELEASES)  # one cluster, one release
    versions = [draw(clusters(min_nodes=2, namespaces=namespaces, releases=(release,))) for _ in range(2)]
    variants: dict[tuple[str, str, str], list[Raw]] = {}
    for version in versions:
        for item in version:
            variants.setdefault(identity(item), []).append(item)
            if item["kind"] == "Pod" and chance(draw, 3):  # a resize: same node, claims and statuses
                variants[identity(item)].append(_resized(draw, item))
    logical: list[tuple[str, Raw]] = []
    for options in variants.values():
        for _ in range(draw(st.integers(1, 3))):
            if chance(draw, 5):
                logical.append(("delete", options[0]))
            else:
                logical.append(("upsert", pick(draw, options)))
    stream: list[tuple[str, Raw]] = draw(interleavings(logical, key=lambda e: identity(e[1])))
    for _ in range(pick(draw, (0, 0, 1, 2))):
        stream.insert(draw(st.integers(0, len(stream))), ("relist", {}))
    return stream


# ----------------------------------------------------------------------------------------------------------
# Fuzzing: any JSON value, in any position, of any depth
#
# A JSON document decodes to None, bool, int, float (or Decimal: ``draledger audit`` reads JSON numbers that
# are not integers as exact decimals), str, list and str-keyed dict, nested arbitrarily. The readers must take
# every one of them anywhere without raising. ``mutated`` spoils a valid object by replacing subtrees with such
# values, wrapping maps in lists and lists in maps, deleting fields, or burying a field under deep nesting.
# ----------------------------------------------------------------------------------------------------------

# Field names the readers look for: a generated map with these keys reaches deeper into a reader.
FIELD_NAMES = (
    "kind", "apiVersion", "metadata", "name", "namespace", "uid", "spec", "status", "items", "nodeName",
    "phase", "containers", "initContainers", "resources", "requests", "limits", "claims", "restartPolicy",
    "resourceClaims", "resourceClaimName", "resourceClaimTemplateName", "resourceClaimStatuses", "overhead",
    "schedulingGates", "affinity", "nodeAffinity", "nodeAllocatableResourceClaimStatuses", "mapping", "quantity",
    "perPod", "perContainer", "containers", "allocatable", "conditions", "type", "reason", "labels", "driver",
    "pool", "generation", "resourceSliceCount", "devices", "basic", "attributes", "int", "capacity", "value",
    "nodeAllocatableResourceMappings", "nodeAllocatableResources", "capacityKey", "allocationMultiplier",
    "capacityMultiplier", "deviceMultiplier", "allocation", "results", "request", "device", "consumedCapacity",
    "reservedFor", "nodeSelector", "nodeSelectorTerms", "matchFields", "key", "operator", "values", "cpu",
    "memory", "hugepages-2Mi", "numaNode",
)
# Strings that look like numbers, quantities or special values, and some that break naive code.
ODD_STRINGS = (
    "", " ", "0", "-0", "1", "-1", "100m", "1Gi", "1.5", "1e3", "1e999999", "1E-999999", "NaN", "nan", "Infinity",
    "-inf", "0x10", "1_000", "\u0661\u0662", "1\n", " 1", "1Ki ", "+.5", ".", "e3", "9" * 130, "9" * 5000,
    "In", "metadata.name", "Always", "Running", "Succeeded", "True", "List", "Node", "Pod", "ResourceSlice",
    "ResourceClaim", "resource.k8s.io/v1beta1", "\ud800", "\x00", "a/b", "<unnamed>", "%s%d{}", "\u202e",
)
HUGE_INTS = (2**63 - 1, 2**63, -(2**63) - 1, 2**64, 10**100, -(10**100))

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(HUGE_INTS),
    # 10**5000 has more digits than Python's json and str() take (4,300): only code builds it, yet readers take it
    st.sampled_from((4000, 5000)).map(lambda digits: 10**digits),
    st.floats(),  # NaN and the infinities too: JSON decoders accept NaN and Infinity
    st.decimals(places=None),  # sNaN, NaN and infinities included
    st.sampled_from(ODD_STRINGS),
    st.sampled_from(FIELD_NAMES),
    st.text(max_size=8),
)
json_keys = st.one_of(st.sampled_from(FIELD_NAMES), st.sampled_from(ODD_STRINGS), st.text(max_size=6))


def nested(depth: int, leaf: Any, container: str) -> Any:
    """``leaf`` buried ``depth`` levels deep in lists, maps, or both alternating (built without recursion)."""
    value = leaf
    for level in range(depth):
        as_list = container == "list" or (container == "mixed" and level % 2 == 0)
        value = [value] if as_list else {"items": value}
    return value


deep_values = st.builds(
    nested, st.integers(1, 3000), json_scalars, st.sampled_from(("list", "dict", "mixed"))
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(json_keys, children, max_size=4)),
    max_leaves=12,
)
any_values = st.one_of(json_values, json_values, json_values, deep_values)


def subtree_paths(value: Any, max_depth: int = 12) -> list[tuple[Any, ...]]:
    """The path of every subtree of a JSON value down to ``max_depth`` (its root excluded), walked without
    recursion: a mutation may have buried a field thousands of levels deep."""
    out: list[tuple[Any, ...]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        node, at = stack.pop()
        if len(at) >= max_depth:
            continue
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in children:
            out.append((*at, key))
            stack.append((child, (*at, key)))
    out.sort(key=repr)  # a stable order, so that examples shrink and replay
    return out


@st.composite
def mutated(
    draw: st.DrawFn, raw: Any, max_mutations: int = 4, values: st.SearchStrategy[Any] = any_values
) -> Any:
    """A deep copy of ``raw`` with 1..max_mutations subtrees replaced (by one of ``values``, the same subtree
    wrapped in a list or a map, or an item of a list unwrapped) or deleted; sometimes the root itself is
    replaced."""
    out = copy.deepcopy(raw)
    if chance(draw, 40):
        return draw(values)
    for _ in range(draw(st.integers(1, max_mutations))):
        where = subtree_paths(out)
        if not where:
            break
        path = pick(draw, where)
        parent = out
        for step in path[:-1]:
            parent = parent[step]
        old = parent[path[-1]]
        how = draw(st.integers(0, 9))
        if how == 0 and isinstance(parent, dict):
            del parent[path[-1]]
        elif how == 1:
            parent[path[-1]] = [old]  # a list where a map (or a scalar) is expected
        elif how == 2:
            parent[path[-1]] = {pick(draw, FIELD_NAMES): old}  # a map where a list (or a scalar) is expected
        elif how == 3 and isinstance(old, list) and old:
            parent[path[-1]] = old[0]
        else:
            parent[path[-1]] = draw(values)
    return out


def seed_objects(dumps: Iterable[Raw]) -> list[Raw]:
    """Valid objects to mutate: every item of the given dumps, plus what they lack (v1beta1 and v1beta2
    slices, scheduling gates and affinity, limits, the v1.37 pod status, claims reserved for pods)."""
    items = [item for dump in dumps for item in dump["items"]]
    cores = [device("core-0", attributes={"numaNode": 0}, capacity={"size": "4"}, multi=True,
                    v136={"cpu": {"capacityKey": "size", "allocationMultiplier": "2"}}),
             device("gpu-0", v137={"memory": {"mapping": {"deviceMultiplier": "8Gi"},
                                              "overhead": {"perPod": "1Gi", "perContainer": "100Mi"}}})]
    gated = pod_obj("gated", containers=[container("a", {"cpu": "1"}, limits={"memory": "1Gi"}, claims=["x"])],
                    init_containers=[container("i", {"cpu": "2"}, restart_policy="Always")],
                    resource_claims=[templated("x")], generated={"x": "c"}, node=None, phase="Pending",
                    claim_statuses=[status_v137("c", ["a"], {"cpu": "8"}, {"memory": {"perPod": "1Gi"}})],
                    pod_level={"cpu": "4"}, overhead={"memory": "64Mi"})
    gated["spec"]["schedulingGates"] = [{"name": "draledger.dev/ledger-ready"}]
    gated["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}
    gated["metadata"]["creationTimestamp"] = "2026-12-02T10:00:00Z"
    reserved = claim_obj("c", results=[result("core-0", consumed={"size": "2"}), result("gpu-0")])
    reserved["status"]["reservedFor"] = [{"resource": "pods", "name": "gated", "uid": uid_of("pod", "t", "gated")}]
    extra = [slice_obj("beta1", devices=cores, api_version="resource.k8s.io/v1beta1"),
             slice_obj("beta2", devices=cores, api_version="resource.k8s.io/v1beta2"), gated, reserved]
    return [*items, *extra]
