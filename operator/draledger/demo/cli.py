"""``draledger demo``'s command line, registered by the commands' parser as a plugin.

The demo needs the ``demo`` extra (the emulator's KMock and jsonpatch); this module imports neither, so
``draledger --help`` works on the operator's image, and ``draledger demo`` there says what to install.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from draledger.operator.config import PORT

EXTRA_PACKAGES = ("kmock", "jsonpatch")


def add_parser(commands: Any) -> None:
    demo = commands.add_parser(
        "demo",
        help="see it work, no cluster needed: an embedded API, a demo cluster, the real operator, a short story",
        description="Start an embedded Kubernetes API with a 3-node DRA cluster, run the real operator against it "
        "and play a short story (rebuild, gates, a vanishing ResourceSlice, a freeze); then print the ledgers. "
        "Needs the demo extra: pip install 'dra-ledger[demo]'.",
    )
    demo.add_argument("--serve", action="store_true",
                      help="keep the cluster up afterwards and write a kubeconfig for kubectl (Ctrl-C stops)")
    demo.add_argument("--fast", action="store_true", help="no pauses between the steps")
    demo.add_argument("--kubeconfig", default="./draledger-demo.kubeconfig", metavar="PATH",
                      help="where --serve writes the kubeconfig (default: ./draledger-demo.kubeconfig)")
    demo.add_argument("--port", type=PORT.flag_type(), default=0, metavar="PORT",
                      help="port of the embedded API on 127.0.0.1 (0: pick one)")
    demo.add_argument("--svg", metavar="FILE", help="also draw the final ledgers as an SVG picture into FILE")
    demo.add_argument("--log-file", metavar="FILE", help="the operator's logs (default: a temporary file)")
    demo.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        from draledger.demo import (
            emulator,  # noqa: F401 - fails here, before any output, without the extra
            run_demo,
        )
    except ModuleNotFoundError as error:
        if error.name not in EXTRA_PACKAGES:
            raise
        sys.stderr.write(f"error: draledger demo needs the Python package {error.name!r}, "
                         "from the demo extra: pip install 'dra-ledger[demo]'\n")
        return 2
    return run_demo(args.serve, args.fast, args.kubeconfig, sys.stdout, port=args.port, svg=args.svg,
                    log_file=args.log_file)
