"""Claim contributions per release (accounting.contributions): the consumed-capacity lookup, negative consumed
capacity, and what a v1.36 multiplier of zero charges."""

from __future__ import annotations

from typing import Any

import pytest

from draledger.core import loading
from draledger.core.accounting.contributions import lookup_consumed
from draledger.core.accounting.ledger import Ledger
from draledger.core.quantities import Quantity, parse_quantity
from draledger.core.releases import RELEASES, Release
from strategies import claim_obj, container, device, direct, node_obj, pod_obj, result, slice_obj

NODE = node_obj("n1", allocatable={"cpu": "16", "memory": "64Gi", "hugepages-2Mi": "1Gi"})
DOMAIN = "example.com"


def quantities(values: dict[str, int]) -> dict[str, Quantity]:
    return {key: parse_quantity(str(value)) for key, value in values.items()}


# qualifiedname_test.go of k8s.io/dynamic-resource-allocation v0.38.0-beta.0 (TestLookupByQualifiedName, :28-90),
# with the exact lookup of v1.36.3 and v1.37.2 (``result.ConsumedCapacity[capacityKey]``) beside it.
UPSTREAM = [
    pytest.param({"foo": 1}, "foo", 1, 1, id="unqualified-key-map-has-unqualified-only"),
    pytest.param({"example.com/foo": 2}, "foo", 2, None, id="unqualified-key-map-has-qualified-only"),
    pytest.param({"foo": 1, "example.com/foo": 2}, "foo", 2, 1, id="unqualified-key-map-has-both-prefers-qualified"),
    pytest.param({}, "foo", None, None, id="unqualified-key-map-has-neither"),
    pytest.param({"example.com/foo": 2}, "example.com/foo", 2, 2,
                 id="qualified-key-matching-domain-map-has-qualified-only"),
    pytest.param({"foo": 1}, "example.com/foo", 1, None, id="qualified-key-matching-domain-map-has-unqualified-only"),
    pytest.param({"foo": 1, "example.com/foo": 2}, "example.com/foo", 2, 2,
                 id="qualified-key-matching-domain-map-has-both-prefers-qualified"),
    pytest.param({"foo": 1}, "other.com/foo", None, None,
                 id="qualified-key-different-domain-map-has-unqualified-only-not-found"),
    pytest.param({"other.com/foo": 3}, "other.com/foo", 3, 3,
                 id="qualified-key-different-domain-map-has-matching-qualified"),
]


class TestLookupConsumed:
    @pytest.mark.parametrize(("consumed", "key", "v138", "exact"), UPSTREAM)
    def test_v138_looks_up_by_qualified_name(
        self, consumed: dict[str, int], key: str, v138: int | None, exact: int | None
    ) -> None:
        """v1.38 is upstream's LookupByQualifiedName with the driver as the default domain, case by case."""
        found = lookup_consumed(quantities(consumed), key, DOMAIN, "v1.38")
        assert (None if v138 is None else parse_quantity(str(v138))) == found

    @pytest.mark.parametrize("release", ["v1.36", "v1.37"])
    @pytest.mark.parametrize(("consumed", "key", "v138", "exact"), UPSTREAM)
    def test_earlier_releases_look_up_exactly(
        self, consumed: dict[str, int], key: str, v138: int | None, exact: int | None, release: Release
    ) -> None:
        """v1.36 and v1.37 index consumedCapacity by the mapping's key as it is written, nothing else."""
        found = lookup_consumed(quantities(consumed), key, DOMAIN, release)
        assert (None if exact is None else parse_quantity(str(exact))) == found


def hugepages_ledger(consumed: str, release: Release) -> Ledger:
    """One shared device mapping hugepages-2Mi by its ``size`` capacity (v1.37 shape for v1.37 on), one claim
    that consumed ``consumed`` of it."""
    entry: dict[str, Any] = ({"hugepages-2Mi": {"capacityKey": "size"}} if release == "v1.36" else
                             {"hugepages-2Mi": {"mapping": {"capacityKey": "size", "capacityMultiplier": "1"}}})
    field = "v136" if release == "v1.36" else "v137"
    pool = slice_obj("s", devices=[device("d", capacity={"size": "1Gi"}, multi=True, **{field: entry})])
    loaded = loading.load([NODE, pool, claim_obj("c", results=[result("d", consumed={"size": consumed})]),
                           pod_obj("p", containers=[container("a", claims=["x"])],
                                   resource_claims=[direct("x", "c")])], "test", release)
    ledger = loaded.state.ledger("n1")
    assert ledger is not None
    return ledger


class TestNegativeConsumedCapacity:
    @pytest.mark.parametrize(("release", "charged"), [("v1.36", "-4Mi"), ("v1.37", "-4Mi"), ("v1.38", "0")])
    def test_charged_as_it_is_before_v138_and_refused_in_v138(self, release: Release, charged: str) -> None:
        """v1.36 and v1.37 multiply a negative consumed capacity like any other; v1.38's scheduler refuses it (a
        Filter error): nothing is counted for that mapping."""
        line = hugepages_ledger("-4Mi", release).resources.get("hugepages-2Mi")
        assert charged == str(line.claims if line is not None else 0)

    @pytest.mark.parametrize("release", RELEASES)
    def test_reported_in_every_release(self, release: Release) -> None:
        """The claim and the ledger name NegativeConsumedCapacity, whatever the release does with it."""
        ledger = hugepages_ledger("-4Mi", release)
        assert ("NegativeConsumedCapacity",) == next(c for c in ledger.claims if c.name == "c").problems
        assert ["NegativeConsumedCapacity"] == [p.reason for p in ledger.problems]

    def test_a_positive_amount_is_no_problem(self) -> None:
        """The same claim with 4Mi consumed: charged 4Mi under v1.38, and no problem."""
        ledger = hugepages_ledger("4Mi", "v1.38")
        assert ("4Mi", []) == (str(ledger.resources["hugepages-2Mi"].claims), list(ledger.problems))


class TestZeroMultiplier:
    def test_a_v136_zero_multiplier_is_refused_and_counts_nothing(self) -> None:
        """v1.36's API refuses ``allocationMultiplier: 0`` ("must be positive"): InvalidMapping, nothing counted."""
        pool = slice_obj("s", devices=[device("d0", v136={"cpu": {"allocationMultiplier": "0"}})])
        loaded = loading.load([NODE, pool, claim_obj("c", results=[result("d0")]),
                               pod_obj("p", containers=[container("a", claims=["x"])],
                                       resource_claims=[direct("x", "c")])], "test", "v1.36")
        ledger = loaded.state.ledger("n1")
        assert ledger is not None
        assert "0" == str(ledger.resources["cpu"].claims)
        invalid = [p for p in ledger.problems if p.reason == "InvalidMapping"]
        assert ["must be positive"] == [p.message for p in invalid]
        assert "spec.devices[0].nodeAllocatableResourceMappings.cpu.allocationMultiplier" == invalid[0].field
