"""Decode and encode the metadata JSON stream (one object per API version, newest first).

Rules: the whole stream must be well-formed JSON objects before anything is used (a truncated tail
means a partial file). As upstream's `devicemetadata.DecodeMetadataFromStream`: every object needs
a string `apiVersion` (`version` or `group/version`) and a non-empty string `kind`; the first object
of a known apiVersion wins and must be a `DeviceMetadata`; objects of unknown versions are skipped.
That object is checked field by field and any wrong type is an error naming the field. Duplicate
keys and NaN/Infinity are rejected. Unknown extra fields are ignored for forward compatibility.
Encoding produces the bytes Go's `encoding/json` MarshalIndent produces for the same object.
This module must never touch the filesystem: callers pass bytes and a path for messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from draledger.devicemetadata.errors import MetadataInvalidError, UnsupportedVersionError
from draledger.devicemetadata.model import (
    ATTRIBUTE_KINDS,
    KIND,
    KNOWN_VERSIONS,
    LIST_KINDS,
    ClaimRef,
    Device,
    DeviceAttribute,
    DeviceMetadata,
    NetworkData,
    RequestMetadata,
    attribute_problem,
)

_WHITESPACE = " \t\n\r"
# Upstream's metadata scheme also registers core `v1` (metav1.AddToGroupVersion puts Status and the
# option types there), so a `v1` object is not skipped as unknown: decoding stops there with an error.
_REGISTERED_ELSEWHERE = frozenset({"v1"})
# Go's encoding/json escapes these inside strings (HTML safety and JavaScript line separators);
# none of them can occur outside a string in JSON, so replacing them in the text is exact.
_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_GO_ESCAPED = re.compile("[<>&\u2028\u2029]")


def go_json(value: object) -> str:
    """`json.MarshalIndent(value, "", "  ")` of Go for plain JSON data (no trailing newline)."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return _GO_ESCAPED.sub(lambda m: _GO_ESCAPES[m.group()], text)


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
        version, kind = obj.get("apiVersion"), obj.get("kind")
        problem = _type_meta_problem(version, kind)
        if problem or not isinstance(version, str):
            raise MetadataInvalidError(path, f"object #{index}: {problem}")
        found.append(version)
        if version in _REGISTERED_ELSEWHERE:
            raise MetadataInvalidError(path, f"object #{index}: {version} {kind} is not a {KIND}")
        if version in known and version in _DECODERS:
            try:
                return _DECODERS[version](obj)
            except _FieldError as exc:
                raise MetadataInvalidError(path, f"{version} object #{index}: {exc}") from None
    raise UnsupportedVersionError(path, found, known)


def _type_meta_problem(version: object, kind: object) -> str | None:
    """What upstream's deserializer refuses before it even looks up the version (then it is fatal)."""
    if not isinstance(version, str) or not version:
        return "no apiVersion (a non-empty string is required)"
    if version.count("/") > 1 or not version.rpartition("/")[2]:
        return f"apiVersion {version!r} is not 'version' or 'group/version'"
    if not isinstance(kind, str) or not kind:
        return f"{version} object has no kind (a non-empty string is required)"
    return None


def encode_object(metadata: DeviceMetadata, version: str) -> dict[str, Any]:
    """The object as plain JSON data in one version (ValueError for a version this library lacks)."""
    if version not in _ENCODERS:
        raise ValueError(f"metadata version {version!r} is not supported (known: {list(_ENCODERS)})")
    return _ENCODERS[version](metadata)


def encode_stream(metadata: DeviceMetadata, versions: Sequence[str]) -> bytes:
    """The object once per version in the given order, as Go's pretty JSON, newline after each.

    Versions this library lacks are skipped; if that leaves none it is a ValueError.
    """
    chunks = [go_json(_ENCODERS[v](metadata)) + "\n" for v in versions if v in _ENCODERS]
    if not chunks:
        raise ValueError(
            f"none of the metadata versions {list(versions)} is supported (known: {list(_ENCODERS)})"
        )
    return "".join(chunks).encode("utf-8")


# --- v1alpha1 and v1beta1 (the same fields) ------------------------------------------------------------


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
    if kind in LIST_KINDS and type(value) is list:
        value = tuple(value)
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


def _decoder(version: str) -> Callable[[dict[str, Any]], DeviceMetadata]:
    return lambda obj: _decode(obj, version)


def _encoder(version: str) -> Callable[[DeviceMetadata], dict[str, Any]]:
    return lambda md: _encode(md, version)


def _decode(obj: dict[str, Any], version: str) -> DeviceMetadata:
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
        api_version=version,
    )


def _encode(md: DeviceMetadata, version: str) -> dict[str, Any]:
    # Key order follows the Go structs, so our files are byte for byte the kubeletplugin helper's.
    out: dict[str, Any] = {
        "kind": KIND,
        "apiVersion": version,
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


_DECODERS: dict[str, Callable[[dict[str, Any]], DeviceMetadata]] = {v: _decoder(v) for v in KNOWN_VERSIONS}
_ENCODERS: dict[str, Callable[[DeviceMetadata], dict[str, Any]]] = {v: _encoder(v) for v in KNOWN_VERSIONS}
