"""The gate benchmark's observer: a process of its own that timestamps what happens to a burst's pods, and samples
kube-scheduler's queues.

Usage (started by bench_gate.py): ``python gate_observer.py SERVER CA CERT KEY SELECTOR SCHEDULER_PORT PERIOD``.

Rules:
1. It does nothing but watch and sample, so that its timestamps are not delayed by the burst's creation work
   in the benchmark's own process; times are ``time.monotonic()`` (CLOCK_MONOTONIC: the same clock in every
   process of the machine).
2. The pods: a LIST of the selector, then a WATCH from its resourceVersion (resumed from the last version seen
   when the server ends it; listed again after 410). A line is printed when a pod's (gated, node) pair changes:
   ``["pod", t, name, gated, node]``, gated meaning it carries ``draledger.dev/ledger-ready``.
3. The scheduler's queues: every PERIOD seconds, kube-scheduler's own ``scheduler_pending_pods`` gauges from its
   /metrics (secure port, the admin's certificate): ``["queue", t, active, backoff, unschedulable, gated]``, t
   the middle of the scrape. Only the scheduler knows its active and backoff queues apart from the pods it
   has given up on for now (unschedulable) and the pods its PreEnqueue plugins hold (gated: scheduling gates,
   and also DRA's wait for a claim not created yet), so its gauges, not the pods' states, say when it is idle.
4. ``["ready"]`` once the watch is open and the first sample is taken; it runs until its stdin closes.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
import time
from collections.abc import Callable
from typing import Any

import aiohttp

GATE = "draledger.dev/ledger-ready"
QUEUES = ("active", "backoff", "unschedulable", "gated")
PREFIX = b'scheduler_pending_pods{queue="'


def say(*fields: Any) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


async def watch(session: aiohttp.ClientSession, url: str, params: dict[str, str],
                note: Callable[[str, dict[str, Any], float], None], opened: asyncio.Event) -> None:
    """Rule 2's LIST and WATCH of ``url``, forever: ``note(type, object, at)`` for every object listed (as ADDED)
    and every ADDED, MODIFIED and DELETED event, ``at`` when it arrived; ``opened`` set once the watch is open."""

    async def listed() -> str:
        async with session.get(url, params=params) as answer:
            answer.raise_for_status()
            body = await answer.json()
        at = time.monotonic()
        for item in body["items"]:
            note("ADDED", item, at)
        return str(body["metadata"]["resourceVersion"])

    version = await listed()
    while True:
        query = {**params, "watch": "true", "resourceVersion": version, "allowWatchBookmarks": "true",
                 "timeoutSeconds": "300"}
        async with session.get(url, params=query,
                               timeout=aiohttp.ClientTimeout(total=None, sock_read=None)) as answer:
            answer.raise_for_status()
            opened.set()
            buffer = b""
            async for chunk in answer.content.iter_any():
                at = time.monotonic()
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        version = ""
                        break
                    version = obj.get("metadata", {}).get("resourceVersion", version)
                    if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                        note(event["type"], obj, at)
                if not version:
                    break
        if not version:  # 410 Gone: list again
            version = await listed()


class Pods:
    """The pods of rule 2, by name: their (gated, node) pair, printed when it changes."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[bool, str]] = {}
        self.opened = asyncio.Event()

    def note(self, kind: str, pod: dict[str, Any], at: float) -> None:
        if kind == "DELETED":
            return
        spec = pod.get("spec") or {}
        state = (any(g.get("name") == GATE for g in spec.get("schedulingGates") or []), spec.get("nodeName") or "")
        name = pod["metadata"]["name"]
        if self.seen.get(name) != state:
            self.seen[name] = state
            say("pod", at, name, state[0], state[1])


async def sample(session: aiohttp.ClientSession, url: str, context: ssl.SSLContext, period: float,
                 first: asyncio.Event) -> None:
    """Rule 3, forever."""
    while True:
        began = time.monotonic()
        counts = dict.fromkeys(QUEUES, 0)
        async with session.get(url, ssl=context) as answer:
            text = await answer.read()
        ended = time.monotonic()
        for line in text.splitlines():
            if line.startswith(PREFIX):
                queue, _, value = line[len(PREFIX):].partition(b'"} ')
                name = queue.decode()
                if name in counts:
                    counts[name] = int(float(value))
        say("queue", (began + ended) / 2, *(counts[q] for q in QUEUES))
        first.set()
        await asyncio.sleep(max(0.0, period - (time.monotonic() - began)))


async def main(server: str, ca: str, cert: str, key: str, selector: str, scheduler_port: int, period: float) -> None:
    to_server = ssl.create_default_context(cafile=ca)
    to_server.load_cert_chain(cert, key)
    to_scheduler = ssl.create_default_context()
    to_scheduler.check_hostname = False
    to_scheduler.verify_mode = ssl.CERT_NONE  # its serving certificate is self-signed, made in memory
    to_scheduler.load_cert_chain(cert, key)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=to_server)) as session:
        pods = Pods()
        sampled = asyncio.Event()
        tasks = [asyncio.create_task(watch(session, f"{server}/api/v1/pods", {"labelSelector": selector}, pods.note,
                                           pods.opened)),
                 asyncio.create_task(sample(session, f"https://127.0.0.1:{scheduler_port}/metrics", to_scheduler,
                                            period, sampled))]
        await asyncio.wait_for(asyncio.gather(pods.opened.wait(), sampled.wait()), timeout=60)
        say("ready")
        await until_eof(tasks)


async def until_eof(tasks: list[asyncio.Task[None]]) -> None:
    """Rule 4: until stdin closes (the benchmark is done with us) or a task ends; then the tasks are cancelled,
    and what an ended task raised is raised."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    stdin = asyncio.create_task(reader.read())
    waiting: list[asyncio.Task[Any]] = [stdin, *tasks]
    done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    for task in tasks:
        task.cancel()
    for ended in done:
        if ended is not stdin and (error := ended.exception()) is not None:
            raise error


if __name__ == "__main__":
    server_, ca_, cert_, key_, selector_, port_, period_ = sys.argv[1:8]
    asyncio.run(main(server_, ca_, cert_, key_, selector_, int(port_), float(period_)))
