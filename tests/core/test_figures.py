"""Figures for people (draledger.core.figures): one unit per pair, three significant digits, exact."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from draledger.core.figures import humanize, humanize_all, humanize_pair


@pytest.mark.parametrize(("resource", "used", "total", "shown"), [
    pytest.param("memory", "42688Mi", "517794616Ki", "41.7Gi/494Gi", id="rounded-into-the-larger-unit"),
    pytest.param("memory", "10Gi", "448762426368", "10Gi/418Gi", id="bytes-in-binary-units"),
    pytest.param("memory", "0", "2Ti", "0/2Ti", id="zero"),
    pytest.param("hugepages-1Gi", "4Gi", "16Gi", "4Gi/16Gi", id="hugepages-are-bytes"),
    pytest.param("hugepages-2Mi", "64Mi", "1Gi", "64Mi/1Gi", id="whole-mebibytes-not-0.06Gi"),
    pytest.param("memory", "512Mi", "4Gi", "512Mi/4Gi", id="half-a-gibibyte-as-written"),
    pytest.param("memory", "1Mi", "494Gi", "1Mi/494Gi", id="not-<0.01Gi"),
    pytest.param("memory", "1000Ki", "494Gi", "<0.01Gi/494Gi", id="1000-of-a-unit-is-not-written-out"),
    pytest.param("memory", "16Gi", "16Gi", "16Gi/16Gi", id="whole-in-the-pairs-unit"),
    pytest.param("memory", "28992Mi", "256Gi", "28.3Gi/256Gi", id="five-digits-are-rounded"),
    pytest.param("memory", "517794616Ki", "517794616Ki", "494Gi/494Gi", id="odd-kibibytes-are-rounded"),
    pytest.param("memory", "1536Mi", "8Gi", "1.5Gi/8Gi", id="1536Mi-reads-1.5Gi"),
    pytest.param("memory", "100M", "1Gi", "0.09Gi/1Gi", id="decimal-units-are-not-binary"),
    pytest.param("cpu", "3500m", "64", "3.5/64", id="cores"),
    pytest.param("cpu", "250m", "500m", "250m/500m", id="millicores-below-a-core"),
    pytest.param("cpu", "12345m", "128", "12.3/128", id="three-digits"),
    pytest.param("cpu", "512", "1024", "512/1024", id="cpu-is-not-bytes"),
    pytest.param("nvidia.com/gpu", "2", "8", "2/8", id="plain-numbers"),
])
def test_pairs_read_alike(resource: str, used: str, total: str, shown: str) -> None:
    """A pair reads in the unit of its larger side, but a whole number below 1000 of a binary unit as written."""
    assert shown == humanize_pair(resource, used, total)


def test_a_row_keeps_whole_binary_amounts() -> None:
    """The figures of a row (the report's) follow the pairs' rule: one unit, whole binary amounts as written."""
    assert ("494Gi", "64Mi", "41.7Gi") == humanize_all("memory", ["517794616Ki", "64Mi", "42688Mi"])


def test_single_figures() -> None:
    """A figure alone reads in its own unit, to three significant digits."""
    assert ["110", "100m", "1.5Ki", "999", "1Ki", "1Ei"] == [
        humanize("pods", "110"), humanize("cpu", "100m"), humanize("memory", "1536"), humanize("memory", "999"),
        humanize("memory", "1024"), humanize("memory", str(1024**6))]


@given(st.integers(min_value=1, max_value=2**70))
def test_a_figure_is_within_half_a_percent_of_the_value(number: int) -> None:
    """Three significant digits: a figure of 1 or more is never further than 0.5% from the exact amount."""
    shown = humanize("memory", str(number))
    digits = shown.rstrip("KMGTPEi")
    scale = 1024 ** "_KMGTPE".index(shown[len(digits)] if len(shown) > len(digits) else "_")
    assert abs(Decimal(digits) * scale - number) <= Decimal(number) / 200, shown


def test_a_figure_beyond_28_digits_is_printed_exactly() -> None:
    """An allocatable of 10^28 cores (a fuzzed Node) prints, where the default decimal context gave up."""
    assert humanize("cpu", "1e28") == "1" + "0" * 28
    assert humanize_pair("cpu", "1", "1e28") == "1/1" + "0" * 28
    assert humanize("memory", str(3 * 1024**6 * 10**12)) == "3" + "0" * 12 + "Ei"
