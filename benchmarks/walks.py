"""Two walks through the code, as the program runs them: which modules a value passes, and which calls run back.

1. A Pod event to its ledger write: a claim-using pod of conformance case v02 is resized (``Runtime.event``, the
   handler's one call), then the writer's round plans and sends its node's ledger (to a recording API).
2. A mapping to its charged quantity: the pod's claim's device gets a new multiplier (``ClusterState.apply`` of its
   ResourceSlice), then the node's ledger is computed (``ClusterState.ledger``), whose claim line charges it.

Counted, for the draledger functions that run between the walk's first call and its return:
- modules: distinct modules entered (walk 1 adds ``operator/handlers``: Kopf calls its handler);
- arrows: distinct (caller module, callee module) pairs; calls: distinct (caller function, callee function) pairs
  across modules;
- calls back: calls into a module that imports the caller's (a rule asking the state it is computed for).

Run from the repository root with the project's virtualenv: ``python benchmarks/walks.py [-v]``. Nothing is timed;
the counts are those of the code as it stands (docs/architecture.md records them before and after issue 28).
"""

from __future__ import annotations

import ast
import asyncio
import copy
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import draledger
from draledger.operator.config import OperatorConfig
from draledger.operator.metrics import Metrics
from draledger.operator.runtime import Runtime
from draledger.operator.writing import Writer

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(draledger.__file__).parent
KIND = {"Node": "nodes", "Pod": "pods", "ResourceSlice": "resourceslices", "ResourceClaim": "resourceclaims"}
ITEMS: list[dict[str, Any]] = json.loads(next((ROOT / "tests/conformance").glob("v02*.json")).read_text())["dump"][
    "items"]


class Api:
    """Answers the writer as the API server would, and records nothing else."""

    server = "recording"

    def __init__(self) -> None:
        self.version = 0

    async def get(self, path: str, **_: Any) -> Any:
        node = next(i for i in ITEMS if i["kind"] == "Node")
        return {"metadata": {"uid": node["metadata"]["uid"]}} if path.startswith("/api/v1/nodes/") else {}

    async def create(self, path: str, body: Any, **_: Any) -> Any:
        self.version += 1
        return {**body, "metadata": {**body["metadata"], "uid": "u", "resourceVersion": str(self.version)}}

    async def json_patch(self, path: str, ops: Any, **_: Any) -> Any:
        self.version += 1
        return {"metadata": {"resourceVersion": str(self.version)}, "spec": {}}

    async def merge_patch(self, path: str, patch: Any, **_: Any) -> Any:
        return {}

    async def list_all(self, path: str, **_: Any) -> Any:
        return []

    async def list_pages(self, path: str, decode: Any, **_: Any) -> Any:
        yield [], ""


class Trace:
    """The cross-module calls of the draledger functions run while it is on."""

    def __init__(self) -> None:
        self.modules: list[str] = []
        self.calls: set[tuple[str, str, str, str]] = set()

    def __call__(self, frame: Any, event: str, _: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("draledger"):
            return
        if module not in self.modules:
            self.modules.append(module)
        caller = frame.f_back
        while caller is not None and not caller.f_globals.get("__name__", "").startswith("draledger"):
            caller = caller.f_back  # through the standard library and asyncio, to the draledger frame behind it
        if caller is not None and caller.f_globals["__name__"] != module:
            self.calls.add((caller.f_globals["__name__"], caller.f_code.co_qualname, module, frame.f_code.co_qualname))


def imports() -> dict[str, set[str]]:
    """Each module of the package, and the draledger modules (or names in them) it imports."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("draledger"):
                names |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
            elif isinstance(node, ast.Import):
                names |= {alias.name for alias in node.names if alias.name.startswith("draledger")}
        found[name] = names
    return found


def reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        if goal in graph.get(module, ()):
            return True
        todo.extend(graph.get(module, ()))
    return False


def report(name: str, trace: Trace, extra: str | None, verbose: bool) -> None:
    graph = imports()
    modules = [m.removeprefix("draledger.") for m in trace.modules] + ([extra] if extra else [])
    arrows = {(a, c) for a, _, c, _ in trace.calls} | ({("extra", "runtime")} if extra else set())
    back = sorted(call for call in trace.calls if reaches(graph, call[2], call[0]))
    print(f"{name}: {len(modules)} modules, {len(arrows)} arrows, {len(trace.calls) + bool(extra)} calls between "
          f"modules, {len(back)} calls back")
    if verbose:
        print("  modules:", ", ".join(sorted(modules)))
        for call in back:
            print("  back:", " -> ".join((f"{call[0]}.{call[1]}", f"{call[2]}.{call[3]}")))


async def walk(step: Callable[[], Any]) -> Trace:
    trace = Trace()
    sys.setprofile(trace)
    try:
        result = step()
        if asyncio.iscoroutine(result):
            await result
    finally:
        sys.setprofile(None)
    return trace


async def main(verbose: bool) -> None:
    runtime = Runtime(OperatorConfig(), Metrics(), lambda: 100.0)
    for index, item in enumerate(ITEMS):
        item.setdefault("metadata", {}).setdefault("uid", f"uid-{index}")
        runtime.listed_object(KIND[item["kind"]], item["metadata"]["uid"])
    for item in ITEMS:
        runtime.event(KIND[item["kind"]], None, item)
    for kind in KIND.values():
        runtime.listing_done(kind)
    runtime.contact("nodeallocatableledgers")
    runtime.listing_done("nodeallocatableledgers")
    writer = Writer(runtime, Api())  # type: ignore[arg-type]
    await writer.take_lead()
    writer.write_round()
    await writer.drain()  # every value the state keeps is warm, as in a running operator

    pod = copy.deepcopy(next(i for i in ITEMS if i["kind"] == "Pod" and i["spec"].get("resourceClaims")))
    pod["metadata"]["resourceVersion"] = "99"
    pod["spec"]["containers"][0].setdefault("resources", {}).setdefault("requests", {})["cpu"] = "1500m"

    async def pod_event() -> None:
        runtime.event("pods", "MODIFIED", pod)  # the handler's one call
        writer.write_round()
        await writer.drain()

    report("a Pod event to its ledger write", await walk(pod_event), "operator.handlers", verbose)

    state, node = runtime.state, pod["spec"]["nodeName"]
    remapped = copy.deepcopy(next(i for i in ITEMS if i["kind"] == "ResourceSlice"))
    remapped["spec"]["pool"]["generation"] += 1
    for device in remapped["spec"]["devices"]:
        for field in ("nodeAllocatableResourceMappings", "nodeAllocatableResources"):
            for mapping in (device.get(field) or {}).values():
                for key in ("allocationMultiplier", "deviceMultiplier"):
                    if key in mapping:
                        mapping[key] = "3"
                for inner in (mapping.get("mapping"),):
                    if isinstance(inner, dict) and "deviceMultiplier" in inner:
                        inner["deviceMultiplier"] = "3"

    def mapping_walk() -> None:
        state.apply("resourceslices", "MODIFIED", remapped)
        state.ledger(node)

    report("a mapping to its charged quantity", await walk(mapping_walk), None, verbose)


if __name__ == "__main__":
    asyncio.run(main("-v" in sys.argv))
