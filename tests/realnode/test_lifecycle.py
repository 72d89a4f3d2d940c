"""The node's life: its kubelet stopped and started with the drivers restarted meanwhile, and a node restart.

The node lifecycle controller runs (site.py), so a silent kubelet turns the Node NotReady after the control
plane's ``--node-monitor-grace-period``. This is where the rollout plan's "node restarts" are proven: a restart
of the kubelet and the drivers, and a restart of the whole node, on which every container dies. Each time the
kubelet starts it deletes the node's ResourceSlices; the driver publishes them again, seconds to a minute later.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from draledger.devicemetadata.codec import decode_stream
from tests.realcluster.cluster import wait_until
from tests.realcluster.operating import GATE, LedgerVersions, condition, converge, gates_of
from tests.realnode import world
from tests.realnode.site import NodeSite, Scratch
from tests.realnode.test_metadata import container_path, host_file, sections

WITHIN = 60.0
NOT_READY = 90.0  # the grace period (12 s) after the last Lease renewal, on a busy machine
REPUBLISHED = 150.0  # the helper's sync delay (30 s) or its mutation cache's TTL (60 s), on a busy machine


def container_id(ns: Scratch, pod: str) -> tuple[str, int]:
    (status,) = ns.get(pod)["status"]["containerStatuses"]
    return status.get("containerID", ""), int(status.get("restartCount", 0))


def node_ready(site: NodeSite) -> str:
    for entry in (site.node.node() or {}).get("status", {}).get("conditions", []):
        if entry["type"] == "Ready":
            return str(entry["status"])
    return ""


def prepares(records: list[dict[str, Any]], uid: str) -> int:
    return sum(1 for record in records if record["event"] == "prepare" and record.get("uid") == uid)


def test_a_stopped_kubelet_and_restarted_drivers_hold_new_pods_and_keep_running_ones(
        realnode: NodeSite, ns: Scratch, tmp_path: Path) -> None:
    """Kubelet stopped: NotReady, Stale, new pods held; drivers restarted, kubelet back: running pods and files kept."""
    ns.template("dev", "core")
    ns.template("nic", "nic")
    ns.create(world.pod("before", claims=[{"name": "dev", "resourceClaimTemplateName": "dev"},
                                          {"name": "nic", "resourceClaimTemplateName": "nic"}]))
    ns.running("before")
    running = container_id(ns, "before")
    helper_claim, python_claim = ns.claim_of("before", "dev"), ns.claim_of("before", "nic")
    helper_file = host_file(realnode, realnode.cpu.name, helper_claim, "core")
    python_file = host_file(realnode, realnode.meta.name, python_claim, "nic")
    helper_before, python_before = helper_file.stat(), python_file.stat()
    helper_bytes = helper_file.read_bytes()
    pairs = ((realnode.cpu, helper_claim), (realnode.meta, python_claim))
    prepared = {driver.name: prepares(driver.records(), claim["metadata"]["uid"]) for driver, claim in pairs}

    with LedgerVersions(realnode.plane, [realnode.name]) as versions:
        realnode.node.stop_kubelet()
        try:
            wait_until(lambda: node_ready(realnode) == "Unknown", within=NOT_READY,
                       what="the node lifecycle controller to mark the node NotReady")
            wait_until(lambda: realnode.ledger()["status"]["phase"] == "Stale", within=WITHIN,
                       what="the ledger to be Stale")
            fresh = condition(realnode.ledger(), "Fresh")
            assert ("False", "NodeNotReady") == (fresh.get("status"), fresh.get("reason"))
            ns.template("core", "core")
            ns.create(world.pod("during", claims=[{"name": "c", "resourceClaimTemplateName": "core"}]))
            wait_until(lambda: "LedgerGateNoReadyNode" in realnode.events(ns.namespace, "during"), within=WITHIN,
                       what="the operator to say why it holds the pod")
            held = ns.get("during")
            assert ([GATE], "") == (gates_of(held), held["spec"].get("nodeName", ""))
            for driver, _ in pairs:  # maintenance: the drivers restart while the kubelet is away
                driver.stop()
                driver.launch()
        finally:
            realnode.node.start_kubelet()
            for driver, _ in pairs:
                driver.await_registered()
        # the kubelet wipes the node's ResourceSlices when it starts; the helper's controller publishes them again
        # after its sync delay (30 s) or once it forgets what it wrote (a minute)
        wait_until(lambda: realnode.ledger()["status"]["phase"] == "Ready", within=REPUBLISHED,
                   what="the ledger to be Ready (the driver has published its slices again)")
        ns.running("during")
        converge(realnode.plane, [realnode.name], tmp_path, within=WITHIN)
    assert [] == versions.regressions()

    assert running == container_id(ns, "before")
    assert prepared == {driver.name: prepares(driver.records(), claim["metadata"]["uid"]) for driver, claim in pairs}
    assert (helper_before.st_ino, helper_bytes) == (helper_file.stat().st_ino, helper_file.read_bytes())
    rebuilt = decode_stream(python_file.read_bytes(), python_file)
    assert (True, 2) == (python_file.stat().st_ino != python_before.st_ino, rebuilt.generation)


def test_a_node_restart_regenerates_the_metadata_and_the_ledger_converges(realnode: NodeSite, ns: Scratch,
                                                                          tmp_path: Path) -> None:
    """Every container dies and comes back: claims are prepared again, metadata rewritten, and the ledger holds."""
    ns.template("dev", "core")
    ns.template("nic", "nic")
    mine = container_path(realnode.cpu.name, "core", template="dev")
    script = f"echo '=== file'; cat {mine}; echo '=== end'; while :; do sleep 1; done"
    ns.create(world.pod("app", script=script, claims=[{"name": "dev", "resourceClaimTemplateName": "dev"},
                                                      {"name": "nic", "resourceClaimTemplateName": "nic"}]))
    ns.running("app")
    running = container_id(ns, "app")
    claim = ns.claim_of("app", "dev")
    allocated = claim["status"]["allocation"]["devices"]["results"][0]
    realnode.cpu.update_metadata(claim, "core", [{**{key: allocated[key] for key in ("request", "pool", "device")},
                                                  "attributes": {"firmware": {"version": "2.0.0"}}}])
    on_host = host_file(realnode, realnode.cpu.name, claim, "core")
    assert 2 == decode_stream(on_host.read_bytes(), on_host).generation
    before = realnode.ledger()["status"]

    with LedgerVersions(realnode.plane, [realnode.name]) as versions:
        realnode.node.power_cycle()
        wait_until(lambda: container_id(ns, "app")[1] >= 1 and ns.running("app"), within=WITHIN,
                   what="the pod's container to run again")
        wait_until(lambda: realnode.ledger()["status"]["phase"] == "Ready", within=REPUBLISHED,
                   what="the ledger to be Ready (the driver has published its slices again)")
        converge(realnode.plane, [realnode.name], tmp_path, within=WITHIN)
    assert [] == versions.regressions()

    assert running[0] != container_id(ns, "app")[0]
    regenerated = decode_stream(on_host.read_bytes(), on_host)
    assert 1 == regenerated.generation  # prepared again, as at the first start: the update is gone
    seen = sections(ns.log_until("app", "=== end"))
    assert on_host.read_text() == seen["file"]
    after = realnode.ledger()["status"]
    assert ("Ready", before["resources"]["cpu"]["claims"]) == (after["phase"], after["resources"]["cpu"]["claims"])
