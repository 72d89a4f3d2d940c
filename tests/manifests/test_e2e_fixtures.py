"""What the kind suite applies is valid for v1.36 and consistent, checked here where there is no cluster.

Covered: every object of e2e/manifests/ (strict kubernetes-validate 1.36.0, resource.k8s.io/v1 included; on the
later releases only the v1.36-shaped ResourceSlice is refused), e2e/overlay rendered with the real `kubectl
kustomize` (each object validated for every release, as in test_manifest_render),
and e2e/kind-config.yaml. The consistency checks are the assumptions e2e/test_kind.py makes: the pod is
gated by the policy in its namespace, its claim resolves to the published devices of the canary node, and
every device maps to node cpu in the v1.36 shape.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from tests.manifests import schemas
from tests.manifests.kustomized import ROOT, Objects, find, one
from tests.manifests.test_manifest_admission import GATE, _activation, _selects, matches
from tests.manifests.test_manifest_render import CUSTOM_CHECKS, KUBERNETES, _metadata
from tests.realcluster.releases import RELEASES

E2E = ROOT / "e2e"
FIXTURES = sorted((E2E / "manifests").glob("*.yaml"))
CANARY_LABEL = ("draledger.dev/canary", "true")
E2E_LABEL = ("app.kubernetes.io/part-of", "draledger-e2e")  # the suite deletes cluster-scoped objects by it
DEFAULT_CLUSTER = "draledger-e2e"  # e2e/conftest.py, DRALEDGER_E2E_CLUSTER unset


def _load(path: Path) -> Objects:
    return [obj for obj in yaml.safe_load_all(path.read_text(encoding="utf-8")) if obj]


@pytest.fixture(scope="module")
def fixtures() -> Objects:
    return [obj for path in FIXTURES for obj in _load(path)]


@pytest.fixture(scope="module")
def e2e_overlay(kubectl: str) -> Objects:
    result = subprocess.run([kubectl, "kustomize", str(E2E / "overlay")], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, f"kubectl kustomize e2e/overlay failed:\n{result.stderr}"
    return [obj for obj in yaml.safe_load_all(result.stdout) if obj]


def _canary_node() -> str:
    """The node kind names for the worker that e2e/kind-config.yaml labels canary (workers: NAME-worker, -worker2…)."""
    nodes = yaml.safe_load((E2E / "kind-config.yaml").read_text(encoding="utf-8"))["nodes"]
    workers = [node for node in nodes if node["role"] == "worker"]
    [index] = [i for i, node in enumerate(workers) if node.get("labels", {}).get(CANARY_LABEL[0]) == CANARY_LABEL[1]]
    return f"{DEFAULT_CLUSTER}-worker{index + 1 if index else ''}"


# --- schema validation ------------------------------------------------------------------------------------


def test_fixture_files_exist() -> None:
    """The suite's fixtures are where test_kind.py reads them."""
    assert {"deviceclass", "namespace", "pod", "resourceclaimtemplate", "resourceslice"} <= {p.stem for p in FIXTURES}


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_fixture_objects_are_valid_for_v1_36(path: Path) -> None:
    """Every object of e2e/manifests/ passes kubernetes-validate 1.36.0 strict (unknown fields are errors)."""
    objects = _load(path)
    assert objects
    for obj in objects:
        _metadata(obj)
        assert "1.36" == kubernetes_validate.validate(obj, KUBERNETES, strict=True)


@pytest.mark.parametrize("schema_release", [name for name in RELEASES if name != "v1.36"])
def test_fixture_objects_on_later_releases(schema_release: str, fixtures: Objects) -> None:
    """The kind suite runs v1.36 (e2e/kind-config.yaml): on the later releases every fixture is still valid but the
    ResourceSlice, whose v1.36 device field (nodeAllocatableResourceMappings) v1.37 renamed, as strict validation
    says."""
    validate = schemas.validator(schema_release)
    refused = []
    for obj in fixtures:
        try:
            validate(obj)
        except kubernetes_validate.ValidationError as error:
            refused.append((obj["kind"], "nodeAllocatableResourceMappings" in str(error.message)))

    assert "kindest/node:v1.36." in (E2E / "kind-config.yaml").read_text(encoding="utf-8")
    assert [("ResourceSlice", True)] == refused


def test_validator_knows_the_v1_36_mapping_shape(fixtures: Objects) -> None:
    """The schema checks the fields inside nodeAllocatableResourceMappings and has no v1.37 device field, so
    passing means something (it does not check quantity syntax: the fixtures' quantities are plain integers)."""
    device = one(fixtures, "ResourceSlice")["spec"]["devices"][0]
    broken = [
        {**device, "nodeAllocatableResourceMappings": {"cpu": {"allocationMultiplier": "1", "bogus": True}}},
        {key: value for key, value in device.items() if key != "nodeAllocatableResourceMappings"}
        | {"nodeAllocatableResources": {"cpu": {"mapping": {"deviceMultiplier": "1"}}}},  # the v1.37 shape
    ]
    for bad in broken:
        obj = one(fixtures, "ResourceSlice")
        obj = {**obj, "spec": {**obj["spec"], "devices": [bad]}}
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(obj, KUBERNETES, strict=True)


@pytest.mark.parametrize("schema_release", list(RELEASES))
def test_e2e_overlay_renders_valid_objects(e2e_overlay: Objects, schema_release: str) -> None:
    """e2e/overlay renders with `kubectl kustomize`; built-in kinds pass the release's schemas strictly (the
    operator's install is not tied to the kind suite's v1.36), CRD kinds our checks."""
    validate = schemas.validator(schema_release)
    assert e2e_overlay
    keys = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in e2e_overlay]
    assert sorted(set(keys)) == sorted(keys)
    for obj in e2e_overlay:
        _metadata(obj)
        check = CUSTOM_CHECKS.get((obj["apiVersion"], obj["kind"]))
        if check is not None:
            check(obj, e2e_overlay)
        else:
            validate(obj)


# --- what the e2e overlay deploys -------------------------------------------------------------------------


def test_e2e_overlay_is_the_canary_with_the_policy(e2e_overlay: Objects, render: Callable[[str], Objects]) -> None:
    """The suite's image, the canary node selector, no webhook, and the canary overlay's namespace scope."""
    [container] = one(e2e_overlay, "Deployment", "draledger")["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "draledger:e2e"  # e2e/conftest.py IMAGE, loaded with `kind load docker-image`
    assert container["imagePullPolicy"] == "IfNotPresent"  # a loaded image, never pulled
    [config] = [c for c in find(e2e_overlay, "ConfigMap") if c["metadata"]["name"].startswith("draledger-config")]
    assert config["data"]["DRALEDGER_NODE_SELECTOR"] == "=".join(CANARY_LABEL)
    assert config["data"]["DRALEDGER_WEBHOOK"] == "false"
    assert not find(e2e_overlay, "MutatingWebhookConfiguration")
    binding = one(e2e_overlay, "MutatingAdmissionPolicyBinding", "draledger-gate-pods")
    canary = one(render("canary+admission-policy"), "MutatingAdmissionPolicyBinding", "draledger-gate-pods")
    assert canary["spec"] == binding["spec"]
    policy = one(e2e_overlay, "MutatingAdmissionPolicy", "draledger-gate-pods")
    assert policy == one(render("canary+admission-policy"), "MutatingAdmissionPolicy", "draledger-gate-pods")


def test_kind_config() -> None:
    """One v1.36 node image pinned by digest, the gate on for every component, one labelled canary worker."""
    config = yaml.safe_load((E2E / "kind-config.yaml").read_text(encoding="utf-8"))
    assert (config["kind"], config["apiVersion"]) == ("Cluster", "kind.x-k8s.io/v1alpha4")
    assert config["featureGates"] == {"DRANodeAllocatableResources": True}
    images = {node["image"] for node in config["nodes"]}
    assert len(images) == 1
    assert re.fullmatch(r"kindest/node:v1\.36\.\d+@sha256:[0-9a-f]{64}", images.pop())
    assert [node["role"] for node in config["nodes"]].count("control-plane") == 1
    assert _canary_node() == f"{DEFAULT_CLUSTER}-worker"


# --- the assumptions of e2e/test_kind.py ------------------------------------------------------------------


def test_every_fixture_carries_the_cleanup_label(fixtures: Objects) -> None:
    """The suite removes leftovers of a kept cluster by label (cluster-scoped kinds) or with the namespace."""
    for obj in fixtures:
        assert obj["metadata"].get("labels", {}).get(E2E_LABEL[0]) == E2E_LABEL[1], obj["kind"]


def test_slice_publishes_mapped_cores_on_the_canary_node(fixtures: Objects) -> None:
    """One complete pool on the canary node; every device maps to node cpu by device count (v1.36 shape)."""
    spec = one(fixtures, "ResourceSlice")["spec"]
    node = _canary_node()
    assert spec["nodeName"] == node
    assert spec["pool"] == {"name": node, "generation": 1, "resourceSliceCount": 1}
    assert len(spec["devices"]) >= 2  # room for a second claim while the first is being deallocated
    for device in spec["devices"]:
        assert device["nodeAllocatableResourceMappings"] == {"cpu": {"allocationMultiplier": "1"}}, device["name"]
        assert not device.get("allowMultipleAllocations")  # no capacityKey, so none is needed
        assert set(device["attributes"]["numaNode"]) == {"int"}  # the ledger's default NUMA attribute


def test_claim_resolves_to_the_published_devices(fixtures: Objects) -> None:
    """The pod's template asks the DeviceClass, whose selector picks exactly the slice's driver."""
    driver = one(fixtures, "ResourceSlice")["spec"]["driver"]
    device_class = one(fixtures, "DeviceClass")
    [selector] = device_class["spec"]["selectors"]
    assert selector["cel"]["expression"] == f'device.driver == "{driver}"'
    template = one(fixtures, "ResourceClaimTemplate")
    [request] = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["deviceClassName"] == device_class["metadata"]["name"]
    assert request["exactly"].get("count", 1) == 1  # one cpu per pod: small kind hosts suffice
    pod = one(fixtures, "Pod")
    assert {c["resourceClaimTemplateName"] for c in pod["spec"]["resourceClaims"]} == {template["metadata"]["name"]}
    assert template["metadata"]["namespace"] == pod["metadata"]["namespace"]


def test_pod_is_schedulable_on_the_canary_only(fixtures: Objects) -> None:
    """Pinned to the canary by hostname; every claim used by a container (v1.36 rejects unreferenced ones)."""
    spec = one(fixtures, "Pod")["spec"]
    assert spec["nodeSelector"] == {"kubernetes.io/hostname": _canary_node()}
    assert "nodeName" not in spec  # bound at creation, a pod could not be gated
    assert "schedulingGates" not in spec  # the policy adds ours
    used = {claim["name"] for container in spec["containers"] for claim in container["resources"].get("claims", [])}
    assert used == {claim["name"] for claim in spec["resourceClaims"]}


def test_pod_is_gated_in_its_namespace(fixtures: Objects, e2e_overlay: Objects) -> None:
    """The e2e overlay's MutatingAdmissionPolicy matches the pod, and its binding selects the pod's namespace."""
    pod = one(fixtures, "Pod")
    namespace = one(fixtures, "Namespace")
    assert pod["metadata"]["namespace"] == namespace["metadata"]["name"]
    policy = one(e2e_overlay, "MutatingAdmissionPolicy", "draledger-gate-pods")
    assert matches(policy["spec"], _activation(None, pod, "kubernetes-admin", "CREATE"))
    assert GATE in policy["spec"]["mutations"][0]["applyConfiguration"]["expression"]
    selector = one(e2e_overlay, "MutatingAdmissionPolicyBinding")["spec"]["matchResources"]["namespaceSelector"]
    labels = {**namespace["metadata"]["labels"], "kubernetes.io/metadata.name": namespace["metadata"]["name"]}
    assert _selects(selector, labels)
    assert not _selects(selector, {"kubernetes.io/metadata.name": "default"})  # the suite's negative dry run
