"""Exact Kubernetes quantities as scaled integers: parsing, arithmetic, and one notation for output.

Rules (from k8s.io/apimachinery/pkg/api/resource, unless said otherwise):
1. A quantity is ``<sign><digits>[.<digits>][<suffix>]`` where the suffix is a binary SI suffix (Ki..Ei),
   a decimal SI suffix (n, u, m, "", k, M, G, T, P, E) or a decimal exponent (``e3``, ``E-2``).
2. A value is a whole number of nano-units (``Quantity.nanos``), rounded *up* (away from zero) to the nano,
   as ParseQuantity rounds. Sums and differences are exact integer arithmetic; a product (consumed capacity
   × multiplier) is rounded away from zero to the nano again.
3. A quantity keeps no notation: the output notation is chosen once, when it is printed, by one rule (the
   project's, stated in docs/accounting.md): a whole number of at least 1Mi that is a whole number of Ki is
   written in binary notation (``8Gi``, ``1500Mi``) when that is shorter than the decimal one; every other
   value in decimal notation with the largest suffix that keeps the mantissa whole (``9600m``, ``2G``,
   ``100M``). kube-apiserver stores what it is sent and prints it in the notation it was given, so two
   equal values may print differently there; here, equal values always print alike.
4. Fit is judged in kube-scheduler's integer units: millicores for cpu, whole units otherwise, each rounded
   up (``Quantity.MilliValue`` / ``Value``).

Never: floats. A float that arrives from a YAML parser is read through its ``repr``, i.e. as the text the
user wrote, never through binary arithmetic.
"""

from __future__ import annotations

import re
from decimal import Context, Decimal, InvalidOperation
from typing import Final

__all__ = ["NANO", "ZERO", "Quantity", "QuantityError", "format_nanos", "parse_quantity", "scheduler_units"]

NANO: Final = 10**9


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


_BINARY: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXP: Final = {v: k for k, v in _DECIMAL.items()}
_BINARY_BY_EXP: Final = {v: k for k, v in _BINARY.items()}
_GRAMMAR: Final = re.compile(
    r"(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?[0-9]+)|(?P<dec>[numkMGTPE]?))\Z"  # \Z: "1\n" is no quantity
)
_CTX: Final = Context(prec=4200)  # parsing only: enough digits for any text below the readers' range bound
_MEBI: Final = 1 << 20


def _away(numerator: int, denominator: int) -> int:
    """numerator / denominator rounded away from zero (denominator > 0)."""
    quotient, remainder = divmod(abs(numerator), denominator)
    if remainder:
        quotient += 1
    return quotient if numerator >= 0 else -quotient


class Quantity:
    """An exact, immutable quantity: a whole number of nano-units."""

    __slots__ = ("nanos",)

    nanos: int

    def __init__(self, nanos: int) -> None:
        object.__setattr__(self, "nanos", nanos)

    @classmethod
    def of(cls, units: int | str) -> Quantity:
        """A whole number of units, or a quantity text (tests, defaults)."""
        return parse_quantity(units) if isinstance(units, str) else cls(units * NANO)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Quantity is immutable")

    @property
    def value(self) -> Decimal:
        """The value as an exact Decimal (for people and metrics, at the edge)."""
        return Decimal(self.nanos).scaleb(-9)

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity(self.nanos + other.nanos)

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity(self.nanos - other.nanos)

    def __neg__(self) -> Quantity:
        return Quantity(-self.nanos)

    def times(self, factor: Quantity | int) -> Quantity:
        """``self × factor``: a whole count exactly, another quantity rounded away from zero to the nano."""
        if isinstance(factor, Quantity):
            return Quantity(_away(self.nanos * factor.nanos, NANO))
        return Quantity(self.nanos * factor)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.nanos == other.nanos

    def __lt__(self, other: Quantity) -> bool:
        return self.nanos < other.nanos

    def __le__(self, other: Quantity) -> bool:
        return self.nanos <= other.nanos

    def __gt__(self, other: Quantity) -> bool:
        return self.nanos > other.nanos

    def __ge__(self, other: Quantity) -> bool:
        return self.nanos >= other.nanos

    def __hash__(self) -> int:
        return hash(self.nanos)

    def __bool__(self) -> bool:
        return bool(self.nanos)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def __str__(self) -> str:
        return format_nanos(self.nanos)


def format_nanos(nanos: int) -> str:
    """The output notation of rule 3 (memoized: a cluster has few distinct amounts, and every ledger status
    prints dozens; measured, the status bodies of 100 ledgers print in 0.8 × the time: docs/performance.md,
    "Memos")."""
    text = _TEXTS.get(nanos)
    if text is None:
        text = _format(nanos)
        if len(_TEXTS) < 4096:
            _TEXTS[nanos] = text
    return text


_TEXTS: dict[int, str] = {}  # format_nanos: nanos -> text; process-wide, as the values it prints are


def _format(nanos: int) -> str:
    if not nanos:
        return "0"
    decimal = _decimal(nanos)
    if nanos % NANO == 0:
        whole = nanos // NANO
        if abs(whole) >= _MEBI and whole % 1024 == 0:
            binary = _binary(whole)
            if len(binary) < len(decimal):
                return binary
    return decimal


def _binary(number: int) -> str:
    sign, number = ("-", -number) if number < 0 else ("", number)
    exponent = 0
    while number % 1024 == 0 and exponent < 60:
        number //= 1024
        exponent += 10
    return f"{sign}{number}{_BINARY_BY_EXP[exponent]}"


def _decimal(nanos: int) -> str:
    sign, mantissa = ("-", -nanos) if nanos < 0 else ("", nanos)
    exponent = -9
    while mantissa % 1000 == 0 and exponent < 18:
        mantissa //= 1000
        exponent += 3
    return f"{sign}{mantissa}{_DECIMAL_BY_EXP[exponent]}"


ZERO: Final = Quantity(0)
_CACHE: dict[str, Quantity] = {}


def parse_quantity(raw: object) -> Quantity:
    """Parse a quantity as kube-apiserver does; raise QuantityError on anything it would reject.

    Integers (JSON numbers) are accepted, as Quantity.UnmarshalJSON accepts them. Parsed strings are cached:
    dumps repeat the same few strings ("100m", "1Gi") thousands of times. The cache is process-wide because the
    readers parse before any state holds what they read (a dump, a priming page); measured on 3,000 pods, loading
    takes 0.65 × the time with it, and the state 0.9 × the memory (equal quantities are one object):
    docs/performance.md, "Memos".
    """
    if isinstance(raw, str):
        cached = _CACHE.get(raw)
        if cached is not None:
            return cached
        quantity = _parse_text(raw)
        if len(_CACHE) < 65536:
            _CACHE[raw] = quantity
        return quantity
    if isinstance(raw, bool) or raw is None:
        raise QuantityError(f"{raw!r} is not a quantity")
    if isinstance(raw, int):
        return Quantity(raw * NANO)
    if isinstance(raw, Decimal):
        return _parse_text(str(raw))
    if isinstance(raw, float):
        return _parse_text(repr(raw))
    raise QuantityError(f"{raw!r} is not a quantity")


def _parse_text(text: str) -> Quantity:
    match = _GRAMMAR.match(text)
    if match is None:
        raise QuantityError(f"{text!r} is not a quantity (expected e.g. 100m, 1.5Gi, 2e3, 8)")
    try:
        number = Decimal(match["num"])
    except InvalidOperation:  # pragma: no cover - the grammar admits only decimal numbers
        raise QuantityError(f"{text!r} is not a quantity") from None
    if match["bin"] is not None:
        scaled, binary = number.scaleb(9, _CTX), 1 << _BINARY[match["bin"]]
    else:
        if match["exp"] is not None:
            exponent = int(match["exp"][1:])
            if abs(exponent) > 1000:
                raise QuantityError(f"{text!r}: exponent out of range")
        else:
            exponent = _DECIMAL[match["dec"]]
        scaled, binary = number.scaleb(exponent + 9, _CTX), 1
    sign, digits, exp = scaled.as_tuple()
    assert isinstance(exp, int)
    mantissa = int("".join(map(str, digits))) * binary
    magnitude = mantissa * 10**exp if exp >= 0 else _away(mantissa, 10**-exp)
    return Quantity(-magnitude if sign else magnitude)


def scheduler_units(name: str, quantity: Quantity) -> int:
    """The quantity in kube-scheduler's integer unit for the resource: millicores for cpu, units (bytes) for
    the rest, rounded up (``Quantity.MilliValue`` and ``Quantity.Value`` round up: framework.Resource.Add)."""
    return -((-quantity.nanos) // (10**6 if name == "cpu" else NANO))
