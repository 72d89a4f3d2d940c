"""Where a profiled operator's CPU went: the stacks py-spy sampled (``bench_gate.py --profile DIR`` writes them, one
file per ``draledger run`` process) summed into the operator's parts, as shares of the samples it was busy in.

    python benchmarks/profile_parts.py DIR/draledger-*.txt

Rules:
1. The files are py-spy's raw format: one line per distinct stack, ``frame;frame;...;frame COUNT``, the root first.
2. A sample goes to the first part of ``PARTS`` with a marker in any of its frames, so the order matters: the
   operator's own handler sits under Kopf's worker, and a request's answer under the writer or the releaser that
   awaited it. A sample no marker matches goes to "the event loop and the rest".
3. A sample in the event loop's ``select`` is waiting, not work (py-spy's ``--nonblocking`` mode cannot always tell
   an idle thread): counted apart, never in the shares.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

WAITING = "waiting in the event loop's select"
REST = "the event loop and the rest (task scheduling, stream bytes decoded outside the watcher)"
PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (  # rule 2's order
    ("the start (imports, priming, the rebuild)",
     ("<module> (draledger/operator/running.py", "_find_and_load", "prime (")),
    ("the operator's handler of each event (Runtime.event: the state, its indexes)", ("translate.<locals>.handler",)),
    ("admission (the webhook gate)", ("RequestHandler._handle_request",)),
    ("Kopf's handling of each event, less the operator's handler", ("worker (kopf/_core/reactor/queueing.py",)),
    ("the watch streams: Kopf's watcher, the stream hooks, JSON decoding",
     ("watcher (kopf/_core/reactor/queueing.py",)),
    ("the ledger writer (plan, compute, patch)", ("Writer.",)),
    ("the releaser (passes, decisions, patches)", ("Releaser.",)),
    ("Events", ("Poster.",)),
    ("sockets and TLS (bytes read)", ("_read_ready", "SSLProtocol")),
    (WAITING, ("EpollSelector.select",)),
)


def part_of(frames: Iterable[str]) -> str:
    """Rule 2: the part a stack's samples go to."""
    stack = tuple(frames)
    for name, markers in PARTS:
        if any(marker in frame for frame in stack for marker in markers):
            return name
    return REST


def tally(lines: Iterable[str]) -> Counter[str]:
    """Samples per part, from raw lines (rule 1); a line that is not ``STACK COUNT`` is skipped."""
    out: Counter[str] = Counter()
    for line in lines:
        stack, _, count = line.rstrip().rpartition(" ")
        if stack and count.isdigit():
            out[part_of(stack.split(";"))] += int(count)
    return out


def shares(parts: Counter[str]) -> list[tuple[str, float]]:
    """Each part's share of the busy samples (rule 3), largest first."""
    busy = sum(count for name, count in parts.items() if name != WAITING)
    return [(name, count / busy) for name, count in parts.most_common() if name != WAITING and busy]


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: profile_parts.py FILE...  (py-spy raw files: bench_gate.py --profile DIR)", file=sys.stderr)
        return 2
    parts: Counter[str] = Counter()
    for name in argv:
        parts += tally(Path(name).read_text(encoding="utf-8", errors="replace").splitlines())
    busy = sum(count for name, count in parts.items() if name != WAITING)
    print(f"{busy} busy samples, {parts[WAITING]} waiting in select (not counted), {len(argv)} file(s)")
    print("| part | share of the operator's busy samples |\n|---|---:|")
    for name, share in shares(parts):
        print(f"| {name} | {share * 100:.1f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
