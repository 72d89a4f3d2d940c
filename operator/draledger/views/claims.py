"""ResourceClaims: identity and allocation results (device, pool, driver, consumed capacity)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping as AbstractMapping
from dataclasses import dataclass
from typing import Any

from draledger.quantities import Quantity
from draledger.views.problems import (
    Bail,
    Problem,
    Reader,
    fast_items,
    fast_mapping,
    fast_quantities,
    fast_string,
    ref_of,
)


@dataclass(frozen=True, slots=True)
class AllocationResult:
    request: str
    driver: str
    pool: str
    device: str
    consumed: dict[str, Quantity] | None  # None: no consumedCapacity (single-allocation devices)

    @property
    def pool_key(self) -> tuple[str, str]:
        return (self.driver, self.pool)


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
    key: tuple[str, str] = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", (self.namespace, self.name))


def read_claim(raw: AbstractMapping[str, Any]) -> ClaimView:
    """The claim's view: the fast reader for a plainly well-formed body, else the full one (same result)."""
    try:
        return _read_claim_fast(raw)
    except Bail:
        return read_claim_full(raw)


_intern = sys.intern


def _allocation_nodes(terms: list[Any]) -> tuple[str, ...]:
    """The node names of ``metadata.name In [...]`` match fields (the terms are read, never reported)."""
    nodes: list[str] = []
    for term in terms:
        for field in (term.get("matchFields") or []) if isinstance(term, dict) else []:
            if (
                isinstance(field, dict)
                and field.get("key") == "metadata.name"
                and field.get("operator") == "In"
            ):
                nodes.extend(v for v in field.get("values") or [] if isinstance(v, str))
    return tuple(dict.fromkeys(nodes))


def _read_claim_fast(raw: AbstractMapping[str, Any]) -> ClaimView:
    """``read_claim_full`` for a body it would report no problem for; raises Bail on anything else."""
    meta = fast_mapping(raw.get("metadata"))
    status = fast_mapping(raw.get("status"))
    allocation = fast_mapping(status.get("allocation"))
    devices = fast_mapping(allocation.get("devices"))
    results = []
    for result in fast_items(devices.get("results")):
        if type(result) is not dict:
            result = fast_mapping(result)
        capacity = result.get("consumedCapacity")
        results.append(
            AllocationResult(
                request=fast_string(result.get("request")),
                driver=_intern(fast_string(result.get("driver"))),
                pool=_intern(fast_string(result.get("pool"))),
                device=fast_string(result.get("device")),
                consumed=None if capacity is None else fast_quantities(capacity),
            )
        )
    reserved = tuple(
        str(entry["uid"])
        for entry in fast_items(status.get("reservedFor"))
        if isinstance(entry, dict) and isinstance(entry.get("uid"), str)
    )
    selector = fast_mapping(allocation.get("nodeSelector"))
    terms = fast_items(selector.get("nodeSelectorTerms"))
    name = meta.get("name")
    namespace = meta.get("namespace")
    return ClaimView(
        namespace=_intern(namespace if isinstance(namespace, str) else ""),
        name=name if isinstance(name, str) and name else "<unnamed>",
        uid=fast_string(meta.get("uid")),
        results=tuple(results),
        allocated=bool(allocation),
        reserved_for=reserved,
        allocation_nodes=_allocation_nodes(terms) if terms else (),
    )


def read_claim_full(raw: AbstractMapping[str, Any]) -> ClaimView:
    """The full reader: every field path checked, every defect a named problem."""
    reader = Reader(ref_of(raw, "ResourceClaim"))
    meta = reader.mapping(raw.get("metadata"), "metadata")
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
    reserved = tuple(
        str(entry["uid"])
        for entry in reader.items(status.get("reservedFor"), "status.reservedFor")
        if isinstance(entry, dict) and isinstance(entry.get("uid"), str)
    )
    selector = reader.mapping(allocation.get("nodeSelector"), "status.allocation.nodeSelector")
    terms = reader.items(selector.get("nodeSelectorTerms"), "status.allocation.nodeSelector.nodeSelectorTerms")
    return ClaimView(
        namespace=sys.intern(reader.ref.namespace),
        name=reader.ref.name,
        uid=reader.string(meta.get("uid"), "metadata.uid"),
        results=tuple(results),
        allocated=bool(allocation),
        reserved_for=reserved,
        allocation_nodes=_allocation_nodes(terms),
        problems=tuple(reader.problems),
    )
