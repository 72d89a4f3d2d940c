"""What the writer reads of a status write's answer (writing rule 9): the version and the spec, nothing else."""

from __future__ import annotations

import json

from draledger.operator.stored import decode_written


class TestWriteAnswers:
    def test_only_the_version_and_the_spec_are_read(self) -> None:
        answer = {"apiVersion": "draledger.dev/v1alpha1", "kind": "NodeAllocatableLedger",
                  "metadata": {"name": "n1", "resourceVersion": "42", "uid": "u"},
                  "spec": {"frozen": True, "reason": "repairs"},
                  "status": {"ledgerVersion": 7, "claims": [{"name": "c"}] * 50}}
        assert {"metadata": {"resourceVersion": "42"}, "spec": {"frozen": True, "reason": "repairs"}} == \
            decode_written(json.dumps(answer).encode())

    def test_an_answer_without_a_spec_or_a_version_reads_as_empty(self) -> None:
        assert {"metadata": {"resourceVersion": ""}, "spec": None} == decode_written(b'{"status": {}}')

    def test_an_answer_that_breaks_the_schema_is_read_whole(self) -> None:
        """A spec that is not an object, a version that is a number: read by json, as any answer."""
        raw = b'{"metadata": {"resourceVersion": 42}, "spec": "frozen"}'
        assert {"metadata": {"resourceVersion": 42}, "spec": "frozen"} == decode_written(raw)
