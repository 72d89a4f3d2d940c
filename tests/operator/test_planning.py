"""The writer's plan (operator.planning): the versions a write carries, and no write where the content is stored."""

from __future__ import annotations

from draledger.core.accounting.ledger import Ledger
from draledger.core.loading import load
from draledger.operator.planning import plan
from draledger.operator.stored import Stored
from strategies import container, device, node_obj, pod_obj, slice_obj

NOW = "2026-12-06T10:00:00Z"


def ledger(multiplier: str = "2", cpu: str = "1") -> Ledger:
    cores = slice_obj("s", devices=[device("c0", v136={"cpu": {"allocationMultiplier": multiplier}})])
    state = load([node_obj("n1", allocatable={"cpu": "8"}), cores,
                  pod_obj("p", containers=[container("a", {"cpu": cpu})])], "test").state
    found = state.ledger("n1")
    assert found is not None
    return found


def stored_after(body: dict[str, object]) -> Stored:
    """What the mirror holds once ``body`` is written."""
    stored = Stored()
    stored.read({"metadata": {"name": "n1", "uid": "u"}, "status": body})
    return stored


def test_a_first_write_carries_versions_one() -> None:
    """Nothing stored: the body carries ledgerVersion 1 and mappingVersion 1."""
    body, _ = plan(ledger(), Stored(), NOW)
    assert body is not None
    assert (1, 1) == (body["ledgerVersion"], body["mappingVersion"])


def test_the_stored_content_plans_no_write() -> None:
    """The same content as stored, at another moment: no write."""
    first, content = plan(ledger(), Stored(), NOW)
    assert first is not None
    assert (None, content) == plan(ledger(), stored_after(first), "2026-12-06T11:00:00Z")


def test_a_pod_moves_the_ledger_version_and_a_mapping_the_mapping_version() -> None:
    """A new request is a new ledgerVersion under the same mappingVersion; a new mapping moves both."""
    first, _ = plan(ledger(), Stored(), NOW)
    assert first is not None
    pod, _ = plan(ledger(cpu="2"), stored_after(first), NOW)
    mapping, _ = plan(ledger(multiplier="3"), stored_after(first), NOW)
    assert pod is not None
    assert mapping is not None
    assert ((2, 1), (2, 2)) == ((pod["ledgerVersion"], pod["mappingVersion"]),
                                (mapping["ledgerVersion"], mapping["mappingVersion"]))
