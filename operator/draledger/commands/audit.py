"""``draledger audit``: the ledgers of a cluster dump, offline, with no install and no writes.

It is the operator's path with a file instead of a watch: load every object into a ClusterState, compute
every node, print. A file that cannot be used (a dump without Nodes included, or an ``--svg`` picture that
cannot be written, checked before any work) exits 2 naming it; a malformed object is named on standard
error and in its node's ledger, and everything else is still computed. A pipeline asks ``--fail-on`` for
exit 1 when a node's phase is one it cannot accept: ``Overcommitted`` by default, because an offline dump
that is cut short or taken between two watch events often leaves a node Stale, while an overcommitted node
is overcommitted whatever the dump missed.
"""

from __future__ import annotations

import gc
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import msgspec
import yaml

from draledger.commands import colour
from draledger.commands.dumps import KUBECTL_GET, DumpError, load_paths, require_nodes
from draledger.commands.errors import FAILED, OK, UNUSABLE, CommandError, writable
from draledger.commands.progress import Progress
from draledger.commands.tables import ledger_table
from draledger.core import records
from draledger.core.accounting.ledger import Flags
from draledger.core.accounting.zones import DEFAULT_NUMA_ATTRIBUTES
from draledger.core.bodies import dump_objects
from draledger.core.loading import Loaded, all_problems, missing_kinds
from draledger.core.phases import Phase
from draledger.core.releases import Release
from draledger.operator.clocks import now_rfc3339

FAIL_ON: tuple[str, ...] = ()  # exit 0 whatever the phases, unless asked (docs/cli.md)


def ledgers_of(loaded: Loaded, flags: Flags, now: str) -> list[dict[str, Any]]:
    """Every node's ledger object, sorted by node name (versions are 1: a dump has no history)."""
    state = loaded.state
    return dump_objects((ledger for name in sorted(state.nodes) if (ledger := state.ledger(name, flags))), now)


def as_list(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def fail_on_phases(text: str) -> tuple[str, ...]:
    """``--fail-on``: ``none``, or phases separated by commas, in any case; ValueError naming a bad one."""
    if text.strip().lower() == "none":
        return ()
    known = {phase.value.lower(): phase.value for phase in Phase}
    phases = []
    for word in (w.strip() for w in text.split(",")):
        if word.lower() not in known:
            raise ValueError(f"unknown phase {word!r} (phases: {', '.join(p.value for p in Phase)}, or none)")
        phases.append(known[word.lower()])
    return tuple(phases)


def failing(items: list[dict[str, Any]], fail_on: Sequence[str]) -> list[str]:
    """``node (Phase)`` for each ledger whose phase is in ``fail_on``."""
    return [f"{i['status']['nodeName']} ({i['status']['phase']})" for i in items if i["status"]["phase"] in fail_on]


def as_json(document: dict[str, Any]) -> str:
    """``document`` indented. msgspec's encoder: the pure-Python indenting one of json took a third of an audit.
    What msgspec cannot encode, a name that is no valid Unicode (a lone surrogate, which JSON may escape), goes
    through json with every such character as its JSON escape."""
    try:
        return msgspec.json.format(msgspec.json.encode(document), indent=2).decode()
    except UnicodeEncodeError:
        return json.dumps(document, indent=2)


def emit(items: list[dict[str, Any]], output: str, numa: bool, stream: TextIO) -> None:
    if output == "json":
        stream.write(as_json(as_list(items)))
        stream.write("\n")
    elif output == "yaml":
        yaml.safe_dump(as_list(items), stream, sort_keys=False)
    else:
        stream.write(ledger_table(items, numa=numa, coloured=colour.wanted(stream)))


def run(
    paths: Sequence[str],
    output: str = "table",
    numa: bool = False,
    numa_attributes: Sequence[str] = (),
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    svg: str | None = None,
    fail_on: Sequence[str] = FAIL_ON,
    release: Release | None = None,
    check_releases: bool = False,
) -> int:
    """The audit; 0, 1 when a node's phase is in ``fail_on`` (or, with ``check_releases``, a released pod's
    record does not hold), 2 when an input or output cannot be used. ``release``: whose rules apply (None:
    what the dump shows, core.loading rule 3)."""
    # The streams are looked up at call time, not import time, so redirect_stdout (and test capture) work.
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    collecting = gc.isenabled()
    gc.disable()  # a dump and its views hold no reference cycles: the collector would only scan them, often
    try:
        return _run(paths, output, numa, numa_attributes, stdout, stderr, svg, fail_on, release, check_releases)
    except (DumpError, CommandError) as error:
        stderr.write(f"error: {error}\n")
        return error.code if isinstance(error, CommandError) else UNUSABLE
    finally:
        if collecting:
            gc.enable()


def _run(
    paths: Sequence[str],
    output: str,
    numa: bool,
    numa_attributes: Sequence[str],
    stdout: TextIO,
    stderr: TextIO,
    svg: str | None,
    fail_on: Sequence[str],
    release: Release | None,
    check_releases: bool,
) -> int:
    if svg:
        writable(svg)  # before the work, not after a long audit
    progress = Progress(stderr)
    loaded = load_paths(paths, progress, release, tuple(numa_attributes) or DEFAULT_NUMA_ATTRIBUTES)
    require_nodes(loaded, paths)
    stderr.write(f"release: {loaded.state.release}'s rules ({loaded.release_why})\n")
    for problem in all_problems(loaded):
        stderr.write(f"warning: {problem}\n")
    missing = missing_kinds(loaded)
    if missing:
        stderr.write(f"warning: the dump has no {', '.join(missing)} objects: ledgers that need them turn "
                     f"Stale or miss claims; dump with {KUBECTL_GET}\n")
    progress.step(f"computing {len(loaded.state.nodes)} ledgers")
    items = ledgers_of(loaded, Flags(), now_rfc3339())
    emit(items, output, numa, stdout)
    if svg:
        from draledger.commands.report import write_svg

        write_svg(svg, items)
    wrong = released_wrongly(loaded, stderr) if check_releases else 0
    bad = failing(items, fail_on)
    if bad:
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        stderr.write(f"error: {', '.join(bad[:5])}{more}: {len(bad)} of {len(items)} nodes in a --fail-on phase "
                     f"({','.join(fail_on)})\n")
        return FAILED
    return FAILED if wrong else OK


def released_wrongly(loaded: Loaded, stderr: TextIO) -> int:
    """``--check-releases``: one line per pod the gate released, checked against the ledgers the dump holds
    (core.records rule 3), and a summary; the number that do not hold."""
    if loaded.released and not loaded.ledgers:
        stderr.write("warning: the dump holds no NodeAllocatableLedger: a record can only be checked against "
                     "where its pod is bound; dump with kubectl get nodes,pods,resourceslices,resourceclaims,nal "
                     "-A -o json\n")
    wrong = 0
    for pod in sorted(loaded.released, key=lambda p: (p.namespace, p.name)):
        problem = records.check(records.parse(pod.text), pod.text, pod.node, pod.excluded, loaded.ledgers)
        wrong += bool(problem)
        where = f"bound to {pod.node}" if pod.node else "not bound yet"
        ledger = loaded.ledgers.get(pod.node)
        now = f", its ledger now at ledgerVersion {ledger.ledger_version} ({ledger.phase})" if ledger else ""
        stderr.write(f"release: {pod.namespace}/{pod.name} released on {pod.text}, {where}{now}: "
                     f"{problem or 'holds'}\n")
    stderr.write(f"releases: {len(loaded.released)} released pods checked, {wrong} do not hold\n")
    return wrong
