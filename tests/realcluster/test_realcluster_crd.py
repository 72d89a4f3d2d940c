"""The NodeAllocatableLedger CRD on a real kube-apiserver: accepted, printed, explained, and its status subresource."""

from __future__ import annotations

import contextlib
import copy
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
import yaml

from tests.realcluster.cluster import ApiError, kubectl, unique, wait_until
from tests.realcluster.launcher import ControlPlane
from tests.realcluster.releases import ROOT

CRD_FILE = ROOT / "crds" / "nodeallocatableledgers.yaml"
CRD_NAME = "nodeallocatableledgers.draledger.dev"
LEDGERS = "/apis/draledger.dev/v1alpha1/nodeallocatableledgers"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


@cache
def committed_crd() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(CRD_FILE.read_text(encoding="utf-8"))
    return loaded


@cache
def audited_ledgers() -> tuple[dict[str, Any], ...]:
    """The ledgers ``draledger audit`` prints for the example dump: real objects of the operator's own making."""
    done = subprocess.run([sys.executable, "-m", "draledger", "audit", "-f",
                           str(ROOT / "tests" / "data" / "example-cluster.json"), "-o", "json", "--fail-on", "none"],
                          capture_output=True, text=True, timeout=60, check=True)
    items = json.loads(done.stdout)["items"]
    for item in items:
        item["metadata"].pop("ownerReferences", None)  # their Nodes do not exist here; the GC would delete them
    return tuple(items)


def a_ledger(name: str) -> dict[str, Any]:
    """A valid ledger named ``name``: the first audited one with cpu and memory (every column filled), renamed."""
    full = next(item for item in audited_ledgers() if {"cpu", "memory"} <= set(item["status"]["resources"]))
    ledger = copy.deepcopy(full)
    ledger["metadata"] = {"name": name}
    ledger["status"]["nodeName"] = name
    return ledger


def condition(crd: dict[str, Any], kind: str) -> str | None:
    for entry in crd.get("status", {}).get("conditions", []):
        if entry["type"] == kind:
            return str(entry["status"])
    return None


@pytest.fixture
def crd(control_plane: ControlPlane) -> dict[str, Any]:
    """The committed CRD, applied with the real ``kubectl apply`` and established."""
    def applied() -> str | None:
        done = kubectl(control_plane.kubeconfig, "apply", "-f", str(CRD_FILE), check=False)
        return "applied" if done.returncode == 0 else None  # a server just ready may still refuse briefly

    with contextlib.suppress(AssertionError):
        wait_until(applied, within=60, what=f"kubectl apply -f {CRD_FILE.name} to succeed")
    kubectl(control_plane.kubeconfig, "apply", "-f", str(CRD_FILE))  # still failing: raise with kubectl's stderr
    api = control_plane.api()

    def established() -> dict[str, Any] | None:
        got: dict[str, Any] = api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}")
        return got if condition(got, "Established") == "True" else None

    return wait_until(established, within=60, what="the CRD to be Established")


@pytest.fixture
def ledgers(control_plane: ControlPlane, crd: dict[str, Any]) -> Iterator[list[str]]:
    """Names of ledgers the test creates (append to it); they are deleted afterwards."""
    names: list[str] = []
    yield names
    api = control_plane.api()
    for name in names:
        try:
            api.delete(f"{LEDGERS}/{name}")
        except ApiError as error:
            if error.status != 404:
                raise


def cell(obj: dict[str, Any], json_path: str) -> str:
    """What kubectl prints for a simple ``.a.b.c`` column path: the value, or ``<none>``."""
    value: Any = obj
    for key in json_path.lstrip(".").split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return "<none>" if value is None else str(value)


def columns_of(table_line: str) -> list[str]:
    return re.split(r"\s{2,}", table_line.strip())


class TestAccepted:
    def test_apply_is_accepted_with_a_structural_schema(self, control_plane: ControlPlane,
                                                        crd: dict[str, Any]) -> None:
        """kubectl apply succeeds; the CRD is Established, its names accepted, and no NonStructuralSchema."""
        again = kubectl(control_plane.kubeconfig, "apply", "-f", str(CRD_FILE))
        assert f"customresourcedefinition.apiextensions.k8s.io/{CRD_NAME} unchanged" == again.stdout.strip()
        assert "True" == condition(crd, "Established")
        assert "True" == condition(crd, "NamesAccepted")
        assert condition(crd, "NonStructuralSchema") is None
        assert ["nal"] == crd["status"]["acceptedNames"]["shortNames"]

    def test_the_stored_schema_is_the_committed_one(self, crd: dict[str, Any]) -> None:
        """The server keeps the committed schema and columns unchanged (nothing pruned or defaulted away)."""
        committed = committed_crd()["spec"]["versions"][0]
        stored = crd["spec"]["versions"][0]
        assert committed["schema"] == stored["schema"]
        assert committed["additionalPrinterColumns"] == [
            {key: value for key, value in column.items() if key != "priority" or value != 0}
            for column in stored["additionalPrinterColumns"]]

    def test_every_audited_ledger_is_valid_on_the_server(self, control_plane: ControlPlane,
                                                         ledgers: list[str]) -> None:
        """Each ledger ``draledger audit`` prints is created and its status written without a validation error."""
        api = control_plane.api()
        for ledger in audited_ledgers():
            name = ledger["metadata"]["name"]
            ledgers.append(name)
            created = api.create(LEDGERS, ledger)
            stored = api.replace(f"{LEDGERS}/{name}/status", {**ledger, "metadata": created["metadata"]})
            assert ledger["status"] == stored["status"]


class TestKubectl:
    def test_get_shows_the_printer_columns(self, control_plane: ControlPlane, crd: dict[str, Any],
                                           ledgers: list[str]) -> None:
        """``kubectl get nal`` prints NAME and the CRD's columns, filled from the ledger's status."""
        api = control_plane.api()
        name = unique("printed")
        ledger = a_ledger(name)
        ledgers.append(name)
        created = api.create(LEDGERS, ledger)
        api.replace(f"{LEDGERS}/{name}/status", {**ledger, "metadata": created["metadata"]})

        printed = kubectl(control_plane.kubeconfig, "get", "nal", name).stdout.splitlines()

        columns = [column for column in crd["spec"]["versions"][0]["additionalPrinterColumns"]
                   if column.get("priority", 0) == 0]
        assert ["NAME", *(column["name"].upper() for column in columns)] == columns_of(printed[0])
        expected = [name, *(cell(ledger, column["jsonPath"]) for column in columns if column["type"] != "date")]
        assert expected == columns_of(printed[1])[:len(expected)]  # date columns (the age) come last
        table = api.request("GET", f"{LEDGERS}/{name}", accept=TABLE)  # every column: kubectl hides priority > 0
        assert [column["name"] for column in crd["spec"]["versions"][0]["additionalPrinterColumns"]] == [
            column["name"] for column in table["columnDefinitions"]][1:]  # the server's first column is Name

    def test_explain_describes_the_kind_and_its_status(self, control_plane: ControlPlane,
                                                       crd: dict[str, Any]) -> None:
        """``kubectl explain nal`` and ``nal.status`` work once the server publishes the schema."""
        def explained(path: str) -> str:
            done = kubectl(control_plane.kubeconfig, "explain", path, check=False)
            return done.stdout if done.returncode == 0 else ""

        top = wait_until(lambda: explained("nal"), within=60, what="kubectl explain nal")
        assert "KIND:       NodeAllocatableLedger" in top
        assert "VERSION:    v1alpha1" in top
        assert "GROUP:      draledger.dev" in top
        assert "node-allocatable ledger of one Node" in top
        status = explained("nal.status")
        for field in ("phase", "ledgerVersion", "mappingVersion", "resources", "numaZones", "conditions"):
            assert re.search(rf"^  {field}\t", status, re.MULTILINE), field
        frozen = explained("nal.spec.frozen")
        assert "new claim-using pods stay gated" in frozen


class TestStatusSubresource:
    def test_create_drops_the_status(self, control_plane: ControlPlane, ledgers: list[str]) -> None:
        """A ledger created with a status is stored without it (status belongs to /status)."""
        name = unique("created")
        ledgers.append(name)
        created = control_plane.api().create(LEDGERS, a_ledger(name))
        assert "status" not in created
        assert 1 == created["metadata"]["generation"]

    def test_status_writes_leave_spec_and_generation_alone(self, control_plane: ControlPlane,
                                                           ledgers: list[str]) -> None:
        """PUT and PATCH of /status change the status only; spec and metadata.generation stay."""
        api = control_plane.api()
        name = unique("status")
        ledgers.append(name)
        ledger = a_ledger(name)
        created = api.create(LEDGERS, ledger)

        put = api.replace(f"{LEDGERS}/{name}/status",
                          {**ledger, "metadata": created["metadata"], "spec": {"frozen": True, "reason": "ignored"}})
        patched = api.patch(f"{LEDGERS}/{name}/status",
                            {"spec": {"frozen": True}, "status": {"phase": "Stale", "ledgerVersion": 2}})

        assert {"frozen": False} == put["spec"] == patched["spec"]
        assert ledger["status"] == put["status"]
        assert ("Stale", 2) == (patched["status"]["phase"], patched["status"]["ledgerVersion"])
        assert 1 == put["metadata"]["generation"] == patched["metadata"]["generation"]

    def test_main_resource_writes_leave_status_alone(self, control_plane: ControlPlane, ledgers: list[str]) -> None:
        """PATCH and PUT of the ledger change spec (and generation) but never the status."""
        api = control_plane.api()
        name = unique("spec")
        ledgers.append(name)
        ledger = a_ledger(name)
        created = api.create(LEDGERS, ledger)
        with_status = api.replace(f"{LEDGERS}/{name}/status", {**ledger, "metadata": created["metadata"]})

        patched = api.patch(f"{LEDGERS}/{name}",
                            {"spec": {"frozen": True, "reason": "driver upgrade"}, "status": {"phase": "Frozen"}})
        put = api.replace(f"{LEDGERS}/{name}", {**patched, "spec": {"frozen": False},
                                                "status": {**patched["status"], "claimCount": 99}})

        assert with_status["status"] == patched["status"] == put["status"]
        assert {"frozen": True, "reason": "driver upgrade"} == patched["spec"]
        assert {"frozen": False} == put["spec"]
        assert (2, 3) == (patched["metadata"]["generation"], put["metadata"]["generation"])

    def test_kubectl_patches_the_status_subresource(self, control_plane: ControlPlane, ledgers: list[str]) -> None:
        """``kubectl patch --subresource=status`` writes the status; a plain ``kubectl patch`` of status does not."""
        api = control_plane.api()
        name = unique("kubectl")
        ledgers.append(name)
        ledger = a_ledger(name)
        created = api.create(LEDGERS, ledger)
        api.replace(f"{LEDGERS}/{name}/status", {**ledger, "metadata": created["metadata"]})

        kubectl(control_plane.kubeconfig, "patch", "nal", name, "--type=merge", "--subresource=status",
                "-p", '{"status":{"phase":"Overcommitted"}}')
        kubectl(control_plane.kubeconfig, "patch", "nal", name, "--type=merge", "-p", '{"status":{"phase":"Ready"}}')

        assert "Overcommitted" == api.get(f"{LEDGERS}/{name}")["status"]["phase"]

    def test_an_invalid_status_is_rejected(self, control_plane: ControlPlane, ledgers: list[str]) -> None:
        """The schema is enforced on /status: an unknown phase is refused with 422."""
        api = control_plane.api()
        name = unique("invalid")
        ledgers.append(name)
        ledger = a_ledger(name)
        created = api.create(LEDGERS, ledger)
        with pytest.raises(ApiError) as refused:
            api.replace(f"{LEDGERS}/{name}/status", {**ledger, "metadata": created["metadata"],
                                                     "status": {**ledger["status"], "phase": "Sideways"}})
        assert 422 == refused.value.status
