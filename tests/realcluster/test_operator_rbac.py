"""Least privilege for real (issue 12, item 3): the manifests' RBAC and guardrail, judged by kube-apiserver.

The operator runs as ``draledger-system/draledger`` (a TokenRequest token in its own kubeconfig) through a
scenario that exercises every duty, and the apiserver's audit log shows no 401 or 403 for it. Then a direct
client holding the same token tries what the operator must never do, and each attempt is refused: by RBAC
(403 ``cannot <verb> resource``), by the ValidatingAdmissionPolicy ``draledger-pod-writes`` (403 naming the
changed fields), or by the apiserver's own pod validation (422).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.realcluster.cluster import JSON_PATCH, Api, ApiError, wait_until
from tests.realcluster.launcher import ControlPlane
from tests.realcluster.operating import (
    GATE,
    LEDGERS,
    NAMESPACE,
    USER,
    Installation,
    Operators,
    Site,
    audit_events,
    audit_offset,
    bound_with_status,
    condition,
    from_operator,
    gates_of,
    ledger,
    refusals,
    restarted,
)

FOREIGN_GATE = "example.com/quota"
POLICY = "ValidatingAdmissionPolicy 'draledger-pod-writes' with binding 'draledger-pod-writes' denied request: "
WIDGETS = "widgets.realcluster.draledger.dev"
WITHIN = 60.0
# (verb, resource, subresource) of every duty in manifests/base/rbac.yaml, as the audit log names them
DUTIES = {
    ("list", "nodes", ""), ("watch", "nodes", ""), ("list", "pods", ""), ("watch", "pods", ""),
    ("list", "resourceslices", ""), ("watch", "resourceslices", ""), ("list", "resourceclaims", ""),
    ("watch", "resourceclaims", ""), ("list", "nodeallocatableledgers", ""), ("watch", "nodeallocatableledgers", ""),
    ("get", "nodes", ""), ("create", "nodeallocatableledgers", ""), ("patch", "nodeallocatableledgers", "status"),
    ("patch", "pods", ""), ("patch", "pods", "status"), ("create", "events", ""),
}


def phase(api: Api, node: str) -> str:
    return str(((ledger(api, node) or {}).get("status") or {}).get("phase", ""))


def freeze(api: Api, node: str, frozen: bool = True) -> None:
    """What ``draledger freeze``/``resume`` do, as the admin: ``spec.frozen`` of the node's ledger."""
    api.patch(f"{LEDGERS}/{node}", {"spec": {"frozen": frozen, "reason": "realcluster test" if frozen else None}})


class TestLeastPrivilege:
    def test_the_operator_runs_as_its_service_account_under_the_rendered_manifests(
            self, installation: Installation) -> None:
        """The canary+admission-policy objects a pod-less cluster can hold are applied; the token is the SA's."""
        roles = ["draledger-events", "draledger-gate-release", "draledger-ledger-writer",
                 "draledger-pod-status-backfill", "draledger-reader"]
        applied = sorted((item["kind"], item["metadata"]["name"]) for item in installation.objects)
        review = installation.as_operator().create("/apis/authentication.k8s.io/v1/selfsubjectreviews", {
            "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})

        assert sorted([*[("ClusterRole", role) for role in roles], *[("ClusterRoleBinding", role) for role in roles],
                       ("CustomResourceDefinition", "nodeallocatableledgers.draledger.dev"),
                       ("MutatingAdmissionPolicy", "draledger-gate-pods"),
                       ("MutatingAdmissionPolicyBinding", "draledger-gate-pods"), ("Namespace", NAMESPACE),
                       ("Role", "draledger-leader-election"), ("RoleBinding", "draledger-leader-election"),
                       ("ServiceAccount", "draledger"), ("ValidatingAdmissionPolicy", "draledger-pod-writes"),
                       ("ValidatingAdmissionPolicyBinding", "draledger-pod-writes")]) == applied
        assert USER == review["status"]["userInfo"]["username"]
        assert "system:serviceaccounts:draledger-system" in review["status"]["userInfo"]["groups"]

    def test_every_duty_succeeds_without_a_single_refusal(self, control_plane: ControlPlane,
                                                          installation: Installation, operators: Operators,
                                                          site: Site) -> None:
        """Ledgers, Events, gate release and backfill all done as the ServiceAccount; the audit log has no 401/403."""
        api = site.api
        site.setup(2)
        site.template()
        ready, frozen = site.nodes
        offset = audit_offset(control_plane)
        operator = operators.start("--node-selector", site.label, "--coalesce-window", "0.1")
        wait_until(lambda: all(phase(api, node) == "Ready" for node in site.nodes), within=WITHIN,
                   what="both ledgers to be created and Ready")
        freeze(api, frozen)
        wait_until(lambda: phase(api, frozen) == "Frozen", within=WITHIN, what="the frozen ledger")

        site.claim_pod("released")  # gated by the policy, released by the operator, bound by the scheduler
        released = wait_until(lambda: bound_with_status(api, site.pod_path("released")), within=WITHIN,
                              what="the released pod to be bound with the scheduler's status")
        with restarted(control_plane, "kube-scheduler", feature_gates={"DRANodeAllocatableResources": False}):
            site.claim_pod("backfilled")  # bound by a scheduler that does not write the status
            wait_until(lambda: api.get(site.pod_path("backfilled"))["spec"].get("nodeName"), within=WITHIN,
                       what="the pod to be bound by the scheduler with its gate off")
            backfilled = wait_until(lambda: bound_with_status(api, site.pod_path("backfilled")), within=WITHIN,
                                    what="the operator to backfill the status")
        freeze(api, ready)
        wait_until(lambda: phase(api, ready) == "Frozen", within=WITHIN, what="the second frozen ledger")
        site.claim_pod("held")  # no Ready node: held, with an Event saying why
        events = wait_until(lambda: [event for event in api.get(
            f"/api/v1/namespaces/{site.namespace}/events?fieldSelector=involvedObject.name=held")["items"]
            if event["reason"] == "LedgerGateNoReadyNode"], within=WITHIN, what="the operator's Event on the held pod")
        api.request("DELETE", site.pod_path("released") + "?gracePeriodSeconds=0")
        wait_until(lambda: (ledger(api, ready) or {}).get("status", {}).get("claimCount") == 1, within=WITHIN,
                   what="the ledger to drop the deleted pod's claim")

        seen = from_operator(audit_events(control_plane, offset))
        started = from_operator(audit_events(control_plane, offset, ("ResponseStarted", "ResponseComplete")))
        done = {(event["verb"], event["objectRef"].get("resource", ""), event["objectRef"].get("subresource", ""))
                for event in started if "objectRef" in event and event.get("responseStatus", {}).get("code", 500) < 300}
        assert ready == released["spec"]["nodeName"] == backfilled["spec"]["nodeName"]
        both = ", ".join(f"{node} (Frozen)" for node in sorted(site.nodes))
        assert f"held by draledger.dev/ledger-ready: no node's ledger is Ready: {both}" == events[0]["message"]
        assert "True" == condition(ledger(api, ready), "PodStatusBackfill").get("status")
        assert set() == DUTIES - done
        assert [] == refusals(seen)
        assert [] == [record for record in operator.records() if mentions_refusal(record)]


def mentions_refusal(record: dict) -> bool:
    """A log record that tells of a 403, in any field but the timestamp (whose digits may spell 403)."""
    text = json.dumps({key: value for key, value in record.items() if key != "timestamp"})
    return re.search(r"\b403\b", text) is not None or "forbidden" in text.lower()


# ------------------------------------------------------------------ what it must never do


def outcome(action: Callable[[], Any]) -> str:
    """``allowed``, or who refused and why: ``403 rbac``, ``403 policy: <message>``, ``<code> apiserver``."""
    try:
        action()
    except ApiError as error:
        message = error.body.get("message", "") if isinstance(error.body, dict) else str(error.body)
        if error.status == 403 and POLICY in message:
            return f"403 policy: {message.split(POLICY, 1)[1]}"
        if error.status == 403 and "cannot" in message and "User \"system:serviceaccount:" in message:
            return "403 rbac"
        return f"{error.status} apiserver"
    return "allowed"


@pytest.fixture
def widgets(control_plane: ControlPlane) -> Iterator[str]:
    """A custom resource of someone else's (a CRD of this test, one object in it): its path."""
    api = control_plane.api()
    api.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": WIDGETS},
        "spec": {"group": "realcluster.draledger.dev", "scope": "Cluster",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}})
    path = "/apis/realcluster.draledger.dev/v1/widgets"

    def created() -> bool:
        try:
            api.create(path, {"apiVersion": "realcluster.draledger.dev/v1", "kind": "Widget",
                              "metadata": {"name": "someone-elses"}, "spec": {"size": 1}})
        except ApiError as error:  # 404 until served, 429 while its storage initializes
            if error.status not in (404, 429, 503):
                raise
            return False
        return True

    try:
        wait_until(created, within=WITHIN, what="the Widget CRD to be served")
        yield path
    finally:
        api.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{WIDGETS}")


class TestRefusals:
    def test_what_the_operator_must_not_do_is_refused(self, control_plane: ControlPlane, installation: Installation,
                                                     site: Site, widgets: str) -> None:
        """With the operator's token: every write beyond its duties, every delete, Secrets, Nodes, others' CRs."""
        admin, operator = site.api, installation.as_operator()
        site.setup(1, gated=False)
        site.template()
        affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]}}}
        site.claim_pod("gated", gates=[FOREIGN_GATE, GATE], affinity=affinity)
        site.claim_pod("bound")
        charged = wait_until(lambda: bound_with_status(admin, site.pod_path("bound")), within=WITHIN,
                             what="a pod bound with the scheduler's status")
        claim = charged["status"]["nodeAllocatableResourceClaimStatuses"][0]["resourceClaimName"]
        cheaper = site.release.claim_status(claim, ["app"], {"cpu": "1"})  # valid, but not what it charged
        gated, bound = site.pod_path("gated"), site.pod_path("bound")
        before = admin.get(gated)
        node = site.nodes[0]
        terms = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms"
        only_ours = {"key": "metadata.name", "operator": "In", "values": [node]}

        def patch(path: str, ops: list[dict[str, Any]]) -> Callable[[], Any]:
            return lambda: operator.patch(path, ops, JSON_PATCH)

        attempts: dict[str, Callable[[], Any]] = {
            # pods: what the guardrail (or the apiserver's own validation) refuses
            "change an image": patch(gated, [{"op": "replace", "path": "/spec/containers/0/image",
                                              "value": "registry.example/other:1"}]),
            "remove another controller's gate": patch(gated, [{"op": "remove", "path": "/spec/schedulingGates/0"}]),
            "remove both gates": patch(gated, [{"op": "remove", "path": "/spec/schedulingGates"}]),
            "add a label": patch(gated, [{"op": "add", "path": "/metadata/labels", "value": {"app": "x"}}]),
            "add an annotation": patch(gated, [{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}]),
            "add a finalizer": patch(gated, [{"op": "add", "path": "/metadata/finalizers", "value": ["x.io/hold"]}]),
            "add a toleration": patch(gated, [{"op": "add", "path": "/spec/tolerations/-", "value": {
                "key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}}]),
            "set activeDeadlineSeconds": patch(gated, [{"op": "add", "path": "/spec/activeDeadlineSeconds",
                                                        "value": 1}]),
            "release its gate and add a label": patch(gated, [
                {"op": "remove", "path": "/spec/schedulingGates/1"},
                {"op": "add", "path": "/metadata/labels", "value": {"app": "x"}}]),
            "loosen node affinity": patch(gated, [{"op": "replace", "path": f"{terms}/0/matchExpressions/0/values",
                                                   "value": ["linux", "windows"]}]),
            "add pod anti-affinity": patch(gated, [{"op": "add", "path": "/spec/affinity/podAntiAffinity", "value": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"a": "b"}}}]}}]),
            "tighten a bound pod's affinity": patch(bound, [{"op": "add", "path": "/spec/affinity", "value": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchFields": [only_ours]}]}}}}]),
            "mark a pod Failed": patch(bound + "/status", [{"op": "replace", "path": "/status/phase",
                                                            "value": "Failed"}]),
            "add a pod condition": patch(bound + "/status", [{"op": "add", "path": "/status/conditions/-", "value": {
                "type": "Ready", "status": "True"}}]),
            "overwrite the scheduler's status": patch(bound + "/status", [
                {"op": "replace", "path": "/status/nodeAllocatableResourceClaimStatuses", "value": [cheaper]}]),
            # pods: what RBAC refuses
            "delete a pod": lambda: operator.request("DELETE", gated),
            "replace a pod": lambda: operator.replace(gated, before),
            "create a pod": lambda: operator.create(f"/api/v1/namespaces/{site.namespace}/pods", {
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "mine"},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}),
            "bind a pod": lambda: operator.create(f"{gated}/binding", {
                "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "gated"},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}),
            "evict a pod": lambda: operator.create(f"{bound}/eviction", {
                "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "bound"}}),
            "add an ephemeral container": patch(bound + "/ephemeralcontainers", [
                {"op": "add", "path": "/spec/ephemeralContainers", "value": [{"name": "debug", "image": "busybox"}]}]),
            # everything else
            "get a Secret": lambda: operator.get(f"/api/v1/namespaces/{NAMESPACE}/secrets/draledger-webhook-tls"),
            "list Secrets": lambda: operator.get("/api/v1/secrets"),
            "create a Secret": lambda: operator.create(f"/api/v1/namespaces/{NAMESPACE}/secrets", {
                "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "mine"}}),
            "mint a token": lambda: operator.create(
                f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/draledger/token",
                {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
            "label a Node": lambda: operator.patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": {"a": "b"}}}),
            "patch a Node's status": lambda: operator.patch(f"/api/v1/nodes/{node}/status", {
                "status": {"allocatable": {"cpu": "1000"}}}),
            "delete a Node": lambda: operator.request("DELETE", f"/api/v1/nodes/{node}"),
            "create a custom resource": lambda: operator.create(widgets, {
                "apiVersion": "realcluster.draledger.dev/v1", "kind": "Widget", "metadata": {"name": "mine"}}),
            "patch a custom resource": lambda: operator.patch(f"{widgets}/someone-elses", {"spec": {"size": 2}}),
            "create a CRD": lambda: operator.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "mine.realcluster.draledger.dev"}, "spec": {}}),
            "delete a ledger": lambda: operator.request("DELETE", f"{LEDGERS}/{node}"),
            "change a ResourceSlice": lambda: operator.patch(
                f"/apis/resource.k8s.io/v1/resourceslices/{node}-cores", {"metadata": {"labels": {"a": "b"}}}),
            "change a ResourceClaim's status": lambda: operator.patch(
                f"/apis/resource.k8s.io/v1/namespaces/{site.namespace}/resourceclaims/x/status", {"status": {}}),
            "delete the guardrail": lambda: operator.request(
                "DELETE", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/draledger-pod-writes"),
            "delete an Event": lambda: operator.request("DELETE", "/api/v1/namespaces/default/events/x"),
            "create a ConfigMap": lambda: operator.create(f"/api/v1/namespaces/{NAMESPACE}/configmaps", {
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mine"}}),
        }
        refused = {name: outcome(action) for name, action in attempts.items()}

        assert {
            "change an image": "403 policy: the operator may not change spec.containers",
            "remove another controller's gate":
                "403 policy: the operator may remove only the draledger.dev/ledger-ready scheduling gate",
            "remove both gates":
                "403 policy: the operator may remove only the draledger.dev/ledger-ready scheduling gate",
            "add a label": "403 policy: the operator may not change metadata.labels",
            "add an annotation": "403 policy: the operator may not change metadata.annotations",
            "add a finalizer": "403 policy: the operator may not change metadata.finalizers",
            "add a toleration": "403 policy: the operator may not change spec.tolerations",
            "set activeDeadlineSeconds": "403 policy: the operator may not change spec.activeDeadlineSeconds",
            "release its gate and add a label": "403 policy: the operator may not change metadata.labels",
            "loosen node affinity": "422 apiserver",
            "add pod anti-affinity": "422 apiserver",
            "tighten a bound pod's affinity": "422 apiserver",
            "mark a pod Failed": "403 policy: the operator may not change status.phase",
            "add a pod condition": "403 policy: the operator may not change status.conditions",
            "overwrite the scheduler's status": "403 policy: the operator may set "
                "status.nodeAllocatableResourceClaimStatuses only where it is absent; the scheduler owns it once "
                "written",
            **dict.fromkeys(["delete a pod", "replace a pod", "create a pod", "bind a pod", "evict a pod",
                             "add an ephemeral container", "get a Secret", "list Secrets", "create a Secret",
                             "mint a token", "label a Node", "patch a Node's status", "delete a Node",
                             "create a custom resource", "patch a custom resource", "create a CRD",
                             "delete a ledger", "change a ResourceSlice", "change a ResourceClaim's status",
                             "delete the guardrail", "delete an Event", "create a ConfigMap"], "403 rbac"),
        } == refused
        after = admin.get(gated)
        assert before["spec"] == after["spec"]
        assert before["metadata"].get("labels") == after["metadata"].get("labels")
        assert charged["status"] == admin.get(bound)["status"]
        assert {"size": 1} == admin.get(f"{widgets}/someone-elses")["spec"]

    def test_releasing_its_gate_and_tightening_affinity_is_allowed(self, installation: Installation,
                                                                   site: Site) -> None:
        """The one pod write the operator needs passes RBAC, the guardrail and the apiserver's KEP-3838 check."""
        admin, operator = site.api, installation.as_operator()
        site.setup(1, gated=False)
        site.template()
        site.claim_pod("gated", gates=[FOREIGN_GATE, GATE])
        path = site.pod_path("gated")
        generated = wait_until(lambda: (lambda pod: pod if pod["status"].get("resourceClaimStatuses") else None)(
            admin.get(path)), within=WITHIN, what="the claim controller to write the pod's claim status")
        version = generated["metadata"]["resourceVersion"]  # the version the operator would have seen
        requirement = {"key": "metadata.name", "operator": "In", "values": [site.nodes[0]]}

        written = operator.patch(path, [
            {"op": "test", "path": "/metadata/resourceVersion", "value": version},
            {"op": "remove", "path": "/spec/schedulingGates/1"},
            {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchFields": [requirement]}]}}}}], JSON_PATCH)

        assert [FOREIGN_GATE] == gates_of(written)
        assert [{"matchFields": [requirement]}] == written["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        assert version != written["metadata"]["resourceVersion"]
