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
from tests.realcluster.fidelity.running import Outcome

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
