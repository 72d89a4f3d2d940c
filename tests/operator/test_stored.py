"""The writer's mirror of the stored ledgers (operator/stored.py), fed by hand: no Kopf, no HTTP."""

from __future__ import annotations

from typing import Any

from draledger.operator.stored import StoredLedgers
from draledger.operator.watching import LEDGERS_KIND


def ledger(name: str, uid: str, rv: str, version: int = 3, frozen: bool = False) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": uid, "resourceVersion": rv},
            "spec": {"frozen": frozen}, "status": {"ledgerVersion": version, "phase": "Ready"}}


def mirror() -> tuple[StoredLedgers, list[str]]:
    marked: list[str] = []
    stored = StoredLedgers(lambda: 100.0, marked.extend)
    stored.load(ledger("n1", "u1", "10"))
    stored.load(ledger("n2", "u2", "11"))
    return stored, marked


class TestStoredLedgers:
    def test_a_relist_forgets_what_it_no_longer_holds(self) -> None:
        """A ledger deleted during a watch gap that ends in a relist is created again (issue 13, item 3)."""
        stored, marked = mirror()
        stored.listed_object(LEDGERS_KIND, "u1")
        stored.listed_object("pods", "u2")  # another kind's listing says nothing of the ledgers
        stored.listing_done(LEDGERS_KIND)
        assert (True, False) == (stored.of("n1").exists, stored.of("n2").exists)
        assert ["n2"] == marked
        assert 3 == stored.of("n2").ledger_version  # versions never go back, even for a recreated ledger

    def test_a_deletion_of_another_uid_is_not_ours(self) -> None:
        """A DELETED event of an older object under the same name leaves the current one stored."""
        stored, marked = mirror()
        stored.ledger_event("DELETED", ledger("n1", "older", "12"))
        assert stored.of("n1").exists
        assert [] == marked
        stored.ledger_event("DELETED", ledger("n1", "u1", "13"))
        assert not stored.of("n1").exists
        assert ["n1"] == marked

    def test_an_event_not_newer_than_what_is_stored_is_skipped(self) -> None:
        """Our own write's echo (or anything older) changes nothing; a newer foreign edit is taken, versions
        kept at the highest seen, and the node marked to be written again."""
        stored, marked = mirror()
        stored.ledger_event("MODIFIED", ledger("n1", "u1", "9", version=1, frozen=True))
        assert (3, False, []) == (stored.of("n1").ledger_version, stored.frozen("n1"), marked)
        stored.ledger_event("MODIFIED", ledger("n1", "u1", "14", version=1, frozen=True))
        assert (3, 1, True, ["n1"]) == (stored.of("n1").ledger_version, stored.of("n1").guard_version,
                                        stored.frozen("n1"), marked)

    def test_a_node_gone_takes_its_entry(self) -> None:
        stored, _ = mirror()
        stored.forget("n1")
        assert ["n2"] == list(stored)
        assert ["n2"] == [name for name, _ in stored.existing()]
