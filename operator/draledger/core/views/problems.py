"""Problems: what was wrong with an object, named precisely enough to fix it.

A problem names the object (kind, namespace/name), the field path and the offending value. Readers collect
problems instead of raising, so the rest of the object (and every other object) is still accounted.

Rules:
1. Any JSON value in any position is a problem at worst, never an exception: a list where a map is expected,
   a map where a string is, nesting thousands of levels deep, an integer of 5,000 digits.
2. The offending value is shown in at most 80 characters, built without recursion and without walking more
   of the value than it shows (a YAML alias can make a value of billions of elements out of a short file).
3. A quantity of 10^2000 or more is out of range: no node has that much of anything, and the products the
   ledger takes of two such values (consumed capacity × multiplier) stay printable (Python prints no integer
   of more than 4,300 digits).
"""

from __future__ import annotations

from collections.abc import Mapping as AbstractMapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from draledger.core.quantities import NANO, Quantity, QuantityError, parse_quantity

SHOWN = 80  # characters of an offending value that a problem shows
MAGNITUDE = 2000  # quantities from 10^MAGNITUDE up are out of range (rule 3)
_OUT_OF_RANGE = 10**MAGNITUDE * NANO
INT64 = range(-(2**63), 2**63)


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
    # The releases whose API refuses (or does not know) what the problem names; None: every release.
    releases: frozenset[str] | None = None

    def applies(self, release: str) -> bool:
        return self.releases is None or release in self.releases

    def __str__(self) -> str:
        """One printable line, whatever the names and keys hold (a newline in a map key, a lone surrogate)."""
        where = f"{self.obj}" if self.obj else "input"
        if self.field:
            where += f" field {self.field}"
        shown = f" = {self.value}" if self.value else ""
        return printable(f"{self.reason}: {where}{shown}: {self.message}")


def printable(text: str) -> str:
    """``text`` with every character that does not print (a newline, a lone surrogate) written as its escape."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


class _Text(str):
    """Literal text on ``show``'s stack (brackets, separators), as opposed to a value still to be shown."""


def _scalar(value: object, room: int) -> str:
    if isinstance(value, str):
        return repr(value[: room + 1])[: room + 2]  # no more of a long string than can be shown
    try:
        return repr(value)
    except ValueError:  # an integer longer than repr() prints (4,300 digits): Decimal prints every digit
        return str(Decimal(value)) if type(value) is int else f"<{type(value).__name__}>"


def show(value: object, limit: int = SHOWN) -> str:
    """``repr(value)``, cut to ``limit`` characters (``...`` marks the cut), built without recursion and
    without walking more of ``value`` than it shows."""
    parts: list[str] = []
    size = 0
    stack: list[object] = [value]
    while stack and size <= limit:
        item = stack.pop()
        if isinstance(item, _Text):
            text: str = item
        elif isinstance(item, dict | list | tuple):
            text, closing = "{}" if isinstance(item, dict) else "()" if isinstance(item, tuple) else "[]"
            entries: list[object] = []
            for index, entry in enumerate(item.items() if isinstance(item, dict) else item):
                if len(entries) > limit:  # enough to fill the limit; the rest is never shown
                    break
                if index:
                    entries.append(_Text(", "))
                if isinstance(item, dict):
                    entries += [entry[0], _Text(": "), entry[1]]
                else:
                    entries.append(entry)
            if isinstance(item, tuple) and len(item) == 1:
                entries.append(_Text(","))
            stack.append(_Text(closing))
            stack.extend(reversed(entries))
        else:
            text = _scalar(item, limit - size)
        parts.append(text)
        size += len(text)
    shown = "".join(parts)
    if stack or len(shown) > limit:
        return shown[: limit - 3] + "..."
    return shown


@dataclass(slots=True)
class Reader:
    """Walks one raw body, collecting problems against its ObjectRef."""

    ref: ObjectRef
    problems: list[Problem] = field(default_factory=list)

    def bad(
        self, path: str, value: object, message: str, reason: str = "MalformedField",
        releases: frozenset[str] | None = None,
    ) -> None:
        self.problems.append(Problem(reason, message, self.ref, path, show(value), releases))

    def identity(self, raw: AbstractMapping[str, Any]) -> AbstractMapping[str, Any]:
        """``metadata``, with a name or namespace that is not a string named (``ref_of`` reads them as
        ``<unnamed>`` and no namespace)."""
        meta = self.mapping(raw.get("metadata"), "metadata")
        self.string(meta.get("name"), "metadata.name")
        self.string(meta.get("namespace"), "metadata.namespace")
        return meta

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
        """An int64, as every integer of the Kubernetes API is."""
        if raw is None:
            return default
        if isinstance(raw, int) and not isinstance(raw, bool):
            if raw in INT64:
                return raw
            self.bad(path, raw, "out of range: expected a 64-bit integer")
            return default
        self.bad(path, raw, "expected an integer")
        return default

    def quantity(self, raw: object, path: str) -> Quantity | None:
        if not isinstance(raw, str | int | float | Decimal) or raw is True or raw is False:
            # parse_quantity would reject it too, with the whole value in its message
            self.bad(path, raw, f"{show(raw)} is not a quantity")
            return None
        try:
            quantity = parse_quantity(raw)
        except QuantityError as error:
            message = str(error)
            self.bad(path, raw, message if len(message) <= 2 * SHOWN else f"{show(raw)} is not a quantity")
            return None
        if abs(quantity.nanos) >= _OUT_OF_RANGE:
            self.bad(path, raw, f"out of range: a quantity must be below 10^{MAGNITUDE}")
            return None
        return quantity

    def quantities(self, raw: object, path: str) -> dict[str, Quantity]:
        out: dict[str, Quantity] = {}
        for name, value in self.mapping(raw, path).items():
            parsed = self.quantity(value, f"{path}.{name}")
            if parsed is not None:
                out[name] = parsed
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
