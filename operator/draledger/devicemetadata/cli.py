"""`draledger metadata show|validate`: inspect DRA device metadata files from a shell.

Rules: exit 0 when the metadata is complete and valid, 1 when it is missing or invalid (the message
names the path, the problem and, for a missing file, the possible causes), 2 for usage errors;
results go to stdout, problems to stderr. `-o json` prints the merged requests with their devices
and typed attributes. This module must never write files or talk to the Kubernetes API.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from draledger.devicemetadata import model
from draledger.devicemetadata.codec import split_stream
from draledger.devicemetadata.errors import MetadataError, MetadataMissingError
from draledger.devicemetadata.model import ClaimMetadata, DeviceMetadata
from draledger.devicemetadata.reading import ClaimSelector, read_metadata, read_metadata_file

EXIT_OK, EXIT_PROBLEM, EXIT_USAGE = 0, 1, 2
EXIT_CODES = """exit codes:
  0  the metadata is complete and valid
  1  it is missing or invalid
  2  usage error"""


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `metadata` with its `show` and `validate` subcommands (each sets `func`)."""
    parser = subparsers.add_parser(
        "metadata",
        help="read DRA device metadata files (KEP-5304) inside a container",
        description="Read the DRA device metadata files that DRA drivers mount into containers.",
        epilog=EXIT_CODES,
    )
    commands = parser.add_subparsers(dest="metadata_command", metavar="{show,validate}", required=True)

    show = commands.add_parser(
        "show",
        help="show the merged metadata of a claim (and request)",
        description="Show the merged device metadata of a claim (and request) mounted in this container: "
        "exit 0 when complete and valid, 1 when missing or invalid.",
        epilog=EXIT_CODES,
    )
    show.add_argument("--root", type=Path, default=None, help=f"metadata root (default {model.DEFAULT_ROOT})")
    which = show.add_mutually_exclusive_group(required=True)
    which.add_argument("--claim", metavar="NAME", help="a directly referenced ResourceClaim's name")
    which.add_argument("--template", metavar="NAME", help="the pod's claim name of a template claim")
    show.add_argument("--request", metavar="R", help="the (base) request name; default: every request")
    show.add_argument("-o", "--output", choices=("table", "json"), default="table",
                      help="table for people; json: the merged requests with their devices and typed attributes")
    show.add_argument("--max-bytes", type=int, default=model.DEFAULT_MAX_BYTES, help=argparse.SUPPRESS)
    show.set_defaults(func=run_show)

    validate = commands.add_parser(
        "validate",
        help="check one metadata file (exit 0 valid, 1 not)",
        description="Check one DRA device metadata file: exit 0 when it is valid, 1 when it is not.",
        epilog=EXIT_CODES,
    )
    validate.add_argument("file", type=Path, help="the metadata file to check")
    validate.add_argument("--max-bytes", type=int, default=model.DEFAULT_MAX_BYTES, help=argparse.SUPPRESS)
    validate.set_defaults(func=run_validate)


def run_show(args: argparse.Namespace) -> int:
    try:
        selector = ClaimSelector(
            name=args.claim if args.claim is not None else args.template,
            request=args.request,
            template=args.claim is None,
            root=args.root,
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        md = read_metadata(selector, max_bytes=args.max_bytes)
    except MetadataError as exc:
        _report(exc)
        return EXIT_PROBLEM
    if args.output == "json":
        print(json.dumps(md.to_json(), indent=2, ensure_ascii=False))
    else:
        print(render_table(md))
    return EXIT_OK


def run_validate(args: argparse.Namespace) -> int:
    path: Path = args.file
    try:
        md = read_metadata_file(path, max_bytes=args.max_bytes)
        versions = [str(obj.get("apiVersion")) for obj in split_stream(path.read_bytes(), path)]
    except MetadataError as exc:
        _report(exc)
        return EXIT_PROBLEM
    print(f"valid: {path}")
    print(f"  stream: {', '.join(versions)}; using {md.api_version}")
    print(f"  {_summary(md)}")
    return EXIT_OK


def _summary(md: DeviceMetadata) -> str:
    c = md.claim
    pod = f" podClaimName={md.pod_claim_name}" if md.pod_claim_name else ""
    devices = sum(len(r.devices) for r in md.requests)
    requests = ", ".join(r.name for r in md.requests)
    state = "ready" if md.ready else "deferred (generation 1, no attributes yet)"
    return (
        f"claim {c.namespace}/{c.name} uid={c.uid}{pod} generation={md.generation}; "
        f"requests: {requests}; {devices} device(s); {state}"
    )


def _report(exc: MetadataError) -> None:
    kind = "missing" if isinstance(exc, MetadataMissingError) else "invalid"
    print(f"error: metadata {kind}: {exc}", file=sys.stderr)


def render_table(md: ClaimMetadata) -> str:
    c = md.claim
    lines = [
        f"claim: {c.namespace}/{c.name}  uid={c.uid}  generation={md.generation}  "
        f"{'ready' if md.ready else 'deferred: not ready yet'}"
    ]
    if md.pod_claim_name:
        lines.append(f"podClaimName: {md.pod_claim_name}")
    rows = [("REQUEST", "DRIVER", "POOL", "DEVICE", "ATTRIBUTE", "TYPE", "VALUE")]
    for request in md.requests:
        for d in request.devices:
            cells: list[tuple[str, str, str]] = [(n, a.kind, _show(a.value)) for n, a in d.attributes.items()]
            if d.network_data is not None:
                net = d.network_data
                cells.append(("networkData.interfaceName", "network", net.interface_name))
                cells.append(("networkData.ips", "network", ",".join(net.ips)))
                cells.append(("networkData.hardwareAddress", "network", net.hardware_address))
            for attr, kind, value in cells or [("-", "-", "-")]:
                rows.append((request.name, d.driver, d.pool, d.name, attr, kind, value))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join(lines)


def _show(value: model.AttributeValue) -> str:
    if isinstance(value, tuple):
        return json.dumps(list(value), ensure_ascii=False)
    return value if isinstance(value, str) else json.dumps(value)


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point, same syntax as `draledger metadata ...`."""
    parser = argparse.ArgumentParser(prog="draledger")
    add_parser(parser.add_subparsers(dest="command", required=True))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors and 0 on --help
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        result: int = args.func(args)
        sys.stdout.flush()
    except BrokenPipeError:  # `... | head` is not an error; keep Python from complaining at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        result = EXIT_OK
    return result


if __name__ == "__main__":
    sys.exit(main())
