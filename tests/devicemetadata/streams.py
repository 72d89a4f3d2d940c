"""Crafted metadata streams for the differential test against upstream's decoder (test_upstream.py).

AGREE lists streams on which our decoder and `devicemetadata.DecodeMetadataFromStream` of each
release must give the same verdict (True: accepted, False: refused, a metadata version: accepted by
the releases that know it); STRICTER lists streams upstream accepts and we refuse on purpose (each one is
named in docs/device-metadata.md).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from draledger.devicemetadata import V1ALPHA1, V1BETA1

V9 = "metadata.resource.k8s.io/v9"
DELETE = object()


def obj(version: str = V1ALPHA1, /, **changes: Any) -> dict[str, Any]:
    """A valid object; `changes` maps `__`-separated paths to new values (DELETE deletes)."""
    out: dict[str, Any] = {
        "kind": "DeviceMetadata",
        "apiVersion": version,
        "metadata": {"name": "c", "namespace": "ns", "uid": "u-1", "generation": 1},
        "requests": [{"name": "r", "devices": [{"driver": "d.example.com", "pool": "p", "name": "dev-0"}]}],
    }
    for path, value in changes.items():
        *parents, last = path.split("__")
        target: Any = out
        for key in parents:
            target = target[int(key)] if key.isdigit() else target[key]
        if value is DELETE:
            del target[last]
        else:
            target[last] = copy.deepcopy(value)
    return out


def stream(*parts: dict[str, Any] | list[Any] | str) -> bytes:
    """Objects as Go writes them (one per line); a str part goes in verbatim."""
    return "".join(p if isinstance(p, str) else json.dumps(p) + "\n" for p in parts).encode()


DEVICE = "requests__0__devices__0__"
AGREE = [
    pytest.param(stream(obj()), True, id="one-known-object"),
    pytest.param(stream(obj(V9, spec={"x": 1}), obj()), True, id="unknown-version-is-skipped"),
    pytest.param(stream({"kind": "X", "apiVersion": "other.example.com/v1"}, obj()), True, id="unknown-group-skipped"),
    pytest.param(stream({"kind": "X", "apiVersion": "meta.k8s.io/v1"}, obj()), True, id="meta-group-is-skipped"),
    pytest.param(stream({"kind": "Pod", "apiVersion": "v1"}, obj()), False, id="core-v1-is-registered-so-fatal"),
    pytest.param(stream({"kind": "X", "apiVersion": "/v2"}, obj()), True, id="empty-group-is-skipped"),
    pytest.param(stream({"apiVersion": V9}, obj()), False, id="unknown-version-without-kind"),
    pytest.param(stream({"apiVersion": V9, "kind": ""}, obj()), False, id="unknown-version-with-empty-kind"),
    pytest.param(stream(obj(kind="Other")), False, id="known-version-other-kind"),
    pytest.param(stream(obj(kind=DELETE)), False, id="known-version-without-kind"),
    pytest.param(stream({"kind": "X", "apiVersion": ""}, obj()), False, id="empty-apiVersion"),
    pytest.param(stream({"kind": "X"}, obj()), False, id="missing-apiVersion"),
    pytest.param(stream({"kind": "X", "apiVersion": 5}, obj()), False, id="numeric-apiVersion"),
    pytest.param(stream({"kind": "X", "apiVersion": "a/b/c"}, obj()), False, id="apiVersion-with-two-slashes"),
    pytest.param(stream({"kind": "X", "apiVersion": "group/"}, obj()), False, id="apiVersion-without-version"),
    pytest.param(stream([], obj()), False, id="array-in-stream"),
    pytest.param(b"", False, id="empty-stream"),
    pytest.param(stream(obj(V9)), False, id="only-unknown-versions"),
    pytest.param(stream(obj(V1BETA1)), V1BETA1, id="v1beta1-only"),
    pytest.param(stream(obj(V1BETA1, metadata__generation=2), obj()), True, id="first-known-object-wins"),
    pytest.param(stream(obj(status={"x": 1}, metadata__creationTimestamp=None)), True, id="unknown-fields-ignored"),
    pytest.param(b'{"kind":"DeviceMetadata","apiVersion":"x/v1","n":NaN}', False, id="nan-literal"),
    pytest.param(stream(obj(**{DEVICE + "attributes": {"a": {"int": True}}})), False, id="mistyped-attribute"),
    pytest.param(
        stream(obj(**{DEVICE + "attributes": {"a": {"ints": [1, 2]}, "b": {"versions": ["1.0.0"]}}})),
        True,
        id="list-attributes",
    ),
]
# Upstream accepts these; we refuse them, because they are partial files or data no writer produces.
STRICTER = [
    pytest.param(stream(obj()) + b'{"kind": "Dev', id="truncated-tail-after-known-object"),
    pytest.param(stream(obj()) + b"garbage", id="garbage-after-known-object"),
    pytest.param(stream(obj()).replace(b'"name": "c"', b'"name": "c", "name": "d"'), id="duplicate-keys"),
    pytest.param(stream(obj(metadata__generation=0)), id="generation-0"),
    pytest.param(stream(obj(metadata__uid=DELETE)), id="missing-uid"),
    pytest.param(stream(obj(requests=DELETE)), id="missing-requests"),
    pytest.param(stream(obj(**{DEVICE + "attributes": {"a": {}}})), id="attribute-without-value"),
    pytest.param(stream(obj(**{DEVICE + "attributes": {"a": {"int": 1, "string": "1"}}})), id="attribute-two-values"),
    pytest.param(stream(obj(**{DEVICE + "attributes": {"a": {"ints": []}}})), id="empty-list-attribute"),
    pytest.param(stream(obj(**{DEVICE + "attributes": {"a": {"version": "v1"}}})), id="version-not-semver"),
]
