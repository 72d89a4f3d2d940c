"""The admission objects: the pod-write guardrail (VAP), the gate policy (MAP) and the webhook, their CEL run.

The CEL is evaluated with cel-python on AdmissionReview-like activations (object, oldObject, request,
variables), the way kube-apiserver evaluates a policy: matchConditions, then variables in order, then every
validation. cel-python 0.5.0 differs from Kubernetes' CEL in three ways that the policies meet, none of which
forces a skip:
- no Kubernetes `strings` library: `<list>.join(sep)`, used only by messageExpressions, is supplied here;
- no typed object construction: `Object{spec: Object.spec{...}}` of the ApplyConfiguration is evaluated by
  binding `Object` to a stand-in type whose fields build plain maps;
- no optional syntax (`?.`): the policies do not use it, absent fields are guarded with has().
Kubernetes also compares map-lists ignoring order; no case below depends on that.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable, Iterable
from importlib import resources
from typing import Any

import celpy
import pytest
from celpy import celtypes

from tests.manifests.kustomized import Objects, find, one

GATE = "draledger.dev/ledger-ready"
FOREIGN_GATE = "example.com/quota"
OPERATOR = "system:serviceaccount:draledger-system:draledger"
SCHEDULER = "system:kube-scheduler"
FIELD = "nodeAllocatableResourceClaimStatuses"
RECORD = "draledger.dev/released-on"


# --- a small evaluator of admission CEL ----------------------------------------------------------------


def _join(items: celtypes.ListType, separator: celtypes.StringType) -> celtypes.StringType:
    """Kubernetes' strings library `<list<string>>.join(<string>)`, missing from cel-python."""
    return celtypes.StringType(str(separator).join(str(item) for item in items))


class _TypeName(celtypes.MessageType):  # type: ignore[misc]
    """A stand-in for the typed names of an ApplyConfiguration: `Object.spec{...}` builds a plain map."""

    def __init__(self, path: str = "Object") -> None:
        super().__init__()
        self.path = path

    def get(self, name: Any, default: Any = None) -> _TypeName:
        return _TypeName(f"{self.path}.{name}")

    def __call__(self, fields: Any) -> celtypes.MapType:
        return celtypes.MapType(fields or {})


_ENVIRONMENT = celpy.Environment()


@functools.cache
def _program(expression: str) -> celpy.Runner:
    return _ENVIRONMENT.program(_ENVIRONMENT.compile(expression), functions={"join": _join})


def evaluate(expression: str, activation: dict[str, Any]) -> Any:
    """Evaluate one expression; an evaluation error fails the test instead of passing for a denial."""
    return _program(expression).evaluate(activation)


def _activation(old: dict[str, Any] | None, new: dict[str, Any], username: str, operation: str,
                subresource: str = "") -> dict[str, Any]:
    request = {"operation": operation, "userInfo": {"username": username},
               "resource": {"group": "", "version": "v1", "resource": "pods"},
               **({"subResource": subresource} if subresource else {})}
    activation = {"object": celpy.json_to_cel(new), "request": celpy.json_to_cel(request)}
    if old is not None:
        activation["oldObject"] = celpy.json_to_cel(old)
    return activation


def matches(spec: dict[str, Any], activation: dict[str, Any]) -> bool:
    return all(bool(evaluate(c["expression"], activation)) for c in spec.get("matchConditions", []))


def admit(policy: dict[str, Any], old: dict[str, Any], new: dict[str, Any], username: str = OPERATOR,
          subresource: str = "") -> tuple[str, list[str]]:
    """Run a ValidatingAdmissionPolicy on an UPDATE: ("skipped" | "allowed" | "denied", denial messages)."""
    spec = policy["spec"]
    activation = _activation(old, new, username, "UPDATE", subresource)
    if not matches(spec, activation):
        return "skipped", []
    variables: dict[str, Any] = {}
    for variable in spec.get("variables", []):
        activation["variables"] = celtypes.MapType(variables)
        variables[celtypes.StringType(variable["name"])] = evaluate(variable["expression"], activation)
    activation["variables"] = celtypes.MapType(variables)
    messages = []
    for validation in spec["validations"]:
        result = evaluate(validation["expression"], activation)
        assert isinstance(result, celtypes.BoolType), f"{validation['expression']!r} gave {result!r}"
        if not result:
            expression = validation.get("messageExpression")
            messages.append(str(evaluate(expression, activation)) if expression else validation["message"])
    return ("denied" if messages else "allowed"), messages


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda v: v if not isinstance(v, bool) else bool(v)))


# --- sample objects ----------------------------------------------------------------------------------------


def pod(gates: Iterable[str] = (GATE, FOREIGN_GATE)) -> dict[str, Any]:
    """A pod with a claim, as kube-apiserver stores it after creation (defaults filled in)."""
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "app", "namespace": "team-a", "uid": "7c1e", "resourceVersion": "100", "generation": 1,
            "creationTimestamp": "2026-12-02T10:00:00Z",
            "labels": {"app": "app"},
            "annotations": {"team": "a"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "app-5d", "uid": "9f",
                                 "controller": True, "blockOwnerDeletion": True}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1"}],
        },
        "spec": {
            "containers": [{"name": "app", "image": "example.com/app:1.0",
                            "resources": {"requests": {"memory": "1Gi"}, "claims": [{"name": "cpus"}]}}],
            "resourceClaims": [{"name": "cpus", "resourceClaimTemplateName": "cpus"}],
            "schedulingGates": [{"name": name} for name in gates],
            "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                                  "labelSelector": {"matchLabels": {"app": "app"}}}}]}},
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
            "terminationGracePeriodSeconds": 30, "securityContext": {}, "priority": 0,
            "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
            "serviceAccountName": "default", "serviceAccount": "default",
        },
        "status": {
            "phase": "Pending", "qosClass": "Burstable",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                            "message": "Scheduling is blocked due to non-empty scheduling gates"}],
            "resourceClaimStatuses": [{"name": "cpus", "resourceClaimName": "app-cpus-x7k"}],
        },
    }
    if not body["spec"]["schedulingGates"]:
        del body["spec"]["schedulingGates"]
    return body


def written(old: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """The object as validating admission sees it: the change, plus what the API server bumps on every write."""
    new = copy.deepcopy(old)
    change(new)
    new["metadata"]["generation"] = old["metadata"]["generation"] + 1
    new["metadata"]["managedFields"] = [*old["metadata"]["managedFields"],
                                        {"manager": "draledger", "operation": "Update", "apiVersion": "v1"}]
    return new


def _without_gate(name: str) -> Callable[[dict[str, Any]], None]:
    def change(p: dict[str, Any]) -> None:
        p["spec"]["schedulingGates"] = [g for g in p["spec"]["schedulingGates"] if g["name"] != name]
        if not p["spec"]["schedulingGates"]:
            del p["spec"]["schedulingGates"]  # an emptied list is omitted, as the API serializes it
    return change


def _tighten(p: dict[str, Any]) -> None:
    p["spec"]["affinity"]["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["worker-1"]}]}]}}


def _backfill(p: dict[str, Any]) -> None:
    p["status"][FIELD] = [{"resourceClaimName": "app-cpus-x7k", "containers": ["app"], "resources": {"cpu": "8"}}]


def _steps(*changes: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def change(p: dict[str, Any]) -> None:
        for step in changes:
            step(p)
    return change


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(p: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = p
        for key in parents:
            target = target.setdefault(key, {})
        target[last] = value
    return change


def _record(value: str) -> Callable[[dict[str, Any]], None]:
    """Set the release's record (a key with dots and a slash: not a _set path)."""
    def change(p: dict[str, Any]) -> None:
        p["metadata"].setdefault("annotations", {})[RECORD] = value
    return change


def _without_annotations(p: dict[str, Any]) -> dict[str, Any]:
    p["metadata"].pop("annotations", None)
    return p


def _recorded_pod() -> dict[str, Any]:
    """A pod released already: our gate gone, its record on it."""
    body = pod()
    _without_gate(GATE)(body)
    body["metadata"].setdefault("annotations", {})[RECORD] = "n1@ledgerVersion=4"
    return body


def _backfilled_pod() -> dict[str, Any]:
    body = pod()
    _backfill(body)
    return body


# --- the ValidatingAdmissionPolicy on the operator's pod writes ------------------------------------------


@pytest.fixture(scope="module")
def base_objects(render: Callable[[str], Objects]) -> Objects:
    return render("base")


@pytest.fixture(scope="module")
def guardrail(base_objects: Objects) -> dict[str, Any]:
    return one(base_objects, "ValidatingAdmissionPolicy", "draledger-pod-writes")


ALLOWED = [
    pytest.param(pod(), _without_gate(GATE), id="remove-our-gate-keep-foreign"),
    pytest.param(pod([GATE]), _without_gate(GATE), id="remove-our-last-gate"),
    pytest.param(pod(), _steps(_without_gate(GATE), _tighten), id="remove-our-gate-and-tighten-node-affinity"),
    pytest.param(pod(), _tighten, id="tighten-node-affinity-while-gated"),
    pytest.param(pod(), lambda p: None, id="no-change"),
    pytest.param(pod([]), _backfill, id="backfill-absent-node-allocatable-status"),
    pytest.param(_backfilled_pod(), lambda p: None, id="backfilled-status-left-alone"),
    pytest.param(pod(), _steps(_without_gate(GATE), _record("n1@ledgerVersion=4")),
                 id="remove-our-gate-with-its-record"),
    pytest.param(_without_annotations(pod()), _steps(_without_gate(GATE), _set("metadata.annotations",
                                                                                 {RECORD: "*@resourceVersion=9"})),
                 id="remove-our-gate-with-its-record-as-the-first-annotation"),
]

DENIED = [
    pytest.param(pod(), _without_gate(FOREIGN_GATE), "scheduling gate", id="remove-foreign-gate"),
    pytest.param(pod(), _steps(_without_gate(GATE), _without_gate(FOREIGN_GATE)), "scheduling gate",
                 id="remove-both-gates"),
    pytest.param(pod(), _set("spec.schedulingGates", [{"name": FOREIGN_GATE}, {"name": GATE}]), "scheduling gate",
                 id="reorder-gates"),
    pytest.param(pod(), _set("metadata.labels", {"app": "other"}), "metadata.labels", id="change-labels"),
    pytest.param(pod(), _set("metadata.annotations", {"team": "a", "x": "y"}), "metadata.annotations",
                 id="add-annotation"),
    pytest.param(pod(), _set("metadata.finalizers", ["example.com/hold"]), "metadata.finalizers",
                 id="add-finalizer"),
    pytest.param(pod(), _set("spec.containers", [{"name": "app", "image": "example.com/app:2.0"}]),
                 "spec.containers", id="change-containers"),
    pytest.param(pod(), _steps(_without_gate(GATE), _set("spec.containers", [{"name": "app", "image": "evil"}])),
                 "spec.containers", id="remove-our-gate-and-change-containers"),
    pytest.param(pod(), _set("spec.tolerations", [{"operator": "Exists"}]), "spec.tolerations",
                 id="add-toleration"),
    pytest.param(pod(), _set("spec.nodeSelector", {"zone": "a"}), "spec.nodeSelector", id="set-node-selector"),
    pytest.param(pod(), _set("spec.affinity.podAntiAffinity", {}), "spec.affinity.podAntiAffinity",
                 id="change-pod-anti-affinity"),
    pytest.param(pod(), _set("spec.affinity.podAffinity", {}), "spec.affinity.podAffinity",
                 id="add-pod-affinity"),
    pytest.param(pod(), _set("status.phase", "Failed"), "status.phase", id="change-status-phase"),
    pytest.param(pod(), _steps(_backfill, _set("status.phase", "Running")), "status.phase",
                 id="backfill-and-change-phase"),
    pytest.param(_backfilled_pod(), _set(f"status.{FIELD}", [{"resourceClaimName": "app-cpus-x7k",
                                                              "resources": {"cpu": "1"}}]),
                 FIELD, id="change-present-node-allocatable-status"),
    pytest.param(_backfilled_pod(), lambda p: p["status"].pop(FIELD), FIELD,
                 id="remove-present-node-allocatable-status"),
    pytest.param(pod(), _record("n1@ledgerVersion=4"), "metadata.annotations",
                 id="record-without-a-release"),
    pytest.param(pod(), _steps(_without_gate(GATE), _record("*"),
                               _set("metadata.annotations.x", "y")), "metadata.annotations",
                 id="record-and-another-annotation"),
    pytest.param(_recorded_pod(), _record("n2@ledgerVersion=9"),
                 "metadata.annotations", id="record-changed-afterwards"),
    pytest.param(_recorded_pod(), lambda p: p["metadata"]["annotations"].pop(RECORD), "metadata.annotations",
                 id="record-removed-afterwards"),
]


class TestPodWriteGuardrail:
    @pytest.mark.parametrize(("old", "change"), ALLOWED)
    def test_allowed(self, guardrail: dict[str, Any], old: dict[str, Any],
                     change: Callable[[dict[str, Any]], None]) -> None:
        """The operator may remove only its gate, tighten node affinity, and add the pod status field where absent."""
        assert ("allowed", []) == admit(guardrail, old, written(old, change))

    @pytest.mark.parametrize(("old", "change", "reason"), DENIED)
    def test_denied(self, guardrail: dict[str, Any], old: dict[str, Any],
                    change: Callable[[dict[str, Any]], None], reason: str) -> None:
        """Anything more is denied, and the message names what changed."""
        verdict, messages = admit(guardrail, old, written(old, change))
        assert verdict == "denied"
        assert any(reason in message for message in messages), messages

    def test_other_users_are_not_matched(self, guardrail: dict[str, Any]) -> None:
        """kube-scheduler (or anyone but the operator) is not subject to the policy."""
        old = pod()
        assert ("skipped", []) == admit(guardrail, old, written(old, _set("status.phase", "Running")),
                                         username=SCHEDULER)

    def test_status_subresource_is_judged_alike(self, guardrail: dict[str, Any]) -> None:
        """A pods/status write is held to the same rules (the API server resets spec on it anyway)."""
        old = pod([])
        assert "allowed" == admit(guardrail, old, written(old, _backfill), subresource="status")[0]
        assert "denied" == admit(guardrail, old, written(old, _set("status.reason", "x")),
                                 subresource="status")[0]

    @pytest.mark.parametrize(("section", "exempt"), [
        pytest.param("spec", {"schedulingGates", "affinity"}, id="spec"),
        pytest.param("status", {FIELD}, id="status"),
    ])
    def test_every_schema_field_is_guarded(self, guardrail: dict[str, Any], section: str, exempt: set[str]) -> None:
        """Changing or adding any other PodSpec/PodStatus field of the v1.36 schema is denied, naming the field."""
        properties = _pod_schema(section)
        fields = set(properties) - exempt
        assert len(fields) > 15
        for field in sorted(fields):
            old = pod()
            value = _different_value(properties[field], old[section].get(field))
            verdict, messages = admit(guardrail, old, written(old, _set(f"{section}.{field}", value)))
            assert verdict == "denied", field
            assert any(f"{section}.{field}" in message for message in messages), (field, messages)

    def test_affinity_fields_are_covered(self, guardrail: dict[str, Any]) -> None:
        """Affinity has exactly one free part, nodeAffinity; the schema's others are guarded."""
        assert {"nodeAffinity", "podAffinity", "podAntiAffinity"} == set(_schema("io.k8s.api.core.v1.Affinity"))

    def test_policy_shape(self, base_objects: Objects, guardrail: dict[str, Any]) -> None:
        """Fail closed, UPDATEs of pods and pods/status, only for the operator's ServiceAccount, bound with Deny."""
        spec = guardrail["spec"]
        assert spec["failurePolicy"] == "Fail"
        [rule] = spec["matchConstraints"]["resourceRules"]
        assert ["UPDATE"] == rule["operations"]
        assert {"pods", "pods/status"} <= set(rule["resources"])
        assert [{"name": "operator-service-account",
                 "expression": f"request.userInfo.username == '{OPERATOR}'"}] == spec["matchConditions"]
        binding = one(base_objects, "ValidatingAdmissionPolicyBinding", "draledger-pod-writes")
        assert {"policyName": "draledger-pod-writes", "validationActions": ["Deny"]} == binding["spec"]

    def test_username_matches_the_service_account(self, base_objects: Objects) -> None:
        """The username in matchConditions is the one the Deployment's ServiceAccount authenticates as."""
        account = one(base_objects, "ServiceAccount", "draledger")["metadata"]
        assert OPERATOR == f"system:serviceaccount:{account['namespace']}:{account['name']}"


@functools.cache
def _definitions() -> dict[str, Any]:
    """The v1.36 API's definitions as kubernetes-validate ships them."""
    path = resources.files("kubernetes_validate") / "kubernetes-json-schema" / "v1.36.0-local-strict"
    return dict(json.loads((path / "_definitions.json").read_text(encoding="utf-8"))["$defs"])


def _schema(definition: str) -> dict[str, Any]:
    return dict(_definitions()[definition]["properties"])


def _pod_schema(section: str) -> dict[str, Any]:
    return _schema({"spec": "io.k8s.api.core.v1.PodSpec", "status": "io.k8s.api.core.v1.PodStatus"}[section])


def _type_of(prop: dict[str, Any]) -> str:
    """The JSON type of a schema property, following a $ref (a Quantity, say, is a string)."""
    if "$ref" in prop:
        prop = _definitions()[prop["$ref"].rsplit("/", 1)[-1]]
    kinds = prop.get("type", "object")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    return next((k for k in kinds if k != "null"), "object")


def _different_value(prop: dict[str, Any], current: Any) -> Any:
    """A value of the field's own type that differs from the current one (or sets an absent field)."""
    kind = _type_of(prop)
    if kind == "array":
        items = prop.get("items", {})
        return [{"changed": True} if _type_of(items) == "object" else "changed"]
    return {"object": {"changed": True}, "string": "changed", "integer": 424242, "number": 4.5,
            "boolean": not current if isinstance(current, bool) else True}[kind]


# --- adding the gate: the MutatingAdmissionPolicy and the webhook ----------------------------------------


CREATE_CASES = [
    pytest.param({"resourceClaims": [{"name": "cpus", "resourceClaimTemplateName": "cpus"}]}, True,
                 id="with-claims"),
    pytest.param({}, False, id="no-claims-field"),
    pytest.param({"resourceClaims": []}, False, id="empty-claims"),
    pytest.param({"resourceClaims": [{"name": "c", "resourceClaimName": "c"}], "nodeName": "worker-1"}, False,
                 id="bound-at-creation"),
    pytest.param({"resourceClaims": [{"name": "c", "resourceClaimName": "c"}], "nodeName": ""}, True,
                 id="empty-node-name"),
]


def _new_pod(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app", "namespace": "team-a"},
            "spec": {"containers": [{"name": "app", "image": "example.com/app:1.0"}], **spec}}


def apply_configuration(current: dict[str, Any], applied: dict[str, Any]) -> dict[str, Any]:
    """Merge the ApplyConfiguration's spec.schedulingGates the way server-side apply merges a map-list keyed by name."""
    merged = copy.deepcopy(current)
    gates = merged["spec"].setdefault("schedulingGates", [])
    for gate in applied["spec"]["schedulingGates"]:
        if gate["name"] not in {g["name"] for g in gates}:
            gates.append(dict(gate))
    return merged


@pytest.fixture(scope="module")
def gate_policy(render: Callable[[str], Objects]) -> dict[str, Any]:
    return one(render("base+admission-policy"), "MutatingAdmissionPolicy", "draledger-gate-pods")


class TestGatePolicy:
    @pytest.mark.parametrize(("spec", "expected"), CREATE_CASES)
    def test_match_conditions(self, gate_policy: dict[str, Any], spec: dict[str, Any], expected: bool) -> None:
        """Only pods created with at least one claim, and not bound at creation, are gated."""
        assert expected == matches(gate_policy["spec"], _activation(None, _new_pod(spec), "alice", "CREATE"))

    def test_apply_configuration_adds_only_our_gate(self, gate_policy: dict[str, Any]) -> None:
        """The ApplyConfiguration is exactly spec.schedulingGates = [{name: draledger.dev/ledger-ready}]."""
        [mutation] = gate_policy["spec"]["mutations"]
        assert mutation["patchType"] == "ApplyConfiguration"
        pod_ = _new_pod({"resourceClaims": [{"name": "c", "resourceClaimName": "c"}]})
        activation = {**_activation(None, pod_, "alice", "CREATE"), "Object": _TypeName()}
        result = _plain(evaluate(mutation["applyConfiguration"]["expression"], activation))
        assert {"spec": {"schedulingGates": [{"name": GATE}]}} == result

    @pytest.mark.parametrize(("gates", "expected"), [
        pytest.param([], [GATE], id="ungated"),
        pytest.param([FOREIGN_GATE], [FOREIGN_GATE, GATE], id="foreign-gate-kept"),
        pytest.param([GATE, FOREIGN_GATE], [GATE, FOREIGN_GATE], id="never-twice"),
    ])
    def test_merge_keeps_other_gates(self, gate_policy: dict[str, Any], gates: list[str], expected: list[str]) -> None:
        """Merged into the map-list spec.schedulingGates, our gate joins the others once."""
        [mutation] = gate_policy["spec"]["mutations"]
        pod_ = _new_pod({"resourceClaims": [{"name": "c", "resourceClaimName": "c"}],
                         "schedulingGates": [{"name": g} for g in gates]})
        activation = {**_activation(None, pod_, "alice", "CREATE"), "Object": _TypeName()}
        applied = _plain(evaluate(mutation["applyConfiguration"]["expression"], activation))
        assert expected == [g["name"] for g in apply_configuration(pod_, applied)["spec"]["schedulingGates"]]

    def test_policy_shape(self, gate_policy: dict[str, Any]) -> None:
        """Pod CREATEs only, fail open, never reinvoked."""
        spec = gate_policy["spec"]
        assert spec["failurePolicy"] == "Ignore"
        assert spec["reinvocationPolicy"] == "Never"
        [rule] = spec["matchConstraints"]["resourceRules"]
        assert (["CREATE"], ["pods"], [""]) == (rule["operations"], rule["resources"], rule["apiGroups"])


@pytest.fixture(scope="module")
def webhook(render: Callable[[str], Objects]) -> dict[str, Any]:
    [hook] = one(render("production"), "MutatingWebhookConfiguration", "draledger-gate-pods")["webhooks"]
    return dict(hook)


class TestWebhook:
    @pytest.mark.parametrize(("spec", "expected"), CREATE_CASES)
    def test_match_conditions(self, webhook: dict[str, Any], spec: dict[str, Any], expected: bool) -> None:
        """The webhook is called for the same pods as the policy would gate."""
        assert expected == matches(webhook, _activation(None, _new_pod(spec), "alice", "CREATE"))

    def test_same_conditions_as_the_policy(self, webhook: dict[str, Any], gate_policy: dict[str, Any]) -> None:
        """Webhook and MutatingAdmissionPolicy share their matchConditions word for word."""
        assert gate_policy["spec"]["matchConditions"] == webhook["matchConditions"]

    def test_configuration(self, webhook: dict[str, Any]) -> None:
        """Service draledger-webhook:443 path /gate-pods, v1 reviews, no side effects, 5 s, fail open, CREATE pods."""
        assert {"service": {"name": "draledger-webhook", "namespace": "draledger-system", "port": 443,
                            "path": "/gate-pods"}} == webhook["clientConfig"]
        assert ["v1"] == webhook["admissionReviewVersions"]
        assert webhook["sideEffects"] == "None"
        assert webhook["timeoutSeconds"] == 5
        assert webhook["failurePolicy"] == "Ignore"
        [rule] = webhook["rules"]
        assert (["CREATE"], ["pods"], [""]) == (rule["operations"], rule["resources"], rule["apiGroups"])

    def test_ca_injection_names_the_certificate(self, render: Callable[[str], Objects]) -> None:
        """cert-manager's inject-ca-from annotation points at the Certificate that writes the mounted Secret."""
        objects = render("production")
        configuration = one(objects, "MutatingWebhookConfiguration", "draledger-gate-pods")
        certificate = one(objects, "Certificate")
        meta = certificate["metadata"]
        assert f"{meta['namespace']}/{meta['name']}" == \
            configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
        assert certificate["spec"]["secretName"] == "draledger-webhook-tls"
        assert "draledger-webhook.draledger-system.svc" in certificate["spec"]["dnsNames"]


# --- which namespaces are gated -------------------------------------------------------------------------


NAMESPACES = {
    "kube-system": {},
    "draledger-system": {"draledger.dev/gating": "disabled"},
    "team-a": {},
    "team-b": {"draledger.dev/gating": "disabled"},
    "team-c": {"draledger.dev/gating": "enabled"},
}


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
        present = key in labels
        ok = {"In": present and labels.get(key) in values, "NotIn": not present or labels.get(key) not in values,
              "Exists": present, "DoesNotExist": not present}[operator]
        if not ok:
            return False
    return True


def _gated_namespaces(selector: dict[str, Any]) -> set[str]:
    return {name for name, labels in NAMESPACES.items()
            if _selects(selector, {**labels, "kubernetes.io/metadata.name": name})}


@pytest.mark.parametrize(("variant", "expected"), [
    pytest.param("production", {"team-a", "team-c"}, id="production"),
    pytest.param("canary", {"team-c"}, id="canary"),
    pytest.param("base", {"team-a", "team-c"}, id="base"),
])
def test_webhook_namespaces(render: Callable[[str], Objects], variant: str, expected: set[str]) -> None:
    """Production gates all but kube-system, draledger-system and opted-out namespaces; canary only opted-in ones."""
    [hook] = one(render(variant), "MutatingWebhookConfiguration")["webhooks"]
    assert expected == _gated_namespaces(hook["namespaceSelector"])


@pytest.mark.parametrize(("variant", "expected"), [
    pytest.param("production+admission-policy", {"team-a", "team-c"}, id="production"),
    pytest.param("canary+admission-policy", {"team-c"}, id="canary"),
    pytest.param("base+admission-policy", {"team-a", "team-c"}, id="base"),
])
def test_policy_namespaces(render: Callable[[str], Objects], variant: str, expected: set[str]) -> None:
    """The MutatingAdmissionPolicyBinding selects the same namespaces as the webhook would."""
    binding = one(render(variant), "MutatingAdmissionPolicyBinding", "draledger-gate-pods")
    assert binding["spec"]["policyName"] == "draledger-gate-pods"
    assert expected == _gated_namespaces(binding["spec"]["matchResources"]["namespaceSelector"])


def test_no_mutating_policy_without_the_component(render: Callable[[str], Objects]) -> None:
    """The base and the overlays gate through the webhook only, never both ways at once."""
    for variant in ("base", "canary", "production"):
        assert not find(render(variant), "MutatingAdmissionPolicy")


def test_observe_gates_nothing(render: Callable[[str], Objects]) -> None:
    """overlays/observe has no admission path at all: neither the webhook nor the MutatingAdmissionPolicy."""
    objects = render("observe+no-webhook")
    assert [] == [o["kind"] for o in objects
                  if o["kind"] in ("MutatingWebhookConfiguration", "MutatingAdmissionPolicy",
                                   "MutatingAdmissionPolicyBinding")]
