"""Quantity + and −: the fast path (no local context, no re-rounding of a nano-exact result) must give
exactly what the general path gives: the same value, the same Decimal representation, the same format."""

from __future__ import annotations

from decimal import Decimal, localcontext

from hypothesis import given, settings
from hypothesis import strategies as st

from draledger.quantities import _CTX, ZERO, Format, Quantity, parse_quantity


def slow_add(a: Quantity, b: Quantity) -> Quantity:
    """The general path: exact arithmetic in the wide context, then the constructor's nano rounding."""
    with localcontext(_CTX):
        return Quantity(a.value + b.value, a.fmt if a.fmt is not None else b.fmt)


def slow_sub(a: Quantity, b: Quantity) -> Quantity:
    with localcontext(_CTX):
        return Quantity(a.value - b.value, a.fmt if a.fmt is not None else b.fmt)


def same(x: Quantity, y: Quantity) -> bool:
    return x.value.as_tuple() == y.value.as_tuple() and x.fmt is y.fmt and str(x) == str(y)


formats = st.sampled_from([Format.DECIMAL_SI, Format.BINARY_SI, Format.DECIMAL_EXPONENT, None])
suffixes = st.sampled_from(["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "e3", "e-12"])


@st.composite
def quantities(draw: st.DrawFn) -> Quantity:
    choice = draw(st.integers(0, 3))
    if choice == 0:  # parsed text, as the readers make them
        digits = draw(st.from_regex(r"[+-]?[0-9]{1,20}(\.[0-9]{0,14})?", fullmatch=True))
        return parse_quantity(digits + draw(suffixes))
    if choice == 1:  # an arbitrary decimal: the constructor rounds it to the nano
        value = draw(st.decimals(allow_nan=False, allow_infinity=False, places=draw(st.integers(0, 15)),
                                 min_value=Decimal("-1e30"), max_value=Decimal("1e30")))
        return Quantity(value, draw(formats))
    if choice == 2:  # integral values written with many places (kept as they are: exponent below -9)
        integral = _CTX.quantize(Decimal(draw(st.integers(-(10**20), 10**20))), Decimal("1e-14"))
        return Quantity(integral, draw(formats))
    return draw(st.sampled_from([ZERO, Quantity(0), parse_quantity("1n"), parse_quantity("-1n"),
                                 parse_quantity("1Ei"), Quantity(Decimal("9e117"))]))


class TestFastPath:
    @settings(max_examples=2000, deadline=None)
    @given(quantities(), quantities())
    def test_add_and_sub_equal_the_general_path(self, a: Quantity, b: Quantity) -> None:
        assert same(a + b, slow_add(a, b))
        assert same(a - b, slow_sub(a, b))
        assert same(b + a, slow_add(b, a))

    def test_examples(self) -> None:
        q = parse_quantity
        assert "1500m" == str(q("1") + q("500m"))
        assert "2Gi" == str(q("1Gi") + q("1Gi"))
        assert "-1n" == str(q("1n") - q("2n"))
        assert Format.BINARY_SI is (ZERO + q("1Ki")).fmt
        assert Format.DECIMAL_SI is (q("1") + q("1Ki")).fmt
        # an integral value with 14 places, plus a milli value: re-rounded to the nano as before
        wide = Quantity(Decimal("3.00000000000000"))
        assert (wide + q("1m")).value.as_tuple() == Decimal("3.001000000").as_tuple()

    def test_results_are_immutable(self) -> None:
        total = parse_quantity("1") + parse_quantity("2")
        try:
            total.value = Decimal(0)  # type: ignore[misc]
        except AttributeError:
            pass
        else:
            raise AssertionError("a sum must be immutable like any Quantity")
