"""The official schemas of every release of the matrix, for strict validation of the built-in kinds we ship.

Rules:
1. A release kubernetes-validate has schemas for (v1.36, v1.37) is validated with them: the conversion of that
   release's upstream OpenAPI v2 document (``api/openapi-spec/swagger.json``) into strict JSON schemas, a
   ``_definitions.json`` and one file per definition.
2. A release it has none for (v1.38: kubernetes-validate 1.37.0 is the newest on PyPI) is validated with the same
   conversion (``definitions``, ``kinds``) of the OpenAPI v2 document that the release's real kube-apiserver serves
   (``/openapi/v2``), read once from a control plane of the release and cached in
   ``<cache>/dra-ledger/schemas/<kubernetes version>/<binaries' build key>/openapi-v2.json``: a rebuilt binary reads
   it anew. The served document holds the API groups the launcher enables (alpha ones are off) and the enums the
   server publishes, so it is at least as strict as the upstream file.
3. The conversion reproduces kubernetes-validate's own: test_schemas.py converts the upstream document of v1.37.2
   (in the Go module cache, where building the release put it) and compares every definition and every
   per-kind file with kubernetes-validate 1.37.0's. Its two quirks are kept so that the comparison is exact: in the
   per-kind files every ``type`` but the top one admits null, required fields included, and under a property map
   that has a property named ``required`` (``JSONSchemaProps``) the items of array properties do not.
4. Reading the served documents happens before the first test (``prepare_for``, like the pinned tools), outside
   the tests' timeouts, and only for the releases the selected tests validate for (a ``schema_release``
   parameter). A release whose binaries cannot be had skips those tests with one line, or fails them with
   DRALEDGER_REQUIRE_REALCLUSTER=1 (set by .ci/run).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import kubernetes_validate.utils
import pytest

from tests.realcluster import building
from tests.realcluster.releases import RELEASES, Release, user_cache

REQUIRE_ENV = "DRALEDGER_REQUIRE_REALCLUSTER"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
# kubernetes-validate's types for the two definitions JSON allows either way (rule 3)
EITHER = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "integer",
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "number",
}


def version_of(release: str) -> str:
    """``1.38.0`` for ``v1.38``: the version kubernetes-validate names a release's schemas by."""
    return ".".join(RELEASES[release].kubernetes.lstrip("v").split(".")[:2]) + ".0"


def shipped_with_validator(release: str) -> bool:
    """Whether kubernetes-validate holds the release's schemas (rule 1)."""
    try:
        kubernetes_validate.validate({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
                                     version_of(release), strict=True)
    except kubernetes_validate.utils.VersionNotSupportedError:
        return False
    return True


# ------------------------------------------------------------------ the conversion (rules 1 and 3)


def _nullable(node: Mapping[str, Any], parent: Any, grand: Any, key: str | None, *, lists: bool) -> dict[str, Any]:
    """Every ``type`` admits null, but that of a node ``grand`` names as required (``grand["required"]``: a list
    of property names, or with ``lists=False`` only a property map's own property called ``required``)."""
    out: dict[str, Any] = {}
    for name, value in node.items():
        if isinstance(value, dict):
            value = _nullable(value, node, parent, name, lists=lists)
        elif isinstance(value, list):
            value = [_nullable(item, value, parent, name, lists=lists) if isinstance(item, dict) else item
                     for item in value]
        elif name == "type" and isinstance(value, str) and value != "null":
            required = grand.get("required") if isinstance(grand, dict) else None
            kept = isinstance(required, dict) or (lists and isinstance(required, list))
            if not (kept and key in required):
                value = [value, "null"]
        out[name] = value
    return out


def _local(node: Any, prefix: str) -> Any:
    """References into ``prefix``; every schema with properties closed to others (strict)."""
    if isinstance(node, list):
        return [_local(item, prefix) for item in node]
    if not isinstance(node, dict):
        return node
    out = {name: value.replace("#/definitions/", prefix) if name == "$ref" and isinstance(value, str)
           else _local(value, prefix) for name, value in node.items()}
    if "properties" in node and "additionalProperties" not in node:
        out["additionalProperties"] = False
    return out


def _enums(definition: Mapping[str, Any], converted: dict[str, Any]) -> dict[str, Any]:
    """``apiVersion`` and ``kind`` limited to the definition's group-version-kinds."""
    kinds = definition.get("x-kubernetes-group-version-kind") or []
    properties = converted.get("properties") or {}
    if kinds and "apiVersion" in properties:
        properties["apiVersion"]["enum"] = list(dict.fromkeys(
            f"{k['group']}/{k['version']}" if k["group"] else k["version"] for k in kinds))
    if kinds and "kind" in properties:
        properties["kind"]["enum"] = list(dict.fromkeys(k["kind"] for k in kinds))
    return converted


def definitions(document: Mapping[str, Any]) -> dict[str, Any]:
    """``_definitions.json``'s ``$defs``: every definition of an OpenAPI v2 document, converted."""
    given = document["definitions"]
    nulled = _nullable(given, document, None, "definitions", lists=True)
    return {name: {"oneOf": [{"type": ["string", "null"]}, {"type": [EITHER[name], "null"]}]} if name in EITHER
            else _enums(given[name], _local(nulled[name], "#/$defs/")) for name in given}


def file_name(definition: str) -> str:
    """``deployment-apps-v1.json`` for ``io.k8s.api.apps.v1.Deployment``; the core group has no part."""
    *_, group, version, kind = definition.lower().split(".")
    return f"{kind}-{version}.json" if group in ("core", "api") else f"{kind}-{group}-{version}.json"


def kinds(document: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The per-definition files, by ``file_name``, without their ``$schema`` and ``$id`` (rule 3)."""
    out = {}
    for name, definition in document["definitions"].items():
        if name in EITHER:
            body: dict[str, Any] = {"oneOf": [{"type": "string"}, {"type": EITHER[name]}], "type": "object"}
        else:
            nulled = _nullable(definition, None, None, None, lists=False)
            body = _enums(definition, _local(nulled, "/api/_definitions.json#/$defs/"))
            body["type"] = definition.get("type", "object")
        body.setdefault("additionalProperties", False)
        out[file_name(name)] = body
    return out


# ------------------------------------------------------------------ validating


@dataclass(frozen=True)
class Converted:
    """One release's converted schemas (rule 2)."""

    release: str
    defs: dict[str, Any]
    kinds: dict[str, dict[str, Any]]

    def validate(self, obj: Mapping[str, Any]) -> None:
        """Strictly, as ``kubernetes_validate.validate`` does, raising its errors; the definitions go along in the
        schema's own ``$defs`` (kubernetes-validate resolves ``_definitions.json`` as a second document instead)."""
        api_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", obj["apiVersion"])
        found = self.kinds.get(f"{obj['kind'].lower()}-{api_version}.json")
        if found is None:
            raise kubernetes_validate.SchemaNotFoundError(kind=obj["kind"], version=self.release,
                                                          api_version=obj["apiVersion"])
        try:
            jsonschema.Draft202012Validator({**found, "$schema": DRAFT, "$defs": self.defs}).validate(obj)
        except jsonschema.ValidationError as error:
            raise kubernetes_validate.ValidationError(error, version=self.release) from None


_SERVED: dict[str, Path | str] = {}  # release -> its cached served document, or why there is none


def cache_path(release: Release) -> Path:
    """Where the release's served document is kept (rule 2)."""
    stamp = json.loads((release.home / "stamp.json").read_text(encoding="utf-8"))
    return user_cache() / "schemas" / release.kubernetes / str(stamp["key"])[:16] / "openapi-v2.json"


def fetch(release: Release) -> Path:
    """The release's served ``/openapi/v2``, read from a control plane of it once per build (rule 2)."""
    from tests.realcluster.launcher import ControlPlane

    building.ensure(release)
    path = cache_path(release)
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="openapi-") as work, ControlPlane(release, Path(work)) as plane:
        document = plane.api().get("/openapi/v2")
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(document, sort_keys=True), encoding="utf-8")
    os.replace(partial, path)
    return path


def prepare(releases: Iterable[str]) -> None:
    """Fetch (or find cached) the served document of each release kubernetes-validate lacks (rule 4)."""
    for name in releases:
        if name in _SERVED or shipped_with_validator(name):
            continue
        try:
            _SERVED[name] = fetch(RELEASES[name])
        except Exception as error:  # no binaries, or a control plane that does not start: the tests say so
            _SERVED[name] = f"the {name} schemas cannot be read: {(str(error) or repr(error)).splitlines()[0]}"
            building.say(str(error))


def prepare_for(items: Iterable[pytest.Item]) -> None:
    """``prepare`` what the tests ``items`` validate for (a ``schema_release`` parameter)."""
    wanted = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        release = callspec.params.get("schema_release") if callspec is not None else None
        if isinstance(release, str):
            wanted.append(release)
    prepare(dict.fromkeys(wanted))


@cache
def _converted(release: str, path: Path) -> Converted:
    document = json.loads(path.read_text(encoding="utf-8"))
    local = json.loads(json.dumps(kinds(document)).replace('"/api/_definitions.json#/$defs/', '"#/$defs/'))
    return Converted(version_of(release)[:-2], definitions(document), local)


def validator(release: str) -> Any:
    """A function validating one object strictly for ``release`` (rules 1 and 2); skips (or fails, rule 4) the
    calling test when the release's schemas cannot be had."""
    if shipped_with_validator(release):
        version = version_of(release)
        return lambda obj: kubernetes_validate.validate(obj, version, strict=True)
    prepare([release])
    found = _SERVED[release]
    if isinstance(found, str):
        if os.environ.get(REQUIRE_ENV, "") == "1":
            pytest.fail(f"{found} ({REQUIRE_ENV}=1)", pytrace=False)
        pytest.skip(f"{found} (set {REQUIRE_ENV}=1 to fail instead)")
    return _converted(release, found).validate
