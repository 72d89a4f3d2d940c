"""What the scheduler wrote it charged a bound pod for its claims: ``status.nodeAllocatableResourceClaimStatuses``.

Rules:
1. Both shapes are read: v1.36's ``resources`` (the mapping part), and v1.37's ``mapping`` and ``overhead`` lists
   (v1.38 writes the same); an entry's shape is the one it uses (views, rule 2).
2. ``containers`` as written: a container listed twice is kept twice (v1.36 stores it; the v1.37 and v1.38 API
   refuse it, so such an entry is never stored there).
3. A field that is absent is None (never charged); every defect is a named problem of the pod (views.problems).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping as AbstractMapping
from typing import Any, NamedTuple

from draledger.core.quantities import Quantity
from draledger.core.views.problems import Reader
from draledger.core.views.sharing import NONE, shared


class ClaimStatus(NamedTuple):
    """One entry of ``status.nodeAllocatableResourceClaimStatuses`` (v1.36 or v1.37 shape)."""

    claim_name: str
    containers: tuple[str, ...]
    mapping: dict[str, Quantity]  # v1.36 ``resources`` or v1.37 ``mapping``
    per_pod: dict[str, Quantity]  # v1.37 overhead
    per_container: dict[str, Quantity]  # v1.37 overhead
    shape: str  # "v1.36" | "v1.37"

    def charged(self) -> dict[str, Quantity]:
        """What the scheduler charged for this claim: mapping + perPod + perContainer × containers."""
        out = dict(self.mapping)
        for name, quantity in self.per_pod.items():
            out[name] = out[name] + quantity if name in out else quantity
        count = len(self.containers)
        for name, quantity in self.per_container.items():
            extra = quantity.times(count)
            out[name] = out[name] + extra if name in out else extra
        return out


def read_claim_statuses(reader: Reader, status: AbstractMapping[str, Any]) -> tuple[ClaimStatus, ...] | None:
    """The pod status's entries (rules 1 to 3); None when the field is absent."""
    field = "status.nodeAllocatableResourceClaimStatuses"
    if status.get("nodeAllocatableResourceClaimStatuses") is None:
        return None
    out: list[ClaimStatus] = []
    for index, entry in enumerate(reader.items(status.get("nodeAllocatableResourceClaimStatuses"), field)):
        path = f"{field}[{index}]"
        entry = reader.mapping(entry, path)
        containers = tuple(
            sys.intern(c) for c in reader.items(entry.get("containers"), f"{path}.containers") if isinstance(c, str)
        )
        mapping: dict[str, Quantity] = {}
        per_pod: dict[str, Quantity] = {}
        per_container: dict[str, Quantity] = {}
        shape = "v1.36"
        if "resources" in entry:
            mapping = reader.quantities(entry.get("resources"), f"{path}.resources")
        if "mapping" in entry or "overhead" in entry:
            shape = "v1.37"
            for mindex, item in enumerate(reader.items(entry.get("mapping"), f"{path}.mapping")):
                item = reader.mapping(item, f"{path}.mapping[{mindex}]")
                name = reader.string(item.get("name"), f"{path}.mapping[{mindex}].name")
                quantity = reader.quantity(item.get("quantity"), f"{path}.mapping[{mindex}].quantity")
                if name and quantity is not None:
                    mapping[name] = quantity
            for oindex, item in enumerate(reader.items(entry.get("overhead"), f"{path}.overhead")):
                item = reader.mapping(item, f"{path}.overhead[{oindex}]")
                name = reader.string(item.get("name"), f"{path}.overhead[{oindex}].name")
                for key, target in (("perPod", per_pod), ("perContainer", per_container)):
                    if item.get(key) is not None:
                        quantity = reader.quantity(item.get(key), f"{path}.overhead[{oindex}].{key}")
                        if name and quantity is not None:
                            target[name] = quantity
        out.append(
            ClaimStatus(
                claim_name=reader.string(entry.get("resourceClaimName"), f"{path}.resourceClaimName"),
                containers=containers,
                mapping=shared(mapping),
                per_pod=per_pod or NONE,
                per_container=per_container or NONE,
                shape=shape,
            )
        )
    return tuple(out)
