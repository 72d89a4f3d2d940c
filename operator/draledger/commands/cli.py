"""The ``draledger`` command (also ``kubectl draledger``): one sub-command per job, each a thin call into its
module.

Rules: every command ends with the exit codes of commands/errors.py, which every ``--help`` lists; whatever
goes wrong is one line on stderr (a traceback only with DRALEDGER_DEBUG=1), a usage error too; every flag says
what it does and its default. The options that are configuration (a flag with a ``DRALEDGER_*`` variable) are
declared once, in operator/config.py, and read only for the command that runs (operator/options.py).
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from draledger.commands.errors import EXIT_CODES, UNUSABLE, report
from draledger.operator.config import add_arguments
from draledger.operator.options import resolve

# Each names a module with ``add_parser(commands)``. The demo sits above the commands (it needs the `demo` extra's
# packages only when it runs); device metadata is an independent library with its own small command line.
PLUGINS = ("draledger.demo.cli", "draledger.devicemetadata.cli")
PROG, PLUGIN_PROG = "draledger", "kubectl draledger"  # kubectl runs `kubectl-draledger` for `kubectl draledger`


class Parser(argparse.ArgumentParser):
    """A usage error is one line (exit 2): the flag and its value, as a variable's error names the variable and
    its value (``--metrics-port '99999': must be ...``), or else the command; then the way to the help."""

    def error(self, message: str) -> NoReturn:
        text = " ".join(message.split())
        flag = re.fullmatch(r"argument (\S+?): ('.*)", text) or re.fullmatch(r"argument (\S+?): (.*)", text)
        if flag is not None and flag[1].startswith("-"):
            text = f"{flag[1]} {flag[2]}" if flag[2].startswith("'") else f"{flag[1]}: {flag[2]}"
        elif flag is not None:  # a positional argument: the sub-command, a file
            text = f"{self.prog}: {flag[2]}"
        else:
            text = f"{self.prog}: {text}"
        self.exit(UNUSABLE, f"error: {text} (see {self.prog} --help)\n")


class VersionAction(argparse.Action):
    """``--version``: the version, the commit and Python (operator/builds.py), looked up only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the version, the commit it was built from and Python's version, and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from draledger.operator import builds

        sys.stdout.write(builds.describe() + "\n")
        parser.exit()


class HelpFormatter(argparse.HelpFormatter):
    """Paragraphs are wrapped and indented lines kept as written (the exit codes); every default is shown."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        fill = super()._fill_text
        return "\n".join(
            indent + line if line.startswith(" ") or not line else fill(line, width, indent)
            for line in text.splitlines()
        )

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "(default" in text or not has_default(action):
            return text
        return f"{text} (default: %(default)s)"


def has_default(action: argparse.Action) -> bool:
    """Whether ``action`` is a flag with a value when it is not given (0 is one; None, "" and a plain switch's
    False are not); a --x/--no-x switch always has one."""
    if not action.option_strings or action.default is argparse.SUPPRESS:
        return False
    if isinstance(action, argparse.BooleanOptionalAction):
        return True
    return action.default is not None and action.default is not False and action.default not in ("", [], ())


def _audit(args: argparse.Namespace) -> int:
    from draledger.commands import audit

    if isinstance(sys.stdout, io.TextIOWrapper):  # a name that is no valid Unicode (a lone surrogate) still prints
        sys.stdout.reconfigure(errors="backslashreplace")
    return audit.run(
        args.filename, args.output, args.numa, args.numa_attribute, svg=args.svg, fail_on=args.fail_on,
        release=None if args.release == "auto" else args.release, check_releases=args.check_releases,
    )


def _cluster(args: argparse.Namespace) -> int:
    from draledger.commands import clusterctl

    return clusterctl.run(args)


def _export(args: argparse.Namespace) -> int:
    if args.from_cluster:
        return _cluster(args)
    from draledger.commands import audit, clusterctl
    from draledger.commands.dumps import load_paths, require_nodes
    from draledger.commands.errors import CommandError, writable
    from draledger.commands.progress import Progress
    from draledger.core.accounting.ledger import Flags
    from draledger.operator.clocks import now_rfc3339

    if not args.filename:
        raise CommandError("export: needs --from-cluster or -f DUMP", UNUSABLE)
    writable(args.output_file)
    loaded = load_paths(args.filename, Progress(sys.stderr))
    require_nodes(loaded, args.filename)
    now = now_rfc3339()
    items = audit.ledgers_of(loaded, Flags(), now)
    document = clusterctl.export_document(items, clusterctl.dump_identity(args.filename, now))
    clusterctl.write_document(document, args.output_file, args.output)
    return 0


def _crd(args: argparse.Namespace) -> int:
    from draledger.core import crds

    sys.stdout.write(crds.crd_yaml())
    return 0


def _completion(args: argparse.Namespace) -> int:
    from draledger.commands import completion

    sys.stdout.write(completion.script(args.shell, build_parser(PROG)))
    return 0


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from draledger.operator import config, logs, running

    settings = config.from_args(args)
    logs.configure(settings.log_format, settings.log_level)
    asyncio.run(running.run_operator(settings))
    return 0


def _fail_on(text: str) -> tuple[str, ...]:
    from draledger.commands.audit import fail_on_phases

    try:
        return fail_on_phases(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _add_audit(commands: argparse._SubParsersAction[Parser]) -> None:
    audit = commands.add_parser(
        "audit",
        help="compute the ledgers of a cluster dump offline (no cluster, no writes)",
        description="Compute one NodeAllocatableLedger per Node from `kubectl get nodes,pods,resourceslices,"
        "resourceclaims -A -o json` output. Nothing is installed and nothing is written to the cluster.",
    )
    audit.add_argument(
        "-f",
        "--filename",
        action="append",
        required=True,
        metavar="DUMP",
        help="a JSON or YAML kind: List file, or - for standard input (repeatable; later files win)",
    )
    audit.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table",
                       help="table: figures for people; json or yaml: the ledgers with exact figures")
    audit.add_argument("--numa", action="store_true", help="table: add one row per NUMA zone")
    audit.add_argument("--svg", metavar="FILE", help="also draw the ledgers as an SVG picture into FILE")
    audit.add_argument(
        "--fail-on",
        type=_fail_on,
        default=(),
        metavar="PHASE[,PHASE]",
        help="exit 1 when any node's phase is one of these (Rebuilding, Frozen, Stale, Overcommitted, Ready; "
        "none: never) (default: none, the ledgers are the answer; a pipeline asks for Overcommitted, and "
        "Stale only for a dump known complete)",
    )
    audit.add_argument(
        "--check-releases",
        action="store_true",
        help="also check every pod the gate released against the ledgers the dump holds (dump nal too): "
        "one line per released pod on standard error, exit 1 when one does not hold",
    )
    add_arguments(audit, "audit")
    audit.set_defaults(func=_audit)


def _add_freeze_and_resume(commands: argparse._SubParsersAction[Parser]) -> None:
    for name, verb in (("freeze", "keep new claim pods gated on"), ("resume", "release new claim pods again on")):
        sub = commands.add_parser(
            name,
            help=f"{verb} nodes (spec.frozen of their ledgers); bound pods are untouched",
            description=f"{verb.capitalize()} the named nodes (--node) or every "
            + ("node" if name == "freeze" else "frozen node")
            + " (--all), by a merge patch of spec.frozen of their NodeAllocatableLedgers; pods already bound "
            "are never touched.",
        )
        which = sub.add_mutually_exclusive_group(required=True)
        which.add_argument("--node", action="append", default=[], metavar="NODE", help="a node (repeatable)")
        which.add_argument("--all", action="store_true",
                           help="every ledger" + ("" if name == "freeze" else " that is frozen"))
        if name == "freeze":
            sub.add_argument("--reason", help="why (written to spec.reason; shown in its events; '' removes it) "
                             "(default: the reason the ledger already has, if any)")
        else:
            sub.add_argument("--since-export", default="", metavar="FILE",
                             help="resume only nodes whose mappingVersion moved past the one in this export "
                             "(`draledger export --from-cluster` of this cluster); exit 1 while any stays frozen")
        add_arguments(sub, name)
        sub.set_defaults(func=_cluster)


def _add_export_and_report(commands: argparse._SubParsersAction[Parser]) -> None:
    export = commands.add_parser(
        "export",
        help="write every ledger, with its versions, to a file",
        description="Write every NodeAllocatableLedger of the cluster (--from-cluster), or computed from a dump "
        "(-f), as a List with a draledgerExport block naming where it comes from: the file `resume "
        "--since-export` reads (json or yaml). -o table prints one line per ledger instead, for people.",
    )
    export.add_argument("--from-cluster", action="store_true", help="read the ledgers from the cluster")
    export.add_argument("-f", "--filename", action="append", metavar="DUMP",
                        help="compute them from a dump instead (repeatable)")
    export.add_argument("--output-file", "--to", default="-", metavar="FILE",
                        help="where to write (default: -, standard output)")
    export.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="yaml",
                        help="json or yaml: the export; table: one line per exported ledger, for people")
    add_arguments(export, "export")
    export.set_defaults(func=_export)

    report = commands.add_parser(
        "report",
        help="draw the live cluster's ledgers as an SVG picture",
        description="Read every NodeAllocatableLedger of the cluster and draw them as one SVG picture "
        "(the offline twin: `draledger audit -f DUMP --svg FILE`).",
    )
    report.add_argument("--svg", required=True, metavar="FILE", help="the SVG file to write")
    add_arguments(report, "report")
    report.set_defaults(func=_cluster)


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    parser = Parser(
        prog=prog,
        description="Node-allocatable accounting for Kubernetes DRA: one NodeAllocatableLedger per node.",
        epilog=EXIT_CODES,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action=VersionAction)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_audit(commands)
    _add_freeze_and_resume(commands)
    _add_export_and_report(commands)

    run = commands.add_parser(
        "run",
        help="run the operator: keep one NodeAllocatableLedger per node current",
        description="Run the operator against the cluster (in-cluster config, KUBECONFIG, "
        "or --server). Every flag also reads a DRALEDGER_* environment variable, named in its help.",
    )
    add_arguments(run)
    run.set_defaults(func=_run)

    crd = commands.add_parser(
        "crd",
        help="print the NodeAllocatableLedger CustomResourceDefinition",
        description="Print the NodeAllocatableLedger CustomResourceDefinition as YAML, for `kubectl apply "
        "--server-side -f -` (a client-side apply keeps a copy of the whole CRD in an annotation, limited to "
        "256 KiB, which the generated schema may outgrow).",
    )
    crd.set_defaults(func=_crd)

    completion = commands.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description="Print a completion script for draledger (and kubectl-draledger), generated from this "
        "command line. bash: `source <(draledger completion bash)`, or save it in "
        "/etc/bash_completion.d/draledger; zsh: `source <(draledger completion zsh)`; fish: `draledger "
        "completion fish > ~/.config/fish/completions/draledger.fish`.",
    )
    completion.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell to complete for")
    completion.set_defaults(func=_completion)

    for plugin in PLUGINS:  # sub-commands that live above this layer (the demo) or beside it (metadata)
        importlib.import_module(plugin).add_parser(commands)
    _same_help(parser)
    return parser


def _same_help(parser: argparse.ArgumentParser) -> None:
    """Every sub-command, the plugins' too, shows its defaults and the exit codes."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.formatter_class = HelpFormatter
                sub.epilog = sub.epilog or EXIT_CODES
                _same_help(sub)


def program_name(argv0: str) -> str:
    """``kubectl draledger`` when run as the kubectl plugin ``kubectl-draledger``, else ``draledger``."""
    return PLUGIN_PROG if os.path.basename(argv0).startswith("kubectl-draledger") else PROG


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser(program_name(sys.argv[0])).parse_args(argv)
    try:
        resolve(args)  # the variables of this command's options, and of no other command's
        code = args.func(args)
        sys.stdout.flush()
    except BrokenPipeError:  # `draledger audit ... | head` is not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    except KeyboardInterrupt:
        code = 130
    except Exception as error:  # rule: one line, whatever it is (commands/errors.py)
        code = report(error, sys.stderr)
    sys.exit(code)


if __name__ == "__main__":
    main()
