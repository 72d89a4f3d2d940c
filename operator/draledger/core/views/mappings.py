"""A device's node-allocatable mappings, read from raw JSON and checked as each release's kube-apiserver checks them.

A view is read once, whatever the release; what a release refuses is recorded on the mapping (``left_out``) and on
its problem (``Problem.releases``), and the rules of that release leave it out. So the release may change (a control
plane upgrade, ``--release``) without reading anything again.

Rules (``pkg/apis/resource/validation/validation.go``: v1.36.3 ``validateNodeAllocatableResourceMappings``;
v1.37.2 and v1.38.0-beta.0 ``validateNodeAllocatableResources``, ``validateNodeAllocatableMapping``,
``validateNodeAllocatableOverheadMapping``, ``validateQualifiedName``):
1. v1.36 knows ``nodeAllocatableResourceMappings[r] = {capacityKey?, allocationMultiplier?}``; v1.37 and v1.38
   know ``nodeAllocatableResources[r] = {mapping?: {capacityKey?, capacityMultiplier?, deviceMultiplier?},
   overhead?: {perPod?, perContainer?}}``. A release that does not know a field drops it (kube-apiserver drops
   unknown fields): its mappings are refused there.
2. Keys. v1.36: any native resource name (no domain, or ``kubernetes.io/``). v1.37 and v1.38: ``cpu``, ``memory``
   or ``hugepages-*``: ``ephemeral-storage`` is refused ("excluding ephemeral-storage for alpha"). A key a release
   accepts but that is no node-allocatable resource the ledger shows (``cpu``, ``memory``, ``ephemeral-storage``,
   ``hugepages-<size>``) is reported ``NotNodeAllocatable`` and left out.
3. v1.36: at least one of ``allocationMultiplier`` and ``capacityKey``; the multiplier positive (0 is refused);
   without it a capacity key charges ``consumed × 1``.
4. v1.37, v1.38: at least one of ``mapping`` and ``overhead``; a mapping has exactly one of ``capacityKey`` and
   ``deviceMultiplier`` (``mapping: {}`` is refused), ``capacityMultiplier`` with, and only with,
   ``capacityKey``; multipliers positive; an overhead has ``perPod`` or ``perContainer``, each non-negative.
5. A capacity key is non-empty and names a capacity of the device exactly (every release: validation does not
   default the driver domain). v1.38 first checks it is a qualified name (at most one ``/``, a C identifier after
   the domain).
6. A refused entry is reported ``InvalidMapping`` for the releases that refuse it, and counts nothing there; the
   device's other entries still count.
"""

from __future__ import annotations

import re
from collections.abc import Mapping as AbstractMapping
from dataclasses import dataclass
from typing import Any, Final

from draledger.core.quantities import ZERO, Quantity, parse_quantity
from draledger.core.views.problems import Reader

ONE: Final = parse_quantity("1")
V136: Final = frozenset({"v1.36"})
V137_ON: Final = frozenset({"v1.37", "v1.38"})
V138: Final = frozenset({"v1.38"})
NOWHERE: Final[frozenset[str]] = frozenset()
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


@dataclass(frozen=True, slots=True)
class Mapping:
    """How allocating the device charges one node resource."""

    capacity_key: str | None  # consumedCapacity[key] × multiplier; None: the multiplier once per result
    multiplier: Quantity | None  # None: no mapping part (only overhead)
    per_pod: Quantity | None = None
    per_container: Quantity | None = None
    # The releases in which it counts nothing: their API refuses it or does not know it (rule 6), or it names
    # no resource the ledger shows (rule 2).
    left_out: frozenset[str] = NOWHERE

    def counts_in(self, release: str) -> bool:
        return release not in self.left_out


def is_node_allocatable(name: str) -> bool:
    """A resource the ledger shows: cpu, memory, ephemeral-storage, hugepages-<a positive size>. (No memo: about
    0.1 µs a name, measured: docs/performance.md, "Memos".)"""
    if name in ("cpu", "memory", "ephemeral-storage"):
        return True
    if not name.startswith("hugepages-"):
        return False
    try:
        return parse_quantity(name[len("hugepages-"):]).nanos > 0
    except ValueError:
        return False


def qualified_name_error(name: str) -> str:
    """v1.38's ``validateQualifiedName``: "" when ``name`` is a valid qualified name, else why not."""
    parts = name.split("/", 2)
    if len(parts) > 2:
        return "must not contain more than one slash"
    if len(parts) == 2:
        domain, name = parts
        if not domain:
            return "the domain must not be empty"
        if len(domain) > 63 or not _DNS_SUBDOMAIN.fullmatch(domain):
            return "the domain must be a DNS subdomain of at most 63 characters"
        if not name:
            return "the name must not be empty"
    if len(name) > 32 or not _C_IDENTIFIER.fullmatch(name):
        return "must be a C identifier of at most 32 characters"
    return ""


class _Entry:
    """Reads one entry, recording which releases refuse it (rule 6)."""

    __slots__ = ("capacity", "device", "left_out", "reader", "where")

    def __init__(self, reader: Reader, where: str, device: str, capacity: AbstractMapping[str, Quantity]) -> None:
        self.reader, self.where, self.device, self.capacity = reader, where, device, capacity
        self.left_out: set[str] = set()

    def refuse(self, releases: frozenset[str], path: str, value: object, message: str) -> None:
        self.left_out |= releases
        self.reader.bad(path, value, message, "InvalidMapping", releases)

    def quantity(self, raw: object, path: str, releases: frozenset[str]) -> Quantity | None:
        """None when absent; a value the API cannot parse is refused everywhere (a MalformedField problem)."""
        if raw is None:
            return None
        quantity = self.reader.quantity(raw, path)
        if quantity is None:
            self.left_out |= releases
        return quantity

    def positive(self, raw: object, path: str, releases: frozenset[str]) -> Quantity | None:
        quantity = self.quantity(raw, path, releases)
        if quantity is not None and quantity <= ZERO:
            self.refuse(releases, path, raw, "must be positive")
        return quantity

    def non_negative(self, raw: object, path: str, releases: frozenset[str]) -> Quantity | None:
        quantity = self.quantity(raw, path, releases)
        if quantity is not None and quantity < ZERO:
            self.refuse(releases, path, raw, "must be non-negative")
        return quantity

    def capacity_key(self, key: str, path: str, releases: frozenset[str], resource: str) -> None:
        """Rule 5."""
        if not key:
            self.refuse(releases, path, key, "capacityKey must not be an empty string")
            return
        if "v1.38" in releases:
            error = qualified_name_error(key)
            if error:
                self.refuse(V138, path, key, f"capacityKey {error}")
                releases = releases - V138
                if not releases:
                    return
        if key not in self.capacity:
            self.refuse(releases, path, key, f"capacityKey {key!r} of the {resource} mapping names no capacity of "
                        f"device {self.device!r} (names are matched exactly)")

    def key(self, resource: str, releases: frozenset[str], native: bool) -> None:
        """Rule 2: ``native`` for v1.36's test, v1.37's otherwise."""
        if native:
            accepted = "/" not in resource or "kubernetes.io/" in resource
            wanted = "a native resource name"
        else:
            accepted = resource in ("cpu", "memory") or resource.startswith("hugepages-")
            wanted = "cpu, memory or hugepages-<size> (ephemeral-storage is refused)"
        if not accepted:
            self.refuse(releases, self.where, resource, f"must be a node-allocatable resource name: {wanted}")
        elif not is_node_allocatable(resource):
            self.left_out |= releases
            self.reader.bad(self.where, resource, "the API accepts it, but it is no node-allocatable resource the "
                            "ledger counts (cpu, memory, ephemeral-storage, hugepages-<size>); left out",
                            "NotNodeAllocatable", releases)


def read_v136(reader: Reader, raw: object, path: str, device: str,
              capacity: AbstractMapping[str, Quantity]) -> dict[str, Mapping]:
    """``nodeAllocatableResourceMappings``, known to v1.36 only (rules 1, 2, 3, 5)."""
    out: dict[str, Mapping] = {}
    for resource, entry in reader.mapping(raw, path).items():
        where = f"{path}.{resource}"
        check = _Entry(reader, where, device, capacity)
        check.left_out |= V137_ON
        check.key(resource, V136, native=True)
        entry = reader.mapping(entry, where)
        raw_key = entry.get("capacityKey")
        key = reader.string(raw_key, f"{where}.capacityKey") if raw_key is not None else None
        multiplier = check.positive(entry.get("allocationMultiplier"), f"{where}.allocationMultiplier", V136)
        if entry.get("allocationMultiplier") is None and key is None:
            check.refuse(V136, where, entry, "at least one of allocationMultiplier or capacityKey must be set")
        if key is not None:
            check.capacity_key(key, f"{where}.capacityKey", V136, resource)
        out[resource] = Mapping(key or None, multiplier if multiplier is not None else ONE,
                                left_out=frozenset(check.left_out))
    return out


def read_v137(reader: Reader, raw: object, path: str, device: str,
              capacity: AbstractMapping[str, Quantity]) -> dict[str, Mapping]:
    """``nodeAllocatableResources``, known to v1.37 and v1.38 (rules 1, 2, 4, 5)."""
    out: dict[str, Mapping] = {}
    for resource, entry in reader.mapping(raw, path).items():
        where = f"{path}.{resource}"
        check = _Entry(reader, where, device, capacity)
        check.left_out |= V136
        check.key(resource, V137_ON, native=False)
        entry = reader.mapping(entry, where)
        key: str | None = None
        multiplier: Quantity | None = None
        if entry.get("mapping") is None and entry.get("overhead") is None:
            check.refuse(V137_ON, where, entry, "at least one of mapping or overhead must be set")
        if entry.get("mapping") is not None:
            key, multiplier = _mapping(check, reader.mapping(entry["mapping"], f"{where}.mapping"),
                                       f"{where}.mapping", resource)
        per_pod = per_container = None
        if entry.get("overhead") is not None:
            overhead = reader.mapping(entry["overhead"], f"{where}.overhead")
            if overhead.get("perPod") is None and overhead.get("perContainer") is None:
                check.refuse(V137_ON, f"{where}.overhead", overhead, "at least one of perPod or perContainer "
                             "must be set")
            per_pod = check.non_negative(overhead.get("perPod"), f"{where}.overhead.perPod", V137_ON)
            per_container = check.non_negative(overhead.get("perContainer"), f"{where}.overhead.perContainer",
                                               V137_ON)
        out[resource] = Mapping(key, multiplier, per_pod, per_container, frozenset(check.left_out))
    return out


def _mapping(check: _Entry, mapping: AbstractMapping[str, Any], where: str,
             resource: str) -> tuple[str | None, Quantity | None]:
    """Rule 4's mapping part: the capacity key and the multiplier that charges (None: none)."""
    reader = check.reader
    raw_key = mapping.get("capacityKey")
    key = reader.string(raw_key, f"{where}.capacityKey") if raw_key is not None else None
    has_device = mapping.get("deviceMultiplier") is not None
    has_capacity = mapping.get("capacityMultiplier") is not None
    if (key is None) == (not has_device):
        message = "must specify exactly one of: capacityKey, deviceMultiplier" if has_device else \
            "must specify one of: capacityKey, deviceMultiplier"
        check.refuse(V137_ON, where, mapping, message)
    if key is not None:
        check.capacity_key(key, f"{where}.capacityKey", V137_ON, resource)
        if not has_capacity:
            check.refuse(V137_ON, f"{where}.capacityMultiplier", None, "capacityMultiplier is required when "
                         "capacityKey is set")
    elif has_capacity:
        check.refuse(V137_ON, f"{where}.capacityKey", None, "capacityKey is required when capacityMultiplier is set")
    device = check.positive(mapping.get("deviceMultiplier"), f"{where}.deviceMultiplier", V137_ON)
    factor = check.positive(mapping.get("capacityMultiplier"), f"{where}.capacityMultiplier", V137_ON)
    if key is not None:
        return key or None, factor if factor is not None else ONE
    return None, device
