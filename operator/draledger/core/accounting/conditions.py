"""A ledger's conditions and phase, from its lines, its claims and the shell's flags.

Rules (docs/accounting.md, 10 "Phases and conditions"; ``metav1.Condition`` types):
1. ``Fresh`` is False when the Node is not Ready (``NodeNotReady``) or, in the operator, the watch data is older
   than the freshness window (``WatchStale``).
2. ``MappingsComplete`` is False when a claim does not resolve (``MissingResourceClaim``, ``MissingResourceSlice``,
   ``MissingDevice``, ``InvalidPool``), a pool is incomplete (``IncompletePool``) or a slice went back to an older
   pool generation (``GenerationRegression``).
3. ``SchedulerInSync`` is False when ``claims != schedulerCharged`` for some resource (``Diverged``).
4. ``Fits`` is False when ``requested > allocatable`` for some resource, judged in the scheduler's units
   (``Overcommitted``).
5. The phase is the first of core.phases' order that applies.
"""

from __future__ import annotations

from dataclasses import dataclass

from draledger.core.phases import Phase
from draledger.core.quantities import ZERO, Quantity


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str  # "True" | "False"
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Line:
    """What the conditions read of one resource line."""

    name: str
    claims: Quantity
    scheduler_charged: Quantity
    requested: Quantity
    allocatable: Quantity
    requested_units: int
    allocatable_units: int


def fresh(node_ready: bool, node_name: str, ready_reason: str, watch_stale: str) -> Condition:
    """Rule 1."""
    if not node_ready:
        return Condition("Fresh", "False", "NodeNotReady", f"node {node_name} is not Ready ({ready_reason})")
    if watch_stale:
        return Condition("Fresh", "False", "WatchStale", watch_stale)
    return Condition("Fresh", "True", "Fresh", "all inputs are current")


def mappings_complete(stale_reasons: set[str], broken: list[str]) -> Condition:
    """Rule 2: ``broken`` names each claim that does not resolve, with its problems."""
    if not stale_reasons:
        return Condition("MappingsComplete", "True", "AllResolved", "every claim resolves to a published device")
    detail = "; ".join(broken[:5]) + (f" (+{len(broken) - 5} more)" if len(broken) > 5 else "")
    if "IncompletePool" in stale_reasons:
        detail = "a pool is incomplete" + ("; " + detail if detail else "")
    if "InvalidPool" in stale_reasons and not broken:
        detail = "a pool is invalid" + ("; " + detail if detail else "")
    if "GenerationRegression" in stale_reasons:
        detail = "a ResourceSlice went back to an older pool generation" + ("; " + detail if detail else "")
    return Condition("MappingsComplete", "False", sorted(stale_reasons)[0], detail)


def scheduler_in_sync(lines: list[Line]) -> Condition:
    """Rule 3."""
    diffs = [f"{line.name}: ledger {line.claims}, scheduler {line.scheduler_charged}"
             for line in lines if line.claims != line.scheduler_charged]
    if diffs:
        return Condition("SchedulerInSync", "False", "Diverged", "; ".join(diffs))
    return Condition("SchedulerInSync", "True", "Matched", "the scheduler charged what the ledger counts")


def fits(lines: list[Line]) -> Condition:
    """Rule 4."""
    over = [_overcommitted(line) for line in lines if line.allocatable_units - line.requested_units < 0]
    if over:
        return Condition("Fits", "False", "Overcommitted", "; ".join(over))
    return Condition("Fits", "True", "Fits", "requested fits in allocatable for every resource")


def _overcommitted(line: Line) -> str:
    if line.allocatable - line.requested < ZERO:
        return f"{line.name}: requested {line.requested} > allocatable {line.allocatable}"
    unit = "m" if line.name == "cpu" else ""
    return (
        f"{line.name}: requested {line.requested}, rounded up pod by pod as the scheduler charges it, is "
        f"{line.requested_units}{unit} > allocatable {line.allocatable_units}{unit}"
    )


def phase(rebuilding: bool, frozen: bool, conditions: tuple[Condition, ...]) -> Phase:
    """Rule 5."""
    status = {c.type: c.status for c in conditions}
    if rebuilding:
        return Phase.REBUILDING
    if frozen:
        return Phase.FROZEN
    if status["Fresh"] == "False" or status["MappingsComplete"] == "False":
        return Phase.STALE
    if status["Fits"] == "False":
        return Phase.OVERCOMMITTED
    return Phase.READY
