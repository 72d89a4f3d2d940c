"""One ordered flow on kind (needs kind and Docker; docs/e2e.md): deploy the canary-scoped operator, publish
mapped devices, schedule a claim pod through the gate, restart the operator, freeze and resume the node.

The steps share the deployed operator and the objects of e2e/manifests/; each step relies on the previous
ones (conftest.py runs them in file order and skips the rest after a failure). No kubelet plugin serves the
fake driver: pods are allocated, bound and charged, but their containers never start.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from conftest import CANARY_NODE, E2E, Kubectl, run, stays, wait_for
from draledger.core.quantities import Quantity, parse_quantity

OPERATOR_NAMESPACE = "draledger-system"
OPERATOR_PODS = "app.kubernetes.io/name=draledger,app.kubernetes.io/component=operator"
GATE = "draledger.dev/ledger-ready"
# what e2e/manifests/ hold
NAMESPACE = "draledger-e2e"
DRIVER = "cpu.e2e.draledger.dev"
SLICE = "draledger-e2e-worker-cores"
FIXTURE_NODE = "draledger-e2e-worker"  # the canary node of the default cluster, as written in the fixtures
E2E_OBJECTS = "app.kubernetes.io/part-of=draledger-e2e"
CORES = 4  # devices in the slice, each mapped to one node cpu
POD_CLAIM = "cores"  # pod.yaml's spec.resourceClaims[0].name; its container "app" uses it
FIRST_POD = "ledger-app"
FROZEN_POD = "ledger-frozen"


# --- objects and reading them -----------------------------------------------------------------------------


def manifest(name: str) -> list[dict[str, Any]]:
    """The objects of e2e/manifests/NAME.yaml, aimed at this run's canary node (DRALEDGER_E2E_CLUSTER)."""
    text = (E2E / "manifests" / f"{name}.yaml").read_text(encoding="utf-8").replace(FIXTURE_NODE, CANARY_NODE)
    return [obj for obj in yaml.safe_load_all(text) if obj]


def apply(kube: Kubectl, *objects: dict[str, Any]) -> None:
    kube("apply", "--server-side", "--field-manager=draledger-e2e", "-f", "-", stdin=yaml.safe_dump_all(objects))


def qty(text: str | None) -> Quantity:
    return parse_quantity(text or "0")


def gates(pod: dict[str, Any]) -> list[str]:
    return [gate["name"] for gate in pod["spec"].get("schedulingGates") or []]


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), {})


def ledger(kube: Kubectl) -> dict[str, Any]:
    """The canary node's NodeAllocatableLedger ({} while it does not exist)."""
    return kube.get("nal", CANARY_NODE) or {}


def pod(kube: Kubectl, name: str) -> dict[str, Any]:
    return kube.get("pod", name, NAMESPACE) or {}


def pod_where(kube: Kubectl, name: str, predicate: Callable[[dict[str, Any]], object]
              ) -> Callable[[], dict[str, Any] | None]:
    """A check for wait_for: the pod, once it exists and satisfies PREDICATE."""
    def check() -> dict[str, Any] | None:
        found = pod(kube, name)
        return found if found and predicate(found) else None
    return check


def ledger_where(kube: Kubectl, predicate: Callable[[dict[str, Any]], object]) -> Callable[[], dict[str, Any] | None]:
    """A check for wait_for: the canary ledger's status, once the ledger exists and its status satisfies PREDICATE."""
    def check() -> dict[str, Any] | None:
        status = ledger(kube).get("status") or {}
        return status if status and predicate(status) else None
    return check


def claim_of(pod_: dict[str, Any]) -> str:
    """The name of the ResourceClaim generated for the pod's claim (pod.status.resourceClaimStatuses)."""
    names = [s.get("resourceClaimName") for s in (pod_.get("status") or {}).get("resourceClaimStatuses") or []
             if s.get("name") == POD_CLAIM]
    return str(names[0]) if names and names[0] else ""


def status_managers(obj: dict[str, Any], field: str) -> list[str]:
    """The field managers that own status.FIELD (from metadata.managedFields)."""
    return sorted({entry.get("manager", "") for entry in obj["metadata"].get("managedFields") or []
                   if f"f:{field}" in ((entry.get("fieldsV1") or {}).get("f:status") or {})})


def create_pod(kube: Kubectl, name: str) -> dict[str, Any]:
    """Create e2e/manifests/pod.yaml under NAME; returns the object as kube-apiserver stored it (after admission)."""
    [body] = manifest("pod")
    body["metadata"]["name"] = name
    created: dict[str, Any] = kube.json("create", "-f", "-", stdin=json.dumps(body))
    return created


# --- waiting for the operator and the scheduler -----------------------------------------------------------


def wait_released_and_bound(kube: Kubectl, name: str) -> dict[str, Any]:
    """Wait until the operator removed our gate from the pod and the scheduler bound it; returns the bound pod."""
    released = wait_for(pod_where(kube, name, lambda p: GATE not in gates(p)),
                        f"the operator to remove {GATE} from pod {NAMESPACE}/{name}", timeout=120)
    assert [] == gates(released), f"only {GATE} was expected on pod {name}, it still has {gates(released)}"
    bound = wait_for(pod_where(kube, name, lambda p: p["spec"].get("nodeName")),
                     f"kube-scheduler to bind pod {NAMESPACE}/{name}", timeout=120)
    assert CANARY_NODE == bound["spec"]["nodeName"]
    return bound


def check_scheduler_status(kube: Kubectl, name: str) -> str:
    """The scheduler wrote the v1.36 status for the pod's one claim; returns the claim's name."""
    scheduled = wait_for(
        pod_where(kube, name, lambda p: (p.get("status") or {}).get("nodeAllocatableResourceClaimStatuses")),
        f"kube-scheduler to write status.nodeAllocatableResourceClaimStatuses of pod {NAMESPACE}/{name}",
        timeout=60)
    claim = claim_of(scheduled)
    assert claim, f"pod {name} has no status.resourceClaimStatuses entry for {POD_CLAIM}"
    # v1.36 shape: {resourceClaimName, containers, resources}; one core device x allocationMultiplier "1"
    assert [{"resourceClaimName": claim, "containers": ["app"], "resources": {"cpu": "1"}}] == \
        scheduled["status"]["nodeAllocatableResourceClaimStatuses"]
    owners = status_managers(scheduled, "nodeAllocatableResourceClaimStatuses")
    assert "kube-scheduler" in owners, f"the field was written by {owners}, not by kube-scheduler (a backfill?)"
    allocated = kube.get("resourceclaim", claim, NAMESPACE) or {}
    results = (((allocated.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    assert [(DRIVER, CANARY_NODE)] == [(r["driver"], r["pool"]) for r in results], results
    return claim


def wait_counted(kube: Kubectl, claims: dict[str, str]) -> dict[str, Any]:
    """Wait until the canary ledger is Ready, counts exactly CLAIMS (claim -> pod), one cpu each, in sync with
    the scheduler; returns the ledger."""
    cpus = qty(str(len(claims)))

    def counted() -> dict[str, Any] | None:
        found = ledger(kube)
        status = found.get("status") or {}
        listed = {c["name"]: c for c in status.get("claims") or [] if c.get("namespace") == NAMESPACE}
        cpu = (status.get("resources") or {}).get("cpu") or {}
        ok = (status.get("phase") == "Ready" and set(listed) == set(claims)
              and qty(cpu.get("claims")) == cpus
              and condition(found, "SchedulerInSync").get("status") == "True"
              and all(f"{NAMESPACE}/{claims[c]}" in listed[c].get("pods", []) for c in claims))
        return found if ok else None

    what = (f"the ledger of {CANARY_NODE} to be Ready and count {sorted(claims) or 'no claims'} "
            f"(status.resources.cpu.claims == {cpus}, SchedulerInSync=True)")
    found = wait_for(counted, what, timeout=120)
    status = found["status"]
    assert qty(status["resources"]["cpu"]["schedulerCharged"]) == cpus
    for claim in status["claims"]:
        assert ({"cpu": "1"}, {"cpu": "1"}) == (claim["resources"], claim["schedulerCharged"]), claim
    return found


def set_frozen(kube: Kubectl, frozen: bool) -> None:
    spec = {"frozen": frozen, "reason": "e2e freeze" if frozen else None}
    kube("patch", "nal", CANARY_NODE, "--type=merge", "-p", json.dumps({"spec": spec}))


def wait_phase(kube: Kubectl, phase: str) -> dict[str, Any]:
    return wait_for(ledger_where(kube, lambda status: status.get("phase") == phase),
                    f"the ledger of {CANARY_NODE} to reach phase {phase}", timeout=60)


# --- fixtures ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def deployed(kube: Kubectl) -> Kubectl:
    """e2e/overlay applied (server-side) and the operator rolled out."""
    existed = kube.get("deployment", "draledger", OPERATOR_NAMESPACE) is not None
    rendered = run("kubectl", "kustomize", str(E2E / "overlay")).stdout
    kube("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=rendered)
    if existed:  # a kept cluster: run the image that was just loaded under the same tag
        kube("-n", OPERATOR_NAMESPACE, "rollout", "restart", "deploy/draledger")
    kube("-n", OPERATOR_NAMESPACE, "rollout", "status", "deploy/draledger", "--timeout=240s")
    return kube


def remove_workload(kube: Kubectl) -> None:
    """Delete what the flow creates, pods first (forced: no kubelet plugin will ever unprepare their claims)."""
    kube("-n", NAMESPACE, "delete", "pods", "--all", "--ignore-not-found", "--force", "--grace-period=0")
    kube("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=true", "--timeout=180s")
    kube("delete", "resourceslices,deviceclasses", "-l", E2E_OBJECTS, "--ignore-not-found", "--wait=true",
         "--timeout=60s")


@pytest.fixture(scope="module")
def workload(deployed: Kubectl) -> Iterator[Kubectl]:
    """Starts without the flow's objects (a kept cluster may hold a previous run's) and removes them at the end."""
    remove_workload(deployed)
    yield deployed
    remove_workload(deployed)


# --- the flow ---------------------------------------------------------------------------------------------


def test_canary_overlay_gives_the_canary_node_a_ready_ledger(deployed: Kubectl) -> None:
    """The overlay deploys, becomes ready, and writes a Ready, fresh ledger for the labelled node only."""

    def ledgers() -> bool:
        items = deployed.json("get", "nal")["items"]
        ready = [i["metadata"]["name"] for i in items if (i.get("status") or {}).get("phase") == "Ready"]
        return [i["metadata"]["name"] for i in items] == ready == [CANARY_NODE]

    wait_for(ledgers, f"exactly one ledger, {CANARY_NODE}, in phase Ready")
    found = ledger(deployed)
    assert "True" == condition(found, "Fresh").get("status"), found["status"]["conditions"]
    assert [("Node", CANARY_NODE)] == [(o["kind"], o["name"]) for o in found["metadata"]["ownerReferences"]]


def test_published_slice_maps_cores_to_node_cpu(workload: Kubectl) -> None:
    """A ResourceSlice with v1.36 mappings is stored as published and moves the ledger's mappingVersion."""
    kube = workload
    before = wait_for(
        ledger_where(kube, lambda status: status.get("phase") == "Ready" and not status.get("numaZones")),
        f"the ledger of {CANARY_NODE} to be Ready without mapped devices", timeout=120)
    apply(kube, *manifest("deviceclass"), *manifest("resourceslice"))

    stored = kube.get("resourceslice", SLICE.replace(FIXTURE_NODE, CANARY_NODE)) or {}
    mappings = [d.get("nodeAllocatableResourceMappings") for d in stored["spec"]["devices"]]
    assert [{"cpu": {"allocationMultiplier": "1"}}] * CORES == mappings, \
        "kube-apiserver dropped or changed the mappings: is DRANodeAllocatableResources on?"

    def mapped() -> dict[str, Any] | None:
        status = ledger(kube).get("status") or {}
        zones = {z["id"]: z["resources"] for z in status.get("numaZones") or []}
        ok = (status.get("phase") == "Ready" and status.get("mappingVersion", 0) > before["mappingVersion"]
              and status.get("mappingFingerprint") != before["mappingFingerprint"]
              and qty(zones.get(0, {}).get("cpu", {}).get("capacity")) == qty(str(CORES)))
        return status if ok else None

    after = wait_for(mapped, f"the ledger of {CANARY_NODE} to see {CORES} cores in NUMA zone 0 "
                             "(numaZones[0].resources.cpu.capacity) under a new mappingVersion")
    assert after["ledgerVersion"] > before["ledgerVersion"]
    assert "True" == condition({"status": after}, "MappingsComplete").get("status")


def test_claim_pod_is_gated_released_bound_and_counted(workload: Kubectl) -> None:
    """The policy gates the claim pod, the operator releases it, the scheduler binds it and writes the v1.36
    status, and the ledger counts the claim's cpu in sync with the scheduler."""
    kube = workload
    apply(kube, *manifest("namespace"), *manifest("resourceclaimtemplate"))

    def gated_on_dry_run(namespace: str) -> bool:
        [body] = manifest("pod")
        body["metadata"]["namespace"] = namespace
        return GATE in gates(kube.json("create", "--dry-run=server", "-f", "-", stdin=json.dumps(body)))

    # the policy and its binding may take a moment to load after the apply; a server-side dry run creates nothing
    wait_for(lambda: gated_on_dry_run(NAMESPACE),
             f"the MutatingAdmissionPolicy to gate claim pods in {NAMESPACE} (server-side dry run)", timeout=60)
    assert not gated_on_dry_run("default"), "a namespace without draledger.dev/gating=enabled must not be gated"

    # the kubelet deletes its node's slices of unregistered drivers when it starts; ours must still be there
    assert kube.get("resourceslice", SLICE.replace(FIXTURE_NODE, CANARY_NODE)), "the published ResourceSlice is gone"

    created = create_pod(kube, FIRST_POD)
    assert [GATE] == gates(created), "the pod was admitted without the gate"
    wait_released_and_bound(kube, FIRST_POD)
    claim = check_scheduler_status(kube, FIRST_POD)
    wait_counted(kube, {claim: FIRST_POD})


def test_operator_restart_keeps_versions_and_counts(workload: Kubectl) -> None:
    """The leader's pod is deleted: the warm standby takes the Lease over, a new pod replaces the deleted one
    and becomes Ready, and the ledger's versions do not go backwards; the claim is still counted."""
    kube = workload
    before = ledger(kube)["status"]
    claim = claim_of(pod(kube, FIRST_POD))

    def leader() -> str:
        """The pod holding the Lease: its holderIdentity is the pod's name and a random suffix."""
        lease = kube.get("lease", "draledger", OPERATOR_NAMESPACE) or {}
        return str((lease.get("spec") or {}).get("holderIdentity") or "").rsplit("_", 1)[0]

    old = wait_for(leader, "a replica to hold the Lease draledger", timeout=60)
    kube("-n", OPERATOR_NAMESPACE, "delete", "pod", old, "--wait=true", "--timeout=120s")
    wait_for(lambda: leader() not in ("", old), f"another replica than {old} to take the Lease", timeout=120)

    def replaced() -> bool:
        items = kube.json("-n", OPERATOR_NAMESPACE, "get", "pods", "-l", OPERATOR_PODS)["items"]
        fresh = [p for p in items if p["metadata"]["name"] != old and not p["metadata"].get("deletionTimestamp")]
        ready = [p["metadata"]["name"] for p in fresh if condition(p, "Ready").get("status") == "True"]
        return len(fresh) == len(ready) == 2

    wait_for(replaced, f"two operator pods (not {old}) to be Ready, i.e. their state rebuilt", timeout=240)
    wait_for(lambda: kube.json("-n", OPERATOR_NAMESPACE, "get", "deployment", "draledger")["status"]
             .get("availableReplicas") == 2, "the Deployment draledger to be available again", timeout=120)
    after = wait_counted(kube, {claim: FIRST_POD})["status"]
    assert after["ledgerVersion"] >= before["ledgerVersion"], (before["ledgerVersion"], after["ledgerVersion"])
    assert after["mappingVersion"] >= before["mappingVersion"], (before["mappingVersion"], after["mappingVersion"])
    assert after["mappingFingerprint"] == before["mappingFingerprint"]


def test_frozen_node_holds_new_claim_pods_until_resumed(workload: Kubectl) -> None:
    """spec.frozen turns the ledger Frozen; a new claim pod stays gated with a LedgerGate* Event; resuming
    releases it, and it is bound and counted."""
    kube = workload
    # make room on small hosts: the first pod goes (forced: its claim was never prepared on the node)
    kube("-n", NAMESPACE, "delete", "pod", FIRST_POD, "--force", "--grace-period=0", "--wait=true", "--timeout=60s")
    wait_counted(kube, {})

    set_frozen(kube, True)
    try:
        wait_phase(kube, "Frozen")
        created = create_pod(kube, FROZEN_POD)
        assert [GATE] == gates(created), "the pod was admitted without the gate"
        uid = created["metadata"]["uid"]

        def gate_events() -> list[str]:
            items = kube.json("-n", NAMESPACE, "get", "events", "--field-selector", f"involvedObject.uid={uid}")
            return sorted({e.get("reason", "") for e in items["items"] if e.get("reason", "").startswith("LedgerGate")})

        reasons = wait_for(gate_events, f"an Event with a LedgerGate* reason on pod {NAMESPACE}/{FROZEN_POD}",
                           timeout=60)

        def still_gated() -> bool:
            held = pod(kube, FROZEN_POD)
            return bool(held) and GATE in gates(held) and not held["spec"].get("nodeName")

        stays(still_gated, f"pod {NAMESPACE}/{FROZEN_POD} to stay gated and unbound while {CANARY_NODE} is "
                           f"frozen (events: {reasons})", duration=20)
    finally:
        set_frozen(kube, False)

    wait_phase(kube, "Ready")
    wait_released_and_bound(kube, FROZEN_POD)
    claim = check_scheduler_status(kube, FROZEN_POD)
    wait_counted(kube, {claim: FROZEN_POD})

