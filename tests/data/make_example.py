"""Builds tests/data/example-cluster.json (the README's first example) from four conformance cases.

Each case's node ``n1`` gets its own name and each case its own namespace, so the dumps merge into one
realistic `kubectl get nodes,pods,resourceslices,resourceclaims -A -o json` List. Run from the repo root.
"""

import json
import pathlib
import sys

CASES = {
    "v02-gpu-hugepages-cores": ("gpu-node-1", "inference"),
    "v09-scheduler-divergence": ("cpu-node-2", "legacy"),
    "v11-overcommitted": ("cpu-node-3", "batch"),
    "v06-missing-resource-slice": ("gpu-node-4", "training"),
}


def rename(value: object, node: str, namespace: str) -> object:
    if isinstance(value, dict):
        return {k: (namespace if k == "namespace" else rename(v, node, namespace)) for k, v in value.items()}
    if isinstance(value, list):
        return [rename(v, node, namespace) for v in value]
    if isinstance(value, str):
        if value == "n1" or value.startswith("n1-"):
            return node + value[2:]
        return value
    return value


def main(out: str = "") -> None:
    root = pathlib.Path(__file__).resolve().parents[2]
    items = []
    for index, (case, (node, namespace)) in enumerate(CASES.items()):
        dump = json.loads((root / "tests/conformance" / f"{case}.json").read_text())["dump"]
        for item in rename(dump["items"], node, namespace):  # type: ignore[union-attr]
            uid = item["metadata"].get("uid")
            if uid:
                item["metadata"]["uid"] = f"{index}{uid[1:]}"
            items.append(item)
    document = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}
    target = pathlib.Path(out) if out else root / "tests/data/example-cluster.json"
    target.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
