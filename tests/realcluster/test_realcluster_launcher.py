"""The launcher: the components are up with the flags we promise, and nothing outlives a stop."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.realcluster.launcher import ADMISSION_PLUGINS, ControlPlane, wait_gone
from tests.realcluster.releases import ROOT

CHILD = """
import json, sys
from pathlib import Path
from tests.realcluster.launcher import ControlPlane
from tests.realcluster.releases import RELEASES
plane = ControlPlane(RELEASES[sys.argv[1]], Path(sys.argv[2]))
plane.start()
print(json.dumps(plane.pids()), flush=True)
sys.stdin.read()  # until a signal ends this process
"""


def feature_enabled(metrics: str, gate: str) -> bool:
    return re.search(rf'kubernetes_feature_enabled\{{name="{gate}",stage="[A-Z]*"\}} 1', metrics) is not None


class TestComponents:
    def test_every_component_is_running_and_the_apiserver_ready(self, control_plane: ControlPlane) -> None:
        """All four processes run, /readyz answers ok and /version names the pinned release."""
        api = control_plane.api()
        assert ["etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"] == list(control_plane.pids())
        assert all(component.process.poll() is None for component in control_plane.components.values())
        assert "ok" == api.get("/readyz")
        assert control_plane.release.kubernetes == api.get("/version")["gitVersion"]

    def test_admission_plugins_include_the_production_set(self, control_plane: ControlPlane) -> None:
        """kube-apiserver loaded NodeRestriction, both admission policies, both webhooks and ResourceQuota."""
        log = (control_plane.logs / "kube-apiserver.log").read_text(encoding="utf-8")
        loaded = set()
        for listed in re.findall(r"Loaded \d+ (?:mutating|validating) admission controller\(s\) successfully in the "
                                 r"following order: ([A-Za-z,]+)", log):
            loaded |= set(listed.split(","))
        assert set() == set(ADMISSION_PLUGINS) - loaded

    def test_the_node_allocatable_gate_is_on_in_every_component(self, control_plane: ControlPlane) -> None:
        """The apiserver, scheduler and controller-manager each report DRANodeAllocatableResources enabled."""
        api = control_plane.api()
        assert feature_enabled(api.get("/metrics"), "DRANodeAllocatableResources")
        for name in ("kube-scheduler", "kube-controller-manager"):
            metrics = control_plane.scrape(name, "/metrics")
            assert feature_enabled(metrics, "DRANodeAllocatableResources"), name

    def test_the_apis_the_project_uses_are_served(self, control_plane: ControlPlane) -> None:
        """resource.k8s.io/v1 and admissionregistration.k8s.io/v1 MutatingAdmissionPolicy are served."""
        api = control_plane.api()
        resource = {item["name"] for item in api.get("/apis/resource.k8s.io/v1")["resources"]}
        admission = {item["name"] for item in api.get("/apis/admissionregistration.k8s.io/v1")["resources"]}
        assert {"resourceslices", "resourceclaims", "resourceclaimtemplates", "deviceclasses"} <= resource
        assert {"mutatingadmissionpolicies", "mutatingadmissionpolicybindings",
                "validatingadmissionpolicies", "mutatingwebhookconfigurations"} <= admission

    def test_the_node_lifecycle_controller_is_off_and_the_claim_controller_on(
            self, control_plane: ControlPlane) -> None:
        """kube-controller-manager runs resourceclaim-controller and the token controllers, not node-lifecycle."""
        checks = control_plane.scrape("kube-controller-manager", "/healthz?verbose")
        for name in ("resourceclaim-controller", "serviceaccount-controller", "serviceaccount-token-controller",
                     "garbage-collector-controller", "namespace-controller"):
            assert f"[+]{name} ok" in checks, name
        assert "node-lifecycle-controller" not in checks
        log = (control_plane.logs / "kube-controller-manager.log").read_text(encoding="utf-8")
        assert re.search(r'controller is disabled" controller="node-lifecycle-controller"', log)

    def test_scheduler_and_controller_manager_use_their_own_identities(self, control_plane: ControlPlane) -> None:
        """Their kubeconfigs carry system:kube-scheduler and system:kube-controller-manager, not the admin."""
        for stem, user in (("scheduler", "system:kube-scheduler"),
                           ("controller-manager", "system:kube-controller-manager")):
            config = (control_plane.workdir / f"{stem}.kubeconfig").read_text(encoding="utf-8")
            assert f"name: {user}" in config


class TestTeardown:
    def test_stop_leaves_no_process(self, control_plane: ControlPlane, tmp_path: Path) -> None:
        """A second control plane, started and stopped (twice), leaves none of its four processes alive."""
        plane = ControlPlane(control_plane.release, tmp_path)
        with plane:
            pids = list(plane.pids().values())
            assert 4 == len(pids)
        plane.stop()
        assert {} == plane.pids()
        assert pids == plane.started_pids
        assert [] == wait_gone(pids, within=5)

    def test_a_failed_start_leaves_no_process(self, control_plane: ControlPlane, tmp_path: Path) -> None:
        """A component that cannot start fails the start with its log, and the ones already up are stopped."""
        plane = ControlPlane(control_plane.release, tmp_path,
                             extra_args={"kube-scheduler": ["--no-such-flag-for-this-test"]})
        with pytest.raises(RuntimeError, match=r"(?s)kube-scheduler exited .*no-such-flag") as failure:
            plane.start()
        assert str(plane.logs / "kube-scheduler.log") in str(failure.value)
        assert 3 <= len(plane.started_pids)  # etcd, kube-apiserver, kube-scheduler at least once
        assert [] == wait_gone(plane.started_pids, within=5)

    @pytest.mark.parametrize("signum", [pytest.param(signal.SIGINT, id="SIGINT"),
                                        pytest.param(signal.SIGTERM, id="SIGTERM"),
                                        pytest.param(signal.SIGKILL, id="SIGKILL")])
    def test_a_signal_to_the_test_process_leaves_no_process(self, control_plane: ControlPlane, tmp_path: Path,
                                                            signum: signal.Signals) -> None:
        """A process running a control plane that gets SIGINT, SIGTERM or even SIGKILL takes all four with it."""
        with subprocess.Popen([sys.executable, "-c", CHILD, control_plane.release.name, str(tmp_path)],
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as child:
            try:
                assert child.stdout is not None
                line = child.stdout.readline()
                assert line, f"the child did not start a control plane: {child.communicate(timeout=30)[1][-3000:]}"
                pids = list(json.loads(line).values())
                os.kill(child.pid, signum)
                child.communicate(timeout=60)
            finally:
                if child.poll() is None:
                    child.kill()
                    child.communicate()
        assert [] == wait_gone(pids, within=30)


class TestRestart:
    def test_a_restart_replaces_the_process_on_its_port_and_leaves_none_behind(
            self, control_plane: ControlPlane) -> None:
        """kube-scheduler restarted with its gate off, then on: a new process each time, same port, old ones gone."""
        gate = "DRANodeAllocatableResources"
        order = list(control_plane.pids())
        before = control_plane.pids()["kube-scheduler"]
        port = next(arg for arg in control_plane.components["kube-scheduler"].args if arg.startswith("--secure-port="))
        control_plane.restart("kube-scheduler", feature_gates={gate: False})
        try:
            during = control_plane.pids()["kube-scheduler"]
            off = feature_enabled(control_plane.scrape("kube-scheduler", "/metrics"), gate)
            args = control_plane.components["kube-scheduler"].args
        finally:
            control_plane.component_gates.pop("kube-scheduler")
            control_plane.restart("kube-scheduler")
        after = control_plane.pids()["kube-scheduler"]

        assert not off
        assert feature_enabled(control_plane.scrape("kube-scheduler", "/metrics"), gate)
        assert f"--feature-gates=DRAConsumableCapacity=true,{gate}=false" in args
        assert port in args
        assert port in control_plane.components["kube-scheduler"].args
        assert 3 == len({before, during, after})
        assert [before, during, after] == [pid for pid in control_plane.started_pids if pid in (before, during, after)]
        assert [] == wait_gone([before, during], within=5)
        assert order == list(control_plane.pids())  # stop() still goes newest first

    def test_an_apiserver_restart_restarts_its_clients_and_leaves_none_behind(
            self, control_plane: ControlPlane) -> None:
        """kube-apiserver restarted: it, the scheduler and the controller-manager are new, and ready; the old gone."""
        restarted = ("kube-apiserver", "kube-scheduler", "kube-controller-manager")
        before = control_plane.pids()

        control_plane.restart("kube-apiserver")

        after = control_plane.pids()
        assert before["etcd"] == after["etcd"]
        assert [] == [name for name in restarted if before[name] == after[name]]
        assert [] == wait_gone([before[name] for name in restarted], within=5)
        assert "ok" == control_plane.api().get("/readyz")
        assert "ok" == control_plane.scrape("kube-scheduler", "/healthz")
        assert list(before) == list(after)
