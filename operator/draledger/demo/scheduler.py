"""The demo's kube-scheduler: allocation and binding, over plain objects (pure: no I/O, no clock).

:func:`allocate` picks a claim's devices on a node (one NUMA zone, first fit), :func:`bind` allocates and
reserves a pod's claims there and describes the pod's status, and :func:`scheduler_statuses` is the
``status.nodeAllocatableResourceClaimStatuses`` the v1.36 scheduler writes: what it charges is the core's rule,
never one of the demo's own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from draledger.core.accounting.statuses import planned_statuses
from draledger.core.keys import PodKey
from draledger.core.loading import load
from draledger.core.quantities import Quantity, parse_quantity
from draledger.demo.objects import CLASSES, NUMA, allocation, result, running_status, uid

__all__ = ["Binding", "allocate", "bind", "scheduler_statuses"]


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
    state = load([*slices, *claims, *pods, bound], "the demo scheduler").state  # the bound pod last: it wins
    pod_view = state.pods[PodKey((meta["namespace"], meta["name"]))]
    return planned_statuses(pod_view, state.uses(pod_view), state.release) or []


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
