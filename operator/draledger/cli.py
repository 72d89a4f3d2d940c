"""The ``draledger`` command: one sub-command per job, each a thin call into its module."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from draledger import __version__


def _audit(args: argparse.Namespace) -> int:
    from draledger import audit

    return audit.run(args.filename, args.output, args.numa, args.numa_attribute or ())


def _crd(args: argparse.Namespace) -> int:
    from draledger import crds

    sys.stdout.write(crds.crd_yaml())
    return 0


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from draledger import config, logs, running

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
    audit.set_defaults(func=_audit)

    run = commands.add_parser(
        "run",
        help="run the operator: keep one NodeAllocatableLedger per node current",
        description="Run the operator against the cluster (in-cluster config, KUBECONFIG, "
        "or --server). Every flag also reads a DRALEDGER_* environment variable.",
    )
    from draledger.config import add_arguments

    add_arguments(run)
    run.set_defaults(func=_run)

    crd = commands.add_parser("crd", help="print the NodeAllocatableLedger CustomResourceDefinition")
    crd.set_defaults(func=_crd)

    try:
        from draledger.devicemetadata.cli import add_parser as add_metadata
    except ImportError:  # pragma: no cover - only while the package is being built
        pass
    else:
        add_metadata(commands)
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
