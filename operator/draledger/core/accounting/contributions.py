"""Claim contributions: what one ResourceClaim's allocation results charge, per node resource, under a release.

Rules (kube-scheduler ``nodeallocatabledynamicresources.go``: v1.36.3 ``buildNodeAllocatableDRAInfo``; v1.37.2 and
v1.38.0-beta.0 ``addDeviceMapping``, ``addDeviceOverhead``):
1. Each result is matched to its device by driver, pool and device among the pool's newest generation (upstream
   takes the first slice of the pool that lists the device, whatever its generation: docs/accounting.md lists it).
   A pool whose newest generation publishes a device name twice is invalid, as the allocator calls it
   (``validateDeviceNames``): its results resolve to no device (``InvalidPool``).
2. Only the mappings the release counts (``DeviceView.mappings_in``: known to it, and accepted by its API).
3. Mapping with ``capacityKey``: ``consumedCapacity[key] × multiplier``. No consumedCapacity on the result is
   ``CapacityKeyWithoutConsumedCapacity`` (the scheduler refuses such pods): nothing is counted. A consumedCapacity
   without that key is skipped, as the scheduler skips it. The key is looked up exactly in v1.36 and v1.37; v1.38
   defaults the driver domain (``LookupByQualifiedName``: ``<driver>/key`` first, then ``key``; a key of another
   domain exactly).
4. A negative consumed capacity is reported (``NegativeConsumedCapacity``); v1.36 and v1.37 charge it as it is,
   v1.38 refuses it (a Filter error) and counts nothing for that mapping.
5. Mapping without ``capacityKey``: the multiplier, once per allocation result.
6. Overhead (v1.37, v1.38): ``perPod`` and ``perContainer`` are summed over the devices; the consuming pods pay them.
7. A result whose pool has no slice is ``MissingResourceSlice``; whose device is absent, ``MissingDevice``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from draledger.core.accounting.zones import zone_of
from draledger.core.keys import PoolKey
from draledger.core.pools import Pool
from draledger.core.quantities import ZERO, Quantity
from draledger.core.releases import Release
from draledger.core.resources import Resources, add_into
from draledger.core.views import AllocationResult, ClaimView
from draledger.core.views.mappings import Mapping as DeviceMapping

STALE_REASONS = frozenset({"MissingResourceSlice", "MissingDevice", "MissingResourceClaim", "InvalidPool"})


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
    mapped: bool = False  # a device of its results has a mapping part: such a claim may not be shared
    entry: bool = False  # the scheduler writes a status entry for it: a mapping charged, or an overhead


def lookup_consumed(consumed: Mapping[str, Quantity], key: str, driver: str, release: Release) -> Quantity | None:
    """Rule 3: the consumed capacity a mapping's key names, as the release's scheduler looks it up."""
    if release != "v1.38":
        return consumed.get(key)
    domain, slash, name = key.partition("/")
    if slash:
        found = consumed.get(key)
        if found is None and domain == driver:
            found = consumed.get(name)
        return found
    found = consumed.get(f"{driver}/{key}")
    return found if found is not None else consumed.get(key)


def contribution(
    claim: ClaimView, pools: Mapping[PoolKey, Pool], attributes: tuple[str, ...], release: Release
) -> Contribution:
    """What the claim's results charge under ``release`` (rules 1 to 7), its devices' zones read by ``attributes``."""
    out = Contribution()
    for result in claim.results:
        pool = pools.get(result.pool_key)
        device = pool.devices.get(result.device) if pool is not None else None
        zone = zone_of(device, result.driver, attributes) if device is not None else None
        out.devices.append(DeviceRef(result.driver, result.pool, result.device, zone))
        if device is None:
            out.resolved = False
            out.problems.append(_missing(pool, result))
            continue
        for resource, mapping in device.mappings_in(release).items():
            if mapping.multiplier is not None:
                out.mapped = True
                amount = _mapped(mapping, result, release, out.problems)
                if amount is not None:
                    out.entry = True
                    add_into(out.mapping, {resource: amount})
                    if zone is not None:
                        add_into(out.by_zone.setdefault(zone, {}), {resource: amount})
            if mapping.per_pod is not None:
                out.entry = True
                add_into(out.per_pod, {resource: mapping.per_pod})
            if mapping.per_container is not None:
                out.entry = True
                add_into(out.per_container, {resource: mapping.per_container})
    return out


def _missing(pool: Pool | None, result: AllocationResult) -> tuple[str, str]:
    where = f"{result.driver}/{result.pool}"
    invalid = pool.invalid if pool is not None else ""
    if invalid:
        return "InvalidPool", f"pool {where} is invalid ({invalid}): device {result.device} resolves to nothing"
    if pool is not None:
        return "MissingDevice", f"device {where}/{result.device} is not in the newest generation of its pool"
    return "MissingResourceSlice", f"no ResourceSlice publishes pool {where} (device {result.device})"


def _mapped(
    mapping: DeviceMapping, result: AllocationResult, release: Release, problems: list[tuple[str, str]]
) -> Quantity | None:
    """Rules 3 to 5: what one result charges through one mapping (None: nothing)."""
    multiplier = mapping.multiplier
    assert multiplier is not None
    key = mapping.capacity_key
    if key is None:
        return multiplier
    if result.consumed is None:
        problems.append(("CapacityKeyWithoutConsumedCapacity", f"device {result.device}: mapping uses capacityKey "
                         f"{key!r} but the allocation result has no consumedCapacity"))
        return None
    amount = lookup_consumed(result.consumed, key, result.driver, release)
    if amount is None:
        return None
    if amount < ZERO:
        refused = release == "v1.38"
        problems.append(("NegativeConsumedCapacity", f"device {result.device}: consumedCapacity {key!r} is "
                         f"{amount}" + ("; kube-scheduler v1.38 refuses it (a Filter error): nothing is counted"
                                        if refused else "; kube-scheduler charges it as it is")))
        if refused:
            return None
    return amount.times(multiplier)
