"""NUMA zones: which zone a device is in, and what a zone could hold if wholly allocated.

A device's zone is the first configured attribute it carries (default order below). An unqualified name
(``numaNode``) belongs to the driver's own domain, so ``dra.example.com/numaNode`` matches it too.
Only the mapping part of a device has a zone; ordinary requests and v1.37 overhead appear only in the
node totals.
"""

from __future__ import annotations

from collections.abc import Iterable

from draledger.core.keys import PoolKey
from draledger.core.releases import Release
from draledger.core.resources import Resources, add_into
from draledger.core.views import DeviceView

DEFAULT_NUMA_ATTRIBUTES: tuple[str, ...] = (
    "resource.kubernetes.io/numaNode",
    "dra.cpu/numaNodeID",
    "dra.net/numaNode",
    "numaNode",
    "numaNodeID",
)


def zone_of(device: DeviceView, driver: str, attributes: tuple[str, ...]) -> int | None:
    for name in attributes:
        value = device.attributes.get(name)
        if value is None and "/" not in name:
            value = device.attributes.get(f"{driver}/{name}")
        if value is not None:
            return value
    return None


def zone_capacity(
    devices: Iterable[tuple[PoolKey, DeviceView]], attributes: tuple[str, ...], release: Release
) -> dict[int, Resources]:
    """Σ per zone of what each device's mappings (those the release counts) would charge if the device were
    wholly allocated: ``capacity[capacityKey] × multiplier``, or the multiplier."""
    zones: dict[int, Resources] = {}
    for (driver, _pool), device in devices:
        zone = zone_of(device, driver, attributes)
        if zone is None:
            continue
        for resource, mapping in device.mappings_in(release).items():
            if mapping.multiplier is None:
                continue
            if mapping.capacity_key is None:
                amount = mapping.multiplier
            else:
                capacity = device.capacity_of(mapping.capacity_key)
                if capacity is None:
                    continue
                amount = capacity.times(mapping.multiplier)
            add_into(zones.setdefault(zone, {}), {resource: amount})
    return zones
