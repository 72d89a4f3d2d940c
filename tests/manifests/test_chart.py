"""The Helm chart charts/dra-ledger: it lints, every values file of ci/ renders valid objects for every release of
the matrix (tests/manifests/schemas.py), the namespace is the release's everywhere, and values that cannot work are
refused with one line naming the value."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from draledger.operator.config import OPTIONS
from draledger.operator.options import ConfigError
from tests.manifests import schemas
from tests.manifests.charted import CHART, CI_VALUES, KUBERNETES, rendered, template, values
from tests.manifests.kustomized import Objects, find, one
from tests.manifests.test_manifest_render import CLUSTER_SCOPED, CUSTOM_CHECKS, NAMED_WAVES, WAVES
from tests.realcluster.releases import RELEASES

SCHEMA_VERSIONS = {name: schemas.version_of(name) for name in RELEASES}


def validate(objects: Objects, release: str) -> None:
    """Built-in kinds strictly against the release's official schemas; CRD kinds by our structural checks."""
    check_builtin = schemas.validator(release)
    for obj in objects:
        check = CUSTOM_CHECKS.get((obj["apiVersion"], obj["kind"]))
        if check is not None:
            check(obj, objects)
        else:
            check_builtin(obj)


def lint(helm: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run([str(helm), "lint", str(CHART), "--strict", "--kube-version", KUBERNETES, *args],
                          capture_output=True, text=True, timeout=60, check=False)
    return done.returncode, done.stdout + done.stderr


class TestLint:
    def test_the_defaults_lint(self, helm: Path) -> None:
        """`helm lint --strict` passes with the chart's own values."""
        code, output = lint(helm)
        assert (0, "1 chart(s) linted, 0 chart(s) failed") == (code, output.strip().splitlines()[-1])

    @pytest.mark.parametrize("name", CI_VALUES)
    def test_every_ci_values_file_lints(self, helm: Path, name: str) -> None:
        """`helm lint --strict` passes with each values file of ci/."""
        code, output = lint(helm, *values(name))
        assert 0 == code, output


@pytest.mark.parametrize("name", CI_VALUES)
class TestCiValues:
    @pytest.mark.parametrize("schema_release", list(RELEASES))
    def test_every_object_is_valid(self, helm: Path, name: str, schema_release: str) -> None:
        """Every object rendered for the release validates for it (its official schemas strictly, or our CRD-kind
        checks)."""
        objects = rendered(helm, *values(name), kubernetes=SCHEMA_VERSIONS[schema_release])
        assert objects
        validate(objects, schema_release)

    def test_objects_are_unique_and_waved(self, helm: Path, name: str) -> None:
        """No two objects share kind, namespace and name; each templated one carries the manifests' sync wave."""
        objects = rendered(helm, *values(name))
        keys = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects]
        templated = [o for o in objects if o["kind"] != "CustomResourceDefinition"]  # crds/ is not templated

        assert sorted(set(keys)) == sorted(keys)
        assert [NAMED_WAVES.get((o["kind"], o["metadata"]["name"]), WAVES[o["kind"]]) for o in templated] == [
            o["metadata"].get("annotations", {}).get("argocd.argoproj.io/sync-wave") for o in templated]


def shipped(objects: Objects) -> list[tuple[str, str]]:
    """(variable, value) of every DRALEDGER_* the render sets: the ConfigMap's data and plain container env values."""
    found = [(name, value) for o in find(objects, "ConfigMap") if o["metadata"]["name"].startswith("draledger-config")
             for name, value in o["data"].items()]
    for container in one(objects, "Deployment")["spec"]["template"]["spec"]["containers"]:
        found += [(e["name"], e["value"]) for e in container.get("env", []) if e["name"].startswith("DRALEDGER_")
                  and "value" in e]
    return found


@pytest.mark.parametrize("name", CI_VALUES)
def test_every_value_the_chart_sets_is_read(helm: Path, name: str) -> None:
    """Every DRALEDGER_* value the chart renders names a declared option and parses through it."""
    by_variable = {option.variable: option for option in OPTIONS}
    values_set = shipped(rendered(helm, *values(name)))
    unread = []
    for variable, value in values_set:
        try:
            by_variable[variable].from_environment({variable: value})
        except (KeyError, ConfigError) as error:
            unread.append(f"{variable}={value!r}: {error!r}")

    assert {"DRALEDGER_POD_STATUS", "DRALEDGER_LEADER_ELECTION"} <= {variable for variable, _ in values_set}
    assert [] == unread


def strings(value: Any) -> list[str]:
    """Every string in a decoded object, keys included."""
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in (key, *strings(item))]
    if isinstance(value, list):
        return [text for item in value for text in strings(item)]
    return [value] if isinstance(value, str) else []


@pytest.mark.parametrize("name", CI_VALUES)
class TestNamespace:
    def test_every_namespaced_object_is_in_the_release_namespace(self, helm: Path, name: str) -> None:
        """Installed with -n platform-ledger: namespaced objects are there, cluster-scoped ones have none."""
        for obj in rendered(helm, *values(name), namespace="platform-ledger"):
            expected = None if obj["kind"] in CLUSTER_SCOPED else "platform-ledger"
            assert expected == obj["metadata"].get("namespace"), obj["kind"]

    def test_draledger_system_is_named_nowhere(self, helm: Path, name: str) -> None:
        """No field, annotation, DNS name, selector or CEL string still names draledger-system."""
        objects = rendered(helm, *values(name), namespace="platform-ledger")

        assert [] == [(o["kind"], text) for o in objects for text in strings(o) if "draledger-system" in text]


def test_every_place_that_names_the_namespace_follows_it(helm: Path) -> None:
    """The webhook's service, the CA injector's source, the certificate's names, the guardrail's user, the never-gated
    namespaces (admission and operator), the Lease's RBAC and the ServiceMonitor all name the release's namespace."""
    objects = rendered(helm, *values("production-values.yaml"), namespace="platform-ledger")
    policy = rendered(helm, *values("minimal-values.yaml"), namespace="platform-ledger")
    hook = one(objects, "MutatingWebhookConfiguration")
    certificate = one(objects, "Certificate")["spec"]
    guardrail = one(objects, "ValidatingAdmissionPolicy", "draledger-pod-writes")["spec"]
    config = next(o for o in objects if o["metadata"]["name"].startswith("draledger-config-"))["data"]
    subjects = {(b["kind"], s["namespace"]) for b in find(objects, "ClusterRoleBinding") + find(objects, "RoleBinding")
                for s in b["subjects"]}
    binding = one(policy, "MutatingAdmissionPolicyBinding")["spec"]["matchResources"]["namespaceSelector"]

    assert "platform-ledger" == hook["webhooks"][0]["clientConfig"]["service"]["namespace"]
    assert "platform-ledger/draledger-webhook" == hook["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
    assert ["draledger-webhook.platform-ledger.svc", "draledger-webhook.platform-ledger.svc.cluster.local"] == \
        certificate["dnsNames"]
    assert "draledger-webhook.platform-ledger.svc" == certificate["commonName"]
    assert ("request.userInfo.username == 'system:serviceaccount:platform-ledger:draledger'"
            == guardrail["matchConditions"][0]["expression"])
    assert ["kube-system", "platform-ledger"] == hook["webhooks"][0]["namespaceSelector"]["matchExpressions"][0][
        "values"] == binding["matchExpressions"][0]["values"]
    assert "kube-system,platform-ledger" == config["DRALEDGER_GATE_EXCLUDE_NAMESPACES"]
    assert {("ClusterRoleBinding", "platform-ledger"), ("RoleBinding", "platform-ledger")} == subjects
    assert ["platform-ledger"] == one(objects, "ServiceMonitor")["spec"]["namespaceSelector"]["matchNames"]


class TestValues:
    def test_the_default_gates_with_the_admission_policy_and_needs_nothing(self, helm: Path) -> None:
        """Without values: the MutatingAdmissionPolicy, no webhook, no cert-manager or Prometheus Operator object."""
        objects = rendered(helm)
        groups = {o["apiVersion"].rpartition("/")[0] for o in objects}

        assert {"cert-manager.io", "monitoring.coreos.com"}.isdisjoint(groups)
        assert [] == find(objects, "MutatingWebhookConfiguration") + find(objects, "Namespace")
        one(objects, "MutatingAdmissionPolicyBinding", "draledger-gate-pods")

    def test_a_provided_secret_gives_the_caBundle_and_no_cert_manager(self, helm: Path) -> None:
        """certificate=secret: the webhook carries the given caBundle and mounts the named Secret; no Issuer."""
        objects = rendered(helm, *values("webhook-secret-values.yaml"))
        hook = one(objects, "MutatingWebhookConfiguration")
        volumes = one(objects, "Deployment")["spec"]["template"]["spec"]["volumes"]

        assert "cert-manager.io/inject-ca-from" not in hook["metadata"]["annotations"]
        assert hook["webhooks"][0]["clientConfig"]["caBundle"].startswith("LS0t")
        assert "Fail" == hook["webhooks"][0]["failurePolicy"]
        assert ["platform-webhook-tls"] == [v["secret"]["secretName"] for v in volumes if "secret" in v]
        assert [] == find(objects, "Issuer") + find(objects, "Certificate")

    def test_one_replica_without_leader_election_is_recreated_and_has_no_budget(self, helm: Path) -> None:
        """leaderElection.enabled=false: one replica, strategy Recreate, the variable off, no PodDisruptionBudget."""
        objects = rendered(helm, *values("single-replica-values.yaml"))
        spec = one(objects, "Deployment")["spec"]
        env = {e["name"]: e.get("value") for e in spec["template"]["spec"]["containers"][0]["env"]}

        assert (1, {"type": "Recreate"}, "false") == (spec["replicas"], spec["strategy"],
                                                      env["DRALEDGER_LEADER_ELECTION"])
        assert [] == find(objects, "PodDisruptionBudget")

    def test_a_changed_value_renames_the_configuration(self, helm: Path) -> None:
        """The ConfigMap's name follows its data, and the Deployment follows the name: a change rolls it."""
        def config_name(*args: str) -> tuple[str, str]:
            objects = rendered(helm, *args)
            [config] = [o for o in find(objects, "ConfigMap") if o["metadata"]["name"].startswith("draledger-config")]
            container = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
            return config["metadata"]["name"], container["envFrom"][0]["configMapRef"]["name"]

        backfill, observe = config_name(), config_name("--set", "podStatus=observe")
        assert backfill[0] == backfill[1]
        assert observe[0] == observe[1]
        assert backfill[0] != observe[0]

    def test_the_image_follows_the_values(self, helm: Path) -> None:
        """A tag defaults to the chart's appVersion; a digest replaces the tag."""
        def image(*args: str) -> str:
            return str(one(rendered(helm, *args), "Deployment")["spec"]["template"]["spec"]["containers"][0]["image"])

        assert "ghcr.io/dra-ledger/draledger:0.1.0" == image()
        assert "ghcr.io/dra-ledger/draledger:0.2.0" == image("--set", "image.tag=0.2.0")
        assert ("registry.example.com/platform/draledger@sha256:" + "0123456789abcdef" * 4
                == image(*values("webhook-secret-values.yaml")))

    def test_the_dashboard_is_the_components(self, helm: Path) -> None:
        """The dashboard ConfigMap holds manifests/components/dashboard's JSON, byte for byte."""
        [dashboard] = find(rendered(helm, *values("single-replica-values.yaml")), "ConfigMap", "draledger-dashboard")
        source = (CHART.parents[1] / "manifests/components/dashboard/draledger-dashboard.json").read_text("utf-8")
        assert source == dashboard["data"]["draledger-dashboard.json"]
        json.loads(dashboard["data"]["draledger-dashboard.json"])


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["--set", "podStatus=bogus"], "at '/podStatus'", id="pod-status"),
    pytest.param(["--set", "gating.mode=sometimes"], "at '/gating/mode'", id="gating-mode"),
    pytest.param(["--set", "gating.webhook.certificate=vault"], "at '/gating/webhook/certificate'", id="certificate"),
    pytest.param(["--set", "replicas=0"], "at '/replicas'", id="no-replica"),
    pytest.param(["--set", "canary.enabeld=true"], "at '/canary'", id="misspelt"),
    pytest.param(["--set", "leaderElection.enabled=false"], "replicas: 2 replicas need leaderElection.enabled=true",
                 id="two-writers"),
    pytest.param(["--set", "gating.mode=webhook", "--set", "gating.webhook.certificate=secret"],
                 "gating.webhook.caBundle:", id="secret-without-ca"),
    pytest.param(["--set", "canary.enabled=true", "--set", "canary.nodeSelector="], "canary.nodeSelector:",
                 id="canary-of-every-node"),
])
def test_values_that_cannot_work_are_refused_naming_the_value(helm: Path, args: list[str], message: str) -> None:
    """helm template fails, and its error names the value at fault (values.schema.json's as a JSON pointer)."""
    done = template(helm, *args, check=False)

    assert 1 == done.returncode
    assert message in done.stderr, done.stderr



def leaves(values: dict[str, Any], prefix: str = "") -> list[str]:
    """The dotted names of the values that are not maps (a map of labels or selectors counts as one value)."""
    out = []
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and name not in ("resources", "canary.namespaceSelector"):
            out += leaves(value, f"{name}.")
        else:
            out.append(name)
    return out


def test_the_readme_names_every_value() -> None:
    """charts/dra-ledger/README.md's table has every value of values.yaml."""
    table = (CHART / "README.md").read_text(encoding="utf-8")
    names = leaves(yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8")))
    assert [] == [name for name in names if f"`{name}`" not in table]
