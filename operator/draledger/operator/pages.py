"""LIST pages decoded into only what the views read (priming's decoder).

A pod in a real cluster is 8 to 26 KiB of JSON (env, volumes, probes, managed fields, container statuses), of
which the ledger's view reads a few hundred bytes. Decoding a whole page into dicts allocates every field of
every object, only for the reference counts to free them a moment later, interleaved with the views that stay:
the heap keeps the holes (benchmarks/results/scale.md). So each kind's page is decoded against a schema of the fields
its reader looks at, and msgspec skips every other field without building it.

Rules:
1. The schemas are built from what each reader declares it reads (``FIELDS`` beside it: core.views.fields), never
   written here a second time: ``TypedDict``s with every key optional, so a decoded object is a plain ``dict``
   with the same keys as the full one, less those no reader looks at. Each reader gets exactly the values it would
   get from the full object; ``tests/operator/test_pages.py`` holds the views equal over the conformance dumps,
   the benchmark's realistic objects and malformed ones.
2. Only containers are pruned; every leaf (and every object a reader may quote in a problem) is ``Any``, kept
   as sent, so a value of the wrong type still reaches the reader and becomes its named problem. A field whose
   presence only is read is ``msgspec.Raw``: never decoded.
3. A page the schema refuses (an object where a list was expected, say) is decoded whole, untyped
   (``priming.decode``): a malformed object costs its page the saving, never its correctness.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypedDict, TypeVar

import msgspec

from draledger.core.views import claims, nodes, pods, slices
from draledger.core.views.fields import LEAF, PRESENCE, Field, Fields


def schema(name: str, fields: Fields) -> Any:
    """The ``TypedDict`` that keeps ``fields`` of an object (rules 1 and 2), every key optional."""
    typed_dict: Any = TypedDict  # the functional form, which mypy does not follow with computed fields
    return typed_dict(name, {key: _typed(f"{name}_{key}", field) for key, field in fields.items()}, total=False)


def _typed(name: str, field: Field) -> Any:
    if field == LEAF:
        return Any
    if field == PRESENCE:
        return msgspec.Raw
    if isinstance(field, list):
        return list[schema(name, field[0])]  # type: ignore[misc]
    assert isinstance(field, Mapping)
    return schema(name, field)


Item = TypeVar("Item")


class Page(TypedDict, Generic[Item], total=False):
    """A list response: its ``metadata`` (the version, the continue token) whole, its items pruned."""

    metadata: Any
    items: list[Item]


SCHEMAS: dict[str, Any] = {
    "pods": Page[schema("Pod", pods.FIELDS)],  # type: ignore[misc]
    "nodes": Page[schema("Node", nodes.FIELDS)],  # type: ignore[misc]
    "resourceclaims": Page[schema("ResourceClaim", claims.FIELDS)],  # type: ignore[misc]
    "resourceslices": Page[schema("ResourceSlice", slices.FIELDS)],  # type: ignore[misc]
}
DECODERS: dict[str, msgspec.json.Decoder[Any]] = {kind: msgspec.json.Decoder(t) for kind, t in SCHEMAS.items()}
