"""What the story prints: the frame of each step (the ledgers, the held pods) and the final ledgers.

Rules:
1. A frame is text only, built afresh from the cluster each time it is drawn; how it reaches the output
   (redrawn on a terminal, written once in a pipe) is :class:`draledger.demo.screen.Screen`'s business.
2. Tables come from :mod:`draledger.commands.tables`, the ones ``draledger audit`` prints: the demo shows
   the operator's ledgers as a user would see them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from draledger.commands import tables
from draledger.core.accounting.release import GATE
from draledger.demo.observing import Observer
from draledger.demo.screen import Screen

__all__ = ["Board", "describe_devices"]

STEPS: Final = 6


def describe_devices(devices: Sequence[str]) -> str:
    """``gpu-1, 4 cores, hugepages-2mi-1``: cores are counted, other devices named."""
    cores = [d for d in devices if d.startswith("core-")]
    named = [d for d in devices if not d.startswith("core-")]
    if cores:
        named.insert(min(1, len(named)), f"{len(cores)} core{'s' if len(cores) > 1 else ''}")
    return ", ".join(named)


class Board:
    """The current step's frame: its number and title, what it explains, notes, and a progress line."""

    def __init__(self, observer: Observer, screen: Screen) -> None:
        self.observer = observer
        self.screen = screen
        self.number = 0
        self.title = ""
        self.lines: list[str] = []
        self.notes: list[str] = []
        self.progress = ""

    def frame(self) -> str:
        parts = [f"== [{self.number}/{STEPS}] {self.title} =="]
        parts += [f"   {line}" for line in self.lines]
        parts.append("")
        ledgers = self.observer.ledgers()
        parts.append(tables.ledger_table(ledgers).rstrip("\n") if ledgers else "(no ledgers yet)")
        held = self.observer.held()
        if held:
            counts = ", ".join(f"{reason}={count}" for reason, count in self.observer.gated_counts().items()) or "-"
            parts.append("")
            parts.append(f"Held by {GATE} (metric draledger_gated_pods: {counts}):")
            rows = [list(row) for row in held]
            parts += ["  " + line for line in tables.render(("POD", "REASON", "WHY"), rows).rstrip("\n").split("\n")]
        if self.notes:
            parts.append("")
            parts += [f"  - {note}" for note in self.notes]
        if self.progress:
            parts.append("")
            parts.append(self.progress)
        return "\n".join(parts) + "\n"

    def begin(self, title: str, *lines: str) -> None:
        self.number += 1
        self.title, self.lines, self.notes, self.progress = title, list(lines), [], ""
        self.show()

    def note(self, text: str) -> None:
        self.notes.append(text)
        self.show()

    def show(self) -> None:
        self.screen.live(self.frame())

    def commit(self) -> None:
        self.screen.commit(self.frame())

    def final(self, elapsed: float) -> None:
        """The final ledgers with their NUMA zones, and a one-line summary of what the operator did."""
        observer = self.observer
        ledgers = observer.ledgers()
        self.screen.say("== Final ledgers (with NUMA zones) ==")
        self.screen.say(tables.ledger_table(ledgers, numa=True))
        claims = sum(int(ledger["status"].get("claimCount") or 0) for ledger in ledgers)
        phases = sorted({ledger["status"]["phase"] for ledger in ledgers})
        released = observer.counter("draledger_gate_releases_total")
        backfilled = observer.counter("draledger_status_writes_total", {"target": "pod-status"})
        versions = ", ".join(f"{o['status']['nodeName']}={o['status'].get('mappingVersion')}" for o in ledgers)
        self.screen.say(
            f"{len(ledgers)} ledgers {'/'.join(phases)}; {claims} claims, each counted once; "
            f"{released} gates released, {observer.holds()} holds, each explained by an Event; "
            f"{backfilled} pod status backfilled; mappingVersion {versions}; {elapsed:.1f}s"
        )
