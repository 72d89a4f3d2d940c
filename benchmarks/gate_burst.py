"""One burst of claim pods: created as fast as the API accepts them, observed until every pod that can bind has,
then deleted with their claims.

Rules:
1. ``CONCURRENCY`` creates in flight at once over kept-alive connections, in the plan's order: as fast as the API
   accepts them (the benchmark's client is the admin, exempt from API Priority and Fairness).
2. A pod's ``sent`` is taken just before its POST, ``answered`` just after the answer; whether it carries our
   gate is read from the answer (admission done). The rest comes from the observer (gate_observer.py).
3. A burst is done when every pod created with our gate has been released and as many pods are bound as the
   plan says can be (``Plan.bound``), or at its deadline (then it is marked incomplete and the report says so).
4. A disruption (restart, failover) starts when the pod at a given index has been sent, and runs beside the
   creates; it returns the moment the operators stopped leading and the moment one led again.
5. Between bursts: the pods and claims are deleted and gone, and the processes have settled (together under
   ``SETTLED_SHARE`` of a core for a second), so one burst's tail is not billed to the next.
"""

from __future__ import annotations

import asyncio
import json
import math
import ssl
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, Self

import aiohttp

from gate_cluster import BURST_LABEL, Cluster, pod_body, secure_port
from gate_figures import Burst, PodRecord, QueueSample
from tests.realcluster.operating import GATE, gates_of

HERE = Path(__file__).resolve().parent
CONCURRENCY = 16
SAMPLE_PERIOD = 0.1
SETTLED_SHARE = 0.3
DEADLINE_BASE, DEADLINE_PER_POD = 300.0, 2.0  # only to end a run that hangs: 1,000 nodes bind 2 to 5 pods a second here

Disruption = Callable[[], Coroutine[Any, Any, tuple[float, float]]]
Cpu = Callable[[], dict[str, float]]  # process (component, or "draledger": every operator process) -> CPU seconds


class Admin:
    """The admin's aiohttp session to kube-apiserver (kept-alive connections, the client certificate)."""

    def __init__(self, cluster: Cluster) -> None:
        plane = cluster.plane
        assert plane.pki is not None
        context = ssl.create_default_context(cafile=str(plane.pki.ca_cert))
        context.load_cert_chain(str(plane.pki.admin.cert), str(plane.pki.admin.key))
        self.server = plane.server
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context, limit=CONCURRENCY * 2))

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        async with self.session.request(method, self.server + path, json=body) as answer:
            return answer.status, await answer.json(content_type=None)

    async def close(self) -> None:
        await self.session.close()


class Child:
    """A helper process of the benchmark's (a script beside this file, as the admin), the lines it prints (JSON
    arrays), and its end: its stdin closed, then at most 10 s for it to exit."""

    script = ""
    what = ""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.ready = asyncio.Event()
        self.reader: asyncio.Task[None] | None = None

    @classmethod
    async def start(cls, cluster: Cluster, *args: str) -> Self:
        plane = cluster.plane
        assert plane.pki is not None
        argv = [sys.executable, str(HERE / cls.script), plane.server, str(plane.pki.ca_cert),
                str(plane.pki.admin.cert), str(plane.pki.admin.key), *args]
        process = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.PIPE,
                                                       stdout=asyncio.subprocess.PIPE)
        child = cls(process)
        child.reader = asyncio.create_task(child._read())
        waiting = asyncio.create_task(child.ready.wait())
        await asyncio.wait([waiting, child.reader], timeout=60, return_when=asyncio.FIRST_COMPLETED)
        if not child.ready.is_set():
            waiting.cancel()
            await child.stop()
            raise RuntimeError(f"the {cls.what} did not start watching within 60 s (its stderr is above)")
        return child

    async def _read(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            line = json.loads(raw)
            if line[0] == "ready":
                self.ready.set()
            else:
                self.line(line)

    def line(self, line: list[Any]) -> None:
        """One line the child printed, other than ``["ready"]``."""

    async def stop(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.is_closing():
            self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), timeout=10)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        if self.reader is not None:
            await self.reader


class Observer(Child):
    """The observer child (gate_observer.py) and what it has reported so far."""

    script, what = "gate_observer.py", "observer"

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        super().__init__(process)
        self.pods: dict[str, list[tuple[float, bool, str]]] = {}
        self.samples: list[QueueSample] = []

    @classmethod
    async def watching(cls, cluster: Cluster, selector: str) -> Observer:
        return await cls.start(cluster, selector, str(secure_port(cluster.plane, "kube-scheduler")),
                               str(SAMPLE_PERIOD))

    def line(self, line: list[Any]) -> None:
        if line[0] == "pod":
            self.pods.setdefault(line[2], []).append((line[1], line[3], line[4]))
        elif line[0] == "queue":
            self.samples.append(QueueSample(line[1], *line[2:6]))

    def released(self, name: str) -> float | None:
        return next((at for at, gated, _ in self.pods.get(name, ()) if not gated), None)

    def bound(self, name: str) -> tuple[float, str] | None:
        return next(((at, node) for at, _, node in self.pods.get(name, ()) if node), None)


class Releaser(Child):
    """The floor's releaser (gate_floor.py) of one namespace; once stopped, what it did."""

    script, what = "gate_floor.py", "floor's releaser"

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        super().__init__(process)
        self.counts: dict[str, int] = {}

    def line(self, line: list[Any]) -> None:
        if line[0] == "done":
            self.counts = dict(zip(("released", "conflicts", "failures"), line[1:4], strict=True))


async def run_burst(cluster: Cluster, admin: Admin, config: str, round_: int, namespace: str, cpu: Cpu,
                    disruption: tuple[int, Disruption] | None = None) -> Burst:
    """Create the plan's burst in ``namespace`` and observe it to the end (rules 1 to 4)."""
    plan = cluster.plan
    burst_id = f"{config}-{round_}"
    observer = await Observer.watching(cluster, f"{BURST_LABEL}={burst_id}")
    records = [PodRecord(f"{burst_id}-{index:05d}", kind, math.nan) for index, kind in enumerate(plan.kinds)]
    before = cpu()
    pending = iter(range(len(records)))
    disrupting: asyncio.Task[tuple[float, float]] | None = None

    async def create() -> None:
        nonlocal disrupting
        for index in pending:
            record = records[index]
            if disruption is not None and index == disruption[0]:
                disrupting = asyncio.create_task(disruption[1]())
            record.sent = time.monotonic()
            status, answer = await admin.request("POST", f"/api/v1/namespaces/{namespace}/pods",
                                                 pod_body(record.name, record.kind, burst_id))
            record.answered = time.monotonic()
            if status != 201:
                raise RuntimeError(f"creating pod {namespace}/{record.name}: HTTP {status}: {answer}")
            record.gated = GATE in gates_of(answer)

    await asyncio.gather(*(create() for _ in range(CONCURRENCY)))
    expected = plan.bound()
    deadline = time.monotonic() + DEADLINE_BASE + DEADLINE_PER_POD * len(records)
    complete = False
    while time.monotonic() < deadline:
        bound = sum(1 for record in records if observer.bound(record.name))
        held = sum(1 for record in records if record.gated and observer.released(record.name) is None)
        if bound >= expected and not held and (disrupting is None or disrupting.done()):
            complete = True
            break
        await asyncio.sleep(0.05)
    after = cpu()
    await observer.stop()
    for record in records:
        record.released = observer.released(record.name)
        if (bound_at := observer.bound(record.name)) is not None:
            record.bound, record.node = bound_at
    seen = [t for record in records for t in (record.released, record.bound) if t is not None]
    burst = Burst(config, round_, records, observer.samples,
                  {name: after.get(name, 0.0) - before.get(name, 0.0) for name in after.keys() | before.keys()},
                  max(seen, default=time.monotonic()), complete)
    if disrupting is not None:
        burst.disruption = await disrupting
    return burst


async def clean(admin: Admin, namespace: str, cpu: Cpu) -> None:
    """Delete the namespace's pods and claims, wait until both are gone, then until the processes settle (rule 5)."""
    collections = (f"/api/v1/namespaces/{namespace}/pods",
                   f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims")
    for path in collections:
        await admin.request("DELETE", f"{path}?gracePeriodSeconds=0")
    deadline = time.monotonic() + 300
    while True:
        left = [(await admin.request("GET", f"{path}?limit=1"))[1]["items"] for path in collections]
        if not any(left):
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"the pods and claims of {namespace} were not gone within 300 s")
        await asyncio.sleep(0.2)
    await settled(cpu)


async def settled(cpu: Cpu, window: float = 1.0, within: float = 60.0) -> bool:
    """Until our processes together use under ``SETTLED_SHARE`` of a core for ``window`` s (False at ``within``)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        before = sum(cpu().values())
        await asyncio.sleep(window)
        if sum(cpu().values()) - before < SETTLED_SHARE * window:
            return True
    return False
