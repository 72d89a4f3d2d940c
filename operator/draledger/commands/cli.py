"""The ``draledger`` command: one sub-command per job, each a thin call into its module."""

from __future__ import annotations

import argparse
import importlib
import io
import os
import sys
from collections.abc import Sequence

from draledger import __version__

# Each names a module with ``add_parser(commands)``. The demo sits above the commands (it needs the `demo` extra's
# packages only when it runs); device metadata is an independent library with its own small command line.
PLUGINS = ("draledger.demo.cli", "draledger.devicemetadata.cli")


def _audit(args: argparse.Namespace) -> int:
    from draledger.commands import audit

    if isinstance(sys.stdout, io.TextIOWrapper):  # a name that is no valid Unicode (a lone surrogate) still prints
        sys.stdout.reconfigure(errors="backslashreplace")
    return audit.run(args.filename, args.output, args.numa, args.numa_attribute or (), svg=args.svg)


def _cluster(args: argparse.Namespace) -> int:
    from draledger.commands import clusterctl

    return clusterctl.run(args)


def _export(args: argparse.Namespace) -> int:
    if args.from_cluster:
        return _cluster(args)
    from draledger.commands import audit, clusterctl
    from draledger.commands.dumps import DumpError, load_paths

    if not args.filename:
        sys.stderr.write("error: export needs --from-cluster or -f DUMP\n")
        return 2
    try:
        loaded = load_paths(args.filename)
    except DumpError as error:
        sys.stderr.write(f"error: {error}\n")
        return 2
    from draledger.core.accounting.ledger import Flags
    from draledger.operator.clocks import now_rfc3339

    now = now_rfc3339()
    items = audit.ledgers_of(loaded, Flags(), now)
    document = clusterctl.export_document(items, clusterctl.dump_identity(args.filename, now))
    try:
        clusterctl.write_document(document, args.output_file, args.output)
    except clusterctl.CommandError as error:
        sys.stderr.write(f"error: {error}\n")
        return error.code
    return 0


def _connection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", default=os.environ.get("DRALEDGER_SERVER", ""),
                        help="API server URL (default: in-cluster config, then KUBECONFIG)")
    parser.add_argument("--kubeconfig", default="", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", default="", help="kubeconfig context (default: its current context)")


def _crd(args: argparse.Namespace) -> int:
    from draledger.core import crds

    sys.stdout.write(crds.crd_yaml())
    return 0


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from draledger.operator import config, logs, running

    settings = config.from_args(args)
    logs.configure(settings.log_format, settings.log_level)
    asyncio.run(running.run_operator(settings))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="draledger",
        description="Node-allocatable accounting for Kubernetes DRA: one NodeAllocatableLedger per node.",
    )
    parser.add_argument("--version", action="version", version=f"draledger {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    audit = commands.add_parser(
        "audit",
        help="compute the ledgers of a cluster dump offline (no cluster, no writes)",
        description="Compute one NodeAllocatableLedger per Node from `kubectl get nodes,pods,resourceslices,"
        "resourceclaims -A -o json` output.",
    )
    audit.add_argument(
        "-f",
        "--filename",
        action="append",
        required=True,
        metavar="DUMP",
        help="a JSON or YAML kind: List file, or - for standard input (repeatable)",
    )
    audit.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    audit.add_argument("--numa", action="store_true", help="table: add one row per NUMA zone")
    audit.add_argument(
        "--numa-attribute",
        action="append",
        metavar="NAME",
        help="device attribute naming the NUMA zone, in order of preference (repeatable; "
        "replaces the default list)",
    )
    audit.add_argument("--svg", metavar="FILE", help="also draw the ledgers as an SVG picture into FILE")
    audit.set_defaults(func=_audit)

    for name, verb in (("freeze", "keep new claim pods gated on"), ("resume", "release new claim pods again on")):
        sub = commands.add_parser(name, help=f"{verb} nodes (spec.frozen of their ledgers); bound pods are untouched")
        which = sub.add_mutually_exclusive_group(required=True)
        which.add_argument("--node", action="append", default=[], metavar="NODE", help="a node (repeatable)")
        which.add_argument("--all", action="store_true",
                           help="every ledger" + ("" if name == "freeze" else " that is frozen"))
        if name == "freeze":
            sub.add_argument("--reason", default="", help="why (written to spec.reason; shown in its events)")
        else:
            sub.add_argument("--since-export", default="", metavar="FILE",
                             help="resume only nodes whose mappingVersion moved past the one in this export "
                             "(`draledger export --from-cluster` of this cluster); exit 1 while any stays frozen")
        _connection(sub)
        sub.set_defaults(func=_cluster)

    export = commands.add_parser("export", help="write every ledger, with its versions, to a file")
    export.add_argument("--from-cluster", action="store_true", help="read the ledgers from the cluster")
    export.add_argument("-f", "--filename", action="append", metavar="DUMP", help="compute them from a dump instead")
    export.add_argument("--output-file", "--to", default="-", metavar="FILE", help="where to write (default: stdout)")
    export.add_argument("-o", "--output", choices=("json", "yaml"), default="yaml")
    _connection(export)
    export.set_defaults(func=_export)

    report = commands.add_parser("report", help="draw the live cluster's ledgers as an SVG picture")
    report.add_argument("--svg", required=True, metavar="FILE")
    _connection(report)
    report.set_defaults(func=_cluster)

    run = commands.add_parser(
        "run",
        help="run the operator: keep one NodeAllocatableLedger per node current",
        description="Run the operator against the cluster (in-cluster config, KUBECONFIG, "
        "or --server). Every flag also reads a DRALEDGER_* environment variable.",
    )
    from draledger.operator.config import add_arguments

    add_arguments(run)
    run.set_defaults(func=_run)

    crd = commands.add_parser("crd", help="print the NodeAllocatableLedger CustomResourceDefinition")
    crd.set_defaults(func=_crd)

    for plugin in PLUGINS:  # sub-commands that live above this layer (the demo) or beside it (metadata)
        importlib.import_module(plugin).add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        code = args.func(args)
        sys.stdout.flush()
    except BrokenPipeError:  # `draledger audit ... | head` is not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)


if __name__ == "__main__":
    main()
