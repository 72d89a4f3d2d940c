"""The fidelity judge without a control plane: a case the real v1.37.2 scheduler met (seed 34), read back.

Pod p0's container names its claim through two requests; kube-scheduler v1.37.2 writes that container twice
in ``status.nodeAllocatableResourceClaimStatuses`` at PreBind, the API server refuses it (``Duplicate value``),
and the scheduler retries p0 for ever, charging it on the node while each attempt holds it. Pods s0 and s1 are
then refused ``Insufficient cpu`` although nothing is bound: the judge must see that p0 explains it
(judging.py, rule 3), and must still report a refusal that nothing explains.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from tests.realcluster.fidelity.generating import Case
from tests.realcluster.fidelity.judging import judge_fit
from tests.realcluster.fidelity.running import Outcome, quiet_keys

DUMP = Path(__file__).parent / "data" / "fidelity-prebind-stuck.json"
NAMESPACE = "fid-v137-34r3"


def outcome(items: list[dict[str, Any]]) -> Outcome:
    case = Case(34, NAMESPACE, f"{NAMESPACE}.fidelity.draledger.dev",
                [i for i in items if i["kind"] == "Node"], [i for i in items if i["kind"] != "Node"],
                release="v1.37")
    return Outcome(case, dump=items)


class TestFit:
    def test_a_pod_stuck_in_prebind_explains_the_refusals(self) -> None:
        items = json.loads(DUMP.read_text())["items"]
        assert [] == judge_fit(outcome(items))

    def test_without_the_stuck_pod_the_refusals_are_disagreements(self) -> None:
        items = copy.deepcopy(json.loads(DUMP.read_text())["items"])
        for item in items:
            if item["kind"] == "Pod" and item["metadata"]["name"] == "p0":
                item["status"]["conditions"] = [{"type": "PodScheduled", "status": "False",
                                                 "reason": "Unschedulable", "message": "0/1 nodes are available"}]
        found = judge_fit(outcome(items))
        assert ["Pod/s0", "Pod/s1"] == [d.subject for d in found]
        assert all(d.rule == "fit" for d in found)


class TestQuiet:
    """What a batch's settle waits on (running.py, rule 3), on the same dump."""

    @staticmethod
    def pods(without: str = "") -> list[dict[str, Any]]:
        """The dump's pods (but ``without``), each as the API serves it: with a resourceVersion."""
        pods = [i for i in json.loads(DUMP.read_text())["items"] if i["kind"] == "Pod"]
        for pod in pods:
            pod["metadata"]["resourceVersion"] = "7"
        return [pod for pod in pods if pod["metadata"]["name"] != without]

    @staticmethod
    def retried(pods: list[dict[str, Any]], name: str, node: str = "") -> list[dict[str, Any]]:
        """``pods`` with ``name`` written again (a new resourceVersion), bound to ``node`` if given."""
        pods = copy.deepcopy(pods)
        for pod in pods:
            if pod["metadata"]["name"] == name:
                pod["metadata"]["resourceVersion"] = str(int(pod["metadata"]["resourceVersion"]) + 1)
                if node:
                    pod["spec"]["nodeName"] = node
        return pods

    def test_refusals_beside_a_pod_stuck_in_prebind_are_quiet_whatever_their_retries_change(self) -> None:
        pods = self.pods()
        assert {"p0": "error", "s0": "beside", "s1": "beside"} == {
            key.split("/")[1]: value for key, value in quiet_keys(pods).items()}
        assert quiet_keys(pods) == quiet_keys(self.retried(pods, "s0"))

    def test_a_refused_pods_change_counts_without_the_stuck_pod_and_a_binding_always(self) -> None:
        alone = self.pods(without="p0")
        assert quiet_keys(alone) != quiet_keys(self.retried(alone, "s0"))
        pods = self.pods()
        assert quiet_keys(pods) != quiet_keys(self.retried(pods, "s1", node="fid-v137-34r3-n0"))
