"""Restarts and watches for real (issue 12, item 7): real resourceVersions, 410 Gone after a compaction, bookmarks.

The operator process is stopped with SIGTERM and killed with SIGKILL while pods come and go; a test-side watch
records every ledgerVersion and mappingVersion the apiserver shows, and none ever goes back. Every time, the
ledgers converge to what ``draledger audit`` computes from ``kubectl get nodes,pods,resourceslices,resourceclaims
-A -o json`` of the same cluster.

With kube-apiserver's watch cache on (the default), etcd compaction never reaches a watch: the cache serves a
resume from any resourceVersion it still holds, and it keeps them at least 75 s. So the compaction test restarts
kube-apiserver with ``--watch-cache=false``; then the paused operator resumes every watch from a compacted
revision, gets 410 Gone, relists, and converges.

Kopf asks for bookmarks (``allowWatchBookmarks=true``); the watch cache sends one 2 s before each watch's
``timeoutSeconds``, carrying its newest resourceVersion, and Kopf resumes from it. The bookmark test shows this
from the audit log: the operator's next nodes watch starts from a resourceVersion no node ever had.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.realcluster.cluster import publish_slice, unique, wait_until
from tests.realcluster.launcher import ControlPlane
from tests.realcluster.operating import (
    GATE,
    Installation,
    LedgerVersions,
    Operators,
    Site,
    audit_events,
    audit_offset,
    bound_with_status,
    compact,
    converge,
    etcd_revision,
    from_operator,
    gates_of,
    ledger,
    refusals,
    restarted,
)

WITHIN = 60.0
KINDS = ("nodes", "pods", "resourceslices", "resourceclaims")
WATCHED = (*KINDS, "nodeallocatableledgers")


def versions(site: Site) -> dict[str, tuple[int, int]]:
    out = {}
    for node in site.nodes:
        status = (ledger(site.api, node) or {}).get("status") or {}
        out[node] = (int(status.get("ledgerVersion", 0)), int(status.get("mappingVersion", 0)))
    return out


def scheduled(site: Site, names: list[str]) -> list[dict[str, Any]]:
    return [wait_until(lambda name=name: bound_with_status(site.api, site.pod_path(name)), within=WITHIN,
                       what=f"{name} to be released, bound and charged") for name in names]


def delete_pod(site: Site, name: str) -> None:
    site.api.request("DELETE", site.pod_path(name) + "?gracePeriodSeconds=0")


def configmap(site: Site) -> None:
    """A write no operator watch is interested in: it only moves etcd's revision on."""
    site.api.create(f"/api/v1/namespaces/{site.namespace}/configmaps",
                    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": unique("cm")}})


def watch_requests(events: list[dict[str, Any]], kind: str) -> list[dict[str, str]]:
    """The query of each of the operator's watch requests on ``kind``, in the order they were received."""
    out = []
    for event in sorted(events, key=lambda e: e["requestReceivedTimestamp"]):
        uri = urlsplit(event["requestURI"])
        query = {key: values[0] for key, values in parse_qs(uri.query).items()}
        if event["verb"] == "watch" and uri.path.rstrip("/").endswith("/" + kind):
            out.append(query)
    return out


class TestRestarts:
    def test_sigterm_and_sigkill_keep_versions_and_the_ledgers_converge(
            self, control_plane: ControlPlane, installation: Installation, operators: Operators, site: Site,
            tmp_path: Path) -> None:
        """Pods created and deleted around each stop; versions never go back; the ledgers equal the audit."""
        site.setup(2)
        site.template()
        offset = audit_offset(control_plane)
        with LedgerVersions(control_plane, site.nodes) as seen:
            operator = operators.start("--node-selector", site.label, "--coalesce-window", "0.1")
            for name in ("p0", "p1"):
                site.claim_pod(name)
            scheduled(site, ["p0", "p1"])
            converge(control_plane, site.nodes, tmp_path)
            first = versions(site)

            site.claim_pod("p2")
            terminated = operator.stop(signal.SIGTERM)  # whatever it was doing with p2
            delete_pod(site, "p0")
            site.claim_pod("p3")  # gated by the policy while no operator runs: it waits
            assert [GATE] == gates_of(site.api.get(site.pod_path("p3")))
            operator.start().wait_ready()
            scheduled(site, ["p2", "p3"])
            converge(control_plane, site.nodes, tmp_path)
            second = versions(site)

            site.claim_pod("p4")
            delete_pod(site, "p1")
            killed = operator.stop(signal.SIGKILL)
            delete_pod(site, "p2")
            site.claim_pod("p5")
            operator.start().wait_ready()
            scheduled(site, ["p3", "p4", "p5"])
            converge(control_plane, site.nodes, tmp_path)
            third = versions(site)

        assert 0 == terminated
        assert -signal.SIGKILL == killed
        assert [] == seen.regressions()
        assert all(first[node] < second[node] < third[node] for node in site.nodes), (first, second, third)
        assert all(record["count"] >= 2 for start in (2, 3) for record in operator.logged(
            "stored ledgers read", start))  # each start read (at least) the two its predecessor wrote
        assert [1, 1, 1] == [len(operator.logged("ledgers rebuilt", start)) for start in (1, 2, 3)]
        assert [] == refusals(from_operator(audit_events(control_plane, offset)))


class TestWatches:
    def test_a_compacted_history_forces_410_and_a_relist(self, control_plane: ControlPlane,
                                                         installation: Installation, operators: Operators,
                                                         site: Site, tmp_path: Path) -> None:
        """Paused past its watches' timeout while etcd compacts, the operator resumes into 410 Gone and relists."""
        with restarted(control_plane, "kube-apiserver", flags={"--watch-cache": "false"}):
            offset = audit_offset(control_plane)
            site.setup(1, gated=False)
            site.template()
            node = site.nodes[0]
            operator = operators.start("--node-selector", site.label, "--coalesce-window", "0.1",
                                       "--watch-timeout", "5")
            site.claim_pod("p0")
            scheduled(site, ["p0"])
            converge(control_plane, site.nodes, tmp_path)

            paused = audit_offset(control_plane)
            operator.send(signal.SIGSTOP)
            try:
                delete_pod(site, "p0")
                for name in ("p1", "p2"):
                    site.claim_pod(name)
                site.api.patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": {"realcluster.draledger.dev/x": "1"}}})
                publish_slice(site.api, f"{node}-more", driver=site.driver, node=node, pool=f"{node}-more",
                              devices=[{"name": "extra", **site.release.device_mapping("cpu", "2")}])
                site.cleanup.append(f"/apis/resource.k8s.io/v1/resourceslices/{node}-more")
                wait_until(lambda: all(site.api.get(site.pod_path(name))["spec"].get("nodeName")
                                       for name in ("p1", "p2")), within=WITHIN, what="p1 and p2 to be bound")
                wait_until(lambda: {kind for kind in WATCHED if watch_requests(
                    from_operator(audit_events(control_plane, paused)), kind)} == set(WATCHED), within=WITHIN,
                    what="the apiserver to end every watch of the paused operator (timeoutSeconds=5)")
                configmap(site)
                configmap(site)
                revision = etcd_revision(control_plane)
                compact(control_plane, revision)
            finally:
                operator.send(signal.SIGCONT)

            wait_until(lambda: all(operator.metric("draledger_watch_restarts_total", kind=kind) >= 1
                                   for kind in KINDS), within=WITHIN, what="every watch to relist")
            converge(control_plane, site.nodes, tmp_path)
            broken = {record["kind"] for record in operator.logged("watch stream broken")
                      if record.get("reason") == "watch error 410"}
            operator.stop()
            seen = from_operator(audit_events(control_plane, offset))

        assert set(WATCHED) == broken
        assert [] == refusals(seen)
        resumed = [query for kind in KINDS for query in watch_requests(seen, kind)
                   if int(query.get("resourceVersion", "0") or 0) < revision]
        assert resumed, "no watch resumed below the compacted revision"

    def test_idle_watches_get_bookmarks_and_resume_from_them(self, control_plane: ControlPlane,
                                                             installation: Installation, operators: Operators,
                                                             site: Site) -> None:
        """Kopf asks for bookmarks; the apiserver sends them; Kopf's next nodes watch starts from one."""
        site.setup(1)
        offset = audit_offset(control_plane)
        operators.start("--node-selector", site.label, "--watch-timeout", "3")  # a bookmark 1 s into each watch

        def newest_node() -> int:  # the ttl controller may still annotate the node: read it every time
            return max(int(site.api.get(f"/api/v1/nodes/{node}")["metadata"]["resourceVersion"])
                       for node in site.nodes)

        def requests() -> list[dict[str, str]]:
            return watch_requests(from_operator(audit_events(control_plane, offset, ("ResponseStarted",))), "nodes")

        def resumed_from_a_bookmark() -> list[dict[str, str]]:
            configmap(site)  # etcd moves on, the nodes do not
            site.api.get(f"/api/v1/nodes?labelSelector={site.label}")  # a consistent list: the cache catches up
            made = requests()
            listed = int(made[0]["resourceVersion"]) if made else 0  # the first watch starts at the list's version
            floor = max(listed, newest_node())
            return [query for query in made if int(query["resourceVersion"]) > floor]

        later = wait_until(resumed_from_a_bookmark, within=WITHIN, what="a nodes watch resumed from a bookmark")
        made = requests()
        lists = [event for event in from_operator(audit_events(control_plane, offset))
                 if event["verb"] == "list" and urlsplit(event["requestURI"]).path == "/api/v1/nodes"]

        # no relist once the watch has begun: a new list would start the next watch at a newer version too (at
        # start, priming lists the nodes, and so does marking stored ledgers Rebuilding with --node-selector)
        watches = [event for event in from_operator(audit_events(control_plane, offset, ("ResponseStarted",)))
                   if event["verb"] == "watch" and urlsplit(event["requestURI"]).path == "/api/v1/nodes"]
        started = min(event["requestReceivedTimestamp"] for event in watches)
        assert lists
        assert [] == [event["requestURI"] for event in lists if event["requestReceivedTimestamp"] > started]
        assert {"true"} == {query.get("allowWatchBookmarks") for query in made}
        assert {"3"} == {query.get("timeoutSeconds") for query in made}
        # newer than the list and than every node it selects: only a BOOKMARK event carries such a version
        assert max(int(made[0]["resourceVersion"]), newest_node()) < int(later[0]["resourceVersion"])
