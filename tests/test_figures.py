"""Figures for people (draledger.core.figures): one unit per pair, three significant digits, exact."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from draledger.core.figures import humanize, humanize_pair


@pytest.mark.parametrize(("resource", "used", "total", "shown"), [
    ("memory", "42688Mi", "517794616Ki", "41.7Gi/494Gi"),
    ("memory", "10Gi", "448762426368", "10Gi/418Gi"),
    ("memory", "512Mi", "2Gi", "0.5Gi/2Gi"),
    ("memory", "1Mi", "494Gi", "<0.01Gi/494Gi"),
    ("memory", "0", "2Ti", "0/2Ti"),
    ("hugepages-1Gi", "4Gi", "16Gi", "4Gi/16Gi"),
    ("cpu", "3500m", "64", "3.5/64"),
    ("cpu", "250m", "500m", "250m/500m"),
    ("cpu", "12345m", "128", "12.3/128"),
    ("nvidia.com/gpu", "2", "8", "2/8"),
])
def test_pairs_read_alike(resource: str, used: str, total: str, shown: str) -> None:
    assert shown == humanize_pair(resource, used, total)


def test_single_figures() -> None:
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
