"""A driver's life on the real node: it republishes with a new generation, restarts, and is upgraded.

This is where the rollout plan's "driver upgrades" are proven: the driver on the official kubelet-plugin helper
publishes its pool in two slices, so a republish is two writes (paced by the driver, POST /pace) with an
incomplete pool between them, held open by pausing the driver; an upgrade is a rolling update (a second
instance with ``kubeletplugin.RollingUpdate`` beside the first, which then stops) inside the freeze drill of
docs/rollout.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from tests.realcluster.cluster import wait_until
from tests.realcluster.operating import GATE, LedgerVersions, condition, converge, gates_of
from tests.realcluster.releases import ROOT
from tests.realnode import world
from tests.realnode.drivers import Driver, slices_of
from tests.realnode.site import NodeSite, Scratch

WITHIN = 60.0
PACE = 4.0  # seconds before each of the driver's slice writes: the window in which the test pauses it


def pool_state(site: NodeSite) -> tuple[int, int, int]:
    """(newest generation, its slices, the slice count they announce) of the cpu driver's pool on the node."""
    items = slices_of(site.api(), world.DRIVER, site.name)
    newest = max(item["spec"]["pool"]["generation"] for item in items)
    current = [item for item in items if item["spec"]["pool"]["generation"] == newest]
    return newest, len(current), int(current[0]["spec"]["pool"]["resourceSliceCount"])


def complete_at(site: NodeSite, generation: int) -> bool:
    newest, have, count = pool_state(site)
    return newest >= generation and have == count


def mapping_version(site: NodeSite) -> int:
    return int(site.ledger()["status"]["mappingVersion"])


def draledger(site: NodeSite, *args: str) -> subprocess.CompletedProcess[str]:
    """The ``draledger`` command as an administrator runs it (the admin kubeconfig)."""
    return subprocess.run([sys.executable, "-m", "draledger", *args], capture_output=True, text=True, timeout=120,
                          check=False, cwd=ROOT, env={**os.environ, "KUBECONFIG": str(site.plane.kubeconfig)})


def claim_uid(ns: Scratch, pod: str) -> str:
    return str(ns.claim_of(pod, "c")["metadata"]["uid"])


def claim_pod(ns: Scratch, name: str) -> dict[str, Any]:
    return ns.create(world.pod(name, claims=[{"name": "c", "resourceClaimTemplateName": "core"}]))


def test_a_republish_holds_new_pods_while_the_pool_is_incomplete(realnode: NodeSite, ns: Scratch,
                                                                 tmp_path: Path) -> None:
    """New generation: no pod released during the incomplete pool; mappingVersion only goes up; converges."""
    driver, release = realnode.cpu, realnode.release
    original = driver.pools
    cores = sum(device["name"].startswith("core-") for piece in next(iter(original["pools"].values()))["slices"]
                for device in piece["devices"])  # 4, or 5 after an upgrade: one more is always a new mapping
    ns.template("core", "core")
    start = pool_state(realnode)[0]
    mapped = mapping_version(realnode)
    with LedgerVersions(realnode.plane, [realnode.name]) as versions:
        driver.pace(PACE)
        try:
            driver.publish(world.cpu_pools(release, realnode.name, version="1.1.0", cores=cores + 1))
            wait_until(lambda: pool_state(realnode)[0] > start, within=WITHIN, what="the first slice of the new pool")
            driver.pause()  # the second slice is not written until the driver runs again
            try:
                assert (start + 1, 1, 2) == pool_state(realnode)
                wait_until(lambda: condition(realnode.ledger(), "MappingsComplete").get("reason") == "IncompletePool",
                           within=WITHIN, what="the ledger to see the incomplete pool")
                assert "Stale" == realnode.ledger()["status"]["phase"]
                claim_pod(ns, "during")
                wait_until(lambda: "LedgerGateNoReadyNode" in realnode.events(ns.namespace, "during"), within=WITHIN,
                           what="the operator to hold the pod")
                held = ns.get("during")
                assert ([GATE], "") == (gates_of(held), held["spec"].get("nodeName", ""))
            finally:
                driver.resume()
        finally:
            driver.pace(0)
        wait_until(lambda: complete_at(realnode, start + 1), within=WITHIN, what="the new pool to be complete")
        ns.running("during")
        converge(realnode.plane, [realnode.name], tmp_path, within=WITHIN)
        republished = mapping_version(realnode)
        assert republished > mapped

        driver.stop()  # a restart publishes the same pool again: nothing moves
        driver.start()
        converge(realnode.plane, [realnode.name], tmp_path, within=WITHIN)
        assert (start + 1, republished) == (pool_state(realnode)[0], mapping_version(realnode))

        driver.publish(original)  # and back: one more generation, one more mapping version
        wait_until(lambda: complete_at(realnode, start + 2), within=WITHIN, what="the original pool again")
        converge(realnode.plane, [realnode.name], tmp_path, within=WITHIN)
        assert mapping_version(realnode) > republished
    assert [] == versions.regressions()
    assert [] == versions.errors


def test_a_driver_upgrade_by_rolling_update_through_the_freeze_drill(realnode: NodeSite, ns: Scratch,
                                                                     tmp_path: Path) -> None:
    """Freeze, export, a rolling update of the driver (new mappings), resume --since-export: pods run throughout."""
    old = realnode.cpu
    ns.template("core", "core")
    claim_pod(ns, "running")
    ns.running("running")
    container = ns.get("running")["status"]["containerStatuses"][0]["containerID"]
    export = tmp_path / "ledgers.yaml"
    with LedgerVersions(realnode.plane, [realnode.name]) as versions:
        assert 0 == draledger(realnode, "freeze", "--all", "--reason", "realnode: driver upgrade").returncode
        wait_until(lambda: realnode.ledger()["status"]["phase"] == "Frozen", within=WITHIN, what="Frozen")
        assert 0 == draledger(realnode, "export", "--from-cluster", "--to", str(export)).returncode
        frozen_at = mapping_version(realnode)
        claim_pod(ns, "waiting")
        wait_until(lambda: any(reason.startswith("LedgerGate") for reason in realnode.events(ns.namespace, "waiting")),
                   within=WITHIN, what="the operator to hold the pod")

        uid = uuid.uuid4().hex[:8]
        new = Driver(realnode.node, old.kubeconfig, world.DRIVER,
                     world.cpu_pools(realnode.release, realnode.name, version="2.0.0", cores=5),
                     rolling_update_uid=uid, instance=f"cpu-{uid}").start()  # registered beside the old one
        assert old.running()
        old.stop()
        realnode.node.adopted.remove(old)
        realnode.cpu = new
        wait_until(lambda: mapping_version(realnode) > frozen_at, within=WITHIN, what="the new mappings")
        assert [GATE] == gates_of(ns.get("waiting"))  # still frozen: new mappings resume nothing by themselves

        resumed = draledger(realnode, "resume", "--all", "--since-export", str(export))
        assert 0 == resumed.returncode, resumed.stdout + resumed.stderr
        ns.running("waiting")
        converge(realnode.plane, [realnode.name], tmp_path, within=WITHIN)
    assert [] == versions.regressions()
    assert container == ns.get("running")["status"]["containerStatuses"][0]["containerID"]
    prepared_by = [record["instance"] for record in new.records()
                   if record["event"] == "prepare" and record["uid"] == claim_uid(ns, "waiting")]
    assert [f"cpu-{uid}-1"] == prepared_by
    assert "Ready" == realnode.ledger()["status"]["phase"]
