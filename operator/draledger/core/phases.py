"""A ledger's phase: the one place its names are defined.

Rules (docs/accounting.md, 10 "Phases and conditions"; docs/operations.md, "Phases"):
1. The phase is the first that applies, in this order: Rebuilding (the operator is loading its caches), Frozen
   (``spec.frozen``: new claim pods stay gated), Stale (inputs missing or old), Overcommitted (requested exceeds
   allocatable), Ready.
2. Only a Ready ledger vouches for its node: the gate releases pods onto Ready nodes only (``SAFE``).
3. Stale, Overcommitted and Frozen are warnings (their Events are of type Warning).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class Phase(StrEnum):
    REBUILDING = "Rebuilding"
    FROZEN = "Frozen"
    STALE = "Stale"
    OVERCOMMITTED = "Overcommitted"
    READY = "Ready"


PHASES: Final[tuple[Phase, ...]] = tuple(Phase)  # rule 1's order
SAFE: Final = Phase.READY  # rule 2
WARNINGS: Final = frozenset({Phase.STALE, Phase.OVERCOMMITTED, Phase.FROZEN})  # rule 3
