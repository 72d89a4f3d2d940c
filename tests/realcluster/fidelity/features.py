"""The features a generated case can have: the rows of the agreement table in docs/accounting.md.

Rules:
1. ``FEATURES`` is the one list: the generator tags each case with the names of what it holds (``Case.features``),
   the table has one row per name, in this order, and a fast test checks that the table in the docs names exactly
   these (so the claim of agreement always says what it covers).
2. ``RELEASES_OF`` says where a feature cannot occur (a field the release does not have); those cells read "n/a".
3. A name says what a reader of the docs needs to find the shape in the generator (fidelity/generating.py).
4. A case counts for a feature only when its run exercised it (``exercised``): a resize the API refused, a claim
   the scheduler could not allocate on the feature's devices, do not make a case of that feature.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

FEATURES: Final[tuple[str, ...]] = (
    "device multipliers",
    "capacity keys",
    "sub-millicore quantities",
    "per-pod and per-container overhead",
    "overhead-only devices",
    "devices without mappings",
    "NUMA zones",
    "two slices in a pool",
    "template claims",
    "init containers",
    "sidecars",
    "RuntimeClass overhead",
    "pod-level resources",
    "in-place resize",
    "pod-level resize with status maps",
    "hugepages requests",
    "a container naming a claim twice",
    "two claim entries naming one claim",
    "unreferenced claims",
    "a claim shared by two pods",
    "network-attached devices: allNodes",
    "network-attached devices: nodeSelector",
    "network-attached devices: perDeviceNodeSelection",
    "a claim shared across nodes",
    "DRA extended resources",
    "adminAccess",
    "firstAvailable subrequests",
    "partitionable devices with counters",
    "binding conditions",
    "two drivers sharing a pool name",
    "republished pools (generation > 1)",
    "the incomplete-pool window",
    "duplicate device names in a pool",
    "v1beta2 objects",
    "pods bound by nodeName",
    "the gate toggled off and on",
    "refused: a key that is no native resource name",
    "refused: ephemeral-storage and other non-allocatable keys",
    "refused: no multiplier and no capacity key",
    "refused: a zero or negative multiplier",
    "refused: mapping {} or both union members",
    "refused: capacityKey without capacityMultiplier or the reverse",
    "refused: no mapping and no overhead, empty or negative overhead",
    "refused: a capacity key that names no capacity exactly",
    "refused: a qualified name with two slashes",
    "refused: a quantity that does not parse",
)

V137_ON: Final = frozenset({"v1.37", "v1.38"})
V136: Final = frozenset({"v1.36"})
RELEASES_OF: Final[dict[str, frozenset[str]]] = {  # rule 2: the releases where a feature can occur at all
    "per-pod and per-container overhead": V137_ON,
    "overhead-only devices": V137_ON,
    "refused: no multiplier and no capacity key": V136,
    "refused: mapping {} or both union members": V137_ON,
    "refused: capacityKey without capacityMultiplier or the reverse": V137_ON,
    "refused: no mapping and no overhead, empty or negative overhead": V137_ON,
}


def occurs_in(feature: str, release: str) -> bool:
    return release in RELEASES_OF.get(feature, frozenset({"v1.36", "v1.37", "v1.38"}))


def _results(dump: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for c in dump if c["kind"] == "ResourceClaim"
            for r in ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or ()]


def _on(dump: list[dict[str, Any]], kind: str) -> bool:
    """Whether some allocation result is a device of that kind (devices are named ``<kind>-<index>``)."""
    return any(r["device"].startswith(f"{kind}-") for r in _results(dump))


def _bound(dump: list[dict[str, Any]], name: str) -> str:
    return next((p["spec"].get("nodeName") or "" for p in dump if p["kind"] == "Pod" and p["metadata"]["name"] == name),
                "")


# Rule 4: a feature counts for a case only when the run exercised it; these say how to see that in what was read
# back (``dump``), what the API refused (``refused``: "Kind/name[/what]") and what was resized.
EXERCISED: Final[dict[str, Callable[[list[dict[str, Any]], set[str], set[str]], bool]]] = {
    "in-place resize": lambda dump, refused, resized: any(k != "pod" for k in resized),
    "pod-level resize with status maps": lambda dump, refused, resized: "pod" in resized,
    "adminAccess": lambda dump, refused, resized: any(r.get("adminAccess") for r in _results(dump)),
    "firstAvailable subrequests": lambda dump, refused, resized: any("/" in r["request"] for r in _results(dump)),
    "partitionable devices with counters": lambda dump, refused, resized: _on(dump, "part"),
    "binding conditions": lambda dump, refused, resized: any(r.get("bindingConditions") for r in _results(dump)),
    "network-attached devices: allNodes": lambda dump, refused, resized: _on(dump, "net") or _on(dump, "link"),
    "network-attached devices: nodeSelector": lambda dump, refused, resized: _on(dump, "net"),
    "network-attached devices: perDeviceNodeSelection": lambda dump, refused, resized: _on(dump, "net"),
    "a claim shared across nodes": lambda dump, refused, resized: "" != _bound(dump, "s0") != _bound(dump, "s1") != "",
    "DRA extended resources": lambda dump, refused, resized: any(
        (p.get("status") or {}).get("extendedResourceClaimStatus") for p in dump if p["kind"] == "Pod"),
    "two drivers sharing a pool name": lambda dump, refused, resized: any(
        r["driver"].startswith("b.") for r in _results(dump)),
    "republished pools (generation > 1)": lambda dump, refused, resized: not any(
        r.endswith("/generation") for r in refused),
    "the incomplete-pool window": lambda dump, refused, resized: not any(r.endswith("/generation") for r in refused),
    "pods bound by nodeName": lambda dump, refused, resized: "Pod/o0" not in refused,
}


def exercised(features: set[str], dump: list[dict[str, Any]], refused: set[str], resized: set[str]) -> set[str]:
    """Rule 4: the case's features that its run exercised."""
    return {f for f in features if f not in EXERCISED or EXERCISED[f](dump, refused, resized)}
