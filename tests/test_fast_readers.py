"""The fast readers (no field paths, no problems; they give up on anything unusual) must return exactly what
the full readers return: the same view, the same quantities (value, exponent and format), the same problems
in the same order. Checked on generated clusters and on the same objects with fields broken at random."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draledger.accounting.footprints import add_into
from draledger.quantities import ZERO, Quantity, parse_quantity
from draledger.views.claims import ClaimView, read_claim, read_claim_full
from draledger.views.pods import read_pod, read_pod_full
from draledger.views.slices import read_slice
from strategies import Raw, clusters, device, slice_obj

JUNK = st.sampled_from([None, 0, 7, -1, True, 1.5, "", "x", "12q", "-1", "100m", "1Gi", [], {}, [None], {"a": 1}])


def strict(value: Any) -> Any:
    """Nested tuples where a Quantity shows its exact Decimal and its format (stricter than ``==``)."""
    if isinstance(value, Quantity):
        return ("Q", str(value.value), value.value.as_tuple(), value.fmt)
    if isinstance(value, Decimal):
        return ("D", str(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = (f for f in dataclasses.fields(value) if f.compare)
        return (type(value).__name__, *(strict(getattr(value, f.name)) for f in fields))
    if isinstance(value, dict):
        return ("dict", tuple((k, strict(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(strict(v) for v in value)
    return value


def paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for key, value in obj.items():
            out += paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            out += paths(value, (*prefix, index))
    return out


@st.composite
def broken(draw: st.DrawFn, kind: str, decorate: Callable[[st.DrawFn, Raw], None] | None = None) -> Raw:
    """One generated object of ``kind`` (given more fields by ``decorate``), with up to three fields replaced
    by junk (or deleted)."""
    items = [i for i in draw(clusters(shapes=("v1.36", "v1.36", "v1.37"))) if i["kind"] == kind]
    if not items:
        items = [{"kind": kind, "metadata": {"name": "empty"}, "spec": {}}]
    raw = copy.deepcopy(draw(st.sampled_from(items)))
    if kind == "ResourceSlice" and draw(st.integers(0, 5)) == 0:
        raw["apiVersion"] = "resource.k8s.io/v1beta1"
    if decorate is not None:
        decorate(draw, raw)
    spoil(draw, raw, draw(st.integers(0, 3)))
    return raw


def spoil(draw: st.DrawFn, raw: Raw, times: int) -> None:
    """Replace ``times`` fields of ``raw`` by junk, or delete them."""
    for _ in range(times):
        where = paths(raw)
        if not where:
            break
        path = draw(st.sampled_from(where))
        parent = raw
        for step in path[:-1]:
            parent = parent[step]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(draw(JUNK))


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(broken("Pod"))
def test_fast_pod_reader_equals_full_reader(raw: Raw) -> None:
    assert strict(read_pod(raw)) == strict(read_pod_full(raw))


@SETTINGS
@given(broken("ResourceSlice"))
def test_fast_slice_reader_equals_full_reader(raw: Raw) -> None:
    assert strict(read_slice(raw)) == strict(read_slice(raw, fast=False))


@st.composite
def republished(draw: st.DrawFn) -> tuple[Raw, Raw]:
    """A slice and the body that replaces it: republished as it was (a new generation), with a few fields
    spoiled, with one JSON scalar swapped for an equal one of another type (``1``, ``True``, ``1.0``), or
    another slice under the same name."""
    first = draw(broken("ResourceSlice"))
    second = copy.deepcopy(first)
    change = draw(st.sampled_from(["generation", "spoil", "retype", "other"]))
    if change == "generation":
        spec = second.get("spec")
        pool = spec.get("pool") if isinstance(spec, dict) else None
        if isinstance(pool, dict) and isinstance(pool.get("generation"), int):
            pool["generation"] += 1
    elif change == "spoil":
        spoil(draw, second, draw(st.integers(1, 2)))
    elif change == "retype":
        scalars = [p for p in paths(second) if type(leaf(second, p)) in (int, bool, float)]
        if scalars:
            path = draw(st.sampled_from(scalars))
            parent = leaf(second, path[:-1])
            parent[path[-1]] = draw(st.sampled_from([1, True, 1.0, 0, False, 0.0]))
    else:
        second = draw(broken("ResourceSlice"))
        if isinstance(first.get("metadata"), dict):
            second["metadata"] = copy.deepcopy(first["metadata"])
    return first, second


def leaf(raw: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        raw = raw[step]
    return raw


@SETTINGS
@given(republished())
def test_a_previous_view_never_changes_the_result(bodies: tuple[Raw, Raw]) -> None:
    """Reading with the view a body replaces gives what reading it afresh gives (rule 4 of slices)."""
    first, second = bodies
    previous = read_slice(first, keyed=True)
    assert strict(read_slice(second, previous=previous)) == strict(read_slice(second))


class TestRepublishedDevices:
    def slice_with(self, attributes: dict[str, Any], generation: int = 1, driver: str = "dra.cpu") -> Raw:
        devices = [
            {
                "name": "core-0",
                "attributes": attributes,
                "capacity": {"size": {"value": "2"}},
                "nodeAllocatableResourceMappings": {"cpu": {"capacityKey": "size"}},
            }
        ]
        return slice_obj("s", devices=devices, driver=driver, generation=generation)

    def test_the_same_devices_are_kept_not_read_again(self) -> None:
        first = read_slice(self.slice_with({"numaNode": {"int": 1}}), keyed=True)
        second = read_slice(self.slice_with({"numaNode": {"int": 1}}, generation=2), previous=first)
        assert second.devices is first.devices
        assert second.generation == 2
        assert read_slice(self.slice_with({})).devices_key is None  # audit reads each slice once: no key

    @pytest.mark.parametrize("same", [True, 1.0])
    def test_an_equal_value_of_another_type_is_read_again(self, same: Any) -> None:
        """``{"int": 1} == {"int": True} == {"int": 1.0}`` in Python; only the first is an int attribute."""
        first = read_slice(self.slice_with({"numaNode": {"int": 1}}), keyed=True)
        second = read_slice(self.slice_with({"numaNode": {"int": same}}), previous=first)
        assert second.devices is not first.devices
        assert second.devices[0].attributes == {}

    def test_another_driver_reads_again(self) -> None:
        """An unqualified capacityKey lives in the driver's domain: a new driver is a new reading."""
        first = read_slice(self.slice_with({}), keyed=True)
        second = read_slice(self.slice_with({}, driver="dra.other"), previous=first)
        assert second.devices is not first.devices
        assert second.devices_key != first.devices_key

    def test_another_slices_view_is_not_taken(self) -> None:
        """Problems name their slice: a view of another name is no previous one, whatever its devices."""
        raw = self.slice_with({})
        raw["spec"]["devices"][0]["capacity"] = {"size": {"value": "lots"}}
        other = copy.deepcopy(raw)
        other["metadata"]["name"] = "other"
        second = read_slice(raw, previous=read_slice(other, keyed=True))
        assert second.problems == read_slice(raw).problems
        assert {p.obj.name for p in second.problems if p.obj} == {"s"}

    def test_device_problems_are_kept_with_the_devices(self) -> None:
        raw = self.slice_with({})
        raw["spec"]["devices"][0]["capacity"] = {"size": {"value": "lots"}}
        first = read_slice(raw, keyed=True)
        raw["spec"]["pool"]["generation"] = 2
        second = read_slice(raw, previous=first)
        assert second.devices is first.devices
        assert second.problems == first.problems
        assert second.device_problems == first.device_problems
        assert second.problems == read_slice(raw).problems
        assert any("capacity" in p.field for p in second.problems)


def outcome(read: Callable[[Raw], Any], raw: Raw) -> Any:
    """What a reader gives for ``raw``: its view (strictly), or the type of what it raised."""
    try:
        return strict(read(raw))
    except Exception as error:  # the full reader's own failures must be the fast path's too
        return ("raised", type(error).__name__)


def claim_extras(draw: st.DrawFn, raw: Raw) -> None:
    """What generated claims lack: ``reservedFor``, more node selector terms, consumed capacity."""
    status = raw.setdefault("status", {})
    if draw(st.booleans()):
        status["reservedFor"] = draw(
            st.lists(
                st.one_of(
                    st.fixed_dictionaries(
                        {"resource": st.just("pods"), "name": st.just("p"), "uid": st.sampled_from(["u1", "u2", "u1"])}
                    ),
                    st.fixed_dictionaries({"name": st.just("p")}),
                    JUNK,
                ),
                max_size=3,
            )
        )
    allocation = status.get("allocation")
    if isinstance(allocation, dict) and draw(st.booleans()):
        terms = allocation.setdefault("nodeSelector", {}).setdefault("nodeSelectorTerms", [])
        terms.append(
            {
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2", "n1", "n2"]}],
                "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
            }
        )
        results = allocation.get("devices", {}).get("results") or []
        if results and draw(st.booleans()):
            results[0]["consumedCapacity"] = {"size": draw(st.sampled_from(["2Mi", "1Gi", "100m", "1"]))}


@SETTINGS
@given(broken("ResourceClaim", claim_extras))
def test_fast_claim_reader_equals_full_reader(raw: Raw) -> None:
    assert outcome(read_claim, raw) == outcome(read_claim_full, raw)


ODD_CLAIMS = [
    {"kind": "ResourceClaim"},
    {"kind": "ResourceClaim", "metadata": None, "status": None},
    {"kind": "ResourceClaim", "metadata": {"name": "", "namespace": 3, "uid": 4}},
    {"kind": "ResourceClaim", "metadata": {"name": "c"}, "status": {"allocation": {}}},
    {"kind": "ResourceClaim", "metadata": {"name": "c"}, "status": {"allocation": {"devices": {"results": [None]}}}},
    {
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "status": {"allocation": {"devices": {"results": [{"device": "d", "consumedCapacity": {}}]}}},
    },
    {
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "status": {"allocation": {"devices": {"results": [{"device": "d", "consumedCapacity": {"s": "1x"}}]}}},
    },
    {
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "status": {"allocation": {"nodeSelector": {"nodeSelectorTerms": [None, 1, {"matchFields": None}]}}},
    },
    {
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "status": {
            "allocation": {
                "nodeSelector": {
                    "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": 7}]}]
                }
            }
        },
    },
    {"kind": "ResourceClaim", "metadata": {"name": "c"}, "status": {"reservedFor": {"uid": "u"}}},
    {"kind": "ResourceClaim", "metadata": {"name": "c"}, "status": {"reservedFor": [{"uid": 1}, "u", {"uid": "u"}]}},
    {
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "status": {
            "allocation": {
                "nodeSelector": {
                    "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": "n1"}]}]
                }
            }
        },
    },
    {
        "kind": "ResourceClaim",
        "metadata": {"name": ["c"], "namespace": {"t": 1}},
        "status": {"allocation": {"nodeSelector": {"nodeSelectorTerms": [{"matchFields": "x"}]}}},
    },
]


@pytest.mark.parametrize("raw", ODD_CLAIMS)
def test_odd_claims_read_as_the_full_reader_reads_them(raw: Raw) -> None:
    assert outcome(read_claim, raw) == outcome(read_claim_full, raw)


@pytest.mark.parametrize("raw", ODD_CLAIMS)
def test_odd_claims_never_raise(raw: Raw) -> None:
    """Both claim readers read every odd claim (issue 13: ``values: 7`` raised TypeError in both)."""
    assert isinstance(read_claim_full(raw), ClaimView)
    assert isinstance(read_claim(raw), ClaimView)


ODD_DEVICES = [
    device("ok", attributes={"numaNode": 1}, capacity={"size": "2Mi"}, v136={"hugepages-2Mi": {"capacityKey": "size"}}),
    device("qualified", capacity={"dra.example.com/size": "2Mi"}, v136={"hugepages-2Mi": {"capacityKey": "size"}}),
    device("no-capacity", v136={"hugepages-2Mi": {"capacityKey": "size"}}),
    device("wrong-key", capacity={"size": "2Mi"}, v136={"hugepages-2Mi": {"capacityKey": "other"}}),
    device("negative", v136={"cpu": {"allocationMultiplier": "-1"}}),
    device("bad-multiplier", v136={"cpu": {"allocationMultiplier": "lots"}}),
    device("int-multiplier", v136={"cpu": {"allocationMultiplier": 2}}),
    device("zero", v136={"cpu": {"allocationMultiplier": "0"}}),
    device("not-allocatable", v136={"gpu": {}, "cpu": None}),
    device("v137", v137={"cpu": {"mapping": {"deviceMultiplier": "2"}}}),
    {"name": "bad-capacity", "capacity": {"size": {"value": None}}},
    {"name": "list-key", "nodeAllocatableResourceMappings": {"cpu": {"capacityKey": ["size"]}}},
    {"name": 5, "attributes": {"a": {"int": True}, "b": {"int": 3}, "c": "x"}},
    None,
    "junk",
]


@pytest.mark.parametrize("api_version", ["resource.k8s.io/v1", "resource.k8s.io/v1beta1"])
def test_odd_devices_read_as_the_full_reader_reads_them(api_version: str) -> None:
    for index in range(len(ODD_DEVICES)):
        devices = ODD_DEVICES[index:] + ODD_DEVICES[:index]
        if api_version.endswith("/v1beta1"):
            devices = [d for d in devices if isinstance(d, dict)]
        raw = slice_obj("s", devices=devices, api_version=api_version)
        assert strict(read_slice(raw)) == strict(read_slice(raw, fast=False))
        assert strict(read_slice(raw)) == strict(read_slice(copy.deepcopy(raw)))  # the mapping cache


@given(
    st.lists(st.sampled_from(["100m", "1", "1k", "1e3", "0.5", "2Gi", "-0", "1.000000000000", "1n", "7"]), max_size=6)
)
def test_sums_start_exactly_as_zero_plus(texts: list[str]) -> None:
    """``add_into`` memoizes ``ZERO + q`` for a missing name: the result is the addition's, exponent and
    format included."""
    total: dict[str, Quantity] = {}
    expected: dict[str, Quantity] = {}
    for index, text in enumerate(texts):
        quantity = parse_quantity(text)
        name = f"r{index % 3}"
        add_into(total, {name: quantity})
        expected[name] = expected.get(name, ZERO) + quantity
    assert strict(total) == strict(expected)
