"""Objects made invalid on purpose: every refusal of a device's node-allocatable fields that the ledger's rules
name (docs/accounting.md §2), in the release's shape, and a pool that publishes one device name twice.

Rules:
1. A mutation goes on a device of its own (``odd-0``, of a kind no DeviceClass selects), so that whatever the API
   decides, no allocation changes; only an ``ephemeral-storage`` key, which v1.36 accepts and charges, may go on
   a device the pods use, so its charge is judged too.
2. What the real API does with each is recorded (fidelity/running.py), never assumed: the judge wants a refused
   slice flagged and an accepted one not flagged (refused ⇔ flagged, fidelity/judging.py).
3. A pool whose newest generation repeats a device name across its slices is valid for the API (it checks one
   slice at a time) and invalid for the allocator (``validateDeviceNames``).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from tests.realcluster.fidelity.devices import Shapes
from tests.realcluster.releases import Release

if TYPE_CHECKING:
    from tests.realcluster.fidelity.generating import Case

TWO_SLASHES = "fidelity.draledger.dev/size/x"


def mutations(shapes: Shapes) -> dict[str, list[tuple[str, dict[str, Any], dict[str, Any]]]]:
    """Feature -> [(key, entry, extra device fields)] in the release's shape."""
    m = shapes.mapping
    out: dict[str, list[tuple[str, dict[str, Any], dict[str, Any]]]] = {
        "refused: a key that is no native resource name": [("example.com/widgets", m("1"), {})],
        "refused: ephemeral-storage and other non-allocatable keys": [
            ("ephemeral-storage", m("1Gi"), {}), ("kubernetes.io/batteries", m("1"), {}), ("pods", m("1"), {})],
        "refused: a zero or negative multiplier": [("cpu", m("0"), {}), ("cpu", m("-1"), {})],
        "refused: a capacity key that names no capacity exactly": [
            ("memory", m("1", capacity_key="fidelity.draledger.dev/size"), {"capacity": {"size": {"value": "1Gi"}}}),
            ("memory", m("1", capacity_key="size"), {}),
            ("memory", {"allocationMultiplier": "1", "capacityKey": ""} if shapes.v136 else
             {"mapping": {"capacityKey": "", "capacityMultiplier": "1"}}, {"capacity": {"size": {"value": "1Gi"}}})],
        "refused: a qualified name with two slashes": [
            ("memory", m("1", capacity_key=TWO_SLASHES), {"capacity": {TWO_SLASHES: {"value": "1Gi"}}})],
        "refused: a quantity that does not parse": [("cpu", m("1x"), {})],
    }
    if shapes.v136:
        out["refused: no multiplier and no capacity key"] = [("cpu", {}, {})]
    else:
        out["refused: mapping {} or both union members"] = [
            ("cpu", {"mapping": {}}, {}),
            ("cpu", {"mapping": {"capacityKey": "size", "capacityMultiplier": "1", "deviceMultiplier": "1"}},
             {"capacity": {"size": {"value": "1"}}})]
        out["refused: capacityKey without capacityMultiplier or the reverse"] = [
            ("memory", {"mapping": {"capacityKey": "size"}}, {"capacity": {"size": {"value": "1Gi"}}}),
            ("memory", {"mapping": {"capacityMultiplier": "1"}}, {})]
        out["refused: no mapping and no overhead, empty or negative overhead"] = [
            ("memory", {}, {}), ("memory", {"overhead": {}}, {}), ("memory", {"overhead": {"perPod": "-1"}}, {})]
    return out


def maybe_invalid(rng: random.Random, release: Release, case: Case, shapes: Shapes) -> None:
    """Now and then one slice made invalid (rule 1), or a pool with a device name twice (rule 3)."""
    slices = [o for o in case.objects if o["kind"] == "ResourceSlice" and o["spec"].get("devices")]
    roll = rng.random()
    if roll < 0.5:
        feature, choices = rng.choice(sorted(mutations(shapes).items()))
        key, entry, extra = rng.choice(choices)
        target = rng.choice(slices)
        cores = [d for d in target["spec"]["devices"] if d["attributes"]["kind"]["string"] == "core"]
        if key == "ephemeral-storage" and cores and rng.random() < 0.5:
            device = rng.choice(cores)
        else:
            device = {"name": "odd-0", "attributes": {"kind": {"string": "odd"}}, **extra}
            target["spec"]["devices"].append(device)
        device.setdefault(shapes.field, {})[key] = entry
        case.features.add(feature)
        case.invalid[f"ResourceSlice/{target['metadata']['name']}"] = f"{key}: {entry} on {device['name']}"
    elif roll < 0.58:
        pools: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for obj in slices:
            pools.setdefault((obj["spec"]["driver"], obj["spec"]["pool"]["name"]), []).append(obj)
        split = [group for group in pools.values() if len(group) > 1]
        if split:
            first, second = rng.choice(split)[:2]
            second["spec"]["devices"][0]["name"] = first["spec"]["devices"][0]["name"]
            case.features.add("duplicate device names in a pool")
