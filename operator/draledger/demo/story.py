"""The demo's story: scripted steps against the emulated cluster, with the real operator running.

Rules:
1. Every step acts on the cluster as a Kubernetes component would (a driver deletes or republishes its
   ResourceSlice, an admin freezes a node, the webhook admits gated pods, the scheduler allocates claims and
   binds pods) and then *waits for the operator's answer by polling with a deadline*: never a sleep to wait
   for state. A missed deadline ends the demo with exit status 1 and says what did not happen.
2. The only sleeps are the pauses between steps, for the human eye; ``fast`` removes them.
3. The operator plays itself: nothing here writes a ledger status or removes a gate. The demo plays the
   scheduler (:func:`draledger.demo.cluster.bind`) for the pods the operator released, honouring the node
   affinity the release added.
4. SIGINT/SIGTERM stop the story (exit 130) or, once it has finished with ``serve``, the serving (exit 0);
   Kopf installs its own handlers when it starts, so an operator that stops by itself is taken as a signal.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import shlex
import signal
from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any, Final

from draledger.commands import tables
from draledger.core.quantities import QuantityError, parse_quantity
from draledger.demo import cluster
from draledger.demo.emulator import ClusterEmulator, write_kubeconfig
from draledger.demo.screen import Screen
from draledger.operator.running import Operator

__all__ = ["DemoFailed", "Stopped", "Story"]

LEDGERS: Final = "draledger.dev/v1alpha1/nodeallocatableledgers"
PODS: Final = "v1/pods"
CLAIMS: Final = "resource.k8s.io/v1/resourceclaims"
SLICES: Final = "resource.k8s.io/v1/resourceslices"
EVENTS: Final = "v1/events"
STEPS: Final = 6
POLL: Final = 0.05
SPINNER: Final = "|/-\\"
WITHIN: Final = 30.0  # seconds any single wait may take before the demo gives up
PAUSE: Final = 2.0  # seconds between steps for the human eye (not with --fast)
VANISHING: Final = "worker-2"
FREEZING: Final = "worker-3"


class DemoFailed(Exception):
    """Something the story waited for did not happen in time."""


class Stopped(Exception):
    """SIGINT/SIGTERM (or the operator stopped on its own, e.g. by Kopf's own signal handler)."""


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _rfc3339(moment: datetime.datetime) -> str:
    return moment.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def complete(ledger: Mapping[str, Any]) -> dict[str, Any]:
    """A ledger object whose status has every field ``tables.ledger_table`` reads (new ones may not yet)."""
    status = dict(ledger.get("status") or {})
    status.setdefault("nodeName", (ledger.get("metadata") or {}).get("name", ""))
    status.setdefault("phase", "-")
    for key, default in (("resources", {}), ("numaZones", []), ("conditions", []), ("problems", [])):
        status.setdefault(key, default)
    status.setdefault("claimCount", len(status.get("claims") or []))
    return {**ledger, "status": status}


def describe_devices(devices: Sequence[str]) -> str:
    """``gpu-1, 4 cores, hugepages-2mi-1``: cores are counted, other devices named."""
    cores = [d for d in devices if d.startswith("core-")]
    named = [d for d in devices if not d.startswith("core-")]
    if cores:
        named.insert(min(1, len(named)), f"{len(cores)} core{'s' if len(cores) > 1 else ''}")
    return ", ".join(named)


class Story:
    """One run of the story against a served emulator; :meth:`run` returns the exit status."""

    def __init__(
        self,
        emulator: ClusterEmulator,
        url: str,
        operator: Operator,
        screen: Screen,
        *,
        fast: bool,
        serve: bool,
        kubeconfig: str,
        svg: str | None,
    ) -> None:
        self.emulator = emulator
        self.url = url
        self.operator = operator
        self.screen = screen
        self.fast = fast
        self.serve = serve
        self.kubeconfig = kubeconfig
        self.svg = svg
        self.interrupted = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.loop = asyncio.get_running_loop()
        self.started = self.loop.time()
        self.number = 0
        self.title = ""
        self.lines: list[str] = []
        self.notes: list[str] = []
        self.progress = ""
        self.ticks = 0
        self.gone: dict[str, Any] | None = None  # the ResourceSlice that vanishes, to republish it
        self.claims_listable = asyncio.Event()  # until set, the API fails every ResourceClaim LIST

    # --- reading the cluster ------------------------------------------------------------------------

    def _live(self, resource: str) -> Iterator[dict[str, Any]]:
        return self.emulator.store.live(self.emulator.require(resource).resource)

    def ledgers(self) -> list[dict[str, Any]]:
        return sorted((complete(o) for o in self._live(LEDGERS)), key=lambda o: o["status"]["nodeName"])

    def status(self, node: str) -> dict[str, Any]:
        obj = self.emulator.get_object(LEDGERS, node)
        return dict((obj or {}).get("status") or {})

    def phase_is(self, phase: str, *nodes: str) -> Callable[[], bool]:
        wanted = nodes or cluster.NODES
        return lambda: all(self.status(node).get("phase") == phase for node in wanted)

    def pod(self, key: str) -> dict[str, Any]:
        namespace, name = key.split("/")
        obj = self.emulator.get_object(PODS, name, namespace=namespace)
        if obj is None:
            raise DemoFailed(f"pod {key} is gone")
        return obj

    def gated(self, key: str) -> bool:
        return cluster.GATE in [g.get("name") for g in self.pod(key)["spec"].get("schedulingGates") or []]

    def held(self) -> list[tuple[str, str, str]]:
        """(pod, reason, message) of every pod our gate holds, the reason from its latest gate Event."""
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        for event in self._live(EVENTS):
            involved = event.get("involvedObject") or {}
            if involved.get("kind") == "Pod" and str(event.get("reason", "")).startswith("LedgerGate"):
                key = (str(involved.get("namespace")), str(involved.get("name")))
                rv = int(event["metadata"].get("resourceVersion") or 0)
                if key not in latest or rv > int(latest[key]["metadata"].get("resourceVersion") or 0):
                    latest[key] = event
        out = []
        for obj in sorted(self._live(PODS), key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"])):
            gates = [g.get("name") for g in obj["spec"].get("schedulingGates") or []]
            if cluster.GATE not in gates:
                continue
            meta = obj["metadata"]
            last = latest.get((meta["namespace"], meta["name"]))
            reason = str(last["reason"]).removeprefix("LedgerGate") if last else "(not looked at yet)"
            message = str(last["message"]).removeprefix(f"held by {cluster.GATE}: ") if last else ""
            out.append((f"{meta['namespace']}/{meta['name']}", reason, message))
        return out

    def released(self, key: str) -> Callable[[], bool]:
        return lambda: not self.gated(key)

    def held_for(self, key: str, reason: str) -> Callable[[], bool]:
        """The pod is held, its latest Event gives this reason, and the operator's gauge counts it."""
        return lambda: self.gauge(reason) >= 1 and any(pod == key and why == reason for pod, why, _ in self.held())

    def counted(self, *keys: str) -> Callable[[], bool]:
        """The pods' claims are in their node's ledger (the operator saw the binding)."""

        def check() -> bool:
            for key in keys:
                obj = self.pod(key)
                node = obj["spec"].get("nodeName")
                if not node:
                    return False
                names = {f"{c['namespace']}/{c['name']}" for c in self.status(node).get("claims") or []}
                namespace = obj["metadata"]["namespace"]
                for entry in obj["spec"].get("resourceClaims") or []:
                    if f"{namespace}/{entry.get('resourceClaimName')}" not in names:
                        return False
            return True

        return check

    def gated_counts(self) -> dict[str, int]:
        """The operator's draledger_gated_pods gauge, by reason (zeros left out)."""
        counts: dict[str, int] = {}
        for family in self.operator.metrics.registry.collect():
            for sample in family.samples:
                if sample.name == "draledger_gated_pods" and sample.value:
                    counts[sample.labels["reason"]] = int(sample.value)
        return dict(sorted(counts.items()))

    def gauge(self, reason: str) -> int:
        value = self.operator.metrics.registry.get_sample_value("draledger_gated_pods", {"reason": reason})
        return int(value or 0)

    def counter(self, name: str, labels: Mapping[str, str] | None = None) -> int:
        value = self.operator.metrics.registry.get_sample_value(name, dict(labels or {}))
        return int(value or 0)

    # --- drawing ------------------------------------------------------------------------------------

    def frame(self) -> str:
        parts = [f"== [{self.number}/{STEPS}] {self.title} =="]
        parts += [f"   {line}" for line in self.lines]
        parts.append("")
        ledgers = self.ledgers()
        parts.append(tables.ledger_table(ledgers).rstrip("\n") if ledgers else "(no ledgers yet)")
        held = self.held()
        if held:
            counts = ", ".join(f"{reason}={count}" for reason, count in self.gated_counts().items()) or "-"
            parts.append("")
            parts.append(f"Held by {cluster.GATE} (metric draledger_gated_pods: {counts}):")
            rows = [list(row) for row in held]
            parts += ["  " + line for line in tables.render(("POD", "REASON", "WHY"), rows).rstrip("\n").split("\n")]
        if self.notes:
            parts.append("")
            parts += [f"  - {note}" for note in self.notes]
        if self.progress:
            parts.append("")
            parts.append(self.progress)
        return "\n".join(parts) + "\n"

    def elapsed(self) -> float:
        return self.loop.time() - self.started

    def begin(self, title: str, *lines: str) -> None:
        self.number += 1
        self.title, self.lines, self.notes, self.progress = title, list(lines), [], ""
        self.screen.live(self.frame())

    def note(self, text: str) -> None:
        self.notes.append(text)
        self.screen.live(self.frame())

    def _check_operator(self) -> None:
        if self.interrupted.is_set():
            raise Stopped
        if self.task is not None and self.task.done():
            error = None if self.task.cancelled() else self.task.exception()
            if error is not None:
                raise DemoFailed(f"the operator stopped: {error!r}")
            raise Stopped

    async def until(self, what: str, check: Callable[[], bool], within: float = WITHIN) -> None:
        """Poll ``check`` until it holds (redrawing the live frame), or fail after ``within`` seconds."""
        begun = self.loop.time()
        deadline = begun + within
        while True:
            self._check_operator()
            if check():
                self.progress = f"  ok: {what} ({self.loop.time() - begun:.1f}s)"
                self.screen.live(self.frame())
                return
            now = self.loop.time()
            if now > deadline:
                self.progress = f"  FAILED: {what}: not within {within:.0f}s"
                raise DemoFailed(f"timed out waiting for: {what}")
            self.ticks += 1
            self.progress = f"  {SPINNER[self.ticks // 2 % len(SPINNER)]} waiting: {what} ({now - begun:.1f}s)"
            if self.ticks % 2 == 0:
                self.screen.live(self.frame())
            await asyncio.sleep(POLL)

    async def end_step(self) -> None:
        """Let a human look (redrawing, not waiting for state), then leave the frame on screen."""
        if not self.fast:
            until = self.loop.time() + PAUSE
            while self.loop.time() < until:
                self._check_operator()
                self.screen.live(self.frame())
                await asyncio.sleep(0.2)
        self.screen.commit(self.frame())
        self.install_signals()  # Kopf installed its own handlers when it started: take them back

    # --- acting as the other components -------------------------------------------------------------

    def _claims_of(self, namespace: str) -> dict[str, dict[str, Any]]:
        return {
            obj["metadata"]["name"]: obj for obj in self._live(CLAIMS) if obj["metadata"]["namespace"] == namespace
        }

    def _allowed(self, obj: Mapping[str, Any]) -> list[str]:
        """The nodes the pod's required node affinity admits (only matchFields on metadata.name here)."""
        affinity = (obj["spec"].get("affinity") or {}).get("nodeAffinity") or {}
        terms = (affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
        if not terms:
            return list(cluster.NODES)
        allowed = []
        for node in cluster.NODES:
            for term in terms:
                requirements = term.get("matchFields") or []
                if all(
                    (node in r.get("values", [])) == (r.get("operator") == "In")
                    for r in requirements
                    if r.get("key") == "metadata.name"
                ):
                    allowed.append(node)
                    break
        return allowed

    def _free_cpu(self, node: str) -> Decimal:
        line = (self.status(node).get("resources") or {}).get("cpu") or {}
        try:
            return parse_quantity(line.get("free") or "0").value
        except QuantityError:
            return Decimal(0)

    def schedule(self, key: str) -> str:
        """Play kube-scheduler for a released pod: allocate its claims, reserve them, bind it, start it."""
        obj = self.pod(key)
        namespace = obj["metadata"]["namespace"]
        claims = self._claims_of(namespace)
        slices = list(self._live(SLICES))
        started = _rfc3339(_utcnow())
        candidates = sorted(self._allowed(obj), key=lambda node: (-self._free_cpu(node), node))
        for node in candidates:
            binding = cluster.bind(obj, node, claims, slices, started)
            if binding is None:
                continue
            for name, status in binding.claims.items():
                self.emulator.patch_object(CLAIMS, name, {"status": status}, namespace=namespace, subresource="status")
            name = obj["metadata"]["name"]
            self.emulator.patch_object(PODS, name, {"spec": {"nodeName": node}}, namespace=namespace)
            self.emulator.patch_object(PODS, name, {"status": binding.pod_status}, namespace=namespace,
                                       subresource="status")
            devices = [r["device"] for c in binding.claims.values() for r in c["allocation"]["devices"]["results"]]
            return f"{node} ({describe_devices(devices)})" if devices else node
        raise DemoFailed(f"the demo scheduler found no node for {key} among {candidates}")

    def release_note(self, key: str) -> str:
        """How the operator released the pod, read from the node affinity it added."""
        obj = self.pod(key)
        affinity = (obj["spec"].get("affinity") or {}).get("nodeAffinity") or {}
        terms = (affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
        for term in terms:
            for requirement in term.get("matchFields") or []:
                values = ", ".join(requirement.get("values") or [])
                if requirement.get("operator") == "NotIn":
                    return f"kept away from {values}"
                if requirement.get("operator") == "In":
                    return f"pinned to {values}"
        return "no node restriction"

    async def admit(self, objects: Sequence[dict[str, Any]]) -> None:
        """Create objects as the API server would after admission (the webhook already added the gate).

        Claims come first, and the pods only once the operator has seen the claims' allocations: in a real
        cluster a claim allocated ahead of its pod is long known, while here the claims and the pods arrive on
        two watch streams within milliseconds of each other.
        """
        claims = [obj for obj in objects if obj["kind"] == "ResourceClaim"]
        for obj in claims:
            status = obj.pop("status", None)
            self.emulator.load_objects([obj])
            if status:
                self.emulator.patch_object(CLAIMS, obj["metadata"]["name"], {"status": status},
                                           namespace=obj["metadata"]["namespace"], subresource="status")
                obj["status"] = status
        keys = [(o["metadata"]["namespace"], o["metadata"]["name"], bool(o.get("status"))) for o in claims]
        await self.until(
            "the operator has seen the new claims",
            lambda: all(
                (view := self.operator.runtime.state.claim((namespace, name))) is not None
                and view.allocated == allocated
                for namespace, name, allocated in keys
            ),
        )
        self.emulator.load_objects([obj for obj in objects if obj["kind"] != "ResourceClaim"])

    async def release_and_place(self, *keys: str) -> None:
        for key in keys:
            await self.until(f"{key} released by the operator", self.released(key))
            how = self.release_note(key)
            self.note(f"released {key} ({how}); the scheduler puts it on {self.schedule(key)}")
        await self.until("the ledgers count the new claims", self.counted(*keys))

    # --- the steps ----------------------------------------------------------------------------------

    async def step_rebuild(self) -> None:
        self.begin(
            "The operator starts: ledgers Rebuilding, new claim pods held",
            "3 nodes x 2 NUMA zones; drivers cpu.dra.example.com (16 cores, 2 cpu each),",
            "gpu.dra.example.com (2 GPUs, 16Gi host memory + 2 cpu each), mem.dra.example.com (2Mi hugepages).",
            "The ledgers below are from the operator's previous run. Two claim pods arrived while it was down,",
            "gated by the webhook. The API fails the operator's ResourceClaim LISTs (injected) until this step",
            "is shown: the rebuild cannot complete, and nothing is released before every object is counted.",
        )
        self.emulator["list resource.k8s.io/v1/resourceclaims"][self.claims_unlistable] << 500
        self.task = asyncio.create_task(self.operator.run(), name="draledger-operator")
        await self.until("every ledger Rebuilding", self.phase_is("Rebuilding"))
        pending = ("ml/notebook-a", "batch/nightly-etl")
        await self.until(
            "both new pods held, reason Rebuilding",
            lambda: all(self.held_for(key, "Rebuilding")() for key in pending) and self.gauge("Rebuilding") == 2,
        )
        await self.end_step()
        self.claims_listable.set()

    def claims_unlistable(self) -> bool:
        """The criterion of the injected LIST failure (a kmock DSL filter)."""
        return not self.claims_listable.is_set()

    async def step_ready(self) -> None:
        self.begin(
            "Rebuilt: every ledger Ready, the gates open",
            "Every object is counted again; mappingVersion survives the restart. batch/legacy-etl was bound",
            "before the gate was on: the scheduler never charged its 8-cpu claim, so the operator backfills",
            "its status.nodeAllocatableResourceClaimStatuses (SCHEDULER Diverged -> InSync).",
        )
        await self.until("the rebuild is complete", self.operator.runtime.rebuilt.is_set)
        await self.until("every ledger Ready", self.phase_is("Ready"))
        kept = ", ".join(f"{node}={self.status(node).get('mappingVersion')}" for node in cluster.NODES)
        self.note(f"mappingVersion read back from the stored ledgers, unchanged mappings: {kept}")
        await self.until(
            "batch/legacy-etl backfilled",
            lambda: bool(self.pod("batch/legacy-etl").get("status", {}).get("nodeAllocatableResourceClaimStatuses")),
        )
        backfilled = self.pod("batch/legacy-etl")["status"]["nodeAllocatableResourceClaimStatuses"][0]
        charged = ", ".join(f"{k}={v}" for k, v in backfilled["resources"].items())
        self.note(f"backfilled batch/legacy-etl: {charged}")
        await self.until(
            "worker-3 SchedulerInSync",
            lambda: any(c.get("type") == "SchedulerInSync" and c.get("status") == "True"
                        for c in self.status("worker-3").get("conditions") or []),
        )
        await self.release_and_place("ml/notebook-a", "batch/nightly-etl")
        await self.until("every ledger Ready", self.phase_is("Ready"))
        await self.end_step()

    async def step_vanish(self) -> None:
        name = f"{VANISHING}-gpu.dra.example.com"
        self.begin(
            f"A ResourceSlice vanishes: {VANISHING} turns Stale",
            f"The GPU driver on {VANISHING} restarts and its ResourceSlice {name} is deleted.",
            "The ledger cannot resolve ml/inference-0's claim any more: it counts what the pod status says",
            "and turns Stale. New pods: ml/inference-1 (its claim is already allocated on that node) is held",
            "with a reason and an Event; web/report-1 is released, kept away from the Stale node.",
        )
        self.gone = self.emulator.get_object(SLICES, name)
        if self.gone is None:
            raise DemoFailed(f"ResourceSlice {name} is missing before the step")
        self.emulator.delete_object(SLICES, name)
        await self.until(f"{VANISHING} Stale", self.phase_is("Stale", VANISHING))
        problems = self.status(VANISHING).get("problems") or []
        for problem in problems[:2]:
            self.note(f"{VANISHING}: {problem.get('reason')}: {problem.get('message')}")
        slices = [*self._live(SLICES), self.gone]  # the claim was allocated while the slice still existed
        await self.admit(cluster.later_pods("stale", _utcnow(), slices, list(self._live(CLAIMS))))
        await self.until("ml/inference-1 held: ClaimUnresolved", self.held_for("ml/inference-1", "ClaimUnresolved"))
        await self.release_and_place("web/report-1")
        await self.end_step()

    async def step_return(self) -> None:
        self.begin(
            "The slice returns: Ready again, the held pod goes",
            "The driver republishes its ResourceSlice. The claim resolves again, mappingVersion moves on,",
            f"{VANISHING} is Ready, and ml/inference-1 is released, pinned to the node of its claim.",
        )
        assert self.gone is not None
        back = {k: v for k, v in self.gone.items() if k in ("apiVersion", "kind", "spec")}
        name = self.gone["metadata"]["name"]
        back["metadata"] = {
            "name": name,
            "uid": cluster.uid("ResourceSlice", "", name, "republished"),
            "ownerReferences": self.gone["metadata"].get("ownerReferences", []),
        }
        self.emulator.load_objects([back])
        await self.until(f"{VANISHING} Ready", self.phase_is("Ready", VANISHING))
        await self.release_and_place("ml/inference-1")
        await self.end_step()

    async def step_freeze(self) -> None:
        self.begin(
            f"Freeze {FREEZING}: new claim pods stay gated",
            f"An admin freezes {FREEZING} for a GPU driver upgrade (spec.frozen, as `draledger freeze` does).",
            "Bound pods are untouched; ml/trainer-1, whose claim is allocated there, is held.",
        )
        self.emulator.patch_object(LEDGERS, FREEZING, {"spec": {"frozen": True, "reason": "GPU driver upgrade"}})
        await self.until(f"{FREEZING} Frozen", self.phase_is("Frozen", FREEZING))
        await self.admit(cluster.later_pods("frozen", _utcnow(), list(self._live(SLICES)), list(self._live(CLAIMS))))
        await self.until("ml/trainer-1 held: NodeUnavailable", self.held_for("ml/trainer-1", "NodeUnavailable"))
        await self.end_step()

    async def step_resume(self) -> None:
        self.begin(
            f"Resume {FREEZING}: Ready, the last pod goes",
            "The upgrade is done (`draledger resume`): the ledger is Ready and ml/trainer-1 is released.",
        )
        self.emulator.patch_object(LEDGERS, FREEZING, {"spec": {"frozen": False, "reason": None}})
        await self.until(f"{FREEZING} Ready", self.phase_is("Ready", FREEZING))
        await self.release_and_place("ml/trainer-1")
        await self.until("every ledger Ready, no pod held", lambda: self.phase_is("Ready")() and not self.held())
        await self.end_step()

    def final(self) -> None:
        ledgers = self.ledgers()
        self.screen.say("== Final ledgers (with NUMA zones) ==")
        self.screen.say(tables.ledger_table(ledgers, numa=True))
        claims = sum(int(ledger["status"].get("claimCount") or 0) for ledger in ledgers)
        phases = sorted({ledger["status"]["phase"] for ledger in ledgers})
        released = self.counter("draledger_gate_releases_total")
        backfilled = self.counter("draledger_status_writes_total", {"target": "pod-status"})
        versions = ", ".join(f"{o['status']['nodeName']}={o['status'].get('mappingVersion')}" for o in ledgers)
        self.screen.say(
            f"{len(ledgers)} ledgers {'/'.join(phases)}; {claims} claims, each counted once; "
            f"{released} gates released, {self._holds()} holds, each explained by an Event; "
            f"{backfilled} pod status backfilled; mappingVersion {versions}; {self.elapsed():.1f}s"
        )
        if self.svg:
            from draledger.commands.report import write_svg

            write_svg(self.svg, ledgers)
            self.screen.say(f"wrote {self.svg}")

    def _holds(self) -> int:
        return sum(
            1
            for event in self._live(EVENTS)
            if str(event.get("reason", "")).startswith("LedgerGate")
        )

    # --- running ------------------------------------------------------------------------------------

    def _interrupt(self) -> None:
        self.interrupted.set()

    def install_signals(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                self.loop.add_signal_handler(sig, self._interrupt)

    def remove_signals(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                self.loop.remove_signal_handler(sig)

    async def serve_forever(self) -> None:
        path = write_kubeconfig(self.kubeconfig, self.url)
        k = f"kubectl --kubeconfig {shlex.quote(str(path))}"
        self.screen.say(
            "\n".join(
                [
                    f"The cluster stays up at {self.url} with the operator running. Kubeconfig: {path}",
                    "Try, in another terminal:",
                    f"  {k} get nal",
                    f"  {k} describe nal worker-1",
                    f"  {k} get pods -A",
                    f"  {k} get nodes,pods,resourceslices,resourceclaims -A -o json > dump.json"
                    " && draledger audit -f dump.json",
                    f"  draledger freeze --kubeconfig {shlex.quote(str(path))} --node worker-1 --reason test"
                    f" && {k} get nal",
                    "Press Ctrl-C to stop.",
                ]
            )
        )
        while True:
            self._check_operator()
            await asyncio.sleep(0.2)

    async def run(self) -> int:
        self.install_signals()
        self.screen.start()
        self.screen.say(f"draledger demo: embedded Kubernetes API at {self.url}, the real operator against it.")
        self.screen.say("")
        code = 0
        try:
            for step in (
                self.step_rebuild,
                self.step_ready,
                self.step_vanish,
                self.step_return,
                self.step_freeze,
                self.step_resume,
            ):
                await step()
            self.final()
            if self.serve:
                try:
                    await self.serve_forever()
                except Stopped:
                    self.screen.say("\nStopping.")
        except Stopped:
            self.screen.commit(self.frame())
            self.screen.say("Interrupted.")
            code = 130
        except DemoFailed as error:
            self.screen.commit(self.frame())
            self.screen.say(f"error: {error}")
            code = 1
        finally:
            self.screen.stop()
            await self.shutdown()
            self.remove_signals()
        return code

    async def shutdown(self) -> None:
        self.operator.stop.set()
        if self.task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self.task, timeout=20)
