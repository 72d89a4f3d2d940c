"""Decode and encode the metadata JSON stream (one object per API version, newest first).

Rules: the whole stream must be well-formed JSON objects before anything is used (a truncated tail
means a partial file); the first object of a known apiVersion wins and unknown ones are skipped;
that object is checked field by field and any wrong type is an error naming the field. Duplicate
keys and NaN/Infinity are rejected. Unknown extra fields are ignored for forward compatibility.
This module must never touch the filesystem: callers pass bytes and a path for messages.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from draledger.devicemetadata.errors import MetadataInvalidError, UnsupportedVersionError
from draledger.devicemetadata.model import (
    ATTRIBUTE_KINDS,
    KIND,
    KNOWN_VERSIONS,
    V1ALPHA1,
    ClaimRef,
    Device,
    DeviceAttribute,
    DeviceMetadata,
    NetworkData,
    RequestMetadata,
    attribute_problem,
)

_WHITESPACE = " \t\n\r"


class _FieldError(Exception):
    """A problem at a JSON location; turned into MetadataInvalidError with the file path."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _FieldError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_constants(name: str) -> Any:
    raise _FieldError(f"{name} is not valid JSON")


def split_stream(data: bytes, path: Path | str) -> list[dict[str, Any]]:
    """Every object of the stream, or an error if any part of it is not a complete JSON object."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MetadataInvalidError(path, f"not UTF-8 at byte {exc.start}") from None
    decoder = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    objects: list[dict[str, Any]] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos] in _WHITESPACE:
            pos += 1
        if pos == len(text):
            break
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise MetadataInvalidError(
                path,
                f"truncated or malformed JSON in object #{len(objects) + 1} at char {exc.pos}: {exc.msg}",
            ) from None
        except _FieldError as exc:
            raise MetadataInvalidError(path, f"object #{len(objects) + 1}: {exc}") from None
        if not isinstance(obj, dict):
            raise MetadataInvalidError(
                path, f"object #{len(objects) + 1} is a {type(obj).__name__}, not an object"
            )
        objects.append(obj)
    if not objects:
        raise MetadataInvalidError(path, "empty: no JSON object in the file")
    return objects


def decode_stream(data: bytes, path: Path | str, *, known: Sequence[str] = KNOWN_VERSIONS) -> DeviceMetadata:
    """The first object of a known apiVersion, fully checked."""
    found: list[str] = []
    for index, obj in enumerate(split_stream(data, path), start=1):
        version = obj.get("apiVersion")
        if not isinstance(version, str):
            raise MetadataInvalidError(path, f"object #{index} has no string apiVersion")
        found.append(version)
        if version in known and version in _DECODERS:
            try:
                return _DECODERS[version](obj)
            except _FieldError as exc:
                raise MetadataInvalidError(path, f"{version} object #{index}: {exc}") from None
    raise UnsupportedVersionError(path, found, known)


def encode_stream(metadata: DeviceMetadata, versions: Sequence[str]) -> bytes:
    """The object once per known version in the given order, pretty-printed, newline after each."""
    chunks = [
        json.dumps(_ENCODERS[v](metadata), indent=2, ensure_ascii=False) + "\n"
        for v in versions
        if v in _ENCODERS
    ]
    if not chunks:
        raise ValueError(
            f"none of the metadata versions {list(versions)} is supported (known: {list(_ENCODERS)})"
        )
    return "".join(chunks).encode("utf-8")


# --- v1alpha1 ---------------------------------------------------------------------------------------


def _get(obj: dict[str, Any], key: str, kind: type, where: str, *, required: bool = True) -> Any:
    value = obj.get(key)
    if value is None:
        if required:
            raise _FieldError(f"{where}{key}: missing")
        return None
    if type(value) is not kind:  # exact: a bool must not pass for an int
        raise _FieldError(f"{where}{key}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def _name(obj: dict[str, Any], key: str, where: str) -> str:
    value = cast(str, _get(obj, key, str, where))
    if not value:
        raise _FieldError(f"{where}{key}: must not be empty")
    return value


def _attribute(name: str, raw: Any, where: str) -> DeviceAttribute:
    if type(raw) is not dict or len(raw) != 1:
        raise _FieldError(f"{where}: expected exactly one of {', '.join(ATTRIBUTE_KINDS)}, got {raw!r}")
    ((kind, value),) = raw.items()
    problem = attribute_problem(kind, value)
    if problem:
        raise _FieldError(f"{where}: {problem}")
    return DeviceAttribute(kind, value)


def _network(raw: dict[str, Any], where: str) -> NetworkData:
    ips = _get(raw, "ips", list, where, required=False) or []
    for i, ip in enumerate(ips):
        if type(ip) is not str:
            raise _FieldError(f"{where}ips[{i}]: expected str, got {type(ip).__name__}")
    return NetworkData(
        interface_name=_get(raw, "interfaceName", str, where, required=False) or "",
        ips=tuple(ips),
        hardware_address=_get(raw, "hardwareAddress", str, where, required=False) or "",
    )


def _device(raw: Any, where: str) -> Device:
    if type(raw) is not dict:
        raise _FieldError(f"{where}: expected an object")
    attrs_raw = _get(raw, "attributes", dict, f"{where}.", required=False) or {}
    attributes = {k: _attribute(k, v, f'{where}.attributes["{k}"]') for k, v in attrs_raw.items()}
    net_raw = _get(raw, "networkData", dict, f"{where}.", required=False)
    return Device(
        driver=_name(raw, "driver", f"{where}."),
        pool=_name(raw, "pool", f"{where}."),
        name=_name(raw, "name", f"{where}."),
        attributes=attributes,
        network_data=None if net_raw is None else _network(net_raw, f"{where}.networkData."),
    )


def _decode_v1alpha1(obj: dict[str, Any]) -> DeviceMetadata:
    if obj.get("kind") != KIND:
        raise _FieldError(f"kind: expected {KIND!r}, got {obj.get('kind')!r}")
    meta = _get(obj, "metadata", dict, "")
    generation = cast(int, _get(meta, "generation", int, "metadata."))
    if generation < 1:
        raise _FieldError(f"metadata.generation: must be at least 1, got {generation}")
    requests = []
    for i, req in enumerate(_get(obj, "requests", list, "")):
        where = f"requests[{i}]"
        if type(req) is not dict:
            raise _FieldError(f"{where}: expected an object")
        devices = _get(req, "devices", list, f"{where}.", required=False) or []
        requests.append(
            RequestMetadata(
                name=_name(req, "name", f"{where}."),
                devices=tuple(_device(d, f"{where}.devices[{j}]") for j, d in enumerate(devices)),
            )
        )
    pod_claim_name = _get(obj, "podClaimName", str, "", required=False)
    return DeviceMetadata(
        claim=ClaimRef(
            namespace=_name(meta, "namespace", "metadata."),
            name=_name(meta, "name", "metadata."),
            uid=_name(meta, "uid", "metadata."),
        ),
        generation=generation,
        requests=tuple(requests),
        pod_claim_name=pod_claim_name or None,
        api_version=V1ALPHA1,
    )


def _encode_v1alpha1(md: DeviceMetadata) -> dict[str, Any]:
    # Key order follows the Go structs so our files diff cleanly against the kubeletplugin helper's.
    out: dict[str, Any] = {
        "kind": KIND,
        "apiVersion": V1ALPHA1,
        "metadata": {
            "name": md.claim.name,
            "namespace": md.claim.namespace,
            "uid": md.claim.uid,
            "generation": md.generation,
        },
    }
    if md.pod_claim_name:
        out["podClaimName"] = md.pod_claim_name
    out["requests"] = [r.to_json() for r in md.requests]
    return out


_DECODERS: dict[str, Callable[[dict[str, Any]], DeviceMetadata]] = {V1ALPHA1: _decode_v1alpha1}
_ENCODERS: dict[str, Callable[[DeviceMetadata], dict[str, Any]]] = {V1ALPHA1: _encode_v1alpha1}
