"""ResourceSlices: pools, generations and the node-allocatable mappings of each device.

Rules:
1. ``resource.k8s.io/v1`` and ``v1beta2`` carry device fields on the device; ``v1beta1`` under ``basic``.
2. A device's mappings are read from both fields, v1.36's ``nodeAllocatableResourceMappings`` and v1.37's
   ``nodeAllocatableResources``, and checked as each release's kube-apiserver checks them (views.mappings): a
   view is the same whatever the release, and each release counts what it knows and accepts
   (``DeviceView.mappings_in``). A slice using a field a release does not know says so once (``UnknownField``).
3. A capacity key names a capacity of the device exactly (``DeviceView.capacity_of``), in every release.
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
import sys
from collections.abc import Mapping as AbstractMapping
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from draledger.core.keys import NodeName, PoolKey
from draledger.core.quantities import Quantity
from draledger.core.views.fields import IDENTITY, LEAF, Fields
from draledger.core.views.mappings import V136, V137_ON, Mapping, read_v136, read_v137
from draledger.core.views.problems import INT64, Problem, Reader, ref_of

_NO_MAPPINGS: dict[str, Mapping] = {}  # the ``legacy`` of almost every device (only ever read)


class DeviceView(NamedTuple):
    """One device (a named tuple: slices republish every device, and it is the cheapest record to build)."""

    name: str
    attributes: dict[str, int]  # integer attributes only: all the NUMA attributes we know are ints
    capacity: dict[str, Quantity]
    mappings: dict[str, Mapping]
    legacy: dict[str, Mapping] = _NO_MAPPINGS  # v1.36's field, on a device that carries both fields

    def capacity_of(self, key: str) -> Quantity | None:
        """The capacity a mapping's ``capacityKey`` names: matched exactly, as validation matches it (a mapping
        whose key names none is refused, views.mappings rule 5)."""
        return self.capacity.get(key)

    def mappings_in(self, release: str) -> dict[str, Mapping]:
        """The mappings that count under ``release`` (views.mappings rule 6)."""
        mappings = self.legacy if self.legacy and release == "v1.36" else self.mappings
        if all(m.counts_in(release) for m in mappings.values()):
            return mappings
        return {resource: m for resource, m in mappings.items() if m.counts_in(release)}


@dataclass(frozen=True, slots=True)
class SliceView:
    name: str
    uid: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    node_name: NodeName
    devices: tuple[DeviceView, ...]
    problems: tuple[Problem, ...] = ()
    shape: str = "v1.36"  # "v1.37" when any device uses nodeAllocatableResources (what v1.36 does not know)

    @property
    def pool_key(self) -> PoolKey:
        return PoolKey((self.driver, self.pool))


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
        node_name=NodeName(reader.string(spec.get("nodeName"), "spec.nodeName")),
        devices=devices,
        problems=tuple(reader.problems),
        shape="v1.37" if v137 else "v1.36",
    )


def _read_devices(
    reader: Reader, raw_devices: object, driver: str, basic: bool, keep: tuple[str, ...] | None = None
) -> tuple[tuple[DeviceView, ...], bool]:
    """The devices, and whether any uses the v1.37 field."""
    devices = []
    fields: set[str] = set()
    tables: dict[tuple[Any, ...], dict[str, Any]] = {}  # the slice's distinct tables (rule 5)
    kept = None if keep is None else kept_attributes(keep, driver)
    for index, device in enumerate(reader.items(raw_devices, "spec.devices")):
        path = f"spec.devices[{index}]"
        device = reader.mapping(device, path)
        if basic:
            path += ".basic"
            device = {"name": device.get("name"), **reader.mapping(device.get("basic"), path)}
        fields.update(field for field in _FIELDS if device.get(field) is not None)
        devices.append(_read_device(reader, device, path, driver, tables, kept))
    for field, releases in _FIELDS.items():
        if field in fields:  # once per slice, not per device (views.mappings rule 1)
            reader.bad("spec.devices", field, f"{field} is a field kube-apiserver {'/'.join(sorted(releases))} does "
                       "not know (it drops it): its mappings count nothing there", "UnknownField", releases)
    return tuple(devices), "nodeAllocatableResources" in fields


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
    # A device that carries both fields is read in both: each release counts the one it knows (``legacy`` keeps
    # v1.36's then; kube-apiserver would have dropped one of them).
    mappings = read_v136(reader, device.get("nodeAllocatableResourceMappings"),
                         f"{path}.nodeAllocatableResourceMappings", name, capacity)
    legacy: dict[str, Mapping] = {}
    if device.get("nodeAllocatableResources") is not None:
        legacy = mappings
        mappings = read_v137(reader, device["nodeAllocatableResources"], f"{path}.nodeAllocatableResources", name,
                             capacity)
    return DeviceView(
        name=name,
        attributes=_shared(tables, "attributes", attributes),
        capacity=_shared(tables, "capacity", capacity),
        mappings=_shared(tables, "mappings", mappings),
        legacy=_shared(tables, "mappings", legacy) if legacy else _NO_MAPPINGS,
    )


_FIELDS: Final = {"nodeAllocatableResourceMappings": V137_ON, "nodeAllocatableResources": V136}


FIELDS: Final[Fields] = {  # views.fields: what ``read_slice`` reads
    "apiVersion": LEAF,
    "metadata": IDENTITY,
    "spec": LEAF,
}
