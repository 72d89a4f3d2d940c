"""What the gate costs a claim pod: time to bind and the scheduler's binding throughput, against the real
kube-scheduler, with no dra-ledger, with the MutatingAdmissionPolicy gate and with the webhook gate, and the floor
under both: the policy's gate released by a process that does nothing else.

Rules (docs/style.md, "Tooling"):
1. Real parts: etcd, kube-apiserver, kube-scheduler and kube-controller-manager of ``--release`` (tests/realcluster's
   launcher; built once and cached), the operator's manifests and ServiceAccount, and ``draledger run`` as a process
   of its own. Nodes are kubelet-less, with DRA devices mapped to node cpu and unmapped ones (gate_plan.py).
2. Seeded: ``--seed`` makes the burst (``--pods`` claim pods of four kinds, template claims, a mix that fits and
   that must wait) and the nodes' devices (``--nodes``).
3. The baselines are measured in the same run: the four configurations are interleaved, round by round, each
   round in another order. "No dra-ledger" runs with no operator process at all, and every gate figure is
   against it. "The floor" runs the policy's gate with no operator process either, and gate_floor.py (started
   for the burst, stopped after it) removing the gate from every pod at once: dra-ledger's cost over it is its
   design's own. With ``--kopf-floor`` a fifth configuration, the Kopf floor: the same releaser handed its pods by
   a Kopf operator watching what dra-ledger watches (gate_floor.py rule 6), so that what Kopf's delivery costs
   and what dra-ledger costs beyond it are measured apart.
4. Then three disruptions, each during a burst gated by the policy: the operator restarted (SIGTERM, a new
   process, its rebuild), the leader killed (SIGKILL) under leader election with a warm standby, and the leader
   stopped (SIGTERM: it gives the Lease up). The lease settings default to the manifests' (15 s, 10 s, 2 s).
5. Nothing asserts a time. The run fails (exit 1) only if a burst did not complete: a pod created with the gate
   never released, or fewer pods bound than can be, by a generous deadline (gate_burst.py rule 3).

Usage: ``.venv/bin/python benchmarks/bench_gate.py [--nodes 100] [--pods 300] [--rounds 3] [--kopf-floor]
[--json FILE]``
(10 minutes at that size on a busy 2-core machine, once the release is built). docs/performance.md has the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # the helpers beside this file; tests.realcluster from the root

import aiohttp  # noqa: E402

import gate_figures as figures  # noqa: E402
from gate_burst import CONCURRENCY, Admin, Releaser, clean, run_burst, settled  # noqa: E402
from gate_cluster import NAMESPACES, Cluster, build, cpu_seconds, dry_run_gates, start_plane, stop  # noqa: E402
from gate_plan import plan  # noqa: E402
from gate_report import report  # noqa: E402
from tests.realcluster import building  # noqa: E402
from tests.realcluster.cluster import wait_until  # noqa: E402
from tests.realcluster.launcher import ControlPlane  # noqa: E402
from tests.realcluster.operating import GATE, OperatorProcess  # noqa: E402
from tests.realcluster.releases import RELEASES  # noqa: E402

READY_WITHIN = 600.0
PY_SPY = shutil.which("py-spy")  # --profile only


def order(kopf_floor: bool) -> tuple[str, ...]:
    """The configurations interleaved (rule 3), the Kopf floor only when asked for."""
    return tuple(c for c in figures.CONFIGURATIONS if kopf_floor or c != figures.KOPF_FLOOR)


def metrics_port(process: OperatorProcess) -> int:
    return int(process.args[process.args.index("--metrics-port") + 1])


async def until_ready(process: OperatorProcess, role: str = "ready") -> float:
    """Poll ``/readyz`` every 50 ms until its body starts with ``role``; the moment it did."""
    url = f"http://127.0.0.1:{metrics_port(process)}/readyz"
    deadline = time.monotonic() + READY_WITHIN
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if not process.running():
                raise RuntimeError(f"operator {process.log.stem} exited; log {process.log}:\n{process.tail(30)}")
            try:
                async with session.get(url, timeout=aiohttp.ClientTimeout(total=2)) as answer:
                    if answer.status == 200 and (await answer.text()).strip().startswith(role):
                        return time.monotonic()
            except (aiohttp.ClientError, TimeoutError):
                pass
            await asyncio.sleep(0.05)
    raise TimeoutError(f"operator {process.log.stem} was not {role!r} within {READY_WITHIN:.0f} s")


def sample(process: OperatorProcess, directory: Path) -> None:
    """--profile: py-spy samples the process's stacks into DIRECTORY/NAME.txt until it exits."""
    assert PY_SPY is not None
    with (directory / f"{process.log.stem}.log").open("wb") as log:
        subprocess.Popen([PY_SPY, "record", "--pid", str(process.pid), "--rate", "100", "--nonblocking", "--format",
                          "raw", "-o", str(directory / f"{process.log.stem}.txt")],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)


class Operators:
    """The operator processes of the run, by role, the floor's releaser, and the CPU they have used, the stopped
    ones' included."""

    def __init__(self, cluster: Cluster, profile: Path | None = None) -> None:
        self.cluster = cluster
        self.profile = profile  # --profile: py-spy samples each operator process into this directory
        self.running: dict[str, OperatorProcess] = {}
        self.count = 0
        self.spent = 0.0  # CPU seconds of the processes stopped so far, read as their signal went
        self.releaser: Releaser | None = None
        self.releaser_spent = 0.0
        self.released: collections.Counter[str] = collections.Counter()  # what the releasers did, summed

    def cpu(self) -> dict[str, float]:
        """Every control-plane component's CPU seconds, "draledger": every operator process's together, and
        "releaser": the floor's releasers'."""
        out = {name: cpu_seconds(pid) for name, pid in self.cluster.plane.pids().items()}
        out["draledger"] = self.spent + sum(cpu_seconds(p.pid) for p in self.running.values() if p.running())
        out["releaser"] = self.releaser_spent + (cpu_seconds(self.releaser.process.pid) if self.releaser else 0.0)
        return out

    async def start_releaser(self, namespace: str, *mode: str) -> None:
        self.releaser = await Releaser.start(self.cluster, namespace, *mode)

    async def stop_releaser(self) -> None:
        if self.releaser is not None:
            releaser, self.releaser = self.releaser, None
            self.releaser_spent += cpu_seconds(releaser.process.pid)  # read as it is told to stop, as for operators
            await releaser.stop()
            self.released.update(releaser.counts)

    async def start(self, role: str, *args: str, wait_for: str = "ready") -> OperatorProcess:
        self.count += 1
        process = self.cluster.operator(f"draledger-{self.count}", *args)
        self.running[role] = process.start()
        if self.profile is not None:
            sample(process, self.profile)
        await until_ready(process, wait_for)
        return process

    async def stop(self, role: str, signum: signal.Signals = signal.SIGTERM) -> float:
        """Stop the ``role`` process; the moment the signal went."""
        process = self.running.pop(role)
        self.spent += cpu_seconds(process.pid) if process.running() else 0.0
        sent = time.monotonic()
        await asyncio.to_thread(stop, process, signum)
        return sent

    async def stop_all(self) -> None:
        for role in list(self.running):
            await self.stop(role)


def election(args: argparse.Namespace) -> list[str]:
    return ["--leader-election", "--leader-election-lease-duration", f"{args.lease_duration}s",
            "--leader-election-renew-deadline", f"{args.renew_deadline}s",
            "--leader-election-retry-period", f"{args.retry_period}s"]


def step(message: str) -> None:
    print(f"[bench_gate {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


async def interleaved(cluster: Cluster, admin: Admin, operators: Operators, rounds: int,
                      configurations: tuple[str, ...]) -> list[figures.Burst]:
    """Rule 3: every configuration once a round, the order rotated each round."""
    bursts = []
    for round_ in range(1, rounds + 1):
        turn = (round_ - 1) % len(configurations)
        for config in configurations[turn:] + configurations[:turn]:
            if config == figures.UNGATED or config in figures.FLOORS:
                await operators.stop_all()
                if config in figures.FLOORS:
                    await operators.start_releaser(NAMESPACES[config],
                                                   *(["kopf"] if config == figures.KOPF_FLOOR else []))
            elif "draledger" not in operators.running:
                await operators.start("draledger", *cluster.webhook_args())
                await asyncio.to_thread(wait_until, lambda: dry_run_gates(cluster.plane, NAMESPACES["webhook"])
                                        == [GATE], within=60, what="the apiserver to reach the operator's webhook")
            await settled(operators.cpu)
            step(f"round {round_}: {config}")
            burst = await run_burst(cluster, admin, config, round_, NAMESPACES[config], operators.cpu)
            bursts.append(burst)
            await clean(admin, NAMESPACES[config], operators.cpu)
            await operators.stop_releaser()
    return bursts


async def disruptions(cluster: Cluster, admin: Admin, operators: Operators,
                      args: argparse.Namespace) -> dict[str, figures.Burst]:
    """Rule 4, each in a policy-gated burst, the disruption starting once a third of the pods are sent."""
    at = cluster.plan.pods // 3
    namespace = NAMESPACES["policy"]
    out = {}

    if "draledger" not in operators.running:
        await operators.start("draledger", *cluster.webhook_args())

    async def restart() -> tuple[float, float]:
        stopped = await operators.stop("draledger")
        await operators.start("draledger", *cluster.webhook_args())
        return stopped, time.monotonic()

    step("restart")
    await settled(operators.cpu)
    out["restart"] = await run_burst(cluster, admin, "restart", 1, namespace, operators.cpu, (at, restart))
    await clean(admin, namespace, operators.cpu)
    await operators.stop_all()

    await operators.start("leader", *election(args), wait_for="ready: leader")
    for name, signum in (("failover", signal.SIGKILL), ("handover", signal.SIGTERM)):
        await operators.start("standby", *election(args), wait_for="ready: standby")

        async def take_over(signum: signal.Signals = signum) -> tuple[float, float]:
            stopped = await operators.stop("leader", signum)
            led = await until_ready(operators.running["standby"], "ready: leader")
            operators.running["leader"] = operators.running.pop("standby")
            return stopped, led

        step(f"{name}: the leader gets {signum.name}")
        await settled(operators.cpu)
        out[name] = await run_burst(cluster, admin, name, 1, namespace, operators.cpu, (at, take_over))
        await clean(admin, namespace, operators.cpu)
    await operators.stop_all()
    return out


async def measure(args: argparse.Namespace, plane: ControlPlane, workdir: Path) -> dict[str, Any]:
    began, load = time.monotonic(), os.getloadavg()
    release, the_plan = plane.release, plan(args.seed, args.nodes, args.pods)
    step(f"{args.nodes} nodes, their slices, the manifests")
    cluster = await asyncio.to_thread(build, plane, the_plan, workdir)
    admin = Admin(cluster)
    operators = Operators(cluster, args.profile)
    try:
        bursts = await interleaved(cluster, admin, operators, args.rounds, order(args.kopf_floor))
        disrupted = await disruptions(cluster, admin, operators, args) if not args.no_disruptions else {}
    finally:
        await operators.stop_releaser()
        await operators.stop_all()
        await admin.close()
    return {
        "release": release.name, "kubernetes": release.kubernetes, "nodes": args.nodes, "pods": args.pods,
        "seed": args.seed, "rounds": args.rounds, "client_qps": args.client_qps, "concurrency": CONCURRENCY,
        "lease": [args.lease_duration, args.renew_deadline, args.retry_period],
        "plan": {"devices_per_node": the_plan.devices, "scarce_devices": the_plan.scarce_nodes,
                 "node_cpu": the_plan.node_cpu, "bound": the_plan.bound(), "waiting": the_plan.waiting(),
                 "kinds": dict(collections.Counter(the_plan.kinds))},
        **figures.summarize(bursts, disrupted),
        "floor_releaser": dict(operators.released),
        "seconds": round(time.monotonic() - began), "load_average": [round(x, 2) for x in (*load, *os.getloadavg())],
        "records": [figures.records(burst) for burst in [*bursts, *disrupted.values()]],
    }


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", choices=list(RELEASES), default=list(RELEASES)[-1],
                        help="the Kubernetes release (default: the newest in the matrix)")
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=300, help="claim pods per burst")
    parser.add_argument("--rounds", type=int, default=3, help="bursts of each configuration, interleaved")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--client-qps", type=int, default=500,
                        help="kube-scheduler's and kube-controller-manager's --kube-api-qps (burst twice that); "
                             "0: the release's defaults")
    parser.add_argument("--lease-duration", type=float, default=15.0)
    parser.add_argument("--renew-deadline", type=float, default=10.0)
    parser.add_argument("--retry-period", type=float, default=2.0)
    parser.add_argument("--kopf-floor", action="store_true",
                        help="also run the Kopf floor: the floor's releaser fed by a Kopf operator (rule 3)")
    parser.add_argument("--no-disruptions", action="store_true", help="skip the restart, failover and handover")
    parser.add_argument("--workdir", help="where the control plane and the logs go (default: a new temp dir)")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument("--records", type=Path, help="write every pod's times and every queue sample to this file")
    parser.add_argument("--profile", type=Path, metavar="DIR",
                        help="sample each operator process with py-spy (on PATH) into DIR; "
                             "benchmarks/profile_parts.py sums the samples into the operator's parts")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.profile is not None:
        if PY_SPY is None:
            print("bench_gate.py: error: --profile needs py-spy on PATH (pip install py-spy)", file=sys.stderr)
            return 2
        args.profile.mkdir(parents=True, exist_ok=True)
    try:
        plan(args.seed, args.nodes, args.pods)
    except ValueError as error:
        print(f"bench_gate.py: error: {error}", file=sys.stderr)
        return 2
    release = RELEASES[args.release]
    built = building.ensure(release)
    if built.rebuilt:
        step(f"{release.kubernetes} built in {built.seconds:.0f} s")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-gate-"))
    step(f"control plane {release.kubernetes} in {workdir}")
    # From the main thread, so that the launcher's signal handlers and PR_SET_PDEATHSIG stop it with this process.
    plane = start_plane(release, workdir / "plane", args.client_qps)
    try:
        result = asyncio.run(measure(args, plane, workdir))
    finally:
        plane.stop()
    print(report(result, " ".join(["python", "benchmarks/bench_gate.py", *(argv or sys.argv[1:])])))
    rows = result.pop("records")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    if args.records:
        args.records.write_text(json.dumps(rows) + "\n", encoding="utf-8")
    return 0 if result["complete"] else 1


if __name__ == "__main__":
    sys.exit(main())
