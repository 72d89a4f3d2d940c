"""ResourceClaims: identity and allocation results (device, pool, driver, consumed capacity), and the nodes
the allocation is bound to (``metadata.name In [...]`` of its node selector), which pins a pod to them."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping as AbstractMapping
from dataclasses import dataclass
from typing import Any, Final

from draledger.core.keys import ClaimKey, PoolKey
from draledger.core.quantities import Quantity
from draledger.core.views.fields import IDENTITY, LEAF, Fields
from draledger.core.views.problems import Problem, Reader, ref_of


@dataclass(frozen=True, slots=True)
class AllocationResult:
    request: str
    driver: str
    pool: str
    device: str
    consumed: dict[str, Quantity] | None  # None: no consumedCapacity (single-allocation devices)

    @property
    def pool_key(self) -> PoolKey:
        return PoolKey((self.driver, self.pool))


@dataclass(frozen=True, slots=True)
class ClaimView:
    namespace: str
    name: str
    uid: str
    results: tuple[AllocationResult, ...]
    allocated: bool
    reserved_for: tuple[str, ...]  # pod UIDs
    allocation_nodes: tuple[str, ...] = ()  # from status.allocation.nodeSelector: metadata.name In [...]
    problems: tuple[Problem, ...] = ()
    # (namespace, name), built once: the state indexes and the runtime's uid map share this one tuple.
    key: ClaimKey = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", ClaimKey((self.namespace, self.name)))


def _allocation_nodes(terms: list[Any], reader: Reader) -> tuple[str, ...]:
    """The node names of ``metadata.name In [...]`` match fields; other terms are read, not used."""
    nodes: list[str] = []
    for index, term in enumerate(terms):
        where = f"status.allocation.nodeSelector.nodeSelectorTerms[{index}]"
        matches = reader.items(reader.mapping(term, where).get("matchFields"), f"{where}.matchFields")
        for findex, match in enumerate(matches):
            path = f"{where}.matchFields[{findex}]"
            match = reader.mapping(match, path)
            if match.get("key") != "metadata.name" or match.get("operator") != "In":
                continue
            for vindex, value in enumerate(reader.items(match.get("values"), f"{path}.values")):
                if type(value) is str:
                    nodes.append(value)
                else:
                    reader.bad(f"{path}.values[{vindex}]", value, "expected a node name")
    return tuple(dict.fromkeys(nodes))


def _reserved_for(entries: list[Any], reader: Reader) -> tuple[str, ...]:
    """The pod UIDs of ``status.reservedFor``; an entry without a uid is skipped (the API requires one)."""
    uids: list[str] = []
    for index, entry in enumerate(entries):
        path = f"status.reservedFor[{index}]"
        uid = reader.string(reader.mapping(entry, path).get("uid"), f"{path}.uid")
        if uid:
            uids.append(uid)
    return tuple(uids)


def read_claim(raw: AbstractMapping[str, Any]) -> ClaimView:
    """The claim's view: every field path checked, every defect a named problem."""
    reader = Reader(ref_of(raw, "ResourceClaim"))
    meta = reader.identity(raw)
    status = reader.mapping(raw.get("status"), "status")
    allocation = reader.mapping(status.get("allocation"), "status.allocation")
    devices = reader.mapping(allocation.get("devices"), "status.allocation.devices")
    results = []
    for index, result in enumerate(reader.items(devices.get("results"), "status.allocation.devices.results")):
        path = f"status.allocation.devices.results[{index}]"
        result = reader.mapping(result, path)
        consumed = None
        if result.get("consumedCapacity") is not None:
            consumed = reader.quantities(result["consumedCapacity"], f"{path}.consumedCapacity")
        results.append(
            AllocationResult(
                request=reader.string(result.get("request"), f"{path}.request"),
                driver=sys.intern(reader.string(result.get("driver"), f"{path}.driver")),
                pool=sys.intern(reader.string(result.get("pool"), f"{path}.pool")),
                device=reader.string(result.get("device"), f"{path}.device"),
                consumed=consumed,
            )
        )
    reserved = _reserved_for(reader.items(status.get("reservedFor"), "status.reservedFor"), reader)
    selector = reader.mapping(allocation.get("nodeSelector"), "status.allocation.nodeSelector")
    terms = reader.items(selector.get("nodeSelectorTerms"), "status.allocation.nodeSelector.nodeSelectorTerms")
    return ClaimView(
        namespace=sys.intern(reader.ref.namespace),
        name=reader.ref.name,
        uid=reader.string(meta.get("uid"), "metadata.uid"),
        results=tuple(results),
        allocated=bool(allocation),
        reserved_for=reserved,
        allocation_nodes=_allocation_nodes(terms, reader),
        problems=tuple(reader.problems),
    )


FIELDS: Final[Fields] = {  # views.fields: what ``read_claim`` reads
    "metadata": IDENTITY,
    "status": {"allocation": LEAF, "reservedFor": LEAF},
}
