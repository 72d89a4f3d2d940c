"""The real node leaves nothing behind: a second node, joined to the site's control plane by a child process that is
then interrupted (Ctrl-C) or terminated, takes its kubelet, containerd, shims, containers, mounts, cgroups and
scratch directory with it (node.py rule 5)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.realcluster.cluster import ApiError
from tests.realcluster.launcher import wait_gone
from tests.realcluster.pki import ClientCert
from tests.realcluster.releases import ROOT
from tests.realnode.hygiene import cgroup_roots, mounts_under, pids_with_argument
from tests.realnode.site import NodeSite

CHILD = """
import json, sys, time
from pathlib import Path
from tests.realcluster.cluster import wait_until
from tests.realcluster.launcher import ControlPlane
from tests.realcluster.pki import ClientCert, Pki
from tests.realcluster.releases import RELEASES
from tests.realnode import world
from tests.realnode.node import RealNode
given = json.loads(sys.argv[1])
plane = ControlPlane(RELEASES[given["release"]], Path(given["workdir"]) / "plane")
plane.server = given["server"]
plane.pki = Pki(**{key: ClientCert(**{k: Path(v) for k, v in value.items()}) if isinstance(value, dict) else Path(value)
                   for key, value in given["pki"].items()})
node = RealNode(plane, Path(given["workdir"]) / "node", given["name"])
node.start()
pod = world.pod("static", script="while :; do sleep 1; done")
(node.workdir / "static-pods" / "static.json").write_text(json.dumps(pod))
def running():
    return [int(line.split()[1]) for line in node.ctr("tasks", "ls").stdout.splitlines()[1:] if "RUNNING" in line]
tasks = wait_until(lambda: len(running()) >= 2 and running(), within=60, what="the static pod's container")
print(json.dumps({"pids": node.started_pids, "tasks": tasks,
                  "socket": str(node.socket), "rundir": str(node.rundir), "workdir": str(node.workdir.resolve()),
                  "cgroup": node.cgroup}), flush=True)
sys.stdin.read()  # until a signal ends this process
"""


def pki_json(site: NodeSite) -> dict[str, Any]:
    """The control plane's certificate paths, for the child to rebuild its ``Pki``."""
    keys = site.plane.pki
    assert keys is not None
    out: dict[str, Any] = {}
    for field in dataclasses.fields(keys):
        value = getattr(keys, field.name)
        out[field.name] = ({"cert": str(value.cert), "key": str(value.key)} if isinstance(value, ClientCert)
                           else str(value))
    return out


@pytest.mark.parametrize("signum", [pytest.param(signal.SIGINT, id="ctrl-c"),
                                    pytest.param(signal.SIGTERM, id="sigterm")])
def test_a_signalled_node_leaves_no_process_mount_or_cgroup(realnode: NodeSite, tmp_path: Path,
                                                            signum: signal.Signals) -> None:
    """Interrupted while a container runs, the node's processes, shims, containers, mounts and cgroups are gone."""
    name = f"realnode-gone-{uuid.uuid4().hex[:6]}"
    given = {"release": realnode.release.name, "server": realnode.plane.server, "workdir": str(tmp_path),
             "name": name, "pki": pki_json(realnode)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(given)], cwd=ROOT, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line, f"the child did not start a node: {child.communicate(timeout=60)[1][-3000:]}"
        started = json.loads(line)
        os.kill(child.pid, signum)
        child.communicate(timeout=90)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
        api = realnode.api()
        for path in (f"/api/v1/namespaces/default/pods/static-{name}?gracePeriodSeconds=0", f"/api/v1/nodes/{name}"):
            try:
                api.request("DELETE", path)
            except ApiError as error:
                if error.status != 404:
                    raise

    assert 2 <= len(started["tasks"])  # the sandbox and the static pod's container ran
    assert [] == wait_gone(started["pids"] + started["tasks"], within=30)
    assert [] == pids_with_argument(started["socket"])
    assert [] == mounts_under(Path(started["rundir"]), Path(started["workdir"]))
    assert [] == cgroup_roots(started["cgroup"])
    assert not Path(started["rundir"]).exists()
