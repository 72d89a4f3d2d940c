"""Judging what the project says of the shapes themselves: refusals, NUMA zones, invalid pools, incomplete pools.

Rules:
1. Rejections, both ways: every object the real API refused, fed to ``audit`` with its case's dump, is named by a
   problem; and no ResourceSlice the API accepted is flagged ``InvalidMapping`` (refused ⇔ flagged).
2. NUMA zones, from the devices' own attributes: a zone's capacity is what the mappings the release counts of the
   devices published for the node (``nodeName``) with that zone would charge if wholly allocated (capacity keys:
   the capacity's value); its claims are the mapping part of the allocation results on those devices, each claim
   once (for its first consuming pod by name). Per claim, the parts of its results add up to what the scheduler
   wrote in the pod's status: the zone split is checked against the scheduler's totals too.
3. Pools: a pool whose newest generation lists a device name twice among the slices for a node is one the
   allocator does not allocate from (``validateDeviceNames``); the ledger names it ``InvalidPool`` there, and
   only such pools; no claim has a result in it; a pod the scheduler refuses for invalid pools is on such a node.
4. The incomplete-pool window: while a republished pool's newest generation lacks slices, the ledger of its node
   says ``IncompletePool`` (MappingsComplete False), and the scheduler allocates nothing from it for the pods
   created meanwhile.
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

from draledger.core.loading import all_problems
from draledger.core.quantities import parse_quantity
from draledger.core.views.mappings import is_node_allocatable
from tests.realcluster.fidelity.allocating import node_devices
from tests.realcluster.fidelity.devices import NUMA_ATTRIBUTES
from tests.realcluster.fidelity.judging import (
    Disagreement,
    judge_charges,
    judge_fit,
    judge_probes,
    judge_statuses,
    ledgers,
    loaded,
)
from tests.realcluster.fidelity.running import Outcome

ONE = Decimal(1)


def judge_rejections(outcome: Outcome) -> list[Disagreement]:
    """Rule 1."""
    found = []
    case = outcome.case
    for ref, (code, message) in sorted(outcome.rejected.items()):
        kind, name = ref.split("/", 1)
        if "/" in name:  # a refused subresource write or update (a resize, a republication)
            continue
        obj = next((o for o in case.objects if o["kind"] == kind and o["metadata"]["name"] == name), None)
        if obj is None or kind not in ("ResourceSlice", "ResourceClaim", "Pod"):
            continue
        items = [*outcome.dump, {**copy.deepcopy(obj), "metadata": {**obj["metadata"], "uid": f"uid-{name}"}}]
        state_items = loaded(items, case.release)
        problems = list(all_problems(state_items))
        for ledger in ledgers(items, case.release).values():
            problems.extend(ledger.problems)
        if not any(p.obj is not None and p.obj.kind == kind and p.obj.name == name for p in problems):
            found.append(Disagreement(case.namespace, "rejection", ref,
                                      f"the API refused it ({code}: {message[:200]}); audit flags nothing"))
    for problem in all_problems(loaded(outcome.dump, case.release)):
        if problem.reason == "InvalidMapping" and problem.obj is not None and problem.obj.kind == "ResourceSlice":
            found.append(Disagreement(case.namespace, "rejection", f"ResourceSlice/{problem.obj.name}",
                                      f"the API accepted it; audit flags it: {problem.message}"))
    return found


def _zone(device: dict[str, Any]) -> int | None:
    attributes = device.get("attributes") or {}
    for name in NUMA_ATTRIBUTES:
        if "int" in (attributes.get(name) or {}):
            return int(attributes[name]["int"])
    return None


def _mappings(device: dict[str, Any], release: str) -> dict[str, tuple[str | None, Decimal]]:
    """Resource -> (capacity key, multiplier) of the mapping part the release counts (the API accepted it)."""
    out = {}
    if release == "v1.36":
        for resource, entry in (device.get("nodeAllocatableResourceMappings") or {}).items():
            multiplier = parse_quantity(entry.get("allocationMultiplier") or "1").value
            out[resource] = (entry.get("capacityKey"), multiplier)
    else:
        for resource, entry in (device.get("nodeAllocatableResources") or {}).items():
            mapping = entry.get("mapping") or {}
            if mapping.get("capacityKey"):
                out[resource] = (mapping["capacityKey"], parse_quantity(mapping["capacityMultiplier"]).value)
            elif mapping.get("deviceMultiplier"):
                out[resource] = (None, parse_quantity(mapping["deviceMultiplier"]).value)
    return {r: m for r, m in out.items() if is_node_allocatable(r)}


def _add(into: dict[int, dict[str, Decimal]], zone: int, resource: str, amount: Decimal) -> None:
    into.setdefault(zone, {})[resource] = into.get(zone, {}).get(resource, Decimal(0)) + amount


def judge_zones(outcome: Outcome) -> list[Disagreement]:
    """Rule 2."""
    found, case, dump = [], outcome.case, outcome.dump
    release = case.release
    pools: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for s in dump:
        if s["kind"] == "ResourceSlice":
            pools.setdefault((s["spec"]["driver"], s["spec"]["pool"]["name"]), []).append(s)
    devices: dict[tuple[str, str, str], tuple[str, dict[str, Any]]] = {}  # device -> (its node or "", the device)
    capacity: dict[str, dict[int, dict[str, Decimal]]] = {}
    for (driver, pool), slices in pools.items():
        newest = max(s["spec"]["pool"]["generation"] for s in slices)
        current = [s for s in slices if s["spec"]["pool"]["generation"] == newest]
        names = [d["name"] for s in current for d in s["spec"].get("devices") or ()]
        if len(names) != len(set(names)):
            continue  # an invalid pool: none of its devices resolves (rule 3)
        for spec in (s["spec"] for s in current):
            for device in spec.get("devices") or ():
                node = spec.get("nodeName") or ""
                devices[(driver, pool, device["name"])] = (node, device)
                zone = _zone(device)
                if not node or zone is None:
                    continue
                for resource, (key, multiplier) in _mappings(device, release).items():
                    value = parse_quantity((device.get("capacity") or {})[key]["value"]).value if key else ONE
                    _add(capacity.setdefault(node, {}), zone, resource, value * multiplier)
    pods = sorted((p for p in dump if p["kind"] == "Pod" and p["spec"].get("nodeName")
                   and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")),
                  key=lambda p: p["metadata"]["name"])
    owner: dict[str, dict[str, Any]] = {}
    for pod in pods:
        status = pod.get("status") or {}
        generated = {s["name"]: s.get("resourceClaimName") for s in status.get("resourceClaimStatuses") or ()}
        names = [entry.get("resourceClaimName") or generated.get(entry["name"])
                 for entry in pod["spec"].get("resourceClaims") or ()]
        names.append((status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName"))
        for name in names:
            if name:
                owner.setdefault(name, pod)
    claims_in: dict[str, dict[int, dict[str, Decimal]]] = {}
    for claim in dump:
        pod = owner.get(claim["metadata"]["name"]) if claim["kind"] == "ResourceClaim" else None
        if pod is None:
            continue
        totals: dict[str, Decimal] = {}
        for r in ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or ():
            node, device = devices.get((r["driver"], r["pool"], r["device"]), ("", None))
            if device is None:
                continue
            zone = _zone(device) if node == pod["spec"]["nodeName"] else None
            for resource, (key, multiplier) in _mappings(device, release).items():
                consumed = (r.get("consumedCapacity") or {}).get(key) if key else "1"
                if consumed is None:
                    continue
                amount = parse_quantity(consumed).value * multiplier
                totals[resource] = totals.get(resource, Decimal(0)) + amount
                if zone is not None:
                    _add(claims_in.setdefault(node, {}), zone, resource, amount)
        written = next((e for e in pod["status"].get("nodeAllocatableResourceClaimStatuses") or ()
                        if e["resourceClaimName"] == claim["metadata"]["name"]), None)
        if written is not None:
            said = {k: parse_quantity(v).value for k, v in (written.get("resources") or {}).items()}
            said |= {m["name"]: parse_quantity(m["quantity"]).value for m in written.get("mapping") or ()}
            if {r: v for r, v in said.items() if v} != {r: v for r, v in totals.items() if v}:
                found.append(Disagreement(case.namespace, "zones", f"ResourceClaim/{claim['metadata']['name']}",
                                          f"its devices' mappings add up to {totals}; the scheduler wrote {said}"))
    for node, ledger in sorted(ledgers(dump, release).items()):
        shown = {z: {r: (line.capacity.value, line.claims.value) for r, line in lines.items()}
                 for z, lines in ledger.zones.items()}
        caps, used = capacity.get(node, {}), claims_in.get(node, {})
        expected = {z: {r: (caps.get(z, {}).get(r, Decimal(0)), used.get(z, {}).get(r, Decimal(0)))
                        for r in caps.get(z, {}).keys() | used.get(z, {}).keys()} for z in caps.keys() | used.keys()}
        if shown != expected:
            found.append(Disagreement(case.namespace, "zones", f"Node/{node}",
                                      f"ledger zones {shown} != the devices' attributes {expected}"))
    return found


def _invalid_pools(dump: list[dict[str, Any]]) -> dict[str, set[tuple[str, str]]]:
    """Rule 3: per node, the pools with a device name twice among the newest slices for it."""
    out: dict[str, set[tuple[str, str]]] = {}
    for node in (n for n in dump if n["kind"] == "Node"):
        seen, _ = node_devices(dump, node, keep_invalid=True)
        names: dict[tuple[str, str], list[str]] = {}
        for (driver, pool, device), _ in seen:
            names.setdefault((driver, pool), []).append(device)
        out[node["metadata"]["name"]] = {p for p, n in names.items() if len(n) != len(set(n))}
    return out


def judge_pools(outcome: Outcome) -> list[Disagreement]:
    """Rule 3."""
    found, case = [], outcome.case
    invalid = _invalid_pools(outcome.dump)
    bad = set().union(*invalid.values()) if invalid else set()
    for claim in outcome.dump:
        if claim["kind"] != "ResourceClaim":
            continue
        for r in ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or ():
            if (r["driver"], r["pool"]) in bad:
                found.append(Disagreement(case.namespace, "pools", f"ResourceClaim/{claim['metadata']['name']}",
                                          f"allocated from {r['driver']}/{r['pool']}, which names a device twice"))
    for node, ledger in sorted(ledgers(outcome.dump, case.release).items()):
        flagged = {p.message.split()[1] for p in ledger.problems if p.reason == "InvalidPool"}
        wanted = {f"{driver}/{pool}" for driver, pool in invalid.get(node, ())}
        if flagged != wanted:
            found.append(Disagreement(case.namespace, "pools", f"Node/{node}",
                                      f"the ledger calls {sorted(flagged)} invalid; the allocator {sorted(wanted)}"))
    for pod in outcome.dump:
        message = next((c.get("message", "") for c in pod.get("status", {}).get("conditions") or ()
                        if c.get("type") == "PodScheduled"), "") if pod["kind"] == "Pod" else ""
        node = (pod["spec"].get("nodeSelector") or {}).get("fidelity.draledger.dev/node", "") if message else ""
        if "invalid resource pools" in message and not invalid.get(node):
            found.append(Disagreement(case.namespace, "pools", f"Pod/{pod['metadata']['name']}",
                                      f"the scheduler found invalid pools ({message[:120]}); the ledger none"))
    return found


def judge_window(outcome: Outcome) -> list[Disagreement]:
    """Rule 4."""
    case = outcome.case
    opened = case.republish.get("open") or []
    if not outcome.window or not opened or not case.republish.get("close"):
        return []
    if any(f"ResourceSlice/{s['metadata']['name']}/generation" in outcome.rejected for s in opened):
        return []
    found = []
    node, pool = opened[0]["spec"]["nodeName"], (opened[0]["spec"]["driver"], opened[0]["spec"]["pool"]["name"])
    ledger = ledgers(outcome.window, case.release)[node]
    if not any(p.reason == "IncompletePool" for p in ledger.problems) or \
            ledger.condition("MappingsComplete").status != "False":
        found.append(Disagreement(case.namespace, "window", f"Node/{node}",
                                  f"pool {pool[0]}/{pool[1]} lacks slices of generation 2; the ledger says "
                                  f"{ledger.condition('MappingsComplete')}"))
    names = {o["metadata"]["name"] for o in case.later.get("window", ()) if o["kind"] == "Pod"}
    mine = set()
    for pod in outcome.window:
        if pod["kind"] == "Pod" and pod["metadata"]["name"] in names:
            mine |= {s.get("resourceClaimName") for s in pod.get("status", {}).get("resourceClaimStatuses") or ()}
            mine |= {c.get("resourceClaimName") for c in pod["spec"].get("resourceClaims") or ()}
    for claim in outcome.window:
        if claim["kind"] == "ResourceClaim" and claim["metadata"]["name"] in mine:
            for r in ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or ():
                if (r["driver"], r["pool"]) == pool:
                    found.append(Disagreement(case.namespace, "window", f"ResourceClaim/{claim['metadata']['name']}",
                                              f"allocated from {pool[0]}/{pool[1]} while it was incomplete"))
    return found


def judge(outcome: Outcome) -> list[Disagreement]:
    """Every rule of judging.py and of this module."""
    return [*judge_statuses(outcome), *judge_charges(outcome), *judge_fit(outcome), *judge_probes(outcome),
            *judge_rejections(outcome), *judge_zones(outcome), *judge_pools(outcome), *judge_window(outcome)]
