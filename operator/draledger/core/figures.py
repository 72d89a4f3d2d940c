"""Quantities for people: ``41.7Gi/494Gi`` and ``3.5/64``, never ``42688Mi/517794616Ki``.

Only tables and pictures use this module; the ledgers, ``-o json`` and ``-o yaml`` keep Kubernetes' exact
notation. The rules, the same everywhere a person reads a figure:

- bytes (``memory``, ``hugepages-*``, ``ephemeral-storage``) in binary units (Ki, Mi, Gi, Ti, Pi, Ei), CPU in
  cores (millicores below one core), anything else as a plain number;
- three significant digits, trailing zeros dropped (``41.7``, ``494``, ``10``), rounded half away from zero,
  computed exactly (decimals over whole nano-units, never floats);
- a pair (``used/total``), or the figures of one row, are printed in the unit of the largest, so that they read
  alike; a non-zero amount that would round to nothing shows as ``<0.01`` of that unit rather than a false ``0``;
- but a byte amount that is a whole number below 1000 of a binary unit prints exactly so (``64Mi``, ``512Mi``,
  ``1Gi``), whatever the unit of the others: rounded into theirs it would read ``0.06Gi`` or ``0.5Gi``, figures
  nobody wrote.

Every table (``audit``, ``export``, the demo), ``kubectl get nal``'s columns (``status.summary``) and the SVG
report print figures through here.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Context, Decimal

from draledger.core.quantities import NANO, Quantity, parse_quantity

BINARY = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
SIGNIFICANT = 3
SMALLEST = Decimal("0.01")  # below this (in the chosen unit) a non-zero amount prints as "<0.01"
_EXACT = Context(prec=4200)  # every quantity the readers accept, to the digit (the default 28 digits are not)


def is_bytes(resource: str) -> bool:
    return resource in ("memory", "ephemeral-storage", "storage") or resource.startswith("hugepages-")


def unit_for(resource: str, nanos: int) -> tuple[str, Decimal]:
    """The unit a person reads ``nanos`` of ``resource`` in, and its size in nano-units."""
    magnitude = abs(nanos)
    if is_bytes(resource):
        index = 0
        while index + 1 < len(BINARY) and magnitude >= (1024 ** (index + 1)) * NANO:
            index += 1
        return BINARY[index], Decimal(1024**index * NANO)
    if resource == "cpu" and 0 < magnitude < NANO:
        return "m", Decimal(NANO // 1000)
    return "", Decimal(NANO)


def _digits(value: Decimal) -> str:
    """``value`` to three significant digits (whole numbers of three or more digits kept whole), no trailing 0s."""
    if value == 0:
        return "0"
    if abs(value) < SMALLEST:
        return f"<{SMALLEST}" if value > 0 else f"-<{SMALLEST}"
    places = max(0, SIGNIFICANT - len(str(int(abs(value)))) if abs(value) >= 1 else SIGNIFICANT - 1)
    places = min(places, 2)
    rounded = value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP, context=_EXACT)
    text = f"{rounded:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def exact_binary(resource: str, nanos: int) -> str | None:
    """``64Mi`` for 64 MiB of a byte resource, when the amount is a whole number below 1000 of a binary unit;
    None otherwise."""
    if not is_bytes(resource) or nanos <= 0 or nanos % NANO:
        return None
    value = nanos // NANO
    for index in range(len(BINARY) - 1, -1, -1):
        size = 1024**index
        if value % size == 0:
            return f"{value // size}{BINARY[index]}" if value // size < 1000 else None
    return None


def humanize(resource: str, amount: Quantity | str | int, unit: tuple[str, Decimal] | None = None) -> str:
    """One figure for people: ``humanize("memory", "42688Mi") == "41.7Gi"``; ``unit`` is the unit of the figures
    it is read with, which a whole binary amount does not take (``exact_binary``)."""
    nanos = _nanos(amount)
    if nanos == 0:
        return "0"
    exact = exact_binary(resource, nanos) if unit is not None else None
    if exact is not None:
        return exact
    suffix, size = unit or unit_for(resource, nanos)
    return f"{_digits(_EXACT.divide(Decimal(nanos), size))}{suffix}"


def humanize_pair(resource: str, used: Quantity | str | int, total: Quantity | str | int) -> str:
    """``used/total`` in the unit of the larger side: ``humanize_pair("memory", "10Gi", "448762426368")`` is
    ``10Gi/418Gi``, ``humanize_pair("hugepages-2Mi", "64Mi", "1Gi")`` is ``64Mi/1Gi``."""
    used_nanos, total_nanos = _nanos(used), _nanos(total)
    unit = unit_for(resource, max(abs(used_nanos), abs(total_nanos)))
    return f"{humanize(resource, used_nanos, unit)}/{humanize(resource, total_nanos, unit)}"


def _nanos(amount: Quantity | str | int) -> int:
    if isinstance(amount, Quantity):
        return amount.nanos
    if isinstance(amount, int):
        return amount
    return parse_quantity(amount).nanos


def humanize_all(resource: str, amounts: Sequence[Quantity | str | int]) -> tuple[str, ...]:
    """Several figures of one row, all in the unit of the largest, so that they compare at a glance:
    ``humanize_all("memory", ["517794616Ki", "42688Mi", "0"]) == ("494Gi", "41.7Gi", "0")``."""
    nanos = [_nanos(amount) for amount in amounts]
    unit = unit_for(resource, max((abs(n) for n in nanos), default=0))
    return tuple(humanize(resource, n, unit) for n in nanos)
