"""The demo's story: six scripted steps against the emulated cluster, with the real operator running.

Rules:
1. Every step acts on the cluster as a Kubernetes component would (a driver deletes or republishes its
   ResourceSlice, an admin freezes a node, the API server admits gated pods, the scheduler places the pods
   the operator released: :mod:`draledger.demo.acting`) and then waits for the operator's answer by polling
   with a deadline (:mod:`draledger.demo.waiting`). A missed deadline ends the demo with exit status 1 and
   says what did not happen.
2. The operator plays itself: nothing here writes a ledger status or removes a gate.
3. SIGINT/SIGTERM stop the story (exit 130) or, once it has finished with ``serve``, the serving
   (:mod:`draledger.demo.serving`, exit 0).

What is read lives in :mod:`draledger.demo.observing`, what is printed in :mod:`draledger.demo.frames`.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
from typing import Any, Final

from draledger.commands.report import write_svg
from draledger.core.phases import Phase
from draledger.demo import cluster, objects
from draledger.demo.acting import Components
from draledger.demo.emulator import ClusterEmulator
from draledger.demo.frames import Board
from draledger.demo.observing import CLAIMS, LEDGERS, SLICES, Observer
from draledger.demo.screen import Screen
from draledger.demo.serving import serve
from draledger.demo.waiting import DemoFailed, Pacer, Stopped
from draledger.operator import clocks
from draledger.operator.running import Operator

__all__ = ["Story"]

VANISHING: Final = "worker-2"
FREEZING: Final = "worker-3"
STATUSES_FIELD: Final = "nodeAllocatableResourceClaimStatuses"


def now() -> datetime.datetime:
    return clocks.now()


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
        self.serve = serve
        self.kubeconfig = kubeconfig
        self.svg = svg
        self.observer = Observer(emulator, operator)
        self.board = Board(self.observer, screen)
        self.pacer = Pacer(self.board, fast=fast)
        self.components = Components(emulator, self.observer, self.board, self.pacer)
        self.gone: dict[str, Any] | None = None  # the ResourceSlice that vanishes, to republish it
        self.claims_listable = asyncio.Event()  # until set, the API fails every ResourceClaim LIST

    # --- the steps ----------------------------------------------------------------------------------

    async def step_rebuild(self) -> None:
        self.board.begin(
            "The operator starts: ledgers Rebuilding, new claim pods held",
            "3 nodes x 2 NUMA zones; drivers cpu.dra.example.com (16 cores, 2 cpu each),",
            "gpu.dra.example.com (2 GPUs, 16Gi host memory + 2 cpu each), mem.dra.example.com (2Mi hugepages).",
            "The ledgers below are from the operator's previous run. Two claim pods arrived while it was down,",
            "gated by the webhook. The API fails the operator's ResourceClaim LISTs (injected) until this step",
            "is shown: the rebuild cannot complete, and nothing is released before every object is counted.",
        )
        self.emulator["list resource.k8s.io/v1/resourceclaims"][self.claims_unlistable] << 500
        self.pacer.task = asyncio.create_task(self.operator.run(), name="draledger-operator")
        await self.pacer.until("every ledger Rebuilding", self.observer.phase_is(Phase.REBUILDING))
        pending, observer = ("ml/notebook-a", "batch/nightly-etl"), self.observer
        await self.pacer.until(
            "both new pods held, reason Rebuilding",
            lambda: all(observer.held_for(key, "Rebuilding")() for key in pending)
            and observer.gauge("Rebuilding") == 2,
        )
        await self.pacer.end_step()
        self.claims_listable.set()

    def claims_unlistable(self) -> bool:
        """The criterion of the injected LIST failure (a kmock DSL filter)."""
        return not self.claims_listable.is_set()

    async def step_ready(self) -> None:
        self.board.begin(
            "Rebuilt: every ledger Ready, the gates open",
            "Every object is counted again; mappingVersion survives the restart. batch/legacy-etl was bound",
            "before the gate was on: the scheduler never charged its 8-cpu claim, so the operator backfills",
            "its status.nodeAllocatableResourceClaimStatuses (SCHEDULER Diverged -> InSync).",
        )
        await self.pacer.until("the rebuild is complete", self.operator.runtime.rebuilt.is_set)
        await self.pacer.until("every ledger Ready", self.observer.phase_is(Phase.READY))
        kept = ", ".join(f"{node}={self.observer.status(node).get('mappingVersion')}" for node in objects.NODES)
        self.board.note(f"mappingVersion read back from the stored ledgers, unchanged mappings: {kept}")
        await self.pacer.until(
            "batch/legacy-etl backfilled",
            lambda: bool(self.observer.pod("batch/legacy-etl").get("status", {}).get(STATUSES_FIELD)),
        )
        backfilled = self.observer.pod("batch/legacy-etl")["status"][STATUSES_FIELD][0]
        charged = ", ".join(f"{k}={v}" for k, v in backfilled["resources"].items())
        self.board.note(f"backfilled batch/legacy-etl: {charged}")
        await self.pacer.until(
            "worker-3 SchedulerInSync",
            lambda: any(c.get("type") == "SchedulerInSync" and c.get("status") == "True"
                        for c in self.observer.status("worker-3").get("conditions") or []),
        )
        await self.components.release_and_place("ml/notebook-a", "batch/nightly-etl")
        await self.pacer.until("every ledger Ready", self.observer.phase_is(Phase.READY))
        await self.pacer.end_step()

    async def step_vanish(self) -> None:
        name = f"{VANISHING}-gpu.dra.example.com"
        self.board.begin(
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
        await self.pacer.until(f"{VANISHING} Stale", self.observer.phase_is(Phase.STALE, VANISHING))
        problems = self.observer.status(VANISHING).get("problems") or []
        for problem in problems[:2]:
            self.board.note(f"{VANISHING}: {problem.get('reason')}: {problem.get('message')}")
        slices = [*self.observer.live(SLICES), self.gone]  # the claim was allocated while the slice still existed
        await self.components.admit(cluster.later_pods("stale", now(), slices, list(self.observer.live(CLAIMS))))
        await self.pacer.until(
            "ml/inference-1 held: ClaimUnresolved", self.observer.held_for("ml/inference-1", "ClaimUnresolved")
        )
        await self.components.release_and_place("web/report-1")
        await self.pacer.end_step()

    async def step_return(self) -> None:
        self.board.begin(
            "The slice returns: Ready again, the held pod goes",
            "The driver republishes its ResourceSlice. The claim resolves again, mappingVersion moves on,",
            f"{VANISHING} is Ready, and ml/inference-1 is released, pinned to the node of its claim.",
        )
        assert self.gone is not None
        back = {k: v for k, v in self.gone.items() if k in ("apiVersion", "kind", "spec")}
        name = self.gone["metadata"]["name"]
        back["metadata"] = {
            "name": name,
            "uid": objects.uid("ResourceSlice", "", name, "republished"),
            "ownerReferences": self.gone["metadata"].get("ownerReferences", []),
        }
        self.emulator.load_objects([back])
        await self.pacer.until(f"{VANISHING} Ready", self.observer.phase_is(Phase.READY, VANISHING))
        await self.components.release_and_place("ml/inference-1")
        await self.pacer.end_step()

    async def step_freeze(self) -> None:
        self.board.begin(
            f"Freeze {FREEZING}: new claim pods stay gated",
            f"An admin freezes {FREEZING} for a GPU driver upgrade (spec.frozen, as `draledger freeze` does).",
            "Bound pods are untouched; ml/trainer-1, whose claim is allocated there, is held.",
        )
        self.emulator.patch_object(LEDGERS, FREEZING, {"spec": {"frozen": True, "reason": "GPU driver upgrade"}})
        await self.pacer.until(f"{FREEZING} Frozen", self.observer.phase_is(Phase.FROZEN, FREEZING))
        slices, claims = list(self.observer.live(SLICES)), list(self.observer.live(CLAIMS))
        await self.components.admit(cluster.later_pods("frozen", now(), slices, claims))
        await self.pacer.until(
            "ml/trainer-1 held: NodeUnavailable", self.observer.held_for("ml/trainer-1", "NodeUnavailable")
        )
        await self.pacer.end_step()

    async def step_resume(self) -> None:
        self.board.begin(
            f"Resume {FREEZING}: Ready, the last pod goes",
            "The upgrade is done (`draledger resume`): the ledger is Ready and ml/trainer-1 is released.",
        )
        self.emulator.patch_object(LEDGERS, FREEZING, {"spec": {"frozen": False, "reason": None}})
        await self.pacer.until(f"{FREEZING} Ready", self.observer.phase_is(Phase.READY, FREEZING))
        await self.components.release_and_place("ml/trainer-1")
        ready = self.observer.phase_is(Phase.READY)
        await self.pacer.until("every ledger Ready, no pod held", lambda: ready() and not self.observer.held())
        await self.pacer.end_step()

    # --- running ------------------------------------------------------------------------------------

    def final(self) -> None:
        self.board.final(self.pacer.elapsed())
        if self.svg:
            try:
                write_svg(self.svg, self.observer.ledgers())
            except OSError as error:  # checked before the story (preflight), but the disk may fill up since
                raise DemoFailed(f"cannot write --svg {self.svg}: {error.strerror or error}") from None
            self.screen.say(f"wrote {self.svg}")

    async def run(self) -> int:
        pacer, screen = self.pacer, self.screen
        pacer.install_signals()
        screen.start()
        screen.say(f"draledger demo: embedded Kubernetes API at {self.url}, the real operator against it.")
        screen.say("")
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
                    await serve(pacer, screen, self.url, self.kubeconfig)
                except Stopped:
                    screen.say("\nStopping.")
        except Stopped:
            self.board.commit()
            screen.say("Interrupted.")
            code = 130
        except DemoFailed as error:
            self.board.commit()
            screen.say(f"error: {error}")
            code = 1
        finally:
            screen.stop()
            await self.shutdown()
            pacer.remove_signals()
        return code

    async def shutdown(self) -> None:
        self.operator.stop.set()
        if self.pacer.task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self.pacer.task, timeout=20)
