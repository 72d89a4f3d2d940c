"""Quantities: parsing as kube-apiserver does, exact integer arithmetic in nano-units, one output notation."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from draledger.core import quantities
from draledger.core.models import QUANTITY_PATTERN
from draledger.core.quantities import NANO, ZERO, Quantity, QuantityError, format_nanos, parse_quantity


def q(text: str) -> Quantity:
    return parse_quantity(text)


class TestParsing:
    @pytest.mark.parametrize(
        ("raw", "value"),
        [
            pytest.param("100m", Decimal("0.1"), id="milli"),
            pytest.param("1.5Gi", Decimal(3 * 2**29), id="binary-fraction"),
            pytest.param("2e3", Decimal(2000), id="exponent"),
            pytest.param("0.5", Decimal("0.5"), id="decimal-fraction"),
            pytest.param(".5", Decimal("0.5"), id="leading-dot"),
            pytest.param("5.", Decimal(5), id="trailing-dot"),
            pytest.param("+1", Decimal(1), id="plus-sign"),
            pytest.param("-1", Decimal(-1), id="minus-sign"),
            pytest.param("1E", Decimal(10**18), id="exa-suffix"),
            pytest.param("1e-3", Decimal("0.001"), id="negative-exponent"),
            pytest.param("1E+2", Decimal(100), id="upper-exponent-with-sign"),
            pytest.param("1n", Decimal("1e-9"), id="nano"),
            pytest.param("3u", Decimal("3e-6"), id="micro"),
            pytest.param("2k", Decimal(2000), id="kilo"),
            pytest.param("7M", Decimal(7 * 10**6), id="mega"),
            pytest.param("1T", Decimal(10**12), id="tera"),
            pytest.param("1P", Decimal(10**15), id="peta"),
            pytest.param("1Ki", Decimal(1024), id="kibi"),
            pytest.param("3Ti", Decimal(3 * 2**40), id="tebi"),
            pytest.param("1Pi", Decimal(2**50), id="pebi"),
            pytest.param("1Ei", Decimal(2**60), id="exbi"),
            pytest.param("0", Decimal(0), id="zero"),
            pytest.param("007", Decimal(7), id="leading-zeros"),
        ],
    )
    def test_legal_forms(self, raw: str, value: Decimal) -> None:
        """Every form kube-apiserver accepts parses to its exact value, a whole number of nano-units."""
        parsed = parse_quantity(raw)
        assert value == parsed.value
        assert int(value * NANO) == parsed.nanos

    @pytest.mark.parametrize(
        ("raw", "value"),
        [
            pytest.param(8, Decimal(8), id="json-int"),
            pytest.param(0, Decimal(0), id="json-zero"),
            pytest.param(-3, Decimal(-3), id="json-negative-int"),
            pytest.param(Decimal("0.25"), Decimal("0.25"), id="json-decimal"),
            pytest.param(0.5, Decimal("0.5"), id="yaml-float-read-as-written"),
            pytest.param(0.1, Decimal("0.1"), id="yaml-float-no-binary-drift"),
        ],
    )
    def test_numbers(self, raw: object, value: Decimal) -> None:
        """JSON numbers and YAML floats are read as the decimal text the user wrote, never as binary floats."""
        assert value == parse_quantity(raw).value

    @pytest.mark.parametrize(
        "raw",
        [
            pytest.param("12x", id="unknown-suffix"),
            pytest.param("", id="empty"),
            pytest.param(" 1", id="leading-space"),
            pytest.param("1 ", id="trailing-space"),
            pytest.param("1\n", id="trailing-newline"),
            pytest.param("1.2.3", id="two-dots"),
            pytest.param("1e", id="exponent-without-digits"),
            pytest.param("--1", id="double-sign"),
            pytest.param("inf", id="inf"),
            pytest.param("nan", id="nan"),
            pytest.param("Gi", id="suffix-only"),
            pytest.param(".", id="dot-only"),
            pytest.param("1ki", id="lowercase-binary"),
            pytest.param("1.5e3.5", id="fractional-exponent"),
            pytest.param("1e1001", id="exponent-out-of-range"),
        ],
    )
    def test_illegal_strings(self, raw: str) -> None:
        """Strings kube-apiserver rejects raise QuantityError naming the offending text."""
        with pytest.raises(QuantityError, match=r"is not a quantity|out of range") as error:
            parse_quantity(raw)
        assert repr(raw) in str(error.value)

    @pytest.mark.parametrize(
        "raw",
        [
            pytest.param(True, id="bool"),
            pytest.param(None, id="none"),
            pytest.param(float("inf"), id="float-inf"),
            pytest.param(float("nan"), id="float-nan"),
            pytest.param([1], id="list"),
            pytest.param({"value": 1}, id="dict"),
        ],
    )
    def test_illegal_values(self, raw: object) -> None:
        """Values that are not quantities at all raise QuantityError (a ValueError), never TypeError."""
        with pytest.raises(QuantityError, match="not a quantity"):
            parse_quantity(raw)

    def test_error_is_a_value_error(self) -> None:
        """QuantityError is a ValueError, so generic validation code catches it."""
        assert issubclass(QuantityError, ValueError)

    @pytest.mark.parametrize(
        ("raw", "canonical"),
        [
            pytest.param("0.1n", "1n", id="positive-rounds-up"),
            pytest.param("-0.1n", "-1n", id="negative-rounds-away-from-zero"),
            pytest.param("1.0000000001", "1000000001n", id="rounds-up-to-the-next-nano"),
            pytest.param("0.0000001m", "1n", id="sub-nano-milli"),
            pytest.param("1e-10", "1n", id="sub-nano-exponent"),
        ],
    )
    def test_rounds_up_to_the_nano(self, raw: str, canonical: str) -> None:
        """Sub-nano precision rounds away from zero to a whole nano, as ParseQuantity does."""
        assert canonical == str(parse_quantity(raw))

    def test_a_full_parse_cache_still_parses(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """When the parse cache is full, new strings are parsed (and not cached)."""

        class Full(dict[str, Quantity]):
            def __len__(self) -> int:
                return 65536

        full = Full()
        monkeypatch.setattr(quantities, "_CACHE", full)
        assert "123456789m" == str(parse_quantity("123456.789"))
        assert {} == dict(full)

    def test_repeated_strings_parse_equal(self) -> None:
        """Parsing the same text twice gives equal quantities (the parse cache is invisible)."""
        assert parse_quantity("1536Mi") == parse_quantity("1536Mi")
        assert str(parse_quantity("1536Mi")) == str(parse_quantity("1536Mi"))


class TestFormatting:
    @pytest.mark.parametrize(
        ("raw", "printed"),
        [
            pytest.param("9.6", "9600m", id="fraction-to-milli"),
            pytest.param("8Gi", "8Gi", id="binary-shorter"),
            pytest.param("17179869184", "16Gi", id="bytes-that-are-binary-print-binary"),
            pytest.param("1.5Gi", "1536Mi", id="binary-fraction-to-smaller-suffix"),
            pytest.param("0.5Ki", "512", id="small-values-are-decimal"),
            pytest.param("1024", "1024", id="below-one-mebi-is-decimal"),
            pytest.param("1024Ki", "1Mi", id="one-mebi"),
            pytest.param("1023Ki", "1047552", id="below-one-mebi-by-a-kibi"),
            pytest.param("2G", "2G", id="decimal-shorter-than-binary"),
            pytest.param("100M", "100M", id="decimal-bytes"),
            pytest.param("1500Mi", "1500Mi", id="binary-shorter-than-decimal"),
            pytest.param("1000", "1k", id="thousands-to-kilo"),
            pytest.param("1500", "1500", id="no-fraction-in-mantissa"),
            pytest.param("2e3", "2k", id="exponent-written-as-suffix"),
            pytest.param("1e-3", "1m", id="negative-exponent"),
            pytest.param("-1", "-1", id="negative"),
            pytest.param("-2Mi", "-2Mi", id="negative-binary"),
            pytest.param("0", "0", id="zero"),
            pytest.param("0Gi", "0", id="zero-binary"),
            pytest.param("+1", "1", id="plus-dropped"),
            pytest.param("5.", "5", id="trailing-dot-dropped"),
            pytest.param(".5", "500m", id="leading-dot"),
            pytest.param("0.001m", "1u", id="micro"),
            pytest.param("1000000n", "1m", id="nano-to-milli"),
            pytest.param("1E", "1E", id="exa"),
            pytest.param("100m", "100m", id="milli"),
        ],
    )
    def test_one_notation(self, raw: str, printed: str) -> None:
        """Every value prints one way, by the stated rule, whatever notation it was written in."""
        assert printed == str(parse_quantity(raw))

    def test_equal_values_print_alike(self) -> None:
        """1Gi, 1024Mi and 1073741824 are one value and print the same."""
        assert {"1Gi"} == {str(parse_quantity(t)) for t in ("1Gi", "1024Mi", "1073741824", "1048576Ki")}

    def test_repr_shows_the_printed_form(self) -> None:
        """repr() names the printed text, for readable assertion failures."""
        assert "Quantity('1536Mi')" == repr(q("1.5Gi"))

    def test_zero(self) -> None:
        """ZERO prints as 0 and is falsy; any non-zero quantity is truthy."""
        assert "0" == str(ZERO)
        assert not ZERO
        assert q("1n")

    def test_beyond_exa_pads_the_mantissa(self) -> None:
        """A value above the exa suffix keeps the largest suffix, E, and pads the mantissa."""
        assert "1000E" == format_nanos(10**21 * NANO)


class TestArithmetic:
    def test_no_float_drift(self) -> None:
        """Ten times 100m is exactly 1."""
        total = ZERO
        for _ in range(10):
            total = total + q("100m")
        assert q("1") == total
        assert "1" == str(total)

    def test_subtraction_is_exact(self) -> None:
        """1 − 300m − 700m is exactly zero."""
        assert ZERO == q("1") - q("300m") - q("700m")

    def test_sums_print_by_their_value(self) -> None:
        """A sum prints by its value alone: 1Gi + 1 is decimal, 1Gi + 1Gi binary."""
        assert "1073741825" == str(q("1Gi") + q("1"))
        assert "2Gi" == str(q("1Gi") + q("1Gi"))
        assert "1Gi" == str(q("2Gi") - q("1Gi"))

    def test_negation(self) -> None:
        """Negation is exact."""
        assert "-8Gi" == str(-q("8Gi"))

    @pytest.mark.parametrize(
        ("base", "factor", "printed"),
        [
            pytest.param("64Mi", "1", "64Mi", id="binary-times-one"),
            pytest.param("4", "2", "8", id="cores-times-two"),
            pytest.param("16G", "1Gi", "15625000Ti", id="large-product"),
            pytest.param("3", "500m", "1500m", id="fractional-multiplier"),
            pytest.param("8Gi", "0", "0", id="times-zero"),
            pytest.param("1n", "500m", "1n", id="rounds-up-to-the-nano"),
            pytest.param("-1n", "500m", "-1n", id="rounds-away-from-zero"),
        ],
    )
    def test_times(self, base: str, factor: str, printed: str) -> None:
        """A product is exact, rounded away from zero to the nano."""
        assert printed == str(q(base).times(q(factor)))

    def test_times_an_integer(self) -> None:
        """A quantity times a container count."""
        assert "1500m" == str(q("500m").times(3))

    def test_comparisons(self) -> None:
        """Comparisons are by value, whatever the format."""
        assert q("1Ki") == q("1024")
        assert hash(q("1Ki")) == hash(q("1024"))
        assert q("1") < q("1001m") <= q("1001m")
        assert q("2") > q("1999m") >= q("1999m")
        assert q("1") != "1"

    def test_immutable(self) -> None:
        """A Quantity cannot be changed in place."""
        quantity = q("1")
        with pytest.raises(AttributeError, match="immutable"):
            quantity.nanos = 2  # type: ignore[misc]


# ---------------------------------------------------------------- properties

_SUFFIXES = ["n", "u", "m", "", "k", "M", "G", "T", "P", "Ki", "Mi", "Gi", "Ti", "Pi",
             "e-9", "e-6", "e-3", "e0", "e3", "e7", "E12", "e+2"]


@st.composite
def quantity_texts(draw: st.DrawFn) -> str:
    """Quantity text of every notation, signs, fractions and suffixes included (within int64 range)."""
    sign = draw(st.sampled_from(["", "", "-", "+"]))
    whole = draw(st.integers(0, 999))
    fraction = draw(st.sampled_from(["", "", ".", ".5", ".25", ".125", ".0001", ".999999"]))
    suffix = draw(st.sampled_from(_SUFFIXES))
    return f"{sign}{whole}{fraction}{suffix}"


class TestProperties:
    @settings(max_examples=150, deadline=None)
    @given(quantity_texts())
    def test_parse_format_round_trip(self, text: str) -> None:
        """parse(format(q)) == q for every quantity."""
        quantity = parse_quantity(text)
        assert quantity == parse_quantity(str(quantity))

    @settings(max_examples=150, deadline=None)
    @given(quantity_texts())
    def test_canonical_form_is_idempotent(self, text: str) -> None:
        """format(parse(format(q))) == format(q): the printed form is a fixed point."""
        canonical = str(parse_quantity(text))
        assert canonical == str(parse_quantity(canonical))

    @settings(max_examples=100, deadline=None)
    @given(st.lists(quantity_texts(), min_size=1, max_size=8))
    def test_sums_are_exact(self, texts: list[str]) -> None:
        """A sum of quantities equals the exact sum of their values."""
        total = ZERO
        for text in texts:
            total = total + parse_quantity(text)
        assert sum(parse_quantity(t).value for t in texts) == total.value

    @settings(max_examples=100, deadline=None)
    @given(quantity_texts())
    def test_canonical_text_matches_the_crd_pattern(self, text: str) -> None:
        """Every printed form is accepted by the CRD's quantity pattern."""
        assert re.match(QUANTITY_PATTERN, str(parse_quantity(text)))
