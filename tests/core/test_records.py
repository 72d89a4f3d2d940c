"""The release record (core.records): written and read in one place, and judged against a dump's ledgers."""

from __future__ import annotations

from typing import ClassVar

import pytest

from draledger.core.records import Record, Stored, check, parse, released


class TestText:
    @pytest.mark.parametrize("record", [
        pytest.param(Record({"worker-3": 42}), id="pinned"),
        pytest.param(Record({"a": 1, "b": None}), id="pinned-with-an-outside-node"),
        pytest.param(Record({}, True, "1234"), id="scheduled"),
        pytest.param(Record({}, True, ""), id="scheduled-no-revision"),
    ])
    def test_a_record_reads_back_as_written(self, record: Record) -> None:
        """``parse(text())`` is the record itself."""
        assert record == parse(record.text())

    def test_the_forms_the_docs_show(self) -> None:
        """``node@ledgerVersion=N`` joined by commas, ``node@outside``, ``*@resourceVersion=R``."""
        assert ["worker-3@ledgerVersion=42,worker-9@outside", "*@resourceVersion=77"] == [
            Record({"worker-3": 42, "worker-9": None}).text(), Record({}, True, "77").text()]

    @pytest.mark.parametrize("text", ["", "worker-3", "worker-3@ledgerVersion=x", "@ledgerVersion=1",
                                      "worker-3@ledgerVersion=1,", "w@somewhere"])
    def test_what_is_not_a_record(self, text: str) -> None:
        """A malformed annotation is no record (audit says so), never an exception."""
        assert parse(text) is None


class TestCheck:
    LEDGERS: ClassVar[dict[str, Stored]] = {"n1": Stored("Ready", 7), "n2": Stored("Stale", 3)}

    @pytest.mark.parametrize(("text", "node", "excluded", "why"), [
        pytest.param("n1@ledgerVersion=7", "n1", (), "", id="pinned-held"),
        pytest.param("n1@ledgerVersion=5", "n1", (), "", id="pinned-ledger-moved-on"),
        pytest.param("n1@ledgerVersion=9", "n1", (), "n1's ledger is at ledgerVersion 7, below the 9 it was "
                     "released on", id="pinned-ledger-went-back"),
        pytest.param("n1@ledgerVersion=7", "n2", (), "bound to n2, but released on n1@ledgerVersion=7 only",
                     id="pinned-bound-elsewhere"),
        pytest.param("n1@ledgerVersion=7", "", (), "", id="not-bound-yet"),
        pytest.param("*@resourceVersion=5", "n1", ("n2",), "", id="scheduled-held"),
        pytest.param("*@resourceVersion=5", "n2", ("n2",), "bound to n2, which its release kept it away from",
                     id="scheduled-bound-where-excluded"),
        pytest.param("n9@outside", "n9", (), "", id="outside"),
        pytest.param("nonsense", "n1", (), "draledger.dev/released-on 'nonsense' is not a record of a release",
                     id="malformed"),
    ])
    def test_a_record_against_the_dumps_ledgers(self, text: str, node: str, excluded: tuple[str, ...],
                                                why: str) -> None:
        """Bound where the record allows, and a named ledger only moved on."""
        assert why == check(parse(text), text, node, excluded, self.LEDGERS)


class TestReading:
    def test_a_pods_record_node_and_exclusions(self) -> None:
        """The annotation, ``spec.nodeName`` and every ``metadata.name NotIn`` value of its required terms."""
        term = {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n3", "n2"]}]}
        pod = {"metadata": {"name": "p", "namespace": "t", "annotations": {
            "draledger.dev/released-on": "*@resourceVersion=9"}},
               "spec": {"nodeName": "n1", "affinity": {"nodeAffinity": {
                   "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term, term]}}}}}
        found = released(pod)
        assert found is not None
        assert ("t", "p", "*@resourceVersion=9", "n1", ("n2", "n3")) == (
            found.namespace, found.name, found.text, found.node, found.excluded)

    @pytest.mark.parametrize("pod", [
        pytest.param({"metadata": {"name": "p"}}, id="no-annotation"),
        pytest.param({"metadata": {"annotations": "junk"}, "spec": "junk"}, id="junk"),
        pytest.param({"metadata": {"annotations": {"draledger.dev/released-on": 7}}}, id="not-text"),
    ])
    def test_a_pod_without_a_record(self, pod: dict[str, object]) -> None:
        """No record, or a malformed body: nothing, never an exception."""
        assert released(pod) is None
