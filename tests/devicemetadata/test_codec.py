"""Decoding the metadata JSON stream: first known version wins, anything partial or mistyped fails."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from draledger.devicemetadata import (
    V1ALPHA1,
    ClaimRef,
    DeviceAttribute,
    DeviceMetadata,
    MetadataInvalidError,
    NetworkData,
    UnsupportedVersionError,
)
from draledger.devicemetadata.codec import decode_stream, encode_stream, split_stream

GPU_FILE = "container/resourceclaims/gpu-claim/gpu/gpu.example.com-metadata.json"
FUTURE_FILE = "container/resourceclaims/future-claim/gpu/gpu.example.com-metadata.json"


def valid() -> dict[str, Any]:
    return {
        "kind": "DeviceMetadata",
        "apiVersion": V1ALPHA1,
        "metadata": {"name": "c", "namespace": "ns", "uid": "u-1", "generation": 1},
        "requests": [
            {
                "name": "gpu",
                "devices": [
                    {
                        "driver": "d.example.com",
                        "pool": "p",
                        "name": "dev",
                        "attributes": {"index": {"int": 0}},
                        "networkData": {"interfaceName": "net1", "ips": ["10.0.0.1/24"]},
                    }
                ],
            }
        ],
    }


def encoded(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2) + "\n").encode()


def test_golden_file_decodes_with_types(golden: Path) -> None:
    """The upstream-format golden decodes into typed attributes."""
    md = decode_stream((golden / GPU_FILE).read_bytes(), GPU_FILE)
    assert md.claim == ClaimRef("gpu-test1", "gpu-claim", "c7e7b22e-5a1d-4d5b-9a55-0c6f1f0e2a10")
    assert md.generation == 1
    assert md.pod_claim_name is None
    attrs = md.requests[0].devices[0].attributes
    assert attrs["index"] == DeviceAttribute("int", 0)
    assert attrs["virtualized"] == DeviceAttribute("bool", False)
    assert attrs["driverVersion"] == DeviceAttribute("version", "1.2.3")
    assert attrs["resource.kubernetes.io/pciBusID"].as_str() == "0000:3b:00.0"


def test_unknown_future_version_first_is_skipped(golden: Path) -> None:
    """A stream whose first object is an unknown future version yields the v1alpha1 object after it."""
    data = (golden / FUTURE_FILE).read_bytes()
    assert [o["apiVersion"] for o in split_stream(data, FUTURE_FILE)] == [
        "metadata.resource.k8s.io/v9",
        V1ALPHA1,
    ]
    md = decode_stream(data, FUTURE_FILE)
    assert md.api_version == V1ALPHA1
    assert md.requests[0].devices[0].attributes["resource.kubernetes.io/pciBusID"].value == "0000:3c:00.0"


def test_stream_without_known_version_lists_what_it_found(golden: Path) -> None:
    """Only unknown versions: a clear error listing found and known versions."""
    path = golden / "files" / "unknown-only.json"
    with pytest.raises(UnsupportedVersionError) as info:
        decode_stream(path.read_bytes(), path)
    assert info.value.found == ("metadata.resource.k8s.io/v9",)
    assert "metadata.resource.k8s.io/v9" in str(info.value)
    assert V1ALPHA1 in str(info.value)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("cut", [1, 10, 100, -30, -2])
def test_truncated_file_is_an_error(golden: Path, cut: int) -> None:
    """A file cut anywhere is reported as truncated, never half-decoded."""
    data = (golden / GPU_FILE).read_bytes()
    with pytest.raises(MetadataInvalidError, match="truncated or malformed"):
        decode_stream(data[:cut], "f.json")


def test_truncated_tail_after_a_known_object_is_an_error(golden: Path) -> None:
    """A complete known object followed by a partial one is still a partial file."""
    data = (golden / GPU_FILE).read_bytes()
    with pytest.raises(MetadataInvalidError, match="object #2"):
        decode_stream(data + data[:50], "f.json")


def set_path(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    target: Any = out
    keys = path.split(".")
    for key in keys[:-1]:
        target = target[int(key)] if key.isdigit() else target[key]
    last = keys[-1]
    if value is KeyError:
        del target[last]
    else:
        target[int(last) if last.isdigit() else last] = value
    return out


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("kind", "Other", "kind"),
        ("metadata", KeyError, "metadata: missing"),
        ("metadata.generation", "1", "metadata.generation: expected int"),
        ("metadata.generation", True, "metadata.generation: expected int"),
        ("metadata.generation", 0, "at least 1"),
        ("metadata.uid", 5, "metadata.uid: expected str"),
        ("metadata.namespace", "", "must not be empty"),
        ("requests", {}, "requests: expected list"),
        ("requests.0", "gpu", r"requests\[0\]: expected an object"),
        ("requests.0.name", KeyError, "requests\\[0\\].name: missing"),
        ("requests.0.devices.0.driver", None, "driver: missing"),
        ("requests.0.devices.0.attributes", [], "attributes: expected dict"),
        ("requests.0.devices.0.attributes.index", {"int": True}, "needs an integer"),
        ("requests.0.devices.0.attributes.index", {"int": 1.5}, "needs an integer"),
        ("requests.0.devices.0.attributes.index", {"int": 2**64}, "int64"),
        ("requests.0.devices.0.attributes.index", {"bool": "true"}, "true/false"),
        ("requests.0.devices.0.attributes.index", {"version": "v1"}, "semver"),
        ("requests.0.devices.0.attributes.index", {"quantity": "1Gi"}, "unknown attribute type"),
        ("requests.0.devices.0.attributes.index", {"int": 1, "string": "1"}, "exactly one"),
        ("requests.0.devices.0.attributes.index", 0, "exactly one"),
        ("requests.0.devices.0.networkData.ips", ["10.0.0.1", 7], r"ips\[1\]"),
        ("requests.0.devices.0.networkData.interfaceName", 1, "interfaceName: expected str"),
        ("podClaimName", 3, "podClaimName: expected str"),
    ],
)
def test_wrong_types_name_the_field(path: str, value: Any, message: str) -> None:
    """Every mistyped or missing field is an error that names the file and the field."""
    with pytest.raises(MetadataInvalidError, match=message) as info:
        decode_stream(encoded(set_path(valid(), path, value)), "/x/f.json")
    assert str(info.value).startswith("/x/f.json: ")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b"  \n", "empty"),
        (b"[]", "is a list"),
        (b'{"apiVersion": 1}', "no apiVersion"),
        (b'{"apiVersion": "metadata.resource.k8s.io/v9"}', "has no kind"),
        (b'{"a": 1, "a": 2}', "duplicate key"),
        (b'{"apiVersion": "x", "n": NaN}', "NaN"),
        (b"\xff\xfe", "not UTF-8"),
        (b'{"apiVersion": "x"} garbage', "truncated or malformed"),
    ],
)
def test_malformed_streams_are_errors(data: bytes, message: str) -> None:
    """Empty, non-object, duplicate-key, NaN or non-UTF-8 streams are rejected."""
    with pytest.raises(MetadataInvalidError, match=message):
        decode_stream(data, "f.json")


def test_unknown_fields_are_ignored() -> None:
    """Extra fields of a known version (e.g. creationTimestamp: null) do not fail decoding."""
    obj = set_path(valid(), "metadata.creationTimestamp", None)
    obj["status"] = {"future": True}
    assert decode_stream(encoded(obj), "f.json").claim.uid == "u-1"


def test_encode_round_trip_and_format() -> None:
    """Encoding writes one pretty-printed object per known version, each followed by a newline."""
    md = decode_stream(encoded(valid()), "f.json")
    data = encode_stream(md, ["metadata.resource.k8s.io/v9", V1ALPHA1, V1ALPHA1])
    assert data.count(b'"apiVersion"') == 2
    assert data.endswith(b"}\n")
    assert b"}\n{" in data
    assert decode_stream(data, "f.json") == md
    assert md.requests[0].devices[0].network_data == NetworkData("net1", ("10.0.0.1/24",), "")


def test_encode_without_known_version_fails() -> None:
    """Asking only for unknown versions is an error, not an empty file."""
    md = DeviceMetadata(ClaimRef("ns", "c", "u"), 1, ())
    with pytest.raises(ValueError, match="none of the metadata versions"):
        encode_stream(md, ["metadata.resource.k8s.io/v9"])
