"""Pod footprints per release (accounting.footprints), held to upstream's own unit tests where they exist."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from draledger.core.accounting.footprints import footprint, status_charge
from draledger.core.quantities import parse_quantity
from draledger.core.views import read_pod

UPSTREAM = json.loads((Path(__file__).parents[1] / "data" / "upstream" / "podrequests-v0.38.0-beta.0.json")
                      .read_text(encoding="utf-8"))


def pod_of(case: dict[str, Any]) -> dict[str, Any]:
    """The case's pod, bound, with its status entries in the v1.37 shape (v1.38 writes the same)."""
    def container(spec: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"name": spec["name"], "resources": {"requests": spec["requests"]}}
        if "restartPolicy" in spec:
            out["restartPolicy"] = spec["restartPolicy"]
        return out

    claims = [{"name": s["resourceClaimName"], "resourceClaimName": s["resourceClaimName"]} for s in case["statuses"]]
    return {"kind": "Pod", "metadata": {"name": "p", "namespace": "t"},
            "spec": {"nodeName": "n1", "initContainers": [container(c) for c in case["init"]],
                     "containers": [container(c) for c in case["containers"]], "resourceClaims": claims},
            "status": {"phase": "Running", "nodeAllocatableResourceClaimStatuses": case["statuses"]}}


def requests(pod: dict[str, Any], release: Any) -> dict[str, str]:
    view = read_pod(pod)
    return {name: str(quantity) for name, quantity in footprint(view, status_charge(view, release), release).items()}


class TestUpstreamV138:
    @pytest.mark.parametrize("case", UPSTREAM["cases"], ids=[str(c["line"]) for c in UPSTREAM["cases"]])
    def test_pod_requests_as_component_helpers_computes_them(self, case: dict[str, Any]) -> None:
        """v1.38's PodRequests from the pod's status: each upstream case's expected requests, exactly."""
        expected = {name: parse_quantity(text) for name, text in case["expected"].items()}
        assert {name: str(q) for name, q in expected.items()} == requests(pod_of(case), "v1.38")

    @pytest.mark.parametrize(("line", "v137"), [(3597, {"memory": "2548Mi"}), (3674, {"memory": "3560Mi"})])
    def test_v137_adds_everything_outside_the_max(self, line: int, v137: dict[str, str]) -> None:
        """The same pods under v1.37 (component-helpers v0.37.2): every claim charge outside the containers' max."""
        case = next(c for c in UPSTREAM["cases"] if c["line"] == line)
        assert v137 == requests(pod_of(case), "v1.37")

    def test_a_name_that_is_no_container_pays_nothing_in_v138(self) -> None:
        """v1.38 places perContainer by the spec's container names; v1.37 multiplies by the list's length."""
        case = {"init": [], "containers": [{"name": "c1", "requests": {"cpu": "1"}}],
                "statuses": [{"resourceClaimName": "x", "containers": ["c1", "ghost"],
                              "overhead": [{"name": "cpu", "perContainer": "500m"}]}]}
        assert ({"cpu": "1500m"}, {"cpu": "2"}) == (requests(pod_of(case), "v1.38"), requests(pod_of(case), "v1.37"))


class TestWorkedExample:
    """k8s-v1.38 notes §3.3: init ``setup`` (2 cpu, 1Gi) and ``app`` (1 cpu, 2Gi); app-cpus (mapping cpu 4, app) and
    app-gpu (perContainer cpu 500m, memory 512Mi; perPod memory 1Gi; setup and app)."""

    CASE: dict[str, Any] = {  # noqa: RUF012 - read only
        "init": [{"name": "setup", "requests": {"cpu": "2", "memory": "1Gi"}}],
        "containers": [{"name": "app", "requests": {"cpu": "1", "memory": "2Gi"}}],
        "statuses": [
            {"resourceClaimName": "app-cpus", "containers": ["app"], "mapping": [{"name": "cpu", "quantity": "4"}]},
            {"resourceClaimName": "app-gpu", "containers": ["setup", "app"],
             "overhead": [{"name": "cpu", "perContainer": "500m"},
                          {"name": "memory", "perPod": "1Gi", "perContainer": "512Mi"}]},
        ],
    }

    @pytest.mark.parametrize(("release", "expected"), [
        ("v1.37", {"cpu": "7", "memory": "4Gi"}),
        ("v1.38", {"cpu": "6500m", "memory": "3584Mi"}),
    ])
    def test_requested_differs_between_releases(self, release: str, expected: dict[str, str]) -> None:
        """v1.37: ordinary + claims (7, 4Gi); v1.38: max(1+0.5, 2+0.5) + 4 = 6500m, max(2Gi+512Mi, 1Gi+512Mi) + 1Gi."""
        assert expected == requests(pod_of(self.CASE), release)
