"""``draledger audit``: the ledgers of a cluster dump, offline, with no install and no writes.

It is the operator's path with a file instead of a watch: load every object into a ClusterState, compute
every node, print. A file that cannot be used exits 2 naming it; a malformed object is named on standard
error and in its node's ledger, and everything else is still computed.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import msgspec
import yaml

from draledger.commands.dumps import DumpError, Loaded, all_problems, load_paths
from draledger.commands.tables import ledger_table
from draledger.core.accounting.ledger import Flags
from draledger.core.ledgers import ledger_object, status_body
from draledger.operator.clocks import now_rfc3339


def ledgers_of(loaded: Loaded, flags: Flags, now: str) -> list[dict[str, Any]]:
    """Every node's ledger object, sorted by node name (versions are 1: a dump has no history)."""
    out = []
    state = loaded.state
    for name in sorted(state.nodes):
        ledger = state.ledger(name, flags)
        assert ledger is not None
        body = status_body(ledger, ledger_version=1, mapping_version=1, now=now)
        out.append(ledger_object(body, ledger.node_uid))
    return out


def as_list(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def emit(items: list[dict[str, Any]], output: str, numa: bool, stream: TextIO) -> None:
    if output == "json":  # msgspec's encoder: the pure-Python indenting one of json took a third of an audit
        stream.write(msgspec.json.format(msgspec.json.encode(as_list(items)), indent=2).decode())
        stream.write("\n")
    elif output == "yaml":
        yaml.safe_dump(as_list(items), stream, sort_keys=False)
    else:
        stream.write(ledger_table(items, numa=numa) if items else "No ledgers: the input has no Nodes.\n")


def run(
    paths: Sequence[str],
    output: str = "table",
    numa: bool = False,
    numa_attributes: Sequence[str] = (),
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    svg: str | None = None,
) -> int:
    # The streams are looked up at call time, not import time, so redirect_stdout (and test capture) work.
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    collecting = gc.isenabled()
    gc.disable()  # a dump and its views hold no reference cycles: the collector would only scan them, often
    try:
        return _run(paths, output, numa, numa_attributes, stdout, stderr, svg)
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
) -> int:
    try:
        loaded = load_paths(paths)
    except DumpError as error:
        stderr.write(f"error: {error}\n")
        return 2
    for problem in all_problems(loaded):
        stderr.write(f"warning: {problem}\n")
    flags = Flags(numa_attributes=tuple(numa_attributes)) if numa_attributes else Flags()
    items = ledgers_of(loaded, flags, now_rfc3339())
    emit(items, output, numa, stdout)
    if svg:
        from draledger.commands.report import write_svg

        write_svg(svg, items)
    return 0
