"""Dumps: ``kubectl get nodes,pods,resourceslices,resourceclaims -A -o json`` (or YAML) into a ClusterState.

Rules:
1. A file that does not parse, or is not a ``kind: List`` (a typed list such as ``NodeList`` is one too), is a
   ``DumpError`` naming the file and the reason: the caller exits 2. A single object is not a dump either:
   the message says how to get a List of it.
2. Inside a List, an item that is not an object, or is of an unknown kind, is a problem that names its
   position; every other item is still loaded.
3. Floats never reach arithmetic: JSON numbers that are not integers are read as exact decimals.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import yaml

from draledger.state import ClusterState, GenerationRegression
from draledger.views import Problem, read_claim, read_node, read_pod, read_slice
from draledger.views.problems import ObjectRef

READERS = {"Node": "node", "Pod": "pod", "ResourceSlice": "slice", "ResourceClaim": "claim"}
IGNORED_KINDS = frozenset(
    {"DeviceClass", "ResourceClaimTemplate", "Namespace", "Event", "NodeAllocatableLedger"}
)


class DumpError(Exception):
    """The whole file is unusable."""


@dataclass(slots=True)
class Loaded:
    state: ClusterState = field(default_factory=ClusterState)
    problems: list[Problem] = field(default_factory=list)  # input problems that belong to no object


def parse_text(text: str, source: str) -> Any:
    stripped = text.lstrip()
    if not stripped:
        raise DumpError(f"{source}: empty input")
    if stripped[0] in "{[":
        try:
            return json.loads(text, parse_float=Decimal)
        except json.JSONDecodeError as error:
            raise DumpError(f"{source}: not valid JSON: {error}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise DumpError(f"{source}: not valid JSON or YAML: {error}") from None


def items_of(document: Any, source: str) -> list[Any]:
    if not isinstance(document, dict):
        raise DumpError(f"{source}: expected a kind: List object, got {type(document).__name__}")
    kind = document.get("kind")
    if kind in READERS:
        name = (document.get("metadata") or {}).get("name") if isinstance(document.get("metadata"), dict) else None
        raise DumpError(
            f"{source}: expected kind: List, got a single {kind} {name!r}: "
            f"dump with `kubectl get {kind.lower()}s ... -o json`, which prints a List even for one object"
        )
    if kind != "List" and not (isinstance(kind, str) and kind.endswith("List")):
        raise DumpError(f"{source}: expected kind: List (kubectl get ... -o json), got kind: {kind!r}")
    items = document.get("items")
    if not isinstance(items, list):
        raise DumpError(f"{source}: the List has no items array")
    return items


def read_source(path: str) -> str:
    try:
        if path == "-":
            return sys.stdin.read()
        with open(path, encoding="utf-8") as stream:
            return stream.read()
    except (OSError, UnicodeDecodeError) as error:
        raise DumpError(f"{path}: cannot read: {error}") from None


def load_items(items: Iterable[Any], source: str, loaded: Loaded) -> None:
    state = loaded.state
    for index, item in enumerate(items):
        where = f"{source}: items[{index}]"
        if not isinstance(item, dict):
            loaded.problems.append(
                Problem(
                    "MalformedItem",
                    f"{where} is not an object ({type(item).__name__})",
                    value=repr(item)[:80],
                )
            )
            continue
        kind = item.get("kind")
        reader = READERS.get(kind) if isinstance(kind, str) else None
        if reader is None:
            if kind not in IGNORED_KINDS:
                loaded.problems.append(Problem("UnknownKind", f"{where} has kind {kind!r}; ignored"))
            continue
        if reader == "node":
            state.upsert_node(read_node(item))
        elif reader == "pod":
            state.upsert_pod(read_pod(item))
        elif reader == "claim":
            state.upsert_claim(read_claim(item))
        else:
            view = read_slice(item)
            try:
                state.upsert_slice(view)
            except GenerationRegression as error:
                loaded.problems.append(
                    Problem("GenerationRegression", str(error), ObjectRef("ResourceSlice", view.name))
                )


def load_paths(paths: Iterable[str]) -> Loaded:
    """Load every dump into one state; later files win for objects that appear twice."""
    loaded = Loaded()
    for path in paths:
        document = parse_text(read_source(path), path)
        load_items(items_of(document, path), path, loaded)
    return loaded


def all_problems(loaded: Loaded) -> list[Problem]:
    """Every problem of every object, once: what ``audit`` names on standard error."""
    state = loaded.state
    out = list(loaded.problems)
    for views in (state.nodes.values(), state.pods.values(), state.slices.values(), state.claims.values()):
        for view in views:
            out.extend(view.problems)
    for pod in state.pods.values():
        if pod.counted and pod.node_name not in state.nodes:
            out.append(
                Problem(
                    "UnknownNode",
                    f"bound to node {pod.node_name!r}, which is not in the input; not counted in any ledger",
                    ObjectRef("Pod", pod.name, pod.namespace),
                    "spec.nodeName",
                    pod.node_name,
                )
            )
    return out
