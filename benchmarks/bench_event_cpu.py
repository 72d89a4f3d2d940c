"""Steady-state operator CPU per pod event, one or more trees against the empty Kopf operator, alternated.

Rules (docs/style.md, "Tooling"):
1. One emulator (this process) holds a seeded cluster (``bench_scale.load``: realistic pods, one 112-device
   ResourceSlice per node); each round starts the empty Kopf operator (``bench_scale.py kopf-floor``) and
   then every variant, one process at a time, and paces ``--events`` pod resizes at ``--rate`` through it.
2. A variant is ``NAME=PYTHONPATH`` (an empty path: this tree), so a change is measured against the code
   before it in the same run: ``git worktree add /tmp/before HEAD~1`` and ``--variant before=/tmp/before/operator``.
3. The figure is the child's CPU (``/proc``: user + system) over the paced window, per event, and its ratio
   to the floor's in the same round; the report gives each round and the median ratio. Nothing asserts.

Usage: ``.venv/bin/python benchmarks/bench_event_cpu.py --nodes 500 --rounds 5 --variant after=
[--variant before=/tmp/before/operator]`` (about 1.5 minutes a round and variant on 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import tempfile
from pathlib import Path

import bench_operator as bench
import bench_scale as scale
from draledger.demo.emulator import ClusterEmulator, serve_emulator


async def floor_round(emulator: ClusterEmulator, run: scale.Run, watch: bench.LedgerWatch, lo: int,
                      args: argparse.Namespace, url: str) -> float:
    child = await scale.spawn([sys.executable, str(scale.HERE), "kopf-floor", url, str(run.objects)])
    try:
        await scale.until(lambda: child.last("listed"), "the floor's initial list", child)
        await scale.settled(child)  # the listing's tail
        done = (child.last("events") or (0, 0))[1]
        cpu = child.cpu()
        await scale.paced(emulator, run, watch, lo, lo + args.events, args.rate)
        await scale.until(lambda: (child.last("events") or (0, 0))[1] >= done + args.events, "the floor's events",
                          child)
        return float(child.cpu() - cpu) / args.events
    finally:
        await child.stop()


async def variant_round(emulator: ClusterEmulator, run: scale.Run, watch: bench.LedgerWatch, lo: int,
                        args: argparse.Namespace, url: str, path: str, log: Path) -> dict[str, float]:
    before = scale.versions(emulator, run.nodes)
    child = await scale.spawn(scale.draledger_argv(url), {"PYTHONPATH": path} if path else None, log)
    try:
        await scale.until(scale.ledgers_done(emulator, run.nodes, before), "every ledger Ready", child, period=0.25)
        await scale.until(lambda: watch.baseline(run.nodes), "the baseline", child)
        await scale.settled(child)  # the rebuild's writes and their echoes
        watch.baseline(run.nodes)
        cpu = child.cpu()
        sent = await scale.paced(emulator, run, watch, lo, lo + args.events, args.rate)
        await scale.until(lambda: all(i in watch.written for i in range(lo, lo + args.events)), "every write",
                          child)
        latencies = sorted(watch.written[i] - sent[i] for i in range(lo, lo + args.events))
        return {"cpu": (child.cpu() - cpu) / args.events, "p99": bench._pct(latencies, 0.99)}
    finally:
        await child.stop()


async def main(args: argparse.Namespace) -> None:
    variants = [tuple(v.split("=", 1)) for v in args.variant]
    scale.SnapshotLists()
    runs = args.rounds * (1 + len(variants))
    rows: list[dict[str, float]] = []
    logs = Path(tempfile.mkdtemp(prefix="bench-event-cpu-"))
    async with serve_emulator(emulator=ClusterEmulator(journal_limit=10**7)) as (emulator, url):
        run = scale.load(emulator, args.seed, args.nodes, args.pods_per_node, args.events * runs + 1)
        gc.collect()
        gc.freeze()
        watch = bench.LedgerWatch(emulator, asyncio.get_running_loop().time)
        drainer = asyncio.create_task(bench.RequestLog(emulator).run())  # kmock matches against its whole log
        lo = 0
        for index in range(args.rounds):
            row = {"floor": await floor_round(emulator, run, watch, lo, args, url)}
            lo += args.events
            for name, path in variants:
                result = await variant_round(emulator, run, watch, lo, args, url, path, logs / f"{name}-{index}.log")
                row[name], row[f"{name} p99"] = result["cpu"], result["p99"]
                lo += args.events
            print(json.dumps({k: round(v * 1e6) if "p99" not in k else round(v * 1e3) for k, v in row.items()}),
                  flush=True)
            rows.append(row)
        drainer.cancel()
    print(f"\n{args.nodes} nodes, {args.pods_per_node} pods each, {args.events} events at {args.rate:g}/s per run")
    print("| round | floor µs | " + " | ".join(f"{name} µs (× floor)" for name, _ in variants) + " |")
    print("|---|---:|" + "---:|" * len(variants))
    for index, row in enumerate(rows, 1):
        cells = [f"{row[name] * 1e6:,.0f} ({row[name] / row['floor']:.2f})" for name, _ in variants]
        print(f"| {index} | {row['floor'] * 1e6:,.0f} | " + " | ".join(cells) + " |")
    medians = [f"{statistics.median(r[name] / r['floor'] for r in rows):.2f}" for name, _ in variants]
    print("| **median ratio** | | " + " | ".join(medians) + " |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods-per-node", type=int, default=30)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variant", action="append", default=[], help="NAME=PYTHONPATH (empty: this tree)")
    arguments = parser.parse_args()
    if not arguments.variant:
        arguments.variant = ["dra-ledger="]
    bench.quiet_logs()
    asyncio.run(main(arguments))
