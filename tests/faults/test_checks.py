"""The fault suite's own judges, on hand-made timelines: they must flag what they exist to flag."""

from __future__ import annotations

import copy
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from draledger.core.accounting.release import ANNOTATION, GATE
from draledger.demo.emulator import Change
from tests.faults.checks import judge, sent_times
from tests.faults.objects import allocation, claim_body, cpu_slice, node_body, pod_body
from tests.faults.timeline import OPERATOR, Entry
from tests.faults.world import looping

LEDGERS = "nodeallocatableledgers"


class Recorder:
    """Builds a timeline by hand: every change stored at a given moment by a given actor."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.rv = 0

    def put(self, at: float, plural: str, obj: dict[str, Any], actor: str = "churn") -> dict[str, Any]:
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.rv)
        key = (plural, obj["metadata"]["name"])
        old = self.objects.get(key)
        self.objects[key] = obj
        self.entries.append(Entry(at, plural, Change(self.rv, "MODIFIED" if old else "ADDED", obj, old), actor))
        return obj

    def cluster(self) -> None:
        for name in ("n1", "n2"):
            self.put(0.0, "nodes", node_body(name))
            self.put(0.0, "resourceslices", cpu_slice(name, 1))

    def release(self, at: float, pod: dict[str, Any], *, away_from: list[str] | None = None,
                pinned: list[str] | None = None, record: str = "*@resourceVersion=1") -> None:
        released = copy.deepcopy(pod)
        released["spec"]["schedulingGates"] = [g for g in pod["spec"]["schedulingGates"] if g["name"] != GATE]
        released["metadata"]["annotations"] = {ANNOTATION: record}
        if away_from or pinned:
            requirement = {"key": "metadata.name", "operator": "In" if pinned else "NotIn",
                           "values": pinned or away_from}
            released["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [requirement]}]}}}
        self.put(at, "pods", released, OPERATOR)


def not_ready(name: str) -> dict[str, Any]:
    node = node_body(name)
    node["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletDown"}]
    return node


def ledger(name: str, version: int, mapping: int, owner: str = "uid-1", frozen: bool = False,
           phase: str = "Ready") -> dict[str, Any]:
    return {"metadata": {"name": name, "ownerReferences": [{"uid": owner}]}, "spec": {"frozen": frozen},
            "status": {"ledgerVersion": version, "mappingVersion": mapping, "phase": phase}}


class TestReleasesByTheRecord:
    """The second judge: only what was stored at the moment of each release."""

    @staticmethod
    def written(phases: dict[str, str], at: float = 1.0) -> Recorder:
        timeline = Recorder()
        timeline.cluster()
        for name, phase in phases.items():
            timeline.put(at, LEDGERS, ledger(name, 3, 1, phase=phase), OPERATOR)
        timeline.put(1.0, "resourceclaims", claim_body("c"))
        return timeline

    @staticmethod
    def gated(timeline: Recorder, name: str) -> dict[str, Any]:
        return timeline.put(1.0, "pods", pod_body(name, "100m", claim="c", gates=(GATE,)))

    def test_a_release_ahead_of_the_stored_ledger_is_wrong(self) -> None:
        """n2's ledger still stored Rebuilding (the operator's memory says Ready): the pod may go there."""
        timeline = self.written({"n1": "Ready", "n2": "Rebuilding"})
        timeline.release(5.0, self.gated(timeline, "p"))
        assert ["faults/p at 5.000: n2 stored Rebuilding"] == judge(timeline.entries).by_record

    def test_a_node_with_no_ledger_stored_must_be_kept_away(self) -> None:
        """Not written yet is not Ready: without a NotIn for n2 the release is wrong, with it right."""
        timeline = self.written({"n1": "Ready"})
        timeline.release(5.0, self.gated(timeline, "p1"))
        timeline.release(6.0, self.gated(timeline, "p2"), away_from=["n2"])
        assert ["faults/p1 at 5.000: n2 stored nothing"] == judge(timeline.entries).by_record

    def test_a_pinned_release_names_a_version_stored_ready(self) -> None:
        """``n1@ledgerVersion=3`` after n1 was stored Ready at 3 is right; naming 4, never stored, is wrong; and
        a ledger that turned Stale before the release lands is wrong whatever was named."""
        timeline = self.written({"n1": "Ready"})
        timeline.release(2.0, self.gated(timeline, "p1"), pinned=["n1"], record="n1@ledgerVersion=3")
        timeline.release(3.0, self.gated(timeline, "p2"), pinned=["n1"], record="n1@ledgerVersion=4")
        timeline.put(4.0, LEDGERS, ledger("n1", 4, 1, phase="Stale"), OPERATOR)
        timeline.release(5.0, self.gated(timeline, "p3"), pinned=["n1"], record="n1@ledgerVersion=3")
        assert ["faults/p2 at 3.000: n1 never stored Ready at ledgerVersion 4 (now 3)",
                "faults/p3 at 5.000: n1 stored Stale"] == judge(timeline.entries).by_record

    def test_a_release_must_say_what_it_relied_on(self) -> None:
        """No record at all is wrong, even onto Ready ledgers; so is a record that names fewer nodes than the
        pod may go to."""
        timeline = self.written({"n1": "Ready", "n2": "Ready"})
        timeline.release(2.0, self.gated(timeline, "p1"), record="")
        timeline.release(3.0, self.gated(timeline, "p2"), record="n1@ledgerVersion=3")
        assert [f"faults/p1 at 2.000: no {ANNOTATION} record",
                "faults/p2 at 3.000: record n1@ledgerVersion=3 but the pod may go to ['n1', 'n2']"] == judge(
            timeline.entries).by_record

    def test_another_actors_change_is_not_held_against_a_release_within_the_grace(self) -> None:
        """A ledger deleted by someone else 0.2 s before the release: the operator could not have known; two
        seconds later it could."""
        timeline = self.written({"n1": "Ready", "n2": "Ready"})
        first, second = self.gated(timeline, "p1"), self.gated(timeline, "p2")
        deleted = copy.deepcopy(timeline.objects[(LEDGERS, "n2")])
        timeline.entries.append(Entry(4.8, LEDGERS, Change(99, "DELETED", deleted, None), "churn"))
        timeline.release(5.0, first)
        timeline.release(7.0, second)
        assert ["faults/p2 at 7.000: n2 stored nothing"] == judge(timeline.entries).by_record

    @pytest.mark.parametrize(("deleted_at", "sent", "wrong"), [
        pytest.param(4.3, None, True, id="no-log-judged-from-the-landing"),
        pytest.param(4.3, 4.2, False, id="deleted-after-the-decision"),
        pytest.param(1.5, 0.5, True, id="the-log-trusted-for-FLIGHT-only"),
    ])
    def test_a_change_after_the_decision_is_not_held_against_a_release_in_flight(
            self, deleted_at: float, sent: float | None, wrong: bool) -> None:
        """A release landing at 5.5, n2's ledger deleted by someone else at 4.3: sent at 4.2 (the store slow to
        take it), its decider saw n2 Ready and could not call the patch back; with no log, the deletion 1.2 s
        before the landing stands against it; a log that puts the sending 5 s back is trusted for FLIGHT
        (2.5 s) only, so a deletion at 1.5 stands too."""
        timeline = self.written({"n1": "Ready", "n2": "Ready"})
        pod = self.gated(timeline, "p")
        deleted = copy.deepcopy(timeline.objects[(LEDGERS, "n2")])
        timeline.entries.append(Entry(deleted_at, LEDGERS, Change(99, "DELETED", deleted, None), "churn"))
        timeline.release(5.5, pod)
        verdict = judge(timeline.entries, sent={} if sent is None else {"faults/p": [sent]}).by_record
        assert (["faults/p at 5.500: n2 stored nothing"] if wrong else []) == verdict


class TestReleases:
    @pytest.mark.parametrize(("down_at", "wrong"), [
        pytest.param(3.0, ["n2"], id="unsafe-for-the-whole-grace"),
        pytest.param(4.5, [], id="unsafe-only-within-the-grace"),
    ])
    def test_a_release_onto_a_node_not_ready_for_longer_than_the_grace(self, down_at: float, wrong: list[str]) -> None:
        """A pod allowed onto n2 while n2 had been NotReady for a second is wrong; for half a second it is not."""
        timeline = Recorder()
        timeline.cluster()
        timeline.put(1.0, "resourceclaims", claim_body("c"))
        pod = timeline.put(1.0, "pods", pod_body("p", "100m", claim="c", gates=(GATE,)))
        timeline.put(down_at, "nodes", not_ready("n2"))
        timeline.release(5.0, pod)
        (release,) = judge(timeline.entries).releases
        assert wrong == sorted(release.wrong)

    @pytest.mark.parametrize(("down_at", "sent", "wrong"), [
        pytest.param(4.0, None, ["n2"], id="no-log-judged-from-the-landing"),
        pytest.param(4.0, 3.4, [], id="decided-before-the-node-went-down"),
        pytest.param(2.0, 0.5, ["n2"], id="the-log-trusted-for-FLIGHT-only"),
    ])
    def test_a_release_is_judged_from_when_it_was_sent(self, down_at: float, sent: float | None,
                                                        wrong: list[str]) -> None:
        """A release landing at 5.5: sent at 3.4 (the store slow to take it) while n2 went NotReady at 4.0,
        its decider saw n2 Ready within the grace; a log that puts its sending 5 s back is trusted for FLIGHT
        (2.5 s) only, so n2 NotReady from 2.0 is held against it."""
        timeline = Recorder()
        timeline.cluster()
        timeline.put(1.0, "resourceclaims", claim_body("c"))
        pod = timeline.put(1.0, "pods", pod_body("p", "100m", claim="c", gates=(GATE,)))
        timeline.put(down_at, "nodes", not_ready("n2"))
        timeline.release(5.5, pod)
        (release,) = judge(timeline.entries, sent={} if sent is None else {"faults/p": [sent]}).releases
        assert wrong == sorted(release.wrong)

    def test_the_sending_is_read_from_the_operators_log(self, tmp_path: Path) -> None:
        """``gate released`` lines give the sending (the answer less ``answered_in``); other lines, and a line
        a SIGKILL cut, give nothing."""
        now = datetime.now(UTC)
        line = {"event": "gate released", "pod": "faults/p", "answered_in": 1.25,
                "timestamp": now.isoformat().replace("+00:00", "Z")}
        (tmp_path / "operator-0.log").write_text("\n".join([
            json.dumps(line), json.dumps({"event": "ledger written", "timestamp": line["timestamp"]}),
            '{"event": "gate released", "pod": "faults/q", "answ']) + "\n")
        sent = sent_times([tmp_path / "operator-0.log"])
        assert ["faults/p"] == list(sent)
        expected = now.timestamp() - 1.25 - (time.time() - time.monotonic())
        assert sent["faults/p"][0] == pytest.approx(expected, abs=0.05)

    def test_a_release_that_keeps_away_from_the_unsafe_node_is_right(self) -> None:
        """The operator's NotIn affinity takes the unsafe node out of the judgement."""
        timeline = Recorder()
        timeline.cluster()
        timeline.put(1.0, "resourceclaims", claim_body("c"))
        pod = timeline.put(1.0, "pods", pod_body("p", "100m", claim="c", gates=(GATE,)))
        timeline.put(2.0, "nodes", not_ready("n2"))
        timeline.release(5.0, pod, away_from=["n2"])
        assert [set()] == [r.wrong for r in judge(timeline.entries).releases]

    def test_a_frozen_ledger_makes_its_node_unsafe(self) -> None:
        """spec.frozen of a ledger counts, as Flags(frozen=True) does for the operator."""
        timeline = Recorder()
        timeline.cluster()
        timeline.put(1.0, LEDGERS, ledger("n1", 1, 1, frozen=True))
        timeline.put(1.0, "resourceclaims", claim_body("c"))
        pod = timeline.put(1.0, "pods", pod_body("p", "100m", claim="c", gates=(GATE,)))
        timeline.release(5.0, pod)
        assert [{"n1"}] == [r.wrong for r in judge(timeline.entries).releases]

    @pytest.mark.parametrize("device", [pytest.param("c9", id="device-not-published"),
                                        pytest.param("c1", id="pool-incomplete")])
    def test_a_pinned_pod_whose_claim_does_not_resolve(self, device: str) -> None:
        """An allocated claim on an unpublished device, or in an incomplete pool, makes the pod itself unsafe."""
        timeline = Recorder()
        timeline.cluster()
        if device == "c1":
            incomplete = cpu_slice("n1", 2)
            incomplete["spec"]["pool"]["resourceSliceCount"] = 2
            timeline.put(0.5, "resourceslices", incomplete)
        timeline.put(1.0, "resourceclaims", claim_body("c", allocation("n1", "cpu.faults.example.com", device)))
        pod = timeline.put(1.0, "pods", pod_body("p", "100m", claim="c", gates=(GATE,)))
        timeline.release(5.0, pod)
        expected = {"*", "n1"} if device == "c1" else {"*"}  # an incomplete pool makes n1 Stale as well
        assert [expected] == [r.wrong for r in judge(timeline.entries).releases]

    def test_a_claim_not_created_yet_makes_the_pod_unsafe(self) -> None:
        """A pod released while its claim does not exist (it may be allocated anywhere) is wrong."""
        timeline = Recorder()
        timeline.cluster()
        pod = timeline.put(1.0, "pods", pod_body("p", "100m", claim="c", gates=(GATE,)))
        timeline.release(5.0, pod)
        assert [{"*"}] == [r.wrong for r in judge(timeline.entries).releases]

    def test_each_criterion_must_last_the_grace_on_its_own(self) -> None:
        """Its claim missing, then its node NotReady: neither for the whole interval, so not wrong."""
        timeline = Recorder()
        timeline.cluster()
        timeline.put(1.0, "nodes", not_ready("n1"))
        pod = timeline.put(4.5, "pods", pod_body("p", "100m", claim="c", gates=(GATE,)))
        timeline.put(4.5, "resourceclaims", claim_body("c"))
        timeline.put(4.6, "nodes", node_body("n1"))
        timeline.put(4.9, "nodes", not_ready("n2"))
        timeline.release(5.0, pod)
        assert [set()] == [r.wrong for r in judge(timeline.entries).releases]


class TestVersionsAndEdits:
    def test_a_version_that_goes_back_is_reported(self) -> None:
        """ledgerVersion and mappingVersion are checked across every change of one Node's ledger."""
        timeline = Recorder()
        timeline.put(1.0, LEDGERS, ledger("n1", 5, 2), OPERATOR)
        timeline.put(2.0, LEDGERS, ledger("n1", 4, 3), OPERATOR)
        timeline.put(3.0, LEDGERS, ledger("n1", 6, 1), OPERATOR)
        timeline.put(4.0, LEDGERS, ledger("n1", 1, 1, owner="uid-2"), OPERATOR)  # another Node of that name
        errors = judge(timeline.entries).version_errors
        assert ["n1: ledgerVersion went from 5 to 4 (rv 2)", "n1: mappingVersion went from 3 to 1 (rv 3)"] == errors

    def test_edits_beyond_the_operators_own_are_reported(self) -> None:
        """Removing a foreign gate, or writing a node, is not the operator's to do."""
        timeline = Recorder()
        timeline.cluster()
        pod = timeline.put(1.0, "pods", pod_body("p", "100m", claim="c", gates=("other/gate", GATE)))
        edited = copy.deepcopy(pod)
        edited["spec"]["schedulingGates"] = []
        timeline.put(2.0, "pods", edited, OPERATOR)
        timeline.put(3.0, "nodes", not_ready("n1"), OPERATOR)
        assert ["the operator changed pod faults/p in another way", "the operator wrote nodes n1"] == (
            judge(timeline.entries).foreign_edits)


class TestQuietWindow:
    @staticmethod
    def event(pod: str, reason: str) -> Entry:
        body = {"metadata": {"name": f"{pod}.x", "namespace": "faults"}, "reason": reason,
                "involvedObject": {"kind": "Pod", "name": pod, "namespace": "faults"}}
        return Entry(0.0, "events", Change(1, "ADDED", body, None), OPERATOR)

    def test_only_a_held_pods_first_event_for_a_reason_it_was_not_told_last_is_a_backlog_not_a_loop(self) -> None:
        before = [self.event("a", "LedgerGateNoRoom"), self.event("d", "LedgerGateNoRoom"),
                  self.event("d", "LedgerGateNodeUnavailable")]
        write = Entry(0.0, "nodeallocatableledgers", Change(2, "MODIFIED", ledger("n1", 3, 1), None), OPERATOR)
        window = [
            self.event("b", "LedgerGateNoRoom"),  # first for b: the end of a backlog
            self.event("a", "LedgerGateNoRoom"),  # the reason a was told last: a loop
            self.event("b", "LedgerGateNoRoom"),  # b again: a loop
            self.event("b", "LedgerGateWatchUnhealthy"),  # b's second in the window: a loop
            self.event("c", "LedgerGateReleased"),  # a release's Event comes with a release: a write
            write,
            self.event("d", "LedgerGateNoRoom"),  # told before, but not last: the end of a backlog
        ]
        assert [window[1], window[2], window[3], window[4], window[5]] == looping(before, window)
        assert [] == looping([], [])
