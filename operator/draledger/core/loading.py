"""Loading: a list of raw objects (a dump's items, an emulator's store, a test's fixtures) into a ClusterState.

The one way in for objects that do not come from a watch: ``draledger audit``, the demo, the benchmarks and the
tests load through here, and the operator's watch events go through the same ``ClusterState.apply``.

Rules:
1. An item that is not an object, or is of an unknown kind, is a problem that names its position; every other
   item is still loaded. A malformed field of an object is a problem of that object (the readers never raise).
2. Later items win for objects that appear twice (an update); a ResourceSlice older than the stored one is refused
   (``Applied.refused``) and named (``GenerationRegression``).
3. The release is decided after everything is loaded (views do not depend on it, core.releases rule 3):
   ``decide_release`` takes the caller's choice, or the dump's own evidence, and says why.
4. ``all_problems`` lists every problem of every object once, under the release in force, plus the pods bound to
   a node that is not in the input.
5. What a dump records of the gate's releases is kept beside the state, for ``audit --check-releases``: each
   pod's ``draledger.dev/released-on`` and the stored ledgers (core.records); no ledger is computed from them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from draledger.core import records, releases
from draledger.core.accounting.zones import DEFAULT_NUMA_ATTRIBUTES
from draledger.core.releases import Release
from draledger.core.state import ClusterState
from draledger.core.views import Problem
from draledger.core.views.problems import ObjectRef, show

READERS = {"Node": "nodes", "Pod": "pods", "ResourceSlice": "resourceslices", "ResourceClaim": "resourceclaims"}
IGNORED_KINDS = frozenset({"DeviceClass", "ResourceClaimTemplate", "Namespace", "Event"})


@dataclass(slots=True)
class Loaded:
    state: ClusterState = field(default_factory=ClusterState)
    problems: list[Problem] = field(default_factory=list)  # input problems that belong to no object
    kinds: Counter[str] = field(default_factory=Counter)  # items read, by kind
    release_why: str = ""  # why the state follows its release (rule 3)
    released: list[records.Released] = field(default_factory=list)  # pods with a release record (rule 5)
    ledgers: dict[str, records.Stored] = field(default_factory=dict)  # the stored ledgers a dump holds (rule 5)


def load_items(items: Iterable[Any], source: str, loaded: Loaded) -> None:
    """Rules 1 and 2; ``source`` names the input in problems (a file, "demo")."""
    state = loaded.state
    for index, item in enumerate(items):
        where = f"{source}: items[{index}]"
        if not isinstance(item, dict):
            loaded.problems.append(
                Problem("MalformedItem", f"{where} is not an object ({type(item).__name__})", value=show(item))
            )
            continue
        kind = item.get("kind")
        loaded.kinds[kind if isinstance(kind, str) else "?"] += 1
        if kind is not None and not isinstance(kind, str):  # a list or a map: no kind, and no key to look up
            loaded.problems.append(
                Problem("MalformedItem", f"{where} has a kind that is not a string", field="kind", value=show(kind))
            )
            continue
        if kind == "Pod" and (record := records.released(item)) is not None:
            loaded.released.append(record)
        elif kind == "NodeAllocatableLedger":
            if (ledger := records.stored(item)) is not None:
                loaded.ledgers[ledger[0]] = ledger[1]
            continue
        reader = READERS.get(kind) if kind is not None else None
        if reader is None:
            if kind not in IGNORED_KINDS:
                loaded.problems.append(Problem("UnknownKind", f"{where} has kind {show(kind)}; ignored"))
            continue
        refused = state.apply(reader, None, item).refused
        if refused is not None:
            loaded.problems.append(Problem(
                "GenerationRegression", f"ResourceSlice {refused.name}: pool {refused.driver}/{refused.pool} "
                f"generation {refused.rejected} is older than the stored {refused.generation}; ignored",
                ObjectRef("ResourceSlice", refused.name)))


def load(
    items: Iterable[Any], source: str = "input", release: Release | None = None,
    attributes: tuple[str, ...] = DEFAULT_NUMA_ATTRIBUTES,
) -> Loaded:
    """Load ``items`` into a new state, whose zones read the NUMA ``attributes``, and decide its release (rules 1 to
    3)."""
    loaded = Loaded(ClusterState(attributes=attributes))
    load_items(items, source, loaded)
    decide_release(loaded, release)
    return loaded


def decide_release(loaded: Loaded, release: Release | None = None) -> Release:
    """Rule 3: ``release`` when given, else what the dump shows (core.releases rule 3)."""
    state = loaded.state
    if release is not None:
        why = "chosen (--release)"
    else:
        release, why = releases.from_dump((n.kubelet_version for n in state.nodes.values()), state.shapes_seen())
    state.set_release(release)
    loaded.release_why = why
    return release


def missing_kinds(loaded: Loaded) -> list[str]:
    """The kinds a ledger is computed from that no input holds (their absence turns nodes Stale silently)."""
    return [kind for kind in READERS if not loaded.kinds[kind]]


def all_problems(loaded: Loaded) -> list[Problem]:
    """Rule 4."""
    state = loaded.state
    release = state.release
    out = list(loaded.problems)
    for views in (state.nodes.values(), state.pods.values(), state.slices.values(), state.claims.values()):
        for view in views:
            out.extend(p for p in view.problems if p.applies(release))
    for pod in state.pods.values():
        if pod.counted and pod.node_name not in state.nodes:
            out.append(
                Problem(
                    "UnknownNode",
                    f"bound to node {pod.node_name!r}, which is not in the input; not counted in any ledger",
                    ObjectRef("Pod", pod.name, pod.namespace),
                    "spec.nodeName",
                    pod.node_name,
                )
            )
    return out
