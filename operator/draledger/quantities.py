"""Exact Kubernetes quantities: parsing, arithmetic and canonical formatting.

Rules (from k8s.io/apimachinery/pkg/api/resource):
1. A quantity is ``<sign><digits>[.<digits>][<suffix>]`` where the suffix is a binary SI suffix (Ki..Ei),
   a decimal SI suffix (n, u, m, "", k, M, G, T, P, E) or a decimal exponent (``e3``, ``E-2``).
2. Values are exact decimals, rounded *up* (away from zero) to the nano, like ParseQuantity does.
3. Every quantity remembers its format; arithmetic keeps the left operand's format, except that a zero
   with no format takes the other's (Quantity.Add does the same).
4. Canonical formatting is kube-apiserver's: BinarySI only for exact integers of magnitude >= 1024,
   otherwise DecimalSI with the smallest suffix that keeps the mantissa an integer (``9600m``, ``8Gi``).

Never: floats. A float that arrives from a YAML parser is read through its ``repr``, i.e. as the text
the user wrote, never through binary arithmetic.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal, localcontext
from enum import Enum
from typing import Final

__all__ = ["EXACT", "PARSED", "ZERO", "Format", "Quantity", "QuantityError", "parse_quantity"]


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


class Format(Enum):
    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


_BINARY: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXP: Final = {v: k for k, v in _DECIMAL.items()}
_BINARY_BY_EXP: Final = {v: k for k, v in _BINARY.items()}
_GRAMMAR: Final = re.compile(
    r"(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?[0-9]+)|(?P<dec>[numkMGTPE]?))\Z"  # \Z: "1\n" is no quantity
)
_NANO: Final = Decimal("1e-9")
# Enough digits for any quantity kube-apiserver accepts (it caps at 2^63-1 nano-units per int64 path,
# and its inf.Dec path is arbitrary precision): products of two such values stay exact.
_CTX: Final = Context(prec=120)
# + and − call it directly (no localcontext); so do running sums of raw values (accounting.sums). Its flags
# are never read.
EXACT: Final = _CTX.copy()


def _round_to_nano(value: Decimal) -> Decimal:
    """Round away from zero to a whole number of nano-units (ParseQuantity's inf.RoundUp)."""
    if value == value.to_integral_value() or value.as_tuple().exponent >= -9:  # type: ignore[operator]
        return value
    with localcontext(_CTX):
        rounding = ROUND_CEILING if value > 0 else ROUND_FLOOR
        return value.quantize(_NANO, rounding=rounding)


class Quantity:
    """An exact, immutable Kubernetes quantity."""

    __slots__ = ("fmt", "value")

    value: Decimal
    fmt: Format | None  # None only for the neutral ZERO

    def __init__(self, value: Decimal | int, fmt: Format | None = Format.DECIMAL_SI) -> None:
        object.__setattr__(self, "value", _round_to_nano(Decimal(value)))
        object.__setattr__(self, "fmt", fmt)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Quantity is immutable")

    # --- arithmetic: exact; the result keeps the left operand's format (Quantity.Add) ---
    def __add__(self, other: Quantity) -> Quantity:
        return _exact(EXACT.add(self.value, other.value), self.fmt if self.fmt is not None else other.fmt)

    def __sub__(self, other: Quantity) -> Quantity:
        return _exact(EXACT.subtract(self.value, other.value), self.fmt if self.fmt is not None else other.fmt)

    def __neg__(self) -> Quantity:
        return Quantity(-self.value, self.fmt)

    def times(self, factor: Quantity | int) -> Quantity:
        """``self × factor``, in self's format (NewDecimalQuantity(product, consumed.Format))."""
        other = factor.value if isinstance(factor, Quantity) else Decimal(factor)
        with localcontext(_CTX):
            return Quantity(self.value * other, self.fmt)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __le__(self, other: Quantity) -> bool:
        return self.value <= other.value

    def __gt__(self, other: Quantity) -> bool:
        return self.value > other.value

    def __ge__(self, other: Quantity) -> bool:
        return self.value >= other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def __str__(self) -> str:
        return self.canonical()

    def max(self, other: Quantity) -> Quantity:
        return other if other.value > self.value else self

    def canonical(self) -> str:
        """The string kube-apiserver prints for this quantity (Quantity.CanonicalizeBytes)."""
        value = self.value
        if not value:
            return "0"
        fmt = self.fmt or Format.DECIMAL_SI
        if fmt is Format.BINARY_SI:
            if abs(value) < 1024 or value != value.to_integral_value():
                fmt = Format.DECIMAL_SI
            else:
                return _base1024(int(value))
        return _base1000(value, fmt)


def _exact(value: Decimal, fmt: Format | None) -> Quantity:
    """``Quantity(value, fmt)`` for the result of an operation in ``EXACT``, without the copy and checks.

    The sum or difference of two nano-exact values is nano-exact (its exponent is the smaller of the
    operands', so never below -9), and ``_round_to_nano`` would return it unchanged: skip it then. Any
    other result goes through ``_round_to_nano`` as the constructor would send it.
    """
    exponent = value.as_tuple().exponent
    if not (isinstance(exponent, int) and exponent >= -9):
        value = _round_to_nano(value)
    quantity = object.__new__(Quantity)
    _set(quantity, "value", value)
    _set(quantity, "fmt", fmt)
    return quantity


_set: Final = object.__setattr__


def _base1024(number: int) -> str:
    exponent = 0
    while number % 1024 == 0 and exponent < 60:
        number //= 1024
        exponent += 10
    return f"{number}{_BINARY_BY_EXP.get(exponent, '')}"


def _base1000(value: Decimal, fmt: Format) -> str:
    sign, digits, exp = value.normalize(_CTX).as_tuple()
    assert isinstance(exp, int)
    mantissa = int("".join(map(str, digits)))
    # Bring the exponent down to a multiple of 3 (keeps the mantissa an integer) ...
    shift = exp % 3
    mantissa *= 10**shift
    exp -= shift
    # ... and fold whole thousands into the suffix, as AsCanonicalBytes does.
    while mantissa and mantissa % 1000 == 0:
        mantissa //= 1000
        exp += 3
    prefix = "-" if sign else ""
    if fmt is Format.DECIMAL_EXPONENT:
        return f"{prefix}{mantissa}" + (f"e{exp}" if exp else "")
    if exp > 18:  # beyond exa: kube-apiserver pads the mantissa with zeros
        return f"{prefix}{mantissa * 10 ** (exp - 18)}E"
    if exp < -9:  # cannot happen after nano rounding; kept for totality
        raise AssertionError(f"sub-nano quantity {value}")
    return f"{prefix}{mantissa}{_DECIMAL_BY_EXP[exp]}"


ZERO: Final = Quantity(0, None)

_CACHE: dict[str, Quantity] = {}
# Read-only for callers: text -> what parse_quantity(text) returned (a fast path for hot readers).
PARSED: Final[dict[str, Quantity]] = _CACHE


def parse_quantity(raw: object) -> Quantity:
    """Parse a quantity as kube-apiserver does; raise QuantityError on anything it would reject.

    Integers (JSON numbers) are accepted, as Quantity.UnmarshalJSON accepts them. Parsed strings are
    cached: dumps repeat the same few strings ("100m", "1Gi") thousands of times.
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
    if isinstance(raw, int | Decimal):
        return _parse_text(str(raw))
    if isinstance(raw, float):
        return _parse_text(repr(raw))
    raise QuantityError(f"{raw!r} is not a quantity")


def _parse_text(text: str) -> Quantity:
    match = _GRAMMAR.match(text)
    if match is None:
        raise QuantityError(f"{text!r} is not a quantity (expected e.g. 100m, 1.5Gi, 2e3, 8)")
    number = Decimal(match["num"])
    if match["bin"] is not None:
        return Quantity(number * (1 << _BINARY[match["bin"]]), Format.BINARY_SI)
    if match["exp"] is not None:
        exponent = int(match["exp"][1:])
        if abs(exponent) > 1000:
            raise QuantityError(f"{text!r}: exponent out of range")
        return Quantity(number.scaleb(exponent, _CTX), Format.DECIMAL_EXPONENT)
    return Quantity(number.scaleb(_DECIMAL[match["dec"]], _CTX), Format.DECIMAL_SI)


def scheduler_units(name: str, quantity: Quantity) -> int:
    """The quantity in kube-scheduler's integer unit for the resource: millicores for cpu, units (bytes) for
    the rest, rounded up (``Quantity.MilliValue`` and ``Quantity.Value`` round up: framework.Resource.Add)."""
    value = quantity.value * 1000 if name == "cpu" else quantity.value
    return int(value.to_integral_value(rounding=ROUND_CEILING))


def units_of(amounts: Mapping[str, Quantity]) -> dict[str, int]:
    return {name: scheduler_units(name, quantity) for name, quantity in amounts.items()}
