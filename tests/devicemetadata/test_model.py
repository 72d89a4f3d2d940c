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
