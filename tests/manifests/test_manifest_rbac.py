"""Least privilege: the operator's ClusterRoles grant exactly the allowlist, one role per duty."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from draledger.operator.leadership import LeaderElection
from tests.manifests.kustomized import VARIANTS, Objects, find

SUBJECT = {"kind": "ServiceAccount", "name": "draledger", "namespace": "draledger-system"}

# (apiGroup, resource) -> verbs, per duty. Read-only everywhere except what the issue lists: ledgers
# (create/patch, status), pods/status patch (backfill), pods patch (gate release), events create.
ALLOWLIST: dict[str, dict[tuple[str, str], set[str]]] = {
    "draledger-reader": {
        ("", "namespaces"): {"get", "list", "watch"},
        ("", "nodes"): {"get", "list", "watch"},
        ("", "pods"): {"get", "list", "watch"},
        ("resource.k8s.io", "deviceclasses"): {"get", "list", "watch"},
        ("resource.k8s.io", "resourceclaims"): {"get", "list", "watch"},
        ("resource.k8s.io", "resourceslices"): {"get", "list", "watch"},
    },
    "draledger-ledger-writer": {
        ("draledger.dev", "nodeallocatableledgers"): {"get", "list", "watch", "create", "patch"},
        ("draledger.dev", "nodeallocatableledgers/status"): {"get", "patch"},
    },
    "draledger-pod-status-backfill": {("", "pods/status"): {"patch"}},
    "draledger-gate-release": {("", "pods"): {"patch"}},
    "draledger-events": {("", "events"): {"create"}},
}
READ_VERBS = {"get", "list", "watch"}


def _grants(role: dict[str, Any]) -> dict[tuple[str, str], set[str]]:
    grants: dict[tuple[str, str], set[str]] = {}
    for rule in role.get("rules", []):
        assert set(rule) <= {"apiGroups", "resources", "verbs"}, f"{role['metadata']['name']}: {sorted(rule)}"
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                grants.setdefault((group, resource), set()).update(rule["verbs"])
    return grants


@pytest.mark.parametrize("variant", VARIANTS)
class TestRbac:
    def test_cluster_roles_equal_the_allowlist(self, render: Callable[[str], Objects], variant: str) -> None:
        """The rendered ClusterRoles' rules are exactly the allowlist, duty by duty."""
        roles = {r["metadata"]["name"]: _grants(r) for r in find(render(variant), "ClusterRole")}
        assert ALLOWLIST == roles

    def test_the_only_namespaced_rbac_is_the_leader_lease(self, render: Callable[[str], Objects], variant: str) -> None:
        """One Role, in the operator's namespace: create Leases (create cannot name one), get and update only
        the Lease the operator uses by default; one RoleBinding of it to the operator's ServiceAccount."""
        objects = render(variant)
        roles, bindings = find(objects, "Role"), find(objects, "RoleBinding")
        assert [("draledger-leader-election", "draledger-system")] == [
            (r["metadata"]["name"], r["metadata"]["namespace"]) for r in roles]
        assert [
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": [LeaderElection().name],
             "verbs": ["get", "update"]},
        ] == roles[0]["rules"]
        assert [("draledger-leader-election", "draledger-system")] == [
            (b["metadata"]["name"], b["metadata"]["namespace"]) for b in bindings]
        assert {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "draledger-leader-election"} == \
            bindings[0]["roleRef"]
        assert [SUBJECT] == bindings[0]["subjects"]

    def test_no_wildcards_no_secrets(self, render: Callable[[str], Objects], variant: str) -> None:
        """No `*` anywhere in any rule, no Secrets, no resourceNames/nonResourceURLs escapes, no escalation verbs."""
        for role in find(render(variant), "ClusterRole"):
            assert "aggregationRule" not in role
            for rule in role["rules"]:
                values = [*rule["apiGroups"], *rule["resources"], *rule["verbs"]]
                assert not any("*" in value for value in values), rule
                assert "secrets" not in rule["resources"]
                assert not {"escalate", "bind", "impersonate", "delete", "deletecollection"} & set(rule["verbs"])

    def test_writes_are_the_listed_ones(self, render: Callable[[str], Objects], variant: str) -> None:
        """Beyond get/list/watch only: ledgers create/patch, ledger status, pods/status, pods, events create."""
        writes = {
            (group, resource, verb)
            for role in find(render(variant), "ClusterRole")
            for (group, resource), verbs in _grants(role).items()
            for verb in verbs - READ_VERBS
        }
        assert {
            ("draledger.dev", "nodeallocatableledgers", "create"),
            ("draledger.dev", "nodeallocatableledgers", "patch"),
            ("draledger.dev", "nodeallocatableledgers/status", "patch"),
            ("", "pods/status", "patch"),
            ("", "pods", "patch"),
            ("", "events", "create"),
        } == writes

    def test_each_duty_is_bound_to_the_operator(self, render: Callable[[str], Objects], variant: str) -> None:
        """Each ClusterRole has one ClusterRoleBinding of the same name, to the operator's ServiceAccount only."""
        objects = render(variant)
        bindings = {b["metadata"]["name"]: b for b in find(objects, "ClusterRoleBinding")}
        assert set(ALLOWLIST) == set(bindings)
        for name, binding in bindings.items():
            assert {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name} == binding["roleRef"]
            assert [SUBJECT] == binding["subjects"]
        accounts = find(objects, "ServiceAccount")
        assert [("draledger", "draledger-system")] == [(a["metadata"]["name"], a["metadata"]["namespace"])
                                                      for a in accounts]
