"""The typed model keeps attribute types and refuses values that do not match them."""

from __future__ import annotations

import pytest

from draledger.devicemetadata import ClaimSelector, Device, DeviceAttribute
from draledger.devicemetadata.model import base_request


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("int", True),
        ("int", 1.0),
        ("int", 2**63),
        ("bool", 1),
        ("string", 3),
        ("version", "1.2"),
        ("float", 1),
    ],
)
def test_attribute_rejects_mismatched_values(kind: str, value: object) -> None:
    """A typed attribute whose value does not fit its type cannot be built."""
    with pytest.raises(ValueError, match=r"attribute|unknown"):
        DeviceAttribute(kind, value)  # type: ignore[arg-type]


def test_attribute_accessors_keep_the_type() -> None:
    """as_int/as_bool/as_str return the value only for the matching type."""
    assert DeviceAttribute.of_int(3).as_int() == 3
    assert DeviceAttribute.of_bool(True).as_bool() is True
    assert DeviceAttribute.of_version("1.2.3-rc.1+build.5").as_str() == "1.2.3-rc.1+build.5"
    with pytest.raises(TypeError):
        DeviceAttribute.of_bool(True).as_int()
    with pytest.raises(TypeError):
        DeviceAttribute.of_int(1).as_str()


def test_device_attributes_are_read_only_and_sorted() -> None:
    """A Device's attributes cannot be changed after construction and iterate by name."""
    device = Device("d", "p", "n", {"b": DeviceAttribute.of_int(1), "a": DeviceAttribute.of_int(2)})
    assert list(device.attributes) == ["a", "b"]
    with pytest.raises(TypeError):
        device.attributes["c"] = DeviceAttribute.of_int(3)  # type: ignore[index]
    assert hash(device) == hash(Device("d", "p", "n", {"a": DeviceAttribute.of_int(2)}))


def test_subrequest_maps_to_its_base_request() -> None:
    """`req/sub` is stored under the directory of `req`."""
    assert base_request("gpu/large") == "gpu"
    assert base_request("gpu") == "gpu"


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "x\0y"])
def test_selector_rejects_names_that_leave_the_layout(name: str) -> None:
    """Claim names that would escape or confuse the directory layout are refused."""
    with pytest.raises(ValueError, match="invalid"):
        ClaimSelector.claim(name)


def test_selector_refuses_a_subrequest_name() -> None:
    """Readers ask for the base request; the subrequest shows up in the result."""
    with pytest.raises(ValueError, match="base request"):
        ClaimSelector.claim("c", "gpu/large")


class TestListAttributes:
    """The list forms of resource.k8s.io/v1 DeviceAttribute: ints, bools, strings, versions."""

    def test_accessors_return_the_typed_tuple(self) -> None:
        """Each list kind hands back its tuple only through its own accessor."""
        assert (0, -1) == DeviceAttribute.of_ints([0, -1]).as_ints()
        assert (True, False) == DeviceAttribute.of_bools([True, False]).as_bools()
        assert ("a", "") == DeviceAttribute.of_strings(["a", ""]).as_strs()
        assert ("1.0.0",) == DeviceAttribute.of_versions(["1.0.0"]).as_strs()
        with pytest.raises(TypeError):
            DeviceAttribute.of_ints([1]).as_int()
        with pytest.raises(TypeError):
            DeviceAttribute.of_int(1).as_ints()

    def test_json_form_is_a_list(self) -> None:
        """A list attribute encodes as `{"ints": [...]}`, as upstream does."""
        assert {"ints": [1, 2]} == DeviceAttribute.of_ints((1, 2)).to_json()

    @pytest.mark.parametrize(
        ("kind", "value", "message"),
        [
            pytest.param("ints", (), "non-empty", id="empty"),
            pytest.param("ints", [1], "needs a list", id="list-not-tuple"),
            pytest.param("ints", (1, True), "item 1", id="bool-among-ints"),
            pytest.param("bools", (0,), "true/false", id="int-among-bools"),
            pytest.param("versions", ("1.0",), "semver", id="not-semver"),
            pytest.param("strings", ("a", 1), "item 1", id="int-among-strings"),
        ],
    )
    def test_mismatched_items_are_refused(self, kind: str, value: object, message: str) -> None:
        """Every item must fit the list's type, and the list must not be empty."""
        with pytest.raises(ValueError, match=message):
            DeviceAttribute(kind, value)  # type: ignore[arg-type]
