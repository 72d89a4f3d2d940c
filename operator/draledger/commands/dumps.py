"""Dumps: ``kubectl get nodes,pods,resourceslices,resourceclaims -A -o json`` (or YAML) into a ClusterState.

Rules:
1. A file that does not parse, or is not a ``kind: List`` (a typed list such as ``NodeList`` is one too), is a
   ``DumpError`` naming the file and the reason in one line: the caller exits 2. A single object is not a
   dump either: the message says how to get a List of it.
2. Inside a List, an item that is not an object, or is of an unknown kind, is a problem that names its
   position; every other item is still loaded. A malformed field of an object is a problem of that object
   (the readers never raise).
3. Floats never reach arithmetic: JSON numbers that are not integers are read as exact decimals.
4. YAML is read as kubectl reads it, into JSON values: map keys become strings, timestamps stay the text
   written, and the few YAML-only values (binary, sets, ordered maps, tagged timestamps) become the JSON
   value closest to what was written.
5. What cannot be a dump is refused from its first bytes, before the rest is read: the first non-blank
   character of JSON is ``{`` or ``[``; YAML opens (after comments and ``---``) with one of a List's keys.
6. A dump without Nodes yields no ledger: it is refused, naming what it holds. Missing kinds of object
   (no ResourceSlices, no ResourceClaims) are named as a hint: their absence turns nodes Stale silently.
7. Parsing never recurses without bound and never expands without bound: YAML nested deeper than
   ``MAX_DEPTH`` levels, JSON nested deeper than the parser takes, and YAML aliases that expand to more than
   ``MAX_EXPANSION`` times the values written (a "billion laughs") are DumpErrors.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import msgspec
import yaml

from draledger.commands.progress import Progress
from draledger.core.accounting.zones import DEFAULT_NUMA_ATTRIBUTES
from draledger.core.loading import READERS, Loaded, decide_release, load_items
from draledger.core.releases import Release
from draledger.core.state import ClusterState
from draledger.core.views.problems import show

MAX_DEPTH = 100  # a Kubernetes List nests a few dozen levels at most (a pod's affinity terms: 13)
MAX_EXPANSION = 10  # YAML aliases may repeat what was written, up to ten times over
MIN_BUDGET = 100_000  # ... or up to this many values, for short files
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
HEAD = 64 << 10  # characters read to decide whether a file can be a dump at all (rule 5)
CHUNK = 8 << 20  # characters read at a time after that
KUBECTL_GET = "kubectl get nodes,pods,resourceslices,resourceclaims -A -o json"
# The first line of a YAML List (after blank lines, comments, directives and "---"): one of its keys.
_YAML_LIST_KEY = re.compile(r"""^["']?(?:apiVersion|kind|items|metadata)["']?\s*:""")


class DumpError(Exception):
    """The whole file is unusable."""


class _TooDeep(yaml.YAMLError):
    pass


class _Loader(yaml.SafeLoader):
    """SafeLoader that leaves timestamps as written (as kubectl does: a Kubernetes timestamp is a string),
    stops at ``MAX_DEPTH`` levels of nesting, and counts the values it composes (aliases included once)."""

    yaml_implicit_resolvers = {  # noqa: RUF012 - a copy per class is how PyYAML's resolvers are customised
        first: [(tag, pattern) for tag, pattern in resolvers if tag != _TIMESTAMP]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0
        self.composed = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self.depth += 1
        self.composed += 1
        try:
            if self.depth > MAX_DEPTH:
                raise _TooDeep(f"nested more than {MAX_DEPTH} levels deep (a Kubernetes List nests a few dozen)")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


# JSON through msgspec: three times json.loads with parse_float=Decimal on real dumps (benchmarks/results/audit.md);
# numbers that are not integers still arrive as exact Decimals (rule 3).
_JSON = msgspec.json.Decoder(float_hook=Decimal)


def _stdlib_json(text: str, source: str) -> Any:
    try:
        return json.loads(text, parse_float=Decimal)
    except RecursionError:
        raise DumpError(
            f"{source}: nested too deeply for the JSON parser (a Kubernetes List nests a few dozen levels)"
        ) from None
    except ValueError as error:  # JSONDecodeError, or an integer of more than 4,300 digits
        raise DumpError(f"{source}: not valid JSON: {_one_line(error)}") from None


def parse_text(text: str, source: str) -> Any:
    stripped = text.lstrip()
    if not stripped:
        raise DumpError(f"{source}: empty input")
    if stripped[0] in "{[":
        try:
            return _JSON.decode(text)
        except RecursionError:
            raise DumpError(
                f"{source}: nested too deeply for the JSON parser (a Kubernetes List nests a few dozen levels)"
            ) from None
        except msgspec.ValidationError as error:  # an integer beyond what JSON tools read (Go's int64, uint64)
            raise DumpError(f"{source}: not usable JSON: {_one_line(error)}") from None
        except msgspec.DecodeError:
            return _stdlib_json(text, source)  # what msgspec refuses and JSON allows: lone surrogates
    try:
        loader = _Loader(text)  # rejects control characters already
        document = loader.get_single_data()
    except _TooDeep as error:
        raise DumpError(f"{source}: {error}") from None
    except RecursionError:  # merge keys (<<) chained through thousands of anchors
        raise DumpError(f"{source}: not valid YAML: nested too deeply") from None
    except Exception as error:  # any failure of the YAML library on untrusted text is a bad file
        raise DumpError(f"{source}: not valid JSON or YAML: {_one_line(error)}") from None
    return as_json_values(document, source, max(MIN_BUDGET, MAX_EXPANSION * loader.composed))


def _json_key(key: object) -> str:
    """A YAML map key as kubectl (sigs.k8s.io/yaml) turns it into a JSON object key."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool) or key is None:
        return json.dumps(key)
    return _json_value(key) if isinstance(key, date | bytes) else str(key)


def _json_value(value: Any) -> Any:
    """A YAML-only value as the closest JSON value; anything else unchanged."""
    if isinstance(value, datetime):
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")  # the text written under !!binary
    if isinstance(value, set | frozenset):
        return {_json_key(k): None for k in value}  # what !!set is written as: a map of nulls
    if isinstance(value, tuple):
        return list(value)  # an entry of !!omap or !!pairs: [key, value]
    return value


def as_json_values(document: Any, source: str, budget: int) -> Any:
    """The YAML document as JSON values (rule 4), in place, walked without recursion. More than ``budget``
    values visited (aliases expanded) is a DumpError: whatever reads the document would walk them all."""
    document = _json_value(document)
    stack = [document] if isinstance(document, dict | list) else []
    visited = 0
    while stack:
        node = stack.pop()
        visited += len(node)
        if visited > budget:
            raise DumpError(
                f"{source}: YAML aliases expand to more than {budget} values (a Kubernetes List uses none)"
            )
        if isinstance(node, dict):
            if not all(type(key) is str for key in node):
                entries = [(_json_key(key), value) for key, value in node.items()]
                node.clear()
                node.update(entries)
            entries_of: Iterable[tuple[Any, Any]] = node.items()
        else:
            entries_of = enumerate(node)
        changed = []
        for key, value in entries_of:
            plain = _json_value(value)
            if plain is not value:
                changed.append((key, plain))
            if isinstance(plain, dict | list):
                stack.append(plain)
        for key, plain in changed:
            node[key] = plain
    return document


def items_of(document: Any, source: str) -> list[Any]:
    if not isinstance(document, dict):
        raise DumpError(f"{source}: expected a kind: List object, got {type(document).__name__}")
    kind = document.get("kind")
    if isinstance(kind, str) and kind in READERS:
        meta = document.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        raise DumpError(
            f"{source}: expected kind: List, got a single {kind} {show(name)}: "
            f"dump with `kubectl get {kind.lower()}s ... -o json`, which prints a List even for one object"
        )
    if not (isinstance(kind, str) and kind.endswith("List")):
        raise DumpError(f"{source}: expected kind: List (kubectl get ... -o json), got kind: {show(kind)}")
    items = document.get("items")
    if not isinstance(items, list):
        raise DumpError(f"{source}: the List has no items array")
    return items


def sniff(head: str, source: str) -> None:
    """DumpError unless ``head``, the start of a file, can start a JSON or YAML List (rule 5)."""
    text = head.lstrip("\ufeff \t\r\n")
    if not text or text[0] in "{[":
        return  # empty input is parse_text's to name
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "%", "---")):
            continue
        if _YAML_LIST_KEY.match(line):
            return
        raise DumpError(
            f"{source}: neither JSON nor YAML of a List: it starts with {show(line[:40])} (JSON starts with {{ or "
            "[, YAML with an apiVersion, kind or items key)"
        )


def read_source(path: str, progress: Progress | None = None) -> str:
    """The text of ``path`` (``-``: standard input), refused from its first bytes when it cannot be a dump."""
    try:
        if path == "-":
            return _read(sys.stdin, path, progress)
        with open(path, encoding="utf-8") as stream:
            return _read(stream, path, progress)
    except UnicodeDecodeError as error:
        raise DumpError(f"{path}: cannot read: not UTF-8 text (byte {error.object[error.start]:#04x} at "
                        f"offset {error.start})") from None
    except OSError as error:
        raise DumpError(f"{path}: cannot read: {error.strerror or error}") from None


def _read(stream: Any, source: str, progress: Progress | None) -> str:
    head = stream.read(HEAD)
    sniff(head, source)
    parts = [head]
    done = len(head)
    while chunk := stream.read(CHUNK):
        parts.append(chunk)
        done += len(chunk)
        if progress is not None:
            progress.reading(source, done, len(chunk))
    return "".join(parts)


def load_paths(
    paths: Iterable[str], progress: Progress | None = None, release: Release | None = None,
    attributes: tuple[str, ...] = DEFAULT_NUMA_ATTRIBUTES,
) -> Loaded:
    """Load every dump into one state, whose zones read the NUMA ``attributes`` (later files win for objects that
    appear twice), and decide its release (``release``, or the dumps' own evidence: core.loading rule 3)."""
    loaded = Loaded(ClusterState(attributes=attributes))
    for path in paths:
        text = read_source(path, progress)
        if progress is not None:
            progress.step(f"parsing {path}")
        document = parse_text(text, path)
        del text  # as large as the file: freed before the views are built
        load_items(items_of(document, path), path, loaded)
    decide_release(loaded, release)
    return loaded


def require_nodes(loaded: Loaded, paths: Sequence[str]) -> None:
    """DumpError when the dumps hold no Node (rule 6): say what they hold and how to dump what is needed."""
    if loaded.state.nodes:
        return
    held = ", ".join(f"{count} {kind}" for kind, count in loaded.kinds.most_common()) or "no objects"
    raise DumpError(f"{', '.join(paths)}: the dump has no Node objects (it holds {held}): dump with {KUBECTL_GET}")


