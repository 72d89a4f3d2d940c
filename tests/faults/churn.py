"""A small DRA cluster and a seeded generator of changes to it, applied in-process through the emulator.

The cluster (tests/faults/objects.py): ``nodes`` nodes ``n1..`` (8 cpu, 16Gi), each with a one-slice cpu pool
(6 devices, each charging ``cpu: 1`` to node allocatable) and a two-slice memory pool (4 devices,
``memory: 1Gi`` each), a few bound pods and bound claim pods (without
``status.nodeAllocatableResourceClaimStatuses``: the operator backfills them).

Each :meth:`Churn.step` applies a burst of one to four changes at once (so that watch streams see several
events together, which the shuffle fault needs), drawn with a seeded ``random.Random``:
- gated claim pods keep arriving (the gate ``draledger.dev/ledger-ready``; some also carry a foreign gate
  placed before ours, some a required node affinity of their own): their claim already allocated on some
  node's cpu or memory pool (pinned), not allocated, or created a moment after the pod (not seen yet);
- released pods are scheduled as a scheduler would: a node their affinity (and their allocated claims)
  allows where they fit (the node's ledger, computed offline, stays within allocatable: kube-scheduler never
  overcommits), their claim allocated there if it was not, then bound; the foreign gate goes some time later;
- bound pods are created, resized, finished (``Succeeded``) and deleted; claims nobody uses are deleted;
- slices are republished with new generations: the cpu pool at once (with a new multiplier now and then),
  the memory pool one slice after the other (the pool is incomplete for a moment in between);
- nodes turn NotReady and back, and ledgers are frozen (``spec.frozen``) and resumed, each for 1.5 to 3 s:
  longer than the release checker's grace interval, so a release during one is judged.

Every change is made inside ``timeline.acting("churn")``. Delayed halves of changes (a node Ready again, a
pool completed, a claim created after its pod) wait in ``pending`` and are all applied by :meth:`settle`.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator
from typing import Any

from draledger.core.accounting.release import GATE
from draledger.core.loading import load
from draledger.demo.emulator import ClusterEmulator
from tests.faults.objects import (
    CLAIMS,
    CPU,
    CPU_DEVICES,
    FOREIGN_GATE,
    LEDGERS,
    MEM,
    MEM_DEVICES,
    NODES,
    NS,
    PODS,
    REQUIRED,
    SLICES,
    affinity_allows,
    allocation,
    claim_body,
    claim_names,
    cpu_slice,
    gate_names,
    mem_slice,
    node_body,
    node_terms_allow,
    pod_body,
)
from tests.faults.timeline import Timeline

MAX_POD_COUNT = 45  # past this, the churn deletes more pods than it creates


class Churn:
    def __init__(self, emulator: ClusterEmulator, timeline: Timeline, seed: int, nodes: int = 4) -> None:
        self.emulator = emulator
        self.timeline = timeline
        self.rng = random.Random(seed)
        self.node_names = [f"n{i}" for i in range(1, nodes + 1)]
        self.generations: dict[str, int] = {}  # slice name -> generation last published
        self.pending: list[tuple[float, Callable[[], None]]] = []
        self.republishing: set[str] = set()  # nodes whose memory pool is half republished
        self.names = (f"{i:03d}" for i in itertools.count())
        self.counts: dict[str, int] = {}

    # ----- reading the store -----
    def live(self, resource: str) -> list[dict[str, Any]]:
        return list(self.emulator.store.live(self.emulator.require(resource).resource))

    def nodes(self) -> list[dict[str, Any]]:
        return sorted(self.live(NODES), key=lambda n: n["metadata"]["name"])

    def claims(self) -> dict[str, dict[str, Any]]:
        return {c["metadata"]["name"]: c for c in self.live(CLAIMS)}

    def used_devices(self) -> set[tuple[str, str]]:
        used = set()
        for claim in self.claims().values():
            for result in ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get(
                    "results", []):
                used.add((result["pool"], result["device"]))
        return used

    def free_device(self, node: str, driver: str) -> str | None:
        used = self.used_devices()
        pool, count, prefix = (f"{node}-cpu", CPU_DEVICES, "c") if driver == CPU else (f"{node}-mem", MEM_DEVICES, "m")
        free = [f"{prefix}{i}" for i in range(count) if (pool, f"{prefix}{i}") not in used]
        return self.rng.choice(free) if free else None

    # ----- writing (in-process, marked) -----
    def _count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def load(self, *objects: dict[str, Any]) -> None:
        with self.timeline.acting("churn"):
            self.emulator.load_objects(objects)

    def patch(self, resource: str, name: str, patch: Any, *, namespace: str | None = None,
              subresource: str | None = None) -> None:
        with self.timeline.acting("churn"):
            self.emulator.patch_object(resource, name, patch, namespace=namespace, subresource=subresource)

    def delete(self, resource: str, name: str, *, namespace: str | None = None) -> None:
        with self.timeline.acting("churn"):
            self.emulator.delete_object(resource, name, namespace=namespace)

    def later(self, now: float, delay: float, action: Callable[[], None]) -> None:
        self.pending.append((now + delay, action))

    # ----- the initial cluster -----
    def populate(self) -> None:
        for node in self.node_names:
            self.load(node_body(node))
            self.publish_cpu(node)
            self.load(mem_slice(node, 0, 1), mem_slice(node, 1, 1))
            self.generations[f"{node}-mem-0"] = self.generations[f"{node}-mem-1"] = 1
            for _ in range(2):
                self.add_bound_pod(node)
            self.add_bound_claim_pod(node)

    def publish_cpu(self, node: str, multiplier: str = "1") -> None:
        name = f"{node}-cpu"
        generation = self.generations.get(name, 0) + 1
        self.generations[name] = generation
        body = cpu_slice(node, generation, multiplier)
        if self.emulator.get_object(SLICES, name) is None:
            self.load(body)
        else:
            self.patch(SLICES, name, {"spec": body["spec"]})

    def publish_mem(self, node: str, index: int, generation: int) -> None:
        name = f"{node}-mem-{index}"
        self.generations[name] = max(generation, self.generations.get(name, 0))
        body = mem_slice(node, index, generation)
        if self.emulator.get_object(SLICES, name) is None:
            self.load(body)
        else:
            self.patch(SLICES, name, {"spec": body["spec"]})

    # ----- the operations -----
    def add_bound_pod(self, node: str | None = None) -> None:
        node = node or self.rng.choice(self.node_names)
        if self.emulator.get_object(NODES, node) is None:
            return
        cpu = self.rng.choice(["100m", "250m", "500m", "1"])
        self.load(pod_body(f"bound-{next(self.names)}", cpu, node=node))
        self._count("bound pods created")

    def add_bound_claim_pod(self, node: str | None = None) -> None:
        node = node or self.rng.choice(self.node_names)
        device = self.free_device(node, CPU)
        if device is None or self.emulator.get_object(NODES, node) is None:
            return
        name = f"held-{next(self.names)}"
        self.load(claim_body(name, allocation(node, CPU, device)), pod_body(name, "250m", node=node, claim=name))
        self._count("bound claim pods created")

    def add_gated_pod(self, now: float) -> None:
        name = f"gated-{next(self.names)}"
        gates = (FOREIGN_GATE, GATE) if self.rng.random() < 0.2 else (GATE,)
        affinity = None
        if self.rng.random() < 0.3:
            avoid = self.rng.choice(self.node_names)
            terms = [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn",
                                            "values": [avoid]}]}]
            if self.rng.random() < 0.5:
                terms.append({"matchFields": [{"key": "metadata.name", "operator": "In", "values": [avoid]}]})
            affinity = {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": terms}}}
        pod = pod_body(name, self.rng.choice(["100m", "250m"]), claim=name, gates=gates, affinity=affinity)
        kind = self.rng.choices(["pinned-cpu", "pinned-mem", "unallocated", "unseen"], [3, 2, 4, 2])[0]
        alloc = None
        if kind.startswith("pinned"):
            driver = CPU if kind == "pinned-cpu" else MEM
            node = self.rng.choice(self.node_names)
            device = self.free_device(node, driver)
            if device is None or self.emulator.get_object(NODES, node) is None:
                kind = "unallocated"
            else:
                alloc = allocation(node, driver, device)
        if kind == "unseen":
            self.load(pod)
            self.later(now, self.rng.uniform(0.3, 1.5), lambda: self.load(claim_body(name)))
        else:
            self.load(claim_body(name, alloc), pod)
        self._count(f"gated pods ({kind})")

    def schedule_released(self, now: float) -> None:
        """Bind each pod that no gate holds any more, as the scheduler would; drop foreign gates later."""
        nodes = {n["metadata"]["name"]: n for n in self.nodes()}
        claims = self.claims()
        for pod in self.live(PODS):
            spec = pod.get("spec") or {}
            if spec.get("nodeName") or not claim_names(pod):
                continue
            gates = gate_names(pod)
            name = pod["metadata"]["name"]
            if gates == [FOREIGN_GATE]:
                self.patch(PODS, name, {"spec": {"schedulingGates": None}}, namespace=NS)
                continue
            if gates:
                continue
            claim = claims.get(claim_names(pod)[0])
            if claim is None:
                continue
            alloc = (claim.get("status") or {}).get("allocation")
            allowed = [n for n in nodes.values() if affinity_allows(pod, n)]
            if alloc:
                allowed = [n for n in allowed if node_terms_allow(alloc["nodeSelector"]["nodeSelectorTerms"], n)]
            if not allowed:
                continue
            fits = [n["metadata"]["name"] for n in allowed
                    if self.fits(pod, claim, n["metadata"]["name"], None if alloc else self.free_device(
                        n["metadata"]["name"], CPU))]
            if not fits:
                continue  # nothing it fits on now: a scheduler keeps it pending
            node = self.rng.choice(fits)
            if not alloc:
                device = self.free_device(node, CPU)
                if device is None:
                    continue
                self.patch(CLAIMS, claim["metadata"]["name"], {"status": {"allocation": allocation(node, CPU, device)}},
                           namespace=NS, subresource="status")
            self.patch(PODS, name, {"spec": {"nodeName": node}}, namespace=NS)
            self.patch(PODS, name, {"status": {"phase": "Running"}}, namespace=NS, subresource="status")
            self._count("released pods bound")

    def fits(self, pod: dict[str, Any], claim: dict[str, Any], node: str, device: str | None) -> bool:
        """Whether the pod, bound to ``node`` with its claim (allocated on ``device`` if it is not yet), leaves
        the node's ledger (computed offline from the store, with the project's own rules) within allocatable, as
        kube-scheduler binds only what fits. Pods created bound and resizes still overcommit nodes."""
        if claim.get("status", {}).get("allocation") is None:
            if device is None:
                return False
            claim = {**claim, "status": {"allocation": allocation(node, CPU, device)}}
        bound = {**pod, "spec": {**pod["spec"], "nodeName": node}}
        items = [obj for plural in (NODES, SLICES, CLAIMS, PODS) for obj in self.live(plural)
                 if obj["metadata"]["uid"] not in (pod["metadata"]["uid"], claim["metadata"]["uid"])]
        ledger = load([*items, claim, bound], "churn").state.ledger(node)
        return ledger is not None and all(line.free_units >= 0 for line in ledger.resources.values())

    def delete_some_pod(self) -> None:
        pods = [p for p in self.live(PODS) if (p.get("spec") or {}).get("nodeName") or
                (p.get("status") or {}).get("phase") == "Succeeded"]
        if pods:
            pod = self.rng.choice(pods)
            self.delete(PODS, pod["metadata"]["name"], namespace=NS)
            self._count("pods deleted")

    def resize_some_pod(self) -> None:
        pods = [p for p in self.live(PODS) if (p.get("spec") or {}).get("nodeName")]
        if pods:
            pod = self.rng.choice(pods)
            containers = [dict(pod["spec"]["containers"][0])]
            containers[0]["resources"] = dict(containers[0]["resources"], requests={
                "cpu": self.rng.choice(["100m", "300m", "700m", "1500m"]), "memory": "256Mi"})
            self.patch(PODS, pod["metadata"]["name"], {"spec": {"containers": containers}}, namespace=NS)
            self._count("pods resized")

    def finish_some_pod(self) -> None:
        pods = [p for p in self.live(PODS) if (p.get("spec") or {}).get("nodeName")
                and (p.get("status") or {}).get("phase") == "Running"]
        if pods:
            pod = self.rng.choice(pods)
            self.patch(PODS, pod["metadata"]["name"], {"status": {"phase": "Succeeded"}}, namespace=NS,
                       subresource="status")
            self._count("pods finished")

    def delete_unused_claims(self) -> None:
        used = {c for p in self.live(PODS) for c in claim_names(p)}
        for name in sorted(set(self.claims()) - used):
            self.delete(CLAIMS, name, namespace=NS)
            self._count("claims deleted")

    def republish_cpu(self) -> None:
        node = self.rng.choice(self.node_names)
        if self.emulator.get_object(SLICES, f"{node}-cpu") is not None:
            self.publish_cpu(node, self.rng.choice(["1", "1", "2"]))
            self._count("cpu pools republished")

    def republish_mem(self, now: float) -> None:
        node = self.rng.choice(self.node_names)
        names = (f"{node}-mem-0", f"{node}-mem-1")
        if node in self.republishing or any(self.emulator.get_object(SLICES, n) is None for n in names):
            return  # one republication of a pool at a time: two would interleave into a regression
        generation = max(self.generations[n] for n in names) + 1
        first = self.rng.randrange(2)
        self.publish_mem(node, first, generation)
        self.republishing.add(node)

        def second() -> None:
            self.republishing.discard(node)
            self.publish_mem(node, 1 - first, generation)

        self.later(now, self.rng.uniform(0.2, 1.5), second)
        self._count("memory pools republished (incomplete meanwhile)")

    def flip_node(self, now: float) -> None:
        node = self.rng.choice(self.node_names)
        if self.emulator.get_object(NODES, node) is None:
            return

        def ready(status: str) -> Callable[[], None]:
            def apply() -> None:
                if self.emulator.get_object(NODES, node) is not None:
                    self.patch(NODES, node, {"status": {"conditions": [
                        {"type": "Ready", "status": status, "reason": "Faults"}]}}, subresource="status")
            return apply

        ready("False")()
        self.later(now, self.rng.uniform(1.5, 3.0), ready("True"))
        self._count("nodes NotReady for a while")

    def freeze_ledger(self, now: float) -> None:
        node = self.rng.choice(self.node_names)
        if self.emulator.get_object(LEDGERS, node) is None:
            return

        def frozen(value: bool) -> Callable[[], None]:
            def apply() -> None:
                if self.emulator.get_object(LEDGERS, node) is not None:
                    self.patch(LEDGERS, node, {"spec": {"frozen": value, "reason": "faults"}})
            return apply

        frozen(True)()
        self.later(now, self.rng.uniform(1.5, 3.0), frozen(False))
        self._count("ledgers frozen for a while")

    # ----- driving -----
    def due(self, now: float) -> None:
        ready = [item for item in self.pending if item[0] <= now]
        self.pending = [item for item in self.pending if item[0] > now]
        for _, action in sorted(ready, key=lambda item: item[0]):
            action()

    def step(self, now: float) -> None:
        """One burst of changes (and every delayed change that is due)."""
        self.due(now)
        self.schedule_released(now)
        crowded = len(self.live(PODS)) >= MAX_POD_COUNT
        operations: list[tuple[float, Callable[[], None]]] = [
            (4, lambda: self.add_gated_pod(now)),
            (0.5 if crowded else 2, self.add_bound_pod),
            (0.2 if crowded else 1, self.add_bound_claim_pod),
            (4 if crowded else 1.5, self.delete_some_pod),
            (1, self.resize_some_pod),
            (1, self.finish_some_pod),
            (0.7, self.delete_unused_claims),
            (0.8, self.republish_cpu),
            (0.6, lambda: self.republish_mem(now)),
            (0.5, lambda: self.flip_node(now)),
            (0.4, lambda: self.freeze_ledger(now)),
        ]
        weights = [w for w, _ in operations]
        for _ in range(self.rng.randint(1, 4)):
            self.rng.choices(operations, weights)[0][1]()

    def settle(self) -> None:
        """Apply every delayed change now (nodes Ready again, ledgers resumed, pools complete, claims made)."""
        while self.pending:
            self.due(float("inf"))

    def iter_gated(self) -> Iterator[dict[str, Any]]:
        return (p for p in self.live(PODS) if GATE in gate_names(p))
