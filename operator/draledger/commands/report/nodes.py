"""Ledgers as the report reads them: typed, frozen records of one node's resources, zones and problems.

Rules: a ledger is a ``NodeAllocatableLedger`` object or its bare ``status``; figures are read with
``parse_quantity`` and stay exact (a figure that does not parse makes its resource "unreadable", never a
guess). Pressure (``requested / allocatable``) is an exact ratio, used to sort and to bucket, and printed
only as a rounded percentage. A Frozen node says why (``frozen``): its ``spec.reason``, as the operator's
Events quote it, or that the operator freezes every node (``--frozen``, when ``spec.frozen`` is not set).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Any, Final

from draledger.core.figures import humanize_all
from draledger.core.phases import Phase
from draledger.core.quantities import ZERO, Quantity, QuantityError, parse_quantity

RESOURCE_ORDER: Final = ("cpu", "memory")
INFINITY: Final = Decimal("Infinity")


def _quantity(raw: object) -> Quantity | None:
    try:
        return parse_quantity(raw)
    except QuantityError:
        return None


def ratio(part: Quantity, whole: Quantity) -> Fraction | None:
    """``part / whole`` exactly; None when ``whole`` is not positive."""
    return Fraction(part.nanos, whole.nanos) if whole.nanos > 0 else None


def percent(pressure: Decimal) -> str:
    """A rounded percentage that never reads as nothing or as all when it is neither."""
    if pressure.is_infinite():
        return "∞%"
    rounded = (pressure * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP)
    if rounded == 0 and pressure > 0:
        return "<1%"
    return ">99%" if rounded == 100 and pressure < 1 else f"{rounded}%"


@dataclass(frozen=True, slots=True)
class Line:
    """One resource of one node."""

    name: str
    allocatable: Quantity
    requested: Quantity
    claims: Quantity
    pod_requests: Quantity | None
    charged: Quantity | None

    @property
    def ordinary(self) -> Quantity:
        """The part of ``requested`` that is not DRA claims (never negative)."""
        rest = self.requested - self.claims
        return rest if rest.nanos > 0 else ZERO

    @property
    def free(self) -> Quantity:
        return self.allocatable - self.requested

    @property
    def diverges(self) -> bool:
        return self.charged is not None and self.charged != self.claims

    @property
    def pressure(self) -> Decimal:
        if self.allocatable.nanos > 0:
            return self.requested.value / self.allocatable.value
        return INFINITY if self.requested.nanos > 0 else Decimal(0)

    @property
    def empty(self) -> bool:
        """Nothing allocatable and nothing requested (``hugepages-1Gi: 0`` on most nodes)."""
        return self.allocatable.nanos == 0 and self.requested.nanos == 0

    def human(self, *amounts: Quantity) -> tuple[str, ...]:
        """``amounts`` for people, all in the unit this row's largest figure reads in."""
        row = (self.allocatable, self.requested, self.claims, *amounts)
        return humanize_all(self.name, row)[3:]

    @property
    def pair(self) -> str:
        """``requested/allocatable`` for people: ``41.7Gi/494Gi``."""
        return "/".join(self.human(self.requested, self.allocatable))


@dataclass(frozen=True, slots=True)
class ZoneLine:
    zone: str
    resource: str
    capacity: Quantity
    claims: Quantity


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    phase: str
    lines: tuple[Line, ...]
    zones: tuple[ZoneLine, ...]
    problems: tuple[str, ...]
    claim_count: int | None
    unreadable: tuple[str, ...]  # resources whose figures do not parse
    frozen: str = ""  # why a Frozen node is (``frozen: REASON``); "" for any other phase

    @property
    def overcommitted(self) -> bool:
        return self.phase == Phase.OVERCOMMITTED or any(line.free.nanos < 0 for line in self.lines)

    @property
    def diverges(self) -> bool:
        return any(line.diverges for line in self.lines)

    @property
    def peak(self) -> Line | None:
        return max(self.lines, key=lambda line: line.pressure, default=None)

    @property
    def pressure(self) -> Decimal:
        peak = self.peak
        return peak.pressure if peak is not None else Decimal(0)

    @property
    def group(self) -> int:
        """0: overcommitted, 1: stale, 2: the rest (sorted first to last)."""
        if self.overcommitted:
            return 0
        return 1 if self.phase == Phase.STALE else 2

    @property
    def severity(self) -> int | None:
        """Why a person should look at this node, most urgent first; None when nothing is wrong.

        0 overcommitted, 1 any phase but Ready, 2 problems or unreadable figures, 3 diverging from the
        scheduler.
        """
        if self.overcommitted:
            return 0
        if self.phase != Phase.READY:
            return 1
        if self.problems or self.unreadable:
            return 2
        return 3 if self.diverges else None


def _resource_key(name: str) -> tuple[int, int, str]:
    if name in RESOURCE_ORDER:
        return (RESOURCE_ORDER.index(name), 0, name)
    if name.startswith("hugepages-"):
        size = _quantity(name.removeprefix("hugepages-"))
        return (2, size.nanos if size is not None else 0, name)
    if name == "ephemeral-storage":
        return (3, 0, name)
    return (4, 0, name)


def resource_order(names: Iterable[str]) -> list[str]:
    """cpu, memory, hugepages by size, ephemeral-storage, then the rest by name."""
    return sorted(names, key=_resource_key)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _lines(resources: Mapping[str, Any]) -> tuple[list[Line], list[str]]:
    lines: list[Line] = []
    unreadable: list[str] = []
    for resource in resource_order(resources):
        figures = _mapping(resources[resource])
        allocatable, requested, claims = (
            _quantity(figures.get(k, "0")) for k in ("allocatable", "requested", "claims")
        )
        if allocatable is None or requested is None or claims is None:
            unreadable.append(str(resource))
            continue
        charged = _quantity(figures["schedulerCharged"]) if "schedulerCharged" in figures else None
        pod_requests = _quantity(figures["podRequests"]) if "podRequests" in figures else None
        lines.append(Line(str(resource), allocatable, requested, claims, pod_requests, charged))
    return lines, unreadable


def _zones(raw: object) -> list[ZoneLine]:
    zones: list[ZoneLine] = []
    for zone in raw if isinstance(raw, list) else ():
        zone = _mapping(zone)
        zres = _mapping(zone.get("resources"))
        for resource in resource_order(zres):
            capacity = _quantity(_mapping(zres[resource]).get("capacity", "0"))
            claims = _quantity(_mapping(zres[resource]).get("claims", "0"))
            if capacity is not None and claims is not None:
                zones.append(ZoneLine(str(zone.get("id", "?")), str(resource), capacity, claims))
    return zones


def frozen_because(phase: str, spec: Mapping[str, Any] | None) -> str:
    """Why a ``phase`` ledger with ``spec`` (None: a bare status) is Frozen; "" when it is not."""
    if phase != Phase.FROZEN:
        return ""
    if spec is None:
        return "frozen"
    if spec.get("frozen") is not True:
        return "frozen: cluster-wide (--frozen)"
    reason = spec.get("reason")
    return f"frozen: {reason}" if isinstance(reason, str) and reason.strip() else "frozen: no reason given"


def read(ledger: Mapping[str, Any]) -> Node:
    whole = "status" in ledger or "metadata" in ledger
    status = _mapping(ledger.get("status")) if whole else ledger
    metadata = _mapping(ledger.get("metadata"))
    lines, unreadable = _lines(_mapping(status.get("resources")))
    count = status.get("claimCount")
    phase = str(status.get("phase") or "Unknown")
    return Node(
        name=str(status.get("nodeName") or metadata.get("name") or "?"),
        phase=phase,
        lines=tuple(lines),
        zones=tuple(_zones(status.get("numaZones"))),
        problems=tuple(str(_mapping(p).get("reason", "Problem")) for p in status.get("problems") or ()),
        claim_count=count if isinstance(count, int) and not isinstance(count, bool) else None,
        unreadable=tuple(unreadable),
        frozen=frozen_because(phase, _mapping(ledger.get("spec")) if whole else None),
    )


def ordered(ledgers: Iterable[Mapping[str, Any]]) -> list[Node]:
    """Overcommitted first, then stale, then the rest; by pressure (descending), then by name."""
    return sorted((read(ledger) for ledger in ledgers), key=lambda n: (n.group, -n.pressure, n.name))
