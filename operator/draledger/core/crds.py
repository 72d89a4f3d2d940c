"""The NodeAllocatableLedger CustomResourceDefinition, generated from the pydantic models in ``models``.

Rules: the schema must be *structural* (kube-apiserver rejects anything else): every node has a type, no
``$ref``, no ``anyOf`` of types, no ``title``. Optional fields are simply not ``required``. The committed
``crds/nodeallocatableledgers.yaml`` is this module's output; a test keeps them equal.
"""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import BaseModel

from draledger.core import bodies, models

# ``kubectl get nal`` reads like ``draledger audit``'s table: printer columns can only show a field as it is,
# so CPU, Memory and Problems read ``status.summary`` (the audit table's figures, by the same functions:
# ``3.5/64``, ``41.7Gi/494Gi``, ``64Mi/1Gi``; core/bodies.py, rule 4) rather than the exact quantities.
# Priority 1 columns are shown by ``-o wide`` only; like kubectl's own wide columns they come after Age.
PRINTER_COLUMNS: list[dict[str, Any]] = [
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
    {
        "name": "CPU",
        "type": "string",
        "jsonPath": ".status.summary.cpu",
        "description": "requested/allocatable cores, humanised (exact figures: status.resources.cpu)",
    },
    {
        "name": "Memory",
        "type": "string",
        "jsonPath": ".status.summary.memory",
        "description": "requested/allocatable bytes, humanised (exact figures: status.resources.memory)",
    },
    {"name": "Claims", "type": "integer", "jsonPath": ".status.claimCount"},
    {
        "name": "Mapping",
        "type": "integer",
        "jsonPath": ".status.mappingVersion",
        "description": "monotonic version of the node's device mappings",
    },
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {
        "name": "Scheduler",
        "type": "string",
        "jsonPath": ".status.summary.scheduler",
        "priority": 1,
        "description": "InSync when the scheduler charged what the ledger counts, else Diverged",
    },
    {
        "name": "Problems",
        "type": "integer",
        "jsonPath": ".status.summary.problems",
        "priority": 1,
        "description": "how many problems the ledger shows: status.problems and the claims' own",
    },
    {
        "name": "Release",
        "type": "string",
        "jsonPath": ".status.release",
        "priority": 1,
        "description": "the Kubernetes release whose accounting rules the ledger follows",
    },
]
_DROP = frozenset({"title", "default"})


def _structural(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_structural(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _structural(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    if "anyOf" in node:  # Optional[X]: keep X, drop null
        kept = [branch for branch in node["anyOf"] if branch.get("type") != "null"]
        merged = {**{k: v for k, v in node.items() if k != "anyOf"}, **_structural(kept[0], defs)}
        return _structural(merged, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP or (key == "additionalProperties" and value is False):
            continue  # structural schemas forbid additionalProperties: false; pruning drops unknown fields
        if key == "properties":
            out[key] = {name: _structural(sub, defs) for name, sub in value.items()}
        elif key == "enum":
            out[key] = list(value)
        else:
            out[key] = _structural(value, defs)
    if "const" in out:
        out["enum"] = [out.pop("const")]
    if out.get("type") == "object" and "additionalProperties" not in out and "properties" not in out:
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema(by_alias=True, mode="serialization")
    defs = raw.pop("$defs", {})
    return _structural(raw, defs)  # type: ignore[no-any-return]


def crd() -> dict[str, Any]:
    status = model_schema(models.NodeAllocatableLedgerStatus)
    conditions = status["properties"]["conditions"]
    conditions["x-kubernetes-list-type"] = "map"
    conditions["x-kubernetes-list-map-keys"] = ["type"]
    spec = model_schema(models.NodeAllocatableLedgerSpec)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{bodies.PLURAL}.{bodies.GROUP}",
            "labels": {"app.kubernetes.io/name": "dra-ledger", "app.kubernetes.io/part-of": "dra-ledger"},
        },
        "spec": {
            "group": bodies.GROUP,
            "scope": "Cluster",
            "names": {
                "kind": bodies.KIND,
                "listKind": f"{bodies.KIND}List",
                "plural": bodies.PLURAL,
                "singular": bodies.KIND.lower(),
                "shortNames": [bodies.SHORT_NAME],
                "categories": ["draledger"],
            },
            "versions": [
                {
                    "name": bodies.VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": PRINTER_COLUMNS,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": "The node-allocatable ledger of one Node (named after it): ordinary "
                            "requests and DRA claims in one account, with per-NUMA subledgers.",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec,
                                "status": status,
                            },
                        }
                    },
                }
            ],
        },
    }


def crd_yaml() -> str:
    header = "# Generated by `draledger crd` from draledger.core.models; do not edit by hand.\n"
    return header + yaml.safe_dump(crd(), sort_keys=False, width=120, allow_unicode=True)
