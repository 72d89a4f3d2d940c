"""ResourceSlices: pools, generations and the node-allocatable mappings of each device.

Rules:
1. ``resource.k8s.io/v1`` and ``v1beta2`` carry device fields on the device; ``v1beta1`` under ``basic``.
2. v1.36 ``nodeAllocatableResourceMappings[r] = {capacityKey?, allocationMultiplier? (default 1)}``;
   v1.37 ``nodeAllocatableResources[r] = {mapping?: {capacityKey?, capacityMultiplier?, deviceMultiplier?},
   overhead?: {perPod?, perContainer?}}``. If a device carries both, the v1.37 field wins (a v1.37 server
   no longer knows the old one).
3. Keys must be node-allocatable resource names (``cpu``, ``memory``, ``ephemeral-storage``,
   ``hugepages-<size>``); a negative multiplier or overhead is invalid. Invalid entries are reported as
   ``InvalidMapping`` problems and dropped; the device's other mappings still count.
   v1.37 mappings are checked as kube-apiserver checks them: exactly one of ``capacityKey`` and
   ``deviceMultiplier``; ``capacityMultiplier`` with, and only with, ``capacityKey``; multipliers positive.
4. A republished slice whose devices are byte for byte those it was last read from keeps the devices and
   their problems (``DeviceMemo``, which the operator's runtime owns): drivers republish every device when one
   changes or the pool generation moves, and reading 100 devices costs more than the check.
5. The devices of one slice share their equal attribute, capacity and mapping tables (a driver publishes
   dozens of cores alike): views are never changed, and a table kept once per slice instead of once per device
   is most of a device's memory (about 370 of 500 bytes; docs/performance.md).
6. With ``keep`` (the NUMA attributes zones will be asked by: the operator's ``--numa-attributes``), a device
   keeps only those integer attributes, unqualified names in the driver's domain too (``accounting.zones``),
   so the devices of one NUMA node share one table; every attribute is still checked. Without it, every
   integer attribute is kept. Device names are interned: every node's driver publishes the same ones.
"""

from __future__ import annotations

import hashlib
import marshal
import re
import sys
from collections.abc import Mapping as AbstractMapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from draledger.core.quantities import ZERO, Quantity, parse_quantity
from draledger.core.views.problems import INT64, Problem, Reader, ref_of

_HUGEPAGES = re.compile(r"hugepages-(.+)")
ONE = parse_quantity("1")


def is_node_allocatable(name: str) -> bool:
    known = _ALLOCATABLE.get(name)
    if known is None:
        known = _is_node_allocatable(name)
        if len(_ALLOCATABLE) < 4096:
            _ALLOCATABLE[name] = known
    return known


_ALLOCATABLE: dict[str, bool] = {}  # resource name -> is_node_allocatable (a pure function of the name)


def _is_node_allocatable(name: str) -> bool:
    if name in ("cpu", "memory", "ephemeral-storage"):
        return True
    match = _HUGEPAGES.fullmatch(name)
    if match is None:
        return False
    try:
        return parse_quantity(match[1]).value > 0
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class Mapping:
    """How allocating the device charges one node resource."""

    capacity_key: str | None  # consumedCapacity[key] × multiplier; None: multiplier once per result
    multiplier: Quantity | None  # None: the device has only overhead for this resource
    per_pod: Quantity | None = None
    per_container: Quantity | None = None


class DeviceView(NamedTuple):
    """One device (a named tuple: slices republish every device, and it is the cheapest record to build)."""

    name: str
    attributes: dict[str, int]  # integer attributes only: all the NUMA attributes we know are ints
    capacity: dict[str, Quantity]
    mappings: dict[str, Mapping]

    def capacity_of(self, key: str, driver: str) -> Quantity | None:
        return lookup_qualified(self.capacity, key, driver)


def lookup_qualified(values: AbstractMapping[str, Quantity], key: str, driver: str) -> Quantity | None:
    """Find ``key`` where an unqualified name belongs to the driver's own domain (``size`` == ``drv/size``)."""
    found = values.get(key)
    if found is not None:
        return found
    prefix = driver + "/"
    if key.startswith(prefix):
        return values.get(key[len(prefix) :])
    return values.get(prefix + key)


@dataclass(frozen=True, slots=True)
class SliceView:
    name: str
    uid: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    node_name: str
    devices: tuple[DeviceView, ...]
    problems: tuple[Problem, ...] = ()
    shape: str = "v1.36"  # "v1.37" when any device uses nodeAllocatableResources

    @property
    def pool_key(self) -> tuple[str, str]:
        return (self.driver, self.pool)


def devices_key(
    raw_devices: object, driver: str, basic: bool, keep: tuple[str, ...] | None = None
) -> bytes | None:
    """A digest of everything a slice's devices are read from: ``spec.devices`` as sent, the driver
    (unqualified names live in its domain), the v1beta1 layout and the attributes kept; None when marshal
    cannot take the value (never for decoded JSON).

    marshal writes every value with its type (``1``, ``1.0`` and ``true`` differ, though ``==`` holds them
    equal), and its bytes load back to exactly the value written: equal keys are equal inputs, short of a
    SHA-256 collision. Format 0 makes equal inputs give equal keys too: later formats also write whether a
    string is interned and whether an object is held more than once (a key string the JSON decoder shares, a
    device name the reader interned), which no input says.
    """
    try:
        data = marshal.dumps((raw_devices, driver, basic, keep), 0)  # type: ignore[arg-type]  # ValueError if not
    except (ValueError, TypeError):
        return None
    return hashlib.sha256(data).digest()


class _Read(NamedTuple):
    key: bytes
    devices: tuple[DeviceView, ...]
    problems: tuple[Problem, ...]
    v137: bool


class DeviceMemo:
    """Per slice name, the devices last read and the key of what they were read from (rule 4).

    Owned by whoever reads a stream of the same slices (the operator's runtime); ``forget`` a deleted slice.
    Problems name their slice, so a memo entry is only ever reused for the slice of the same name.
    """

    __slots__ = ("_read",)

    def __init__(self) -> None:
        self._read: dict[str, _Read] = {}

    def forget(self, name: str) -> None:
        self._read.pop(name, None)

    def devices(
        self, reader: Reader, raw_devices: object, driver: str, basic: bool, keep: tuple[str, ...] | None = None
    ) -> tuple[tuple[DeviceView, ...], bool]:
        key = devices_key(raw_devices, driver, basic, keep)
        name = reader.ref.name
        hit = self._read.get(name)
        if key is not None and hit is not None and hit.key == key:
            reader.problems.extend(hit.problems)
            return hit.devices, hit.v137
        first = len(reader.problems)
        devices, v137 = _read_devices(reader, raw_devices, driver, basic, keep)
        if key is not None:
            self._read[name] = _Read(key, devices, tuple(reader.problems[first:]), v137)
        return devices, v137


def read_slice(
    raw: AbstractMapping[str, Any], memo: DeviceMemo | None = None, keep: tuple[str, ...] | None = None
) -> SliceView:
    """The slice's view; with a ``memo``, devices equal to those last read for the slice are not read again
    (rule 4: the result is the same); with ``keep``, only those attributes are kept (rule 6)."""
    reader = Reader(ref_of(raw, "ResourceSlice"))
    spec = reader.mapping(raw.get("spec"), "spec")
    pool = reader.mapping(spec.get("pool"), "spec.pool")
    driver = reader.string(spec.get("driver"), "spec.driver")
    if not driver:
        reader.bad("spec.driver", spec.get("driver"), "a ResourceSlice needs a driver")
    basic = reader.string(raw.get("apiVersion"), "apiVersion").endswith("/v1beta1")
    raw_devices = spec.get("devices")
    if memo is not None:
        devices, v137 = memo.devices(reader, raw_devices, driver, basic, keep)
    else:
        devices, v137 = _read_devices(reader, raw_devices, driver, basic, keep)
    meta = reader.identity(raw)
    return SliceView(
        name=reader.ref.name,
        uid=reader.string(meta.get("uid"), "metadata.uid"),
        driver=driver,
        pool=reader.string(pool.get("name"), "spec.pool.name"),
        generation=reader.integer(pool.get("generation"), "spec.pool.generation"),
        slice_count=reader.integer(pool.get("resourceSliceCount"), "spec.pool.resourceSliceCount", 1),
        node_name=reader.string(spec.get("nodeName"), "spec.nodeName"),
        devices=devices,
        problems=tuple(reader.problems),
        shape="v1.37" if v137 else "v1.36",
    )


def _read_devices(
    reader: Reader, raw_devices: object, driver: str, basic: bool, keep: tuple[str, ...] | None = None
) -> tuple[tuple[DeviceView, ...], bool]:
    """The devices, and whether any uses the v1.37 field."""
    devices = []
    v137 = False
    tables: dict[tuple[Any, ...], dict[str, Any]] = {}  # the slice's distinct tables (rule 5)
    kept = None if keep is None else kept_attributes(keep, driver)
    for index, device in enumerate(reader.items(raw_devices, "spec.devices")):
        if isinstance(device, dict) and device.get("nodeAllocatableResources") is not None:
            v137 = True
        path = f"spec.devices[{index}]"
        device = reader.mapping(device, path)
        if basic:
            path += ".basic"
            device = {"name": device.get("name"), **reader.mapping(device.get("basic"), path)}
        devices.append(_read_device(reader, device, path, driver, tables, kept))
    return tuple(devices), v137


def kept_attributes(keep: tuple[str, ...], driver: str) -> frozenset[str]:
    """The attribute names zones look ``keep`` up by on the driver's devices (``accounting.zones.zone_of``):
    each name, and an unqualified one in the driver's domain too."""
    return frozenset(keep) | {f"{driver}/{name}" for name in keep if "/" not in name}


def _shared(tables: dict[tuple[Any, ...], dict[str, Any]], kind: str, table: dict[str, Any]) -> Any:
    """The equal table already kept for this slice, or ``table`` itself, kept from now on (rule 5)."""
    return tables.setdefault((kind, *table.items()), table)


def _read_device(
    reader: Reader, device: AbstractMapping[str, Any], path: str, driver: str,
    tables: dict[tuple[Any, ...], dict[str, Any]], kept: frozenset[str] | None = None,
) -> DeviceView:
    name = sys.intern(reader.string(device.get("name"), f"{path}.name"))
    attributes: dict[str, int] = {}
    for key, value in reader.mapping(device.get("attributes"), f"{path}.attributes").items():
        if isinstance(value, dict) and isinstance(value.get("int"), int) and not isinstance(value["int"], bool):
            if value["int"] not in INT64:
                reader.bad(f"{path}.attributes.{key}.int", value["int"], "out of range: expected a 64-bit integer")
            elif kept is None or key in kept:
                attributes[key] = value["int"]
    capacity: dict[str, Quantity] = {}
    for key, value in reader.mapping(device.get("capacity"), f"{path}.capacity").items():
        value = reader.mapping(value, f"{path}.capacity.{key}")
        parsed = reader.quantity(value.get("value"), f"{path}.capacity.{key}.value")
        if parsed is not None:
            capacity[key] = parsed
    if device.get("nodeAllocatableResources") is not None:
        mappings = _read_v137(reader, device["nodeAllocatableResources"], f"{path}.nodeAllocatableResources")
    else:
        field = f"{path}.nodeAllocatableResourceMappings"
        mappings = _read_v136(reader, device.get("nodeAllocatableResourceMappings"), field)
    for resource, mapping in mappings.items():
        capacity_key = mapping.capacity_key
        if capacity_key is not None and lookup_qualified(capacity, capacity_key, driver) is None:
            reader.bad(
                f"{path}.capacity",
                capacity_key,
                f"capacityKey {capacity_key!r} of the {resource} mapping names no capacity of "
                f"device {name!r}; its NUMA capacity is unknown",
                "InvalidMapping",
            )
    return DeviceView(
        name=name,
        attributes=_shared(tables, "attributes", attributes),
        capacity=_shared(tables, "capacity", capacity),
        mappings=_shared(tables, "mappings", mappings),
    )


def _non_negative(reader: Reader, raw: object, path: str, positive: bool = False) -> Quantity | None:
    quantity = reader.quantity(raw, path)
    if quantity is None:
        return None
    if quantity < ZERO or (positive and quantity == ZERO):
        reader.bad(path, raw, "must be " + ("positive" if positive else "non-negative"), "InvalidMapping")
        return None
    return quantity


def _valid_key(reader: Reader, resource: str, path: str) -> bool:
    if is_node_allocatable(resource):
        return True
    reader.bad(
        path,
        resource,
        "not a node-allocatable resource name (cpu, memory, ephemeral-storage, hugepages-<size>)",
        "InvalidMapping",
    )
    return False


def _read_v136(reader: Reader, raw: object, path: str) -> dict[str, Mapping]:
    out: dict[str, Mapping] = {}
    for resource, entry in reader.mapping(raw, path).items():
        where = f"{path}.{resource}"
        if not _valid_key(reader, resource, where):
            continue
        entry = reader.mapping(entry, where)
        multiplier = ONE
        if entry.get("allocationMultiplier") is not None:
            checked = _non_negative(reader, entry["allocationMultiplier"], f"{where}.allocationMultiplier")
            if checked is None:
                continue
            multiplier = checked
        key = reader.string(entry.get("capacityKey"), f"{where}.capacityKey") or None
        out[resource] = Mapping(key, multiplier)
    return out


def _read_v137(reader: Reader, raw: object, path: str) -> dict[str, Mapping]:
    out: dict[str, Mapping] = {}
    for resource, entry in reader.mapping(raw, path).items():
        where = f"{path}.{resource}"
        if not _valid_key(reader, resource, where):
            continue
        entry = reader.mapping(entry, where)
        key: str | None = None
        multiplier: Quantity | None = None
        if entry.get("mapping") is not None:
            mapping = reader.mapping(entry["mapping"], f"{where}.mapping")
            key = reader.string(mapping.get("capacityKey"), f"{where}.mapping.capacityKey") or None
            if key and mapping.get("deviceMultiplier") is not None:
                reader.bad(f"{where}.mapping", mapping, "exactly one of capacityKey and deviceMultiplier may be "
                           "set; the mapping is ignored", "InvalidMapping")
                continue
            if not key and mapping.get("capacityMultiplier") is not None:
                reader.bad(f"{where}.mapping.capacityKey", None, "capacityMultiplier needs a capacityKey; the "
                           "mapping is ignored", "InvalidMapping")
                continue
            field = "capacityMultiplier" if key else "deviceMultiplier"
            if mapping.get(field) is None:
                reader.bad(f"{where}.mapping.{field}", None, "missing; taken as 1", "InvalidMapping")
                multiplier = ONE
            else:
                multiplier = _non_negative(reader, mapping[field], f"{where}.mapping.{field}", positive=True)
                if multiplier is None:
                    continue
        per_pod = per_container = None
        if entry.get("overhead") is not None:
            overhead = reader.mapping(entry["overhead"], f"{where}.overhead")
            if overhead.get("perPod") is not None:
                per_pod = _non_negative(reader, overhead["perPod"], f"{where}.overhead.perPod")
            if overhead.get("perContainer") is not None:
                per_container = _non_negative(reader, overhead["perContainer"], f"{where}.overhead.perContainer")
        if multiplier is None and per_pod is None and per_container is None:
            reader.bad(where, entry, "needs a mapping or an overhead", "InvalidMapping")
            continue
        out[resource] = Mapping(key, multiplier, per_pod, per_container)
    return out
