"""What each reader reads of a raw body, declared beside it: the fields a decoder must keep (the operator's priming
builds its schemas from these declarations, operator.pages), and nothing of their types.

Rules:
1. A declaration is a tree: each field's name maps to ``LEAF`` (kept as sent, whatever it holds: a value of the
   wrong type still reaches the reader and becomes its named problem), ``PRESENCE`` (only whether it is there is
   read: never decoded), a ``Fields`` (an object of which only those fields are read) or a one-element list of a
   ``Fields`` (a list of such objects).
2. Every field a reader reads is declared, in the reader's own module: a test holds the view read from a body pruned
   to the declaration equal to the view read from the whole body (tests/operator/test_pages.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal, Union

LEAF: Final = "leaf"
PRESENCE: Final = "presence"
Field = Union[Literal["leaf", "presence"], "Fields", list["Fields"]]
Fields = Mapping[str, Field]

IDENTITY: Final[Fields] = {"name": LEAF, "namespace": LEAF, "uid": LEAF, "resourceVersion": LEAF}
