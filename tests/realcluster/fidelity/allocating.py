"""A naive allocator for the fit judge: a pending pod's claims allocated as the scheduler would, on its node.

Rules (the structured allocator of k8s.io/dynamic-resource-allocation, as far as generated cases need it):
1. The devices a node sees: per pool (driver, pool name), the slices of its newest generation that target the node
   (``nodeName``, ``allNodes``, a ``nodeSelector`` on the node's labels, or ``perDeviceNodeSelection`` with the
   device's own ``nodeName``/``allNodes``). An incomplete pool (fewer slices than ``resourceSliceCount`` at its
   newest generation) or an invalid one (a device name twice among its slices for the node) gives nothing.
2. A device is free unless an allocation holds it; ``adminAccess`` results hold nothing and take any device;
   a device with ``allowMultipleAllocations`` is free while its capacity lasts; a partitionable device needs its
   counters left in its pool's counter set.
3. ``exactly`` takes ``count`` devices of its class; ``firstAvailable`` the first subrequest that can be met;
   the class's kind is the suffix of its name (``<namespace>-<kind>``, generating rule 2: all devices of a kind
   charge alike, so which ones are taken does not matter). Containers' requests for the case's extended resource
   become one claim of the pod (``status.extendedResourceClaimStatus``), one device per unit.
4. Consumed capacity of a shared device is computed as the allocator does (``_consumed``), and recorded.
5. None when something cannot be met: the scheduler could not allocate either, so there is no fit to judge.
"""

from __future__ import annotations

import copy
from decimal import ROUND_CEILING, Decimal
from typing import Any

from draledger.core.quantities import parse_quantity

NODE_LABEL = "fidelity.draledger.dev/node"
Key = tuple[str, str, str]  # driver, pool, device


def _matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    for term in (selector or {}).get("nodeSelectorTerms") or []:
        if all(labels.get(e["key"]) in e.get("values", ()) for e in term.get("matchExpressions") or ()
               if e.get("operator") == "In"):
            return True
    return False


def _targets(spec: dict[str, Any], node: dict[str, Any]) -> bool:
    name, labels = node["metadata"]["name"], node["metadata"].get("labels") or {}
    return spec.get("nodeName") == name or bool(spec.get("allNodes")) or _matches(spec.get("nodeSelector"), labels)


def node_devices(items: list[dict[str, Any]], node: dict[str, Any], keep_invalid: bool = False) -> tuple[
        list[tuple[Key, dict[str, Any]]], dict[tuple[str, str], dict[str, Decimal]]]:
    """Rule 1: the devices the node sees, and each pool's counters (by counter set/counter name); with
    ``keep_invalid``, those of invalid pools too."""
    pools: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for s in items:
        if s["kind"] == "ResourceSlice":
            pools.setdefault((s["spec"]["driver"], s["spec"]["pool"]["name"]), []).append(s)
    devices: list[tuple[Key, dict[str, Any]]] = []
    counters: dict[tuple[str, str], dict[str, Decimal]] = {}
    for (driver, pool), slices in pools.items():
        newest = max(s["spec"]["pool"]["generation"] for s in slices)
        current = [s for s in slices if s["spec"]["pool"]["generation"] == newest]
        if len(current) < max(s["spec"]["pool"]["resourceSliceCount"] for s in current):
            continue
        mine = []
        for s in current:
            for counter_set in s["spec"].get("sharedCounters") or ():
                counters[(driver, pool)] = {f"{counter_set['name']}/{k}": parse_quantity(v["value"]).value
                                            for k, v in counter_set["counters"].items()}
            per_device = bool(s["spec"].get("perDeviceNodeSelection"))
            for device in s["spec"].get("devices") or ():
                if (per_device and _targets(device, node)) or (not per_device and _targets(s["spec"], node)):
                    mine.append(((driver, pool, device["name"]), device))
        names = [key[2] for key, _ in mine]
        if keep_invalid or len(names) == len(set(names)):
            devices += mine
    return devices, counters


def _consumed(device: dict[str, Any], key: str, requested: str | None) -> str:
    """consumedCapacity as the allocator computes it (structured/internal/*/consumable_capacity.go): the default
    when nothing is asked; else, at least the range's minimum, rounded up in whole units to the next step above
    the minimum."""
    capacity = device["capacity"][key]
    policy = capacity.get("requestPolicy") or {}
    if requested is None:
        return str(policy.get("default") or capacity["value"])
    want = parse_quantity(requested).value
    valid = policy.get("validRange") or {}
    low = parse_quantity(valid.get("min", "0")).value
    if want < low:
        return str(valid.get("min"))
    if not valid.get("step"):
        return requested

    def whole(value: Decimal) -> int:
        return int(value.to_integral_value(rounding=ROUND_CEILING))

    step, base = whole(parse_quantity(valid["step"]).value), whole(low)
    return str(base + -(-(whole(want) - base) // step) * step)


class Allocator:
    def __init__(self, items: list[dict[str, Any]], node: dict[str, Any]) -> None:
        self.devices, self.counters = node_devices(items, node)
        self.held: set[Key] = set()
        self.capacity_used: dict[Key, dict[str, Decimal]] = {}
        self.counters_used: dict[tuple[str, str], dict[str, Decimal]] = {}
        by_key = dict(self.devices)
        for claim in items:
            if claim["kind"] != "ResourceClaim":
                continue
            for r in ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or ():
                key = (r["driver"], r["pool"], r["device"])
                if r.get("adminAccess"):
                    continue
                self.take(key, by_key.get(key), {k: parse_quantity(v).value
                                                 for k, v in (r.get("consumedCapacity") or {}).items()})

    def take(self, key: Key, device: dict[str, Any] | None, consumed: dict[str, Decimal]) -> None:
        if device is not None and device.get("allowMultipleAllocations"):
            used = self.capacity_used.setdefault(key, {})
            for name, amount in consumed.items():
                used[name] = used.get(name, Decimal(0)) + amount
        else:
            self.held.add(key)
        for use in (device or {}).get("consumesCounters") or ():
            spent = self.counters_used.setdefault(key[:2], {})
            for name, value in use["counters"].items():
                counter = f"{use['counterSet']}/{name}"
                spent[counter] = spent.get(counter, Decimal(0)) + parse_quantity(value["value"]).value

    def fits(self, key: Key, device: dict[str, Any], consumed: dict[str, Decimal]) -> bool:
        if device.get("allowMultipleAllocations"):
            used = self.capacity_used.get(key, {})
            return all(used.get(name, Decimal(0)) + amount <= parse_quantity(device["capacity"][name]["value"]).value
                       for name, amount in consumed.items())
        if key in self.held:
            return False
        for use in device.get("consumesCounters") or ():
            left, spent = self.counters.get(key[:2], {}), self.counters_used.get(key[:2], {})
            for name, value in use["counters"].items():
                counter = f"{use['counterSet']}/{name}"
                if spent.get(counter, Decimal(0)) + parse_quantity(value["value"]).value > left.get(counter, 0):
                    return False
        return True

    def request(self, name: str, exact: dict[str, Any]) -> list[dict[str, Any]] | None:
        """Rule 3 for one ``exactly`` (or subrequest); the results, taken, or None."""
        kind = exact["deviceClassName"].rsplit("-", 1)[1]
        admin = bool(exact.get("adminAccess"))
        asked = (exact.get("capacity") or {}).get("requests") or {}
        results: list[dict[str, Any]] = []
        for _ in range(exact.get("count", 1)):
            for key, device in self.devices:
                if device["attributes"]["kind"]["string"] != kind:
                    continue
                consumed = ({k: _consumed(device, k, asked.get(k)) for k in device.get("capacity") or {}}
                            if device.get("allowMultipleAllocations") else {})
                amounts = {k: parse_quantity(v).value for k, v in consumed.items()}
                if admin or self.fits(key, device, amounts):
                    if not admin:
                        self.take(key, device, amounts)
                    result: dict[str, Any] = {"request": name, "driver": key[0], "pool": key[1], "device": key[2]}
                    if admin:
                        result["adminAccess"] = True
                    if consumed:
                        result["consumedCapacity"] = consumed
                    results.append(result)
                    break
            else:
                return None
        return results

    def claim(self, spec: dict[str, Any]) -> list[dict[str, Any]] | None:
        results: list[dict[str, Any]] = []
        for request in spec["devices"]["requests"]:
            if "exactly" in request:
                found = self.request(request["name"], request["exactly"])
            else:
                found = None
                for sub in request["firstAvailable"]:
                    saved = (set(self.held), copy.deepcopy(self.capacity_used), copy.deepcopy(self.counters_used))
                    found = self.request(f"{request['name']}/{sub['name']}", sub)
                    if found is not None:
                        break
                    self.held, self.capacity_used, self.counters_used = saved
            if found is None:
                return None
            results += found
        return results


def would_be(items: list[dict[str, Any]], pod: dict[str, Any],
             extended: dict[str, str]) -> list[dict[str, Any]] | None:
    """``items`` with ``pod`` bound to its node and its unallocated claims allocated (rules 1 to 5); ``extended``
    maps the case's extended resource name to its DeviceClass."""
    items = copy.deepcopy(items)
    node_name = pod["spec"]["nodeSelector"][NODE_LABEL]
    node = next(i for i in items if i["kind"] == "Node" and i["metadata"]["name"] == node_name)
    allocator = Allocator(items, node)
    claims = {c["metadata"]["name"]: c for c in items if c["kind"] == "ResourceClaim"}
    status = pod.get("status") or {}
    generated = {s["name"]: s.get("resourceClaimName") for s in status.get("resourceClaimStatuses") or ()}
    for pod_claim in pod["spec"].get("resourceClaims") or []:
        claim = claims.get(pod_claim.get("resourceClaimName") or generated.get(pod_claim["name"]) or "")
        if claim is None or (claim.get("status") or {}).get("allocation"):
            continue
        results = allocator.claim(claim["spec"])
        if results is None:
            return None
        claim.setdefault("status", {})["allocation"] = {"devices": {"results": results}}
    pod_status: dict[str, Any] = {"phase": "Pending"}
    units = sum(int(c["resources"].get("requests", {}).get(name, 0)) for name in extended
                for c in (*pod["spec"]["containers"], *pod["spec"].get("initContainers", ())))
    if units and not status.get("extendedResourceClaimStatus"):
        (device_class,) = extended.values()
        results = allocator.request("container-0", {"deviceClassName": device_class, "count": units})
        if results is None:
            return None
        claim_name = f"{pod['metadata']['name']}-extended-resources-judged"
        items.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                      "metadata": {"name": claim_name, "namespace": pod["metadata"]["namespace"]},
                      "spec": {"devices": {"requests": []}},
                      "status": {"allocation": {"devices": {"results": results}}}})
        pod_status["extendedResourceClaimStatus"] = {"resourceClaimName": claim_name, "requestMappings": []}
    for item in items:
        if item["kind"] == "Pod" and item["metadata"]["name"] == pod["metadata"]["name"]:
            item["spec"]["nodeName"] = node_name
            item.setdefault("status", {}).update(pod_status)
    return items
