"""Typed, immutable model of DRA device metadata (KEP-5304, `metadata.resource.k8s.io`).

Rules: every object is a frozen slotted dataclass; attribute values keep their declared type
(`int`, `bool`, `string`, `version` and the list forms `ints`, `bools`, `strings`, `versions`
of `resource.k8s.io/v1` DeviceAttribute) and a value never silently changes type (a bool is
never an int). `v1alpha1` and `v1beta1` have the same fields; the model is shared by both.
This module must never do I/O, import a Kubernetes client or anything outside the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal, TypeAlias, cast

API_GROUP = "metadata.resource.k8s.io"
V1ALPHA1 = f"{API_GROUP}/v1alpha1"
V1BETA1 = f"{API_GROUP}/v1beta1"
KIND = "DeviceMetadata"
#: Versions this library can decode and encode, newest first (as k8s.io/dynamic-resource-allocation v0.37).
KNOWN_VERSIONS: tuple[str, ...] = (V1BETA1, V1ALPHA1)

DEFAULT_ROOT = Path("/var/run/kubernetes.io/dra-device-attributes")
CLAIMS_SUBDIR = "resourceclaims"
TEMPLATES_SUBDIR = "resourceclaimtemplates"
FILE_SUFFIX = "-metadata.json"
DEFAULT_MAX_BYTES = 1024 * 1024
PCI_BUS_ID = "resource.kubernetes.io/pciBusID"

ScalarKind: TypeAlias = Literal["int", "bool", "string", "version"]
ListKind: TypeAlias = Literal["ints", "bools", "strings", "versions"]
AttributeKind: TypeAlias = ScalarKind | ListKind
Scalar: TypeAlias = int | bool | str
AttributeValue: TypeAlias = Scalar | tuple[int, ...] | tuple[bool, ...] | tuple[str, ...]
SCALAR_KINDS: tuple[ScalarKind, ...] = ("int", "bool", "string", "version")
LIST_KINDS: dict[ListKind, ScalarKind] = {"ints": "int", "bools": "bool", "strings": "string", "versions": "version"}
ATTRIBUTE_KINDS: tuple[AttributeKind, ...] = (*SCALAR_KINDS, *LIST_KINDS)

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# Semantic Versioning 2.0.0, as resource.k8s.io validates `version` attributes.
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


def attribute_problem(kind: str, value: object) -> str | None:
    """Say what is wrong with a typed attribute value, or None when it is valid.

    List kinds take a non-empty tuple (upstream omits empty lists, so `{"ints": []}` is no value).
    """
    if kind in LIST_KINDS:
        if type(value) is not tuple:
            return f"a {kind} attribute needs a list, got {type(value).__name__}"
        if not value:
            return f"a {kind} attribute needs a non-empty list"
        for i, item in enumerate(value):
            problem = attribute_problem(LIST_KINDS[kind], item)
            if problem:
                return f"item {i}: {problem}"
        return None
    if kind == "int":
        if type(value) is not int:  # bool is a subclass of int: reject it explicitly
            return f"an int attribute needs an integer, got {type(value).__name__}"
        if not _INT64_MIN <= value <= _INT64_MAX:
            return "an int attribute must fit in int64"
        return None
    if kind == "bool":
        return (
            None if type(value) is bool else f"a bool attribute needs true/false, got {type(value).__name__}"
        )
    if kind == "string":
        return (
            None
            if isinstance(value, str)
            else f"a string attribute needs a string, got {type(value).__name__}"
        )
    if kind == "version":
        if not isinstance(value, str):
            return f"a version attribute needs a string, got {type(value).__name__}"
        return None if _SEMVER.match(value) else f"a version attribute needs semver 2.0.0, got {value!r}"
    return f"unknown attribute type {kind!r} (expected one of {', '.join(ATTRIBUTE_KINDS)})"


@dataclass(frozen=True, slots=True)
class DeviceAttribute:
    """One typed attribute value: `{"int": 0}`, `{"string": "0000:3b:00.0"}`, `{"ints": [0, 1]}`, …"""

    kind: AttributeKind
    value: AttributeValue

    def __post_init__(self) -> None:
        problem = attribute_problem(self.kind, self.value)
        if problem:
            raise ValueError(problem)

    @classmethod
    def of_int(cls, value: int) -> DeviceAttribute:
        return cls("int", value)

    @classmethod
    def of_bool(cls, value: bool) -> DeviceAttribute:
        return cls("bool", value)

    @classmethod
    def of_string(cls, value: str) -> DeviceAttribute:
        return cls("string", value)

    @classmethod
    def of_version(cls, value: str) -> DeviceAttribute:
        return cls("version", value)

    @classmethod
    def of_ints(cls, values: Iterable[int]) -> DeviceAttribute:
        return cls("ints", tuple(values))

    @classmethod
    def of_bools(cls, values: Iterable[bool]) -> DeviceAttribute:
        return cls("bools", tuple(values))

    @classmethod
    def of_strings(cls, values: Iterable[str]) -> DeviceAttribute:
        return cls("strings", tuple(values))

    @classmethod
    def of_versions(cls, values: Iterable[str]) -> DeviceAttribute:
        return cls("versions", tuple(values))

    def as_int(self) -> int:
        if self.kind != "int" or isinstance(self.value, bool) or not isinstance(self.value, int):
            raise TypeError(f"attribute is {self.kind}, not int")
        return self.value

    def as_bool(self) -> bool:
        if self.kind != "bool" or not isinstance(self.value, bool):
            raise TypeError(f"attribute is {self.kind}, not bool")
        return self.value

    def as_str(self) -> str:
        """The value of a `string` or `version` attribute."""
        if self.kind not in ("string", "version") or not isinstance(self.value, str):
            raise TypeError(f"attribute is {self.kind}, not string or version")
        return self.value

    def as_ints(self) -> tuple[int, ...]:
        if self.kind != "ints" or not isinstance(self.value, tuple):
            raise TypeError(f"attribute is {self.kind}, not ints")
        return cast(tuple[int, ...], self.value)  # checked at construction

    def as_bools(self) -> tuple[bool, ...]:
        if self.kind != "bools" or not isinstance(self.value, tuple):
            raise TypeError(f"attribute is {self.kind}, not bools")
        return cast(tuple[bool, ...], self.value)

    def as_strs(self) -> tuple[str, ...]:
        """The values of a `strings` or `versions` attribute."""
        if self.kind not in ("strings", "versions") or not isinstance(self.value, tuple):
            raise TypeError(f"attribute is {self.kind}, not strings or versions")
        return cast(tuple[str, ...], self.value)

    def to_json(self) -> dict[str, object]:
        return {self.kind: list(self.value) if isinstance(self.value, tuple) else self.value}


def frozen_attributes(attributes: Mapping[str, DeviceAttribute] | None) -> Mapping[str, DeviceAttribute]:
    """A read-only, name-sorted copy, so equal devices compare and print equally."""
    return MappingProxyType(dict(sorted((attributes or {}).items())))


@dataclass(frozen=True, slots=True)
class NetworkData:
    """`resource.k8s.io/v1` NetworkDeviceData, as network drivers publish it."""

    interface_name: str = ""
    ips: tuple[str, ...] = ()
    hardware_address: str = ""

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {}
        if self.interface_name:
            out["interfaceName"] = self.interface_name
        if self.ips:
            out["ips"] = list(self.ips)
        if self.hardware_address:
            out["hardwareAddress"] = self.hardware_address
        return out


@dataclass(frozen=True, slots=True)
class Device:
    """One allocated device. Attributes are excluded from the hash (a mapping is not hashable)."""

    driver: str
    pool: str
    name: str
    attributes: Mapping[str, DeviceAttribute] = field(default_factory=dict, hash=False)
    network_data: NetworkData | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "attributes", frozen_attributes(self.attributes))

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"driver": self.driver, "pool": self.pool, "name": self.name}
        if self.attributes:
            out["attributes"] = {k: v.to_json() for k, v in self.attributes.items()}
        if self.network_data is not None:
            out["networkData"] = self.network_data.to_json()
        return out


@dataclass(frozen=True, slots=True)
class RequestMetadata:
    """One request's devices; `name` is `req` or, for a prioritized-list subrequest, `req/sub`."""

    name: str
    devices: tuple[Device, ...]

    @property
    def base_name(self) -> str:
        return base_request(self.name)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name}
        if self.devices:  # upstream omits an empty list
            out["devices"] = [d.to_json() for d in self.devices]
        return out


@dataclass(frozen=True, slots=True)
class ClaimRef:
    """The ResourceClaim a metadata file is bound to."""

    namespace: str
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class DeviceMetadata:
    """The decoded content of one metadata file (one driver, one request)."""

    claim: ClaimRef
    generation: int
    requests: tuple[RequestMetadata, ...]
    pod_claim_name: str | None = None
    api_version: str = V1ALPHA1

    @property
    def ready(self) -> bool:
        """Deferred (network) metadata is final once updated (generation > 1) or attributes are present."""
        return self.generation > 1 or any(d.attributes for r in self.requests for d in r.devices)


@dataclass(frozen=True, slots=True)
class MetadataSource:
    """Where one merged piece came from."""

    path: Path
    driver: str
    metadata: DeviceMetadata


@dataclass(frozen=True, slots=True)
class ClaimMetadata:
    """Metadata for one claim, merged over every driver file of the selected request(s)."""

    claim: ClaimRef
    pod_claim_name: str | None
    requests: tuple[RequestMetadata, ...]
    sources: tuple[MetadataSource, ...]

    @property
    def generation(self) -> int:
        """The highest generation among the merged files (each file's own is in `sources`)."""
        return max(s.metadata.generation for s in self.sources)

    @property
    def ready(self) -> bool:
        return all(s.metadata.ready for s in self.sources)

    @property
    def devices(self) -> tuple[Device, ...]:
        return tuple(d for r in self.requests for d in r.devices)

    def request(self, name: str) -> RequestMetadata:
        """The request by full name (`req/sub`) or base name (`req`)."""
        for r in self.requests:
            if name in (r.name, r.base_name):
                return r
        raise KeyError(f"request {name!r} not in metadata (have: {', '.join(r.name for r in self.requests)})")

    def attribute(self, name: str, *, driver: str | None = None) -> DeviceAttribute | None:
        """The attribute from the first device (in file order) that has it, optionally of one driver."""
        for device in self.devices:
            if (driver is None or device.driver == driver) and name in device.attributes:
                return device.attributes[name]
        return None

    def to_json(self) -> dict[str, object]:
        return {
            "claim": {"namespace": self.claim.namespace, "name": self.claim.name, "uid": self.claim.uid},
            "podClaimName": self.pod_claim_name,
            "generation": self.generation,
            "ready": self.ready,
            "sources": [
                {
                    "path": str(s.path),
                    "driver": s.driver,
                    "apiVersion": s.metadata.api_version,
                    "generation": s.metadata.generation,
                }
                for s in self.sources
            ],
            "requests": [r.to_json() for r in self.requests],
        }


def base_request(name: str) -> str:
    """`gpu/large` -> `gpu`: subrequests live under their base request's directory."""
    return name.split("/", 1)[0]


def check_path_segment(what: str, value: str) -> str:
    """Reject names that would escape or confuse the directory layout."""
    if not value or value in (".", "..") or "/" in value or "\0" in value:
        raise ValueError(f"invalid {what} {value!r}: must be a non-empty name without '/'")
    return value
