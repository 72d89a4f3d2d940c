"""A node's mapping fingerprint: a digest of every input its mappings are charged by, so that a driver's change of
mappings moves the node's ``mappingVersion`` (docs/accounting.md, 7 "Versions").

Rules:
1. It digests the release, and for every device published for the node (its pools' newest generations, in driver,
   pool and device order) its driver, pool and name, and per mapping the release counts the capacity key, the
   multiplier, the overhead and the capacity the key names (``DeviceView.capacity_of``, the lookup zones use), each
   as an explicit field (quantities in nano-units).
2. It depends only on the node's ResourceSlices and the release (accounting.inputs): the state keeps it per node.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from draledger.core.keys import PoolKey
from draledger.core.quantities import Quantity
from draledger.core.releases import Release
from draledger.core.views import DeviceView


def _nanos(quantity: Quantity | None) -> str:
    return "-" if quantity is None else str(quantity.nanos)


def mapping_fingerprint(devices: Iterable[tuple[PoolKey, DeviceView]], release: Release) -> str:
    """Rule 1 over the node's devices."""
    digest = hashlib.sha256(f"{release}\0".encode())
    for (driver, pool), device in sorted(devices, key=lambda d: (d[0], d[1].name)):
        digest.update(f"{driver}\0{pool}\0{device.name}\0".encode())
        for resource, mapping in sorted(device.mappings_in(release).items()):
            key = mapping.capacity_key
            capacity = device.capacity_of(key) if key is not None else None
            fields = (resource, key or "-", _nanos(mapping.multiplier), _nanos(mapping.per_pod),
                      _nanos(mapping.per_container), _nanos(capacity))
            digest.update(("\0".join(fields) + "\0").encode())
    return digest.hexdigest()[:16]
