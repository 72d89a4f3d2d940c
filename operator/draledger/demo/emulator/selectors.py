"""Label and field selectors, as kube-apiserver parses and applies them to lists and watches.

Rules:
1. Label selectors (``k8s.io/apimachinery/pkg/labels``): comma-joined requirements ``a=b``, ``a==b``,
   ``a!=b``, ``a`` (exists), ``!a`` (does not exist), ``a in (x,y)``, ``a notin (x,y)``. ``!=`` and ``notin``
   also match objects without the label, like upstream. All requirements must hold.
2. Field selectors (``k8s.io/apimachinery/pkg/fields``): comma-joined ``f=v``, ``f==v``, ``f!=v``,
   with ``\\,``, ``\\=`` and ``\\\\`` escapes. Every resource supports ``metadata.name`` and
   ``metadata.namespace``; a few resources support more (:data:`SUPPORTED_FIELDS`, a subset of
   upstream's tables). An absent field reads as ``""`` and booleans as ``"true"``/``"false"``.
3. A selector that does not parse, or names an unsupported field, is a 400 BadRequest, like upstream.
4. Pure: no I/O, no state; selectors are parsed once per request and applied to plain dicts.

Deliberately not emulated: ``>``/``<`` label requirements, CRD ``selectableFields``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from draledger.demo.emulator import errors

__all__ = ["SUPPORTED_FIELDS", "Selector", "parse_selector"]

_COMMON_FIELDS: Final = frozenset({"metadata.name", "metadata.namespace"})

SUPPORTED_FIELDS: Final[Mapping[str, frozenset[str]]] = {
    "pods": frozenset(
        {
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        }
    ),
    "nodes": frozenset({"spec.unschedulable"}),
    "namespaces": frozenset({"status.phase"}),
    "events": frozenset(
        {
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "type",
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
        }
    ),
    "resourceslices": frozenset({"spec.nodeName", "spec.driver"}),
}

_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET_RE: Final = re.compile(rf"^\s*(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)\s*$")
_CMP_RE: Final = re.compile(rf"^\s*(?P<key>{_KEY})\s*(?P<op>==|=|!=)\s*(?P<value>{_VALUE})\s*$")
_EXISTS_RE: Final = re.compile(rf"^\s*(?P<neg>!?)\s*(?P<key>{_KEY})\s*$")
_VALUE_RE: Final = re.compile(rf"^{_VALUE}$")


@dataclass(frozen=True, slots=True)
class _LabelRequirement:
    key: str
    op: str  # "in", "notin", "exists", "!exists" ("=" and "!=" are single-value "in"/"notin")
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.op == "exists":
            return self.key in labels
        if self.op == "!exists":
            return self.key not in labels
        if self.op == "in":
            return self.key in labels and labels[self.key] in self.values
        return self.key not in labels or labels[self.key] not in self.values


@dataclass(frozen=True, slots=True)
class _FieldRequirement:
    path: tuple[str, ...]
    equal: bool
    value: str

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return (_field_value(obj, self.path) == self.value) == self.equal


@dataclass(frozen=True, slots=True)
class Selector:
    """The conjunction of a request's label and field requirements (empty: everything matches)."""

    labels: tuple[_LabelRequirement, ...] = ()
    fields: tuple[_FieldRequirement, ...] = ()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        metadata = obj.get("metadata") or {}
        labels = metadata.get("labels") or {}
        return all(req.matches(labels) for req in self.labels) and all(
            req.matches(obj) for req in self.fields
        )

    @property
    def empty(self) -> bool:
        return not self.labels and not self.fields


def parse_selector(plural: str, label_selector: str | None, field_selector: str | None) -> Selector:
    """Parse the ``labelSelector`` and ``fieldSelector`` query parameters of a list or watch."""
    labels = tuple(_parse_label_requirement(part) for part in _split_top_level(label_selector or ""))
    fields = tuple(_parse_field_requirement(plural, part) for part in _split_escaped(field_selector or ""))
    return Selector(labels=labels, fields=fields)


def _split_top_level(text: str) -> list[str]:
    """Split at commas outside parentheses; drop empty parts (``a=b,`` is ``a=b``)."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    if depth != 0:
        raise errors.bad_request(f"unable to parse requirement: unbalanced parentheses in {text!r}")
    return [part for part in parts if part.strip()]


def _parse_label_requirement(text: str) -> _LabelRequirement:
    if match := _SET_RE.match(text):
        values = frozenset(v.strip() for v in match["values"].split(",") if v.strip())
        if not all(_VALUE_RE.match(v) for v in values):
            raise errors.bad_request(f"unable to parse requirement: invalid label value in {text!r}")
        return _LabelRequirement(match["key"], match["op"], values)
    if match := _CMP_RE.match(text):
        op = "notin" if match["op"] == "!=" else "in"
        return _LabelRequirement(match["key"], op, frozenset({match["value"]}))
    if match := _EXISTS_RE.match(text):
        return _LabelRequirement(match["key"], "!exists" if match["neg"] else "exists", frozenset())
    raise errors.bad_request(f"unable to parse requirement: {text!r}")


def _split_escaped(text: str) -> list[str]:
    """Split a field selector at unescaped commas, keeping escapes for the next step."""
    parts: list[str] = []
    current: list[str] = []
    escaped = False
    for char in text:
        if escaped:
            current.append("\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if escaped:
        raise errors.bad_request(f"invalid field selector: trailing escape in {text!r}")
    parts.append("".join(current))
    return [part for part in parts if part.strip()]


def _parse_field_requirement(plural: str, text: str) -> _FieldRequirement:
    # Find the first unescaped operator; "!=" before "==" before "=".
    for index, char in enumerate(text):
        if index and text[index - 1] == "\\":
            continue
        if text.startswith("!=", index):
            field, equal, value = text[:index], False, text[index + 2 :]
            break
        if text.startswith("==", index):
            field, equal, value = text[:index], True, text[index + 2 :]
            break
        if char == "=":
            field, equal, value = text[:index], True, text[index + 1 :]
            break
    else:
        raise errors.bad_request(f"invalid selector: '{text}'; can't understand '{text}'")
    field = field.strip()
    if field not in _COMMON_FIELDS and field not in SUPPORTED_FIELDS.get(plural, frozenset()):
        raise errors.bad_request(f"field label not supported: {field}")
    value = re.sub(r"\\(.)", r"\1", value)
    return _FieldRequirement(tuple(field.split(".")), equal, value)


def _field_value(obj: Mapping[str, Any], path: tuple[str, ...]) -> str:
    value: Any = obj
    for step in path:
        if not isinstance(value, Mapping):
            return ""
        value = value.get(step)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
