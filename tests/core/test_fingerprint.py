"""The mapping fingerprint (accounting.ledger ``mapping_fingerprint``): every input of a device's charge, looked up
by the rule that charges it, and nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from draledger.core import loading
from draledger.core.releases import Release
from draledger.core.state import ClusterState
from strategies import node_obj, slice_obj

NODE = node_obj("n1")


def hugepages(size: str, key: str = "size", value_key: str = "size", release: Release = "v1.37") -> dict[str, Any]:
    """A shared device whose hugepages-2Mi mapping names capacity ``key``; its capacity ``value_key`` is ``size``."""
    mapping: dict[str, Any] = ({"nodeAllocatableResourceMappings": {"hugepages-2Mi": {"capacityKey": key}}}
                               if release == "v1.36" else
                               {"nodeAllocatableResources": {"hugepages-2Mi": {"mapping": {
                                   "capacityKey": key, "capacityMultiplier": "1"}}}})
    device = {"name": "hp", "allowMultipleAllocations": True, "capacity": {value_key: {"value": size}}, **mapping}
    return slice_obj("s", devices=[device])


def fingerprint(*items: dict[str, Any], release: Release = "v1.37") -> str:
    ledger = loading.load([NODE, *items], "test", release).state.ledger("n1")
    assert ledger is not None
    return ledger.mapping_fingerprint


class TestMappedCapacity:
    @pytest.mark.parametrize("release", ["v1.36", "v1.37", "v1.38"])
    def test_a_new_value_of_the_mapped_capacity_moves_it(self, release: Release) -> None:
        """The capacity a mapping's key names is an input: 1Gi → 2Gi changes the fingerprint (so mappingVersion)."""
        assert fingerprint(hugepages("1Gi", release=release), release=release) != fingerprint(
            hugepages("2Gi", release=release), release=release)

    def test_the_same_value_in_another_notation_keeps_it(self) -> None:
        """1Gi and 1073741824 are one value: the fingerprint holds values, not notations."""
        assert fingerprint(hugepages("1Gi")) == fingerprint(hugepages("1073741824"))

    def test_an_unmapped_capacity_is_no_input(self) -> None:
        """A capacity no mapping names changes no charge: the fingerprint stays."""
        def with_other(value: str) -> dict[str, Any]:
            obj = hugepages("1Gi")
            obj["spec"]["devices"][0]["capacity"]["other"] = {"value": value}
            return obj

        assert fingerprint(with_other("1")) == fingerprint(with_other("7"))

    def test_the_incremental_state_follows_an_update(self) -> None:
        """An update of the slice in a running state drops the cached fingerprint: a recompute gives the new one."""
        state = ClusterState("v1.37")
        loading.load_items([NODE, hugepages("1Gi")], "test", loading.Loaded(state))
        before = state.ledger("n1").mapping_fingerprint
        state.apply("resourceslices", None, hugepages("2Gi"))
        after = state.ledger("n1").mapping_fingerprint
        assert (fingerprint(hugepages("2Gi")), True) == (after, before != after)
