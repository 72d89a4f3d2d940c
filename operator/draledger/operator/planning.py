"""What one node's ledger needs written, decided against what is stored: a pure plan, which the writer only
schedules and sends (operator.writing).

Rules (operator.writing, rules 3 and 5):
1. The status body is built once, with the versions a write would carry: ``ledgerVersion`` the stored one + 1, and
   ``mappingVersion`` one more when the mapping fingerprint differs from the stored one (or none was stored yet).
   Each condition's ``lastTransitionTime`` continues from the stored conditions (core.bodies).
2. Write only on a semantic change: the body's content (all but versions and timestamps: ``semantic_content``) is
   compared with what is stored; equal content plans no write (``Planned.body`` is None).
3. Nothing here reads a clock or the world: ``now`` is given, and what is stored is the writer's mirror (``stored``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from draledger.core.accounting.ledger import Ledger
from draledger.core.bodies import status_body
from draledger.operator.stored import Stored, semantic_content


class Planned(NamedTuple):
    body: dict[str, Any] | None  # the status to write; None: what is stored holds it already (rule 2)
    content: bytes  # the body's semantic content


def plan(ledger: Ledger, stored: Stored, now: str) -> Planned:
    """Rules 1 and 2 for ``ledger`` against what is stored of its node."""
    mapping_version = stored.mapping_version
    if ledger.mapping_fingerprint != stored.fingerprint or mapping_version == 0:
        mapping_version += 1
    body = status_body(ledger, ledger_version=stored.ledger_version + 1, mapping_version=mapping_version, now=now,
                       previous_conditions=stored.conditions)
    content = semantic_content(body)
    if stored.exists and stored.has_status and stored.content == content:
        return Planned(None, content)
    return Planned(body, content)


BACKOFF_BASE = 0.5
BACKOFF_CAP = 30.0


def next_pause(window: float, window_max: float, batch_seconds: float) -> float:
    """How long the next batch waits: the window, or as long as the last batch took (at most ``window_max``)."""
    return max(window, min(batch_seconds, window_max))


def backoff(failures: int) -> float:
    """Seconds a node waits after its ``failures``-th consecutive failed write."""
    return float(min(BACKOFF_CAP, BACKOFF_BASE * 2 ** max(0, failures - 1)))


@dataclass(slots=True)
class Plan:
    """One node's write, decided synchronously: the status body (None: nothing to write) and its content."""

    ledger: Ledger
    body: dict[str, Any] | None
    content: bytes
    dirty_since: float
    generation: int  # the node's generation the ledger was computed at (Runtime.mark)


@dataclass
class Backoffs:
    """Each node's consecutive failed writes, and when it may be tried again (operator.writing, rule 2)."""

    failures: dict[str, int] = field(default_factory=dict)
    retry_at: dict[str, float] = field(default_factory=dict)

    def due(self, node: str, now: float) -> bool:
        return self.retry_at.get(node, 0.0) <= now

    def succeeded(self, node: str) -> None:
        self.failures.pop(node, None)
        self.retry_at.pop(node, None)

    def failed(self, node: str, now: float) -> float:
        """One more failure: the seconds the node waits."""
        failures = self.failures[node] = self.failures.get(node, 0) + 1
        delay = backoff(failures)
        self.retry_at[node] = now + delay
        return delay

    def clear(self) -> None:
        self.failures.clear()
        self.retry_at.clear()
