"""The gate benchmark's floors: a releaser that does nothing but remove the gate, so that a burst gated by the same
MutatingAdmissionPolicy measures what any design that gates claim pods must pay, with no accounting at all; and the
same releaser handed its pods by a Kopf operator (the Kopf floor), what any design built on Kopf must pay.

Usage (started by bench_gate.py): ``python gate_floor.py SERVER CA CERT KEY NAMESPACE [kopf]``.

Rules:
1. The pods of NAMESPACE, listed and watched as the observer watches (gate_observer.py, rule 2). Every pod seen
   carrying ``draledger.dev/ledger-ready`` has that gate removed at once: one JSON patch, a ``test`` of the pod's
   resourceVersion and the ``remove`` of the gate at its index, as dra-ledger's release patch is, without the
   node affinity and the annotation dra-ledger adds.
2. Nothing else: no ledger, no accounting, no decision, no Event, no batching. At most ``PATCHES`` patches are in
   flight (as many as the burst's creates, so the bound never holds a pod back behind the creates).
3. A patch refused because the pod changed (409, or 422: the ``test`` failed) is tried again on the newer pod
   the watch brings: at once if it has brought it already, else when it does. A pod gone (404) is done. Any
   other failure is logged to stderr and tried again ``RETRY_AFTER`` seconds later.
4. It authenticates as the admin (the client certificate), as the observer does: exempt from API Priority and
   Fairness, where dra-ledger runs as its ServiceAccount.
5. ``["ready"]`` once the watch is open; when stdin closes, ``["done", released, conflicts, failures]``, and it
   exits.
6. With ``kopf`` (the Kopf floor), the pods are not watched by rule 1's watch but handed over by a Kopf operator in
   this process, run as dra-ledger runs Kopf: the same four kinds cluster-wide, a silent ``on.event`` handler on
   each, and dra-ledger's own settings (``draledger.operator.handlers.settings_for``: the same selectors and page
   size, no scanning, no posting, no peering, no diff base). The pods handler notes the pods of NAMESPACE (rule 1);
   the others do nothing. So the Kopf floor over the floor is Kopf's delivery of the events dra-ledger must watch,
   and dra-ledger over the Kopf floor is its own design's cost. ``["ready"]`` once the nodes' listing has reached a
   handler (the streams start together; a pod created before its own listing is in it). When stdin closes, Kopf is
   stopped by its stop flag (a clean stop, not a cancellation).
"""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
import time
from typing import Any

import aiohttp
import kopf

from draledger.operator.config import OperatorConfig
from draledger.operator.handlers import WATCHED, settings_for
from draledger.operator.metrics import Metrics
from draledger.operator.runtime import Runtime
from gate_observer import GATE, say, until_eof, watch

PATCHES = 16
RETRY_AFTER = 0.2
CONFLICT = (409, 422)


def gate_index(pod: dict[str, Any]) -> int | None:
    """Where our gate is in the pod's ``spec.schedulingGates`` (None: not there)."""
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return next((i for i, gate in enumerate(gates) if gate.get("name") == GATE), None)


def release_patch(pod: dict[str, Any], index: int) -> list[dict[str, Any]]:
    """Rule 1's patch: only if the pod is still the version seen, remove the gate at ``index``."""
    return [{"op": "test", "path": "/metadata/resourceVersion", "value": pod["metadata"]["resourceVersion"]},
            {"op": "remove", "path": f"/spec/schedulingGates/{index}"}]


class Releaser:
    """Rules 1 to 3: the newest version of every pod seen, and one release task per gated pod."""

    def __init__(self, session: aiohttp.ClientSession, pods_url: str) -> None:
        self.session, self.pods_url = session, pods_url
        self.latest: dict[str, dict[str, Any]] = {}
        self.woken: dict[str, asyncio.Event] = {}  # set when the watch brings a newer version of the pod
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.slots = asyncio.Semaphore(PATCHES)
        self.released = self.conflicts = self.failures = 0

    def note(self, kind: str, pod: dict[str, Any], _at: float) -> None:
        name = pod["metadata"]["name"]
        if kind == "DELETED":
            self.latest.pop(name, None)
        else:
            self.latest[name] = pod
        if name in self.woken:
            self.woken[name].set()
        elif kind != "DELETED" and gate_index(pod) is not None:
            self.woken[name] = asyncio.Event()
            self.tasks[name] = asyncio.create_task(self.release(name))

    async def release(self, name: str) -> None:
        """Rule 3: patch the newest version seen until the gate is gone (or the pod is)."""
        woken, tried = self.woken[name], ""
        try:
            while True:
                woken.clear()
                pod = self.latest.get(name)
                index = None if pod is None else gate_index(pod)
                if pod is None or index is None:
                    return
                version = pod["metadata"]["resourceVersion"]
                if version == tried:
                    await woken.wait()
                    continue
                async with self.slots:
                    status, text = await self.patch(name, release_patch(pod, index))
                if status in (200, 404):
                    self.released += status == 200
                    return
                if status in CONFLICT:
                    self.conflicts += 1
                    tried = version
                    continue
                self.failures += 1
                print(f"gate_floor: patching pod {name}: {status} {text[:300]}", file=sys.stderr, flush=True)
                await asyncio.sleep(RETRY_AFTER)
        finally:
            del self.woken[name], self.tasks[name]

    async def patch(self, name: str, ops: list[dict[str, Any]]) -> tuple[int, str]:
        try:
            async with self.session.patch(f"{self.pods_url}/{name}", data=json.dumps(ops),
                                          headers={"Content-Type": "application/json-patch+json"}) as answer:
                return answer.status, await answer.text()
        except aiohttp.ClientError as error:
            return 0, repr(error)


class KopfFeed:
    """Rule 6's handlers: the pods of ``namespace`` go to the releaser (a listed pod, ``type`` None, as ADDED);
    ``opened`` is set by the first node event; every other event is dropped."""

    def __init__(self, namespace: str, releaser: Releaser, opened: asyncio.Event) -> None:
        self.namespace, self.releaser, self.opened = namespace, releaser, opened

    async def pod_event(self, event: Any, **_: Any) -> None:
        pod = event.get("object") or {}
        if (pod.get("metadata") or {}).get("namespace") == self.namespace:
            self.releaser.note(event.get("type") or "ADDED", pod, time.monotonic())

    async def node_event(self, **_: Any) -> None:
        self.opened.set()

    async def other_event(self, **_: Any) -> None:
        return None


def kopf_operator(server: str, ca: str, cert: str, key: str,
                  feed: KopfFeed) -> tuple[kopf.OperatorRegistry, kopf.OperatorSettings]:
    """Rule 6: dra-ledger's own Kopf settings (``handlers.settings_for``), ``feed``'s handlers on its kinds."""
    registry = kopf.OperatorRegistry()
    settings = settings_for(Runtime(OperatorConfig(), Metrics(), time.monotonic))

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server=server, ca_path=ca, certificate_path=cert, private_key_path=key)

    handlers = {"pods": feed.pod_event, "nodes": feed.node_event}
    for kind, selector in WATCHED:
        kopf.on.event(*selector, registry=registry, id=f"{kind}-event")(handlers.get(kind, feed.other_event))
    return registry, settings


async def main(server: str, ca: str, cert: str, key: str, namespace: str, mode: str = "") -> None:
    context = ssl.create_default_context(cafile=ca)
    context.load_cert_chain(cert, key)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context, limit=PATCHES + 1)) as session:
        url = f"{server}/api/v1/namespaces/{namespace}/pods"
        releaser, opened, stop = Releaser(session, url), asyncio.Event(), asyncio.Event()
        operator: asyncio.Task[None] | None = None
        if mode == "kopf":
            registry, settings = kopf_operator(server, ca, cert, key, KopfFeed(namespace, releaser, opened))
            operator = asyncio.create_task(kopf.operator(registry=registry, settings=settings, clusterwide=True,
                                                         standalone=True, stop_flag=stop))
            watching = asyncio.create_task(shielded(operator))  # stopped by its flag, not cancelled
        else:
            watching = asyncio.create_task(watch(session, url, {}, releaser.note, opened))
        await asyncio.wait([watching, asyncio.create_task(opened.wait())], timeout=60,
                           return_when=asyncio.FIRST_COMPLETED)
        if watching.done():
            watching.result()  # the watch failed before it opened: its error
        if not opened.is_set():
            raise TimeoutError(f"the watch of the pods of namespace {namespace} did not open within 60 s")
        say("ready")
        try:
            await until_eof([watching])
        finally:
            for task in list(releaser.tasks.values()):
                task.cancel()
            if operator is not None:
                stop.set()
                await asyncio.wait([operator], timeout=5)
            say("done", releaser.released, releaser.conflicts, releaser.failures)


async def shielded(task: asyncio.Task[None]) -> None:
    """Await ``task``; cancelling this leaves it running (Kopf stops cleanly by its stop flag)."""
    await asyncio.shield(task)


if __name__ == "__main__":
    server_, ca_, cert_, key_, namespace_ = sys.argv[1:6]
    asyncio.run(main(server_, ca_, cert_, key_, namespace_, *sys.argv[6:7]))
