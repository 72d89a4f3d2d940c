"""Claim contributions: what one ResourceClaim's allocation results charge, per node resource.

Rules (ledger contract, section 1):
1. Each result is matched to its device by driver, pool and device among the pool's newest generation.
2. Mapping with ``capacityKey``: ``consumedCapacity[capacityKey] × multiplier``; no consumedCapacity on the
   result is ``CapacityKeyWithoutConsumedCapacity`` (the scheduler refuses such pods): nothing is counted.
   A consumedCapacity without that key is skipped, as the scheduler skips it.
3. Mapping without ``capacityKey``: the multiplier, once per allocation result.
4. v1.37 overhead: ``perPod`` and ``perContainer`` are summed over the devices; the consuming pods pay them.
5. A result whose pool has no slice is ``MissingResourceSlice``; whose device is absent, ``MissingDevice``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from draledger.core.accounting.catalog import Catalog
from draledger.core.accounting.footprints import Resources, add_into
from draledger.core.accounting.zones import zone_of
from draledger.core.quantities import Quantity
from draledger.core.views import ClaimView
from draledger.core.views.slices import lookup_qualified


@dataclass(frozen=True, slots=True)
class DeviceRef:
    driver: str
    pool: str
    device: str
    zone: int | None


@dataclass(slots=True)
class Contribution:
    mapping: Resources = field(default_factory=dict)
    per_pod: Resources = field(default_factory=dict)
    per_container: Resources = field(default_factory=dict)
    by_zone: dict[int, Resources] = field(default_factory=dict)  # the mapping part, per NUMA zone
    devices: list[DeviceRef] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (reason, message)
    resolved: bool = True

    def pod_share(self, containers: int, with_mapping: bool) -> Resources:
        """What one consuming pod is charged: the mapping (if it is the one charged), plus its overhead."""
        share: Resources = dict(self.mapping) if with_mapping else {}
        add_into(share, self.per_pod)
        for name, quantity in self.per_container.items():
            add_into(share, {name: quantity.times(containers)})
        return share


def contribution(claim: ClaimView, catalog: Catalog, numa_attributes: tuple[str, ...]) -> Contribution:
    out = Contribution()
    for result in claim.results:
        device = catalog.device(result.pool_key, result.device)
        zone = zone_of(device, result.driver, numa_attributes) if device is not None else None
        out.devices.append(DeviceRef(result.driver, result.pool, result.device, zone))
        if device is None:
            out.resolved = False
            if catalog.pool_exists(result.pool_key):
                out.problems.append(
                    (
                        "MissingDevice",
                        f"device {result.driver}/{result.pool}/{result.device} "
                        "is not in the newest generation of its pool",
                    )
                )
            else:
                out.problems.append(
                    (
                        "MissingResourceSlice",
                        f"no ResourceSlice publishes pool "
                        f"{result.driver}/{result.pool} (device {result.device})",
                    )
                )
            continue
        for resource, mapping in device.mappings.items():
            if mapping.multiplier is not None:
                amount = _mapped(mapping.capacity_key, mapping.multiplier, result.consumed, result.driver)
                if isinstance(amount, str):
                    out.problems.append(
                        ("CapacityKeyWithoutConsumedCapacity", f"device {result.device}: {amount}")
                    )
                elif amount is not None:
                    add_into(out.mapping, {resource: amount})
                    if zone is not None:
                        add_into(out.by_zone.setdefault(zone, {}), {resource: amount})
            if mapping.per_pod is not None:
                add_into(out.per_pod, {resource: mapping.per_pod})
            if mapping.per_container is not None:
                add_into(out.per_container, {resource: mapping.per_container})
    return out


def _mapped(
    key: str | None, multiplier: Quantity, consumed: dict[str, Quantity] | None, driver: str
) -> Quantity | str | None:
    if key is None:
        return multiplier
    if consumed is None:
        return f"mapping uses capacityKey {key!r} but the allocation result has no consumedCapacity"
    amount = lookup_qualified(consumed, key, driver)
    return amount.times(multiplier) if amount is not None else None
