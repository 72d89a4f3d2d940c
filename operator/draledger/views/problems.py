"""Problems: what was wrong with an object, named precisely enough to fix it.

A problem names the object (kind, namespace/name), the field path and the offending value. Readers collect
problems instead of raising, so the rest of the object (and every other object) is still accounted.
"""

from __future__ import annotations

from collections.abc import Mapping as AbstractMapping
from dataclasses import dataclass, field
from typing import Any

from draledger.quantities import PARSED, Quantity, QuantityError, parse_quantity


@dataclass(frozen=True, slots=True)
class ObjectRef:
    kind: str
    name: str
    namespace: str = ""

    def __str__(self) -> str:
        path = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {path}"


@dataclass(frozen=True, slots=True)
class Problem:
    """One defect, with a reason code users can grep for (``MalformedField``, ``InvalidMapping``, ...)."""

    reason: str
    message: str
    obj: ObjectRef | None = None
    field: str = ""
    value: str = ""

    def __str__(self) -> str:
        where = f"{self.obj}" if self.obj else "input"
        if self.field:
            where += f" field {self.field}"
        shown = f" = {self.value}" if self.value else ""
        return f"{self.reason}: {where}{shown}: {self.message}"


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass(slots=True)
class Reader:
    """Walks one raw body, collecting problems against its ObjectRef."""

    ref: ObjectRef
    problems: list[Problem] = field(default_factory=list)

    def bad(self, path: str, value: object, message: str, reason: str = "MalformedField") -> None:
        self.problems.append(Problem(reason, message, self.ref, path, _show(value)))

    def mapping(self, raw: object, path: str) -> AbstractMapping[str, Any]:
        if raw is None:
            return {}
        if isinstance(raw, dict):
            return raw
        self.bad(path, raw, "expected an object")
        return {}

    def items(self, raw: object, path: str) -> list[Any]:
        if raw is None:
            return []
        if isinstance(raw, list):
            return raw
        self.bad(path, raw, "expected a list")
        return []

    def string(self, raw: object, path: str, default: str = "") -> str:
        if raw is None:
            return default
        if isinstance(raw, str):
            return raw
        self.bad(path, raw, "expected a string")
        return default

    def integer(self, raw: object, path: str, default: int = 0) -> int:
        if raw is None:
            return default
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        self.bad(path, raw, "expected an integer")
        return default

    def quantity(self, raw: object, path: str) -> Quantity | None:
        try:
            return parse_quantity(raw)
        except QuantityError as error:
            self.bad(path, raw, str(error))
            return None

    def quantities(self, raw: object, path: str) -> dict[str, Quantity]:
        out: dict[str, Quantity] = {}
        for name, value in self.mapping(raw, path).items():
            parsed = self.quantity(value, f"{path}.{name}")
            if parsed is not None:
                out[name] = parsed
        return out


class Bail(Exception):
    """Raised by the fast readers when a body is not plainly well formed: the full reader then runs.

    The fast readers (``read_pod``, ``read_claim``, each device of ``read_slice``) build no field paths and
    no problems. On anything the full reader would report (a wrong type, an unparsable quantity, a missing
    required field) they give up, and the full reader reads the same body from the start, so the view and
    its problems (in order) are exactly the full reader's.
    """


def fast_mapping(raw: object) -> AbstractMapping[str, Any]:
    """``Reader.mapping`` without a problem: None reads as empty; anything but a dict bails."""
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return raw
    raise Bail


def fast_items(raw: object) -> list[Any]:
    if raw is None:
        return []
    if isinstance(raw, list):
        return raw
    raise Bail


def fast_string(raw: object, default: str = "") -> str:
    if raw is None:
        return default
    if isinstance(raw, str):
        return raw
    raise Bail


def fast_quantity(raw: object) -> Quantity:
    try:
        return parse_quantity(raw)
    except QuantityError:
        raise Bail from None


def fast_quantities(raw: object) -> dict[str, Quantity]:
    """``Reader.quantities`` when every value parses; bails otherwise."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise Bail
    out: dict[str, Quantity] = {}
    parsed = PARSED
    try:
        for name, value in raw.items():
            quantity = parsed.get(value) if type(value) is str else None
            out[name] = quantity if quantity is not None else parse_quantity(value)
    except QuantityError:
        raise Bail from None
    return out


def ref_of(raw: AbstractMapping[str, Any], kind: str) -> ObjectRef:
    meta = raw.get("metadata")
    if not isinstance(meta, dict):
        return ObjectRef(kind, "<unnamed>")
    name = meta.get("name")
    namespace = meta.get("namespace")
    return ObjectRef(
        kind,
        name if isinstance(name, str) and name else "<unnamed>",
        namespace if isinstance(namespace, str) else "",
    )
