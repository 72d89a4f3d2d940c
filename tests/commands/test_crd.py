"""The NodeAllocatableLedger CRD and resource: committed = generated, valid for v1.36, structural, and every
ledger ``draledger audit`` prints validates against it."""

from __future__ import annotations

import copy
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from draledger.commands.audit import ledgers_of
from draledger.commands.tables import ledger_table
from draledger.core import crds
from draledger.core.accounting.ledger import Condition, Flags
from draledger.core.bodies import API_VERSION, KIND, condition_bodies, ledger_object, problem_body
from draledger.core.loading import load
from draledger.core.models import NodeAllocatableLedgerSpec, status_json, status_of
from draledger.core.views import ObjectRef, Problem
from strategies import claims_with_problems, clusters

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "crds" / "nodeallocatableledgers.yaml"
NOW = "2026-12-02T10:00:00Z"


def openapi_schema() -> dict[str, Any]:
    return crds.crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


# ------------------------------------------------------------------ a structural-schema checker

_FORBIDDEN = ("$ref", "anyOf", "oneOf", "allOf", "not", "definitions", "$defs")


def structural_violations(node: Any, path: str = "") -> list[str]:
    """Why a schema is not structural, as kube-apiserver's rules for CRDs say (empty: it is)."""
    if not isinstance(node, dict):
        return [f"{path or '/'}: not a schema object"]
    found = []
    for key in _FORBIDDEN:
        if key in node:
            found.append(f"{path or '/'}: uses {key}")
    if node.get("additionalProperties") is False:
        found.append(f"{path or '/'}: additionalProperties: false")
    if "properties" in node and "additionalProperties" in node:
        found.append(f"{path or '/'}: properties and additionalProperties together")
    shaped = any(k in node for k in ("properties", "items", "additionalProperties"))
    if shaped and "type" not in node and not node.get("x-kubernetes-int-or-string"):
        found.append(f"{path or '/'}: has properties/items/additionalProperties but no type")
    if "type" not in node and not node.get("x-kubernetes-int-or-string") and not node.get(
            "x-kubernetes-preserve-unknown-fields"):
        found.append(f"{path or '/'}: no type")
    for name, sub in (node.get("properties") or {}).items():
        found += structural_violations(sub, f"{path}/properties/{name}")
    if isinstance(node.get("items"), dict):
        found += structural_violations(node["items"], f"{path}/items")
    if isinstance(node.get("additionalProperties"), dict):
        found += structural_violations(node["additionalProperties"], f"{path}/additionalProperties")
    return found


# ------------------------------------------------------------------ validating ledgers against the schema


def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})", value):
        return False
    datetime.fromisoformat(value.replace("Z", "+00:00"))
    return True


FORMATS = copy.deepcopy(jsonschema.Draft7Validator.FORMAT_CHECKER)
if "date-time" not in FORMATS.checkers:  # jsonschema checks date-time only with an optional extra installed
    FORMATS.checks("date-time", raises=ValueError)(_is_date_time)
VALIDATOR = jsonschema.Draft7Validator(openapi_schema(), format_checker=FORMATS)


def schema_errors(obj: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(obj)]


def audit_items(items: list[dict[str, Any]], flags: Flags | None = None) -> list[dict[str, Any]]:
    loaded = load(items, "test")
    return ledgers_of(loaded, flags or Flags(), NOW)


class TestCommittedCrd:
    def test_committed_file_is_the_generated_one(self) -> None:
        """crds/nodeallocatableledgers.yaml is exactly what `draledger crd` prints."""
        assert crds.crd_yaml() == COMMITTED.read_text(encoding="utf-8")

    def test_committed_file_parses_to_the_crd(self) -> None:
        """The committed YAML is the CRD object itself (nothing lost in serialisation)."""
        assert crds.crd() == yaml.safe_load(COMMITTED.read_text(encoding="utf-8"))

    def test_names(self) -> None:
        """Group, version, kind, plural, short name, scope and the status subresource are those the docs name."""
        spec = crds.crd()["spec"]
        assert ("draledger.dev", "Cluster", "NodeAllocatableLedger", "nodeallocatableledgers", ["nal"]) == (
            spec["group"], spec["scope"], spec["names"]["kind"], spec["names"]["plural"], spec["names"]["shortNames"])
        (version,) = spec["versions"]
        assert ("v1alpha1", True, True, {"status": {}}) == (
            version["name"], version["served"], version["storage"], version["subresources"])
        assert "nodeallocatableledgers.draledger.dev" == crds.crd()["metadata"]["name"]


class TestKubernetesValidity:
    def test_valid_for_kubernetes_1_36(self) -> None:
        """The CRD validates against the official v1.36 schema, strictly (no unknown fields)."""
        assert "1.36" == kubernetes_validate.validate(crds.crd(), "1.36.0", strict=True)

    def test_the_validator_is_not_vacuous(self) -> None:
        """The same strict validation rejects a CRD with a misspelt field."""
        broken = crds.crd()
        broken["spec"]["versions"][0]["servd"] = True
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(broken, "1.36.0", strict=True)


class TestStructuralSchema:
    def test_schema_is_structural(self) -> None:
        """Every node of the openAPIV3Schema satisfies the structural-schema rules."""
        assert [] == structural_violations(openapi_schema())

    def test_metadata_is_only_an_object(self) -> None:
        """metadata is exactly {type: object}: the API server owns its schema."""
        assert {"type": "object"} == openapi_schema()["properties"]["metadata"]

    def test_no_titles_or_defaults_leak(self) -> None:
        """pydantic's titles and defaults are not in the schema (defaults would be applied by the server)."""
        text = yaml.safe_dump(openapi_schema())
        assert "title:" not in text
        assert "default:" not in text

    def test_conditions_are_a_map_list(self) -> None:
        """status.conditions is a list-map keyed by type, like every metav1.Condition list."""
        conditions = openapi_schema()["properties"]["status"]["properties"]["conditions"]
        assert ("map", ["type"]) == (conditions["x-kubernetes-list-type"], conditions["x-kubernetes-list-map-keys"])

    @pytest.mark.parametrize(
        ("schema", "violation"),
        [
            pytest.param({"type": "object", "properties": {"a": {"$ref": "#/x"}}}, "/properties/a: uses $ref",
                         id="ref"),
            pytest.param({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}]}}},
                         "/properties/a: uses anyOf", id="anyOf"),
            pytest.param({"type": "object", "additionalProperties": False}, "/: additionalProperties: false",
                         id="additional-false"),
            pytest.param({"properties": {"a": {"type": "string"}}}, "/: has properties/items/additionalProperties "
                         "but no type", id="untyped-object"),
            pytest.param({"type": "object", "properties": {"a": {"type": "string"}},
                          "additionalProperties": {"type": "string"}},
                         "/: properties and additionalProperties together", id="both"),
            pytest.param({"type": "array", "items": {"description": "x"}}, "/items: no type", id="untyped-items"),
            pytest.param({"type": "object", "additionalProperties": {"oneOf": []}},
                         "/additionalProperties: uses oneOf", id="oneOf-in-map"),
        ],
    )
    def test_checker_finds_violations(self, schema: dict[str, Any], violation: str) -> None:
        """The structural checker itself catches each rule it enforces."""
        assert violation in structural_violations(schema)

    def test_optional_fields_become_plain_types(self) -> None:
        """Optional[X] (pydantic's anyOf with null) becomes X, and is simply not required."""
        devices = openapi_schema()["properties"]["status"]["properties"]["claims"]["items"]["properties"]["devices"]
        assert {"type": "integer"} == devices["items"]["properties"]["numaZone"]
        assert "numaZone" not in devices["items"]["required"]

    def test_structuralizer_rules(self) -> None:
        """const becomes enum, additionalProperties: false is dropped, a free-form object keeps unknown fields."""
        defs = {"Thing": {"type": "object", "title": "Thing", "properties": {"k": {"const": "v", "type": "string"}},
                          "additionalProperties": False}}
        schema = {"type": "object", "properties": {
            "thing": {"$ref": "#/$defs/Thing"},
            "free": {"type": "object"},
            "tags": {"type": "array", "items": [{"type": "string"}]},
        }}
        assert {"type": "object", "properties": {
            "thing": {"type": "object", "properties": {"k": {"type": "string", "enum": ["v"]}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "tags": {"type": "array", "items": [{"type": "string"}]},
        }} == crds._structural(schema, defs)


def printer_columns() -> list[dict[str, Any]]:
    return crds.crd()["spec"]["versions"][0]["additionalPrinterColumns"]  # type: ignore[no-any-return]


def summary_cells(ledger: dict[str, Any]) -> list[Any]:
    """The cells ``kubectl get nal -o wide`` prints from ``status.summary``: CPU, Memory, Scheduler, Problems."""
    summary = ledger["status"]["summary"]
    return [summary["cpu"], summary["memory"], summary["scheduler"], summary["problems"]]


class TestPrinterColumns:
    def test_default_columns(self) -> None:
        """kubectl get nal shows phase, humanised cpu and memory, claims, mapping version and age, in that order."""
        assert [
            ("Phase", "string", ".status.phase"),
            ("CPU", "string", ".status.summary.cpu"),
            ("Memory", "string", ".status.summary.memory"),
            ("Claims", "integer", ".status.claimCount"),
            ("Mapping", "integer", ".status.mappingVersion"),
            ("Age", "date", ".metadata.creationTimestamp"),
        ] == [(c["name"], c["type"], c["jsonPath"]) for c in printer_columns() if c.get("priority", 0) == 0]

    def test_wide_columns(self) -> None:
        """-o wide adds the scheduler's agreement, the problem count and the release whose rules apply (priority 1),
        after Age as kubectl does."""
        assert [
            ("Scheduler", "string", ".status.summary.scheduler", 1),
            ("Problems", "integer", ".status.summary.problems", 1),
            ("Release", "string", ".status.release", 1),
        ] == [(c["name"], c["type"], c["jsonPath"], c["priority"]) for c in printer_columns()[-3:]]

    def test_columns_read_like_the_audit_table(self) -> None:
        """Every column of audit's table but OTHER (one line per extended resource) is a column of kubectl get nal."""
        audit = {"NAME", "PHASE", "CPU", "MEMORY", "CLAIMS", "SCHEDULER", "PROBLEMS"}
        assert audit <= {"NAME", *(c["name"].upper() for c in printer_columns())}

    @pytest.mark.parametrize("case", sorted(p.stem for p in (ROOT / "tests" / "conformance").glob("*.json")))
    def test_cells_are_the_audit_tables(self, case: str, conformance_cases: dict[str, dict[str, Any]]) -> None:
        """For every ledger of every conformance case, the CPU, Memory, Scheduler and Problems cells of kubectl get
        nal (``status.summary``) read as the same columns of audit's table."""
        ledgers = audit_items(conformance_cases[case]["dump"]["items"])
        rows = [re.split(r"\s{3,}", line.strip()) for line in ledger_table(ledgers).splitlines()[1:]]
        assert [[row[0], row[2], row[3], row[6], row[7]] for row in rows] == [
            [ledger["status"]["nodeName"], *map(str, summary_cells(ledger))] for ledger in ledgers]

    def test_whole_mebibytes_and_the_claims_problems(self) -> None:
        """64Mi of memory reads 64Mi/1Gi, not 0.06Gi/1Gi; Problems counts the problems of the claims that
        status.problems does not list (a claim two pods share, a claim no container references)."""
        items = claims_with_problems(memory="64Mi")
        (ledger,) = audit_items(items)

        assert [] == ledger["status"]["problems"]
        assert ("64Mi/1Gi", 2) == (ledger["status"]["summary"]["memory"], ledger["status"]["summary"]["problems"])

    def test_columns_point_at_schema_fields(self) -> None:
        """Every status column's path exists in the schema with the column's type."""
        missing = []
        for column in printer_columns():
            path = column["jsonPath"].strip(".").split(".")
            if path[0] == "metadata":
                continue
            node = openapi_schema()
            for part in path:
                properties = node.get("properties", {})
                node = properties[part] if part in properties else node.get("additionalProperties", {})
            if column["type"] != node.get("type"):
                found = f"is {node['type']}" if "type" in node else "is not in the status model"
                missing.append(f"{column['name']}: {column['jsonPath']} {found}, the column wants {column['type']}")
        assert [] == missing


class TestLedgersValidate:
    @pytest.mark.parametrize("case", sorted(p.stem for p in (ROOT / "tests" / "conformance").glob("*.json")))
    def test_conformance_ledgers_validate(self, case: str, conformance_cases: dict[str, dict[str, Any]]) -> None:
        """Every ledger audit prints for every conformance case validates against the CRD schema."""
        ledgers = audit_items(conformance_cases[case]["dump"]["items"])
        assert ledgers
        for ledger in ledgers:
            assert [] == schema_errors(ledger)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(clusters())
    def test_generated_ledgers_validate(self, items: list[dict[str, Any]]) -> None:
        """Every ledger of a generated cluster (missing slices, problems, NUMA zones...) validates."""
        for ledger in audit_items(items, Flags(frozen=True)):
            assert [] == schema_errors(ledger)

    @pytest.mark.parametrize(
        ("path", "value"),
        [
            pytest.param(("status", "phase"), "Bogus", id="unknown-phase"),
            pytest.param(("status", "resources", "cpu", "free"), "12x", id="bad-quantity"),
            pytest.param(("status", "observedTime"), "yesterday", id="bad-time"),
            pytest.param(("status", "claimCount"), -1, id="negative-count"),
            pytest.param(("status", "numaZones"), {"0": {}}, id="zones-not-a-list"),
        ],
    )
    def test_the_schema_is_not_vacuous(self, path: tuple[str, ...], value: object) -> None:
        """Validation rejects a ledger with a wrong value, so the checks above can fail."""
        (ledger,) = audit_items([{"kind": "Node", "metadata": {"name": "n1"},
                                  "status": {"allocatable": {"cpu": "1"}}}])
        target = ledger
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
        assert schema_errors(ledger)


class TestLedgerResource:
    def _ledger(self) -> Any:
        loaded = load([{"kind": "Node", "metadata": {"name": "n1", "uid": "u-1"},
                        "status": {"allocatable": {"cpu": "12x", "memory": "1Gi"}}}], "test")
        return loaded.state.ledger("n1")

    def test_object_is_owned_by_its_node(self) -> None:
        """The resource is named after the Node and owned by it; the spec defaults to not frozen."""
        obj = ledger_object(status_json(status_of(self._ledger(), ledger_version=3, mapping_version=2, now=NOW)),
                            "u-1")
        assert (API_VERSION, KIND, "n1") == (obj["apiVersion"], obj["kind"], obj["metadata"]["name"])
        assert [{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u-1"}] == obj["metadata"]["ownerReferences"]
        assert {"frozen": False} == obj["spec"]
        assert (3, 2, NOW) == (obj["status"]["ledgerVersion"], obj["status"]["mappingVersion"],
                               obj["status"]["observedTime"])

    def test_without_node_uid_and_with_spec(self) -> None:
        """Without a node UID there is no ownerReference; a given spec is written as is."""
        status = status_of(self._ledger(), ledger_version=1, mapping_version=1, now=NOW)
        spec = NodeAllocatableLedgerSpec(frozen=True, reason="maintenance")
        obj = ledger_object(status_json(status), spec=spec.model_dump(by_alias=True, exclude_none=True))
        assert "ownerReferences" not in obj["metadata"]
        assert {"frozen": True, "reason": "maintenance"} == obj["spec"]
        assert [] == schema_errors(obj)

    def test_problems_name_their_object(self) -> None:
        """A problem carries kind, name, field and value; absent parts are left out, not null."""
        obj = ledger_object(status_json(status_of(self._ledger(), ledger_version=1, mapping_version=1, now=NOW)))
        assert [{"reason": "MalformedField", "kind": "Node", "name": "n1", "field": "status.allocatable.cpu",
                 "value": "'12x'"}] == [{k: v for k, v in p.items() if k != "message"}
                                        for p in obj["status"]["problems"]]

    def test_problem_without_object(self) -> None:
        """A problem of the input (no object) has only its reason and message."""
        assert {"reason": "X", "message": "m"} == problem_body(Problem("X", "m"))
        assert {"reason": "X", "message": "m", "kind": "Pod", "namespace": "t", "name": "p"} == problem_body(
            Problem("X", "m", ObjectRef("Pod", "p", "t")))

    def test_condition_transition_times(self) -> None:
        """lastTransitionTime moves only when a condition's status changes (metav1.Condition semantics)."""
        previous = [{"type": "Fits", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    {"type": "Fresh", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    "garbage"]
        stamped = condition_bodies(
            (Condition("Fits", "True", "Fits", "ok"), Condition("Fresh", "False", "NodeNotReady", "down"),
             Condition("SchedulerInSync", "True", "Matched", "ok")),
            previous, NOW)  # type: ignore[arg-type]
        assert [("Fits", "2026-01-01T00:00:00Z"), ("Fresh", NOW), ("SchedulerInSync", NOW)] == [
            (c["type"], c["lastTransitionTime"]) for c in stamped]

    def test_deterministic_serialisation(self) -> None:
        """The same ledger serialises to the same JSON (the operator skips unchanged writes)."""
        first = ledger_object(status_json(status_of(self._ledger(), ledger_version=1, mapping_version=1, now=NOW)),
                              "u-1")
        second = ledger_object(status_json(status_of(self._ledger(), ledger_version=1, mapping_version=1, now=NOW)),
                               "u-1")
        assert first == second
