"""The fault suite (issue 13): the real operator process against the API server, faults fired during churn.

Each scenario builds a fresh 4-node cluster in the emulator (served from this process on 127.0.0.1), starts
``draledger run`` as a separate process (tests/faults/process.py), runs the seeded churn of
tests/faults/churn.py while its faults fire, and then (:meth:`World.finish`) checks what
tests/faults/checks.py describes: every gate removal judged against the store at that moment, versions that
never decrease, no edit beyond the operator's own, the ledgers equal to ``audit`` of the store, no write in
a quiet window afterwards (but one Event a held pod, for a reason it was not told last: the end of a backlog), and
no pod still held for a transient reason.

Scenarios (each run once per seed, ``DRALEDGER_FAULT_SEEDS``):
- ``sigkill-churn``: SIGKILL of the process group three times during churn, restarted 0.1 to 0.8 s later.
- ``sigkill-rebuild``: ledgers written once, then two starts each killed during the rebuild (``/readyz``
  still 503; the first LISTs of pods fail twice so that the rebuild lasts a second or two), then a clean
  start. Every start marks the stored ledgers Rebuilding with the next ledgerVersion.
- ``write-errors``: 409, 422, 429 (Retry-After: 1), 500 and 503 on every kind of write the operator makes
  (ledger create, ledger status patch, pod gate removal, pod status backfill, Events), one at a time per
  kind (the five kinds at once), each waited for until it fired; ledgers are deleted behind the operator's
  back so that creates happen. Last, a ledger deleted in a quiet cluster, its re-creation answered 409.
- ``watch-gaps``: for each watched kind in turn, its stream cut and its watch failing (503 twice: Kopf
  retries for 1.5 s; then 410 Gone, so the operator relists) while changes of that kind are made (a node NotReady, pods
  deleted and created, a slice deleted, a claim deleted, a ledger frozen).
- ``short-journal``: the churn at 5 to 20 ms a burst against a watch journal of 12 changes; every stream cut
  four times, so each reconnection is answered 410 Gone and the operator relists under churn.
- ``watch-errors``: for each watched kind, an ERROR event in its stream (410 Gone or 500), then a 500 or 503
  answer to its reconnection.
- ``shuffle``: duplicated and reordered events (never two of one object) on all five watched kinds.
- ``apiserver-restart``: the API server stopped twice (1 to 2 s, then 5.2 to 6 s: longer than the 5 s
  freshness window) and started again on the same port with the same store; the churn goes on meanwhile.
- ``slices``: a cpu slice deleted and republished later, a memory slice deleted (its pool incomplete) and
  republished, and a pool regressed to an older generation after the operator saw the newer one (kept
  regressed to the end, across a SIGKILL and restart: convergence accounts for the refused regression).
- ``node-gap``: a Node deleted (its pods a moment later) and another turned NotReady while the nodes watch
  is failing (3.5 s), ending in 410.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from draledger.demo.emulator import ClusterEmulator
from tests.faults.objects import CLAIMS, LEDGERS, NODES, NS, PODS, SLICES, cpu_slice
from tests.faults.report import ORDER, Run, seeds
from tests.faults.world import World, poll

CODES = (409, 422, 429, 500, 503)
EVENTS = "v1/events"
KINDS = (NODES, PODS, SLICES, CLAIMS, LEDGERS)
SIGKILL_CHURN = "SIGKILL + restart during churn"
SIGKILL_REBUILD = "SIGKILL during the rebuild"
WRITES = {
    "ledger create": (LEDGERS, "create", "any"),
    "ledger status patch": (LEDGERS, "patch", "status"),
    "pod gate removal": (PODS, "patch", "main"),
    "pod status backfill": (PODS, "patch", "status"),
    "Events": (EVENTS, "create", "any"),
}


def retry_after(code: int) -> int | None:
    return 1 if code == 429 else None


def pending(emulator: ClusterEmulator, resource: str, kind: str) -> int:
    return emulator.faults.pending(emulator.require(resource).resource, kind)


def slow_rebuild(emulator: ClusterEmulator, times: int = 2) -> None:
    """The next LISTs of pods fail (Kopf retries after 0.5 and 1 s): a rebuild of a second or two."""
    emulator.faults.clear()  # what the last process killed did not take
    emulator.inject_list_error(PODS, 503, times=times)


def watch_gap(emulator: ClusterEmulator, resource: str, failures: int = 2) -> None:
    """Cut the resource's watch; it fails ``failures`` times, then ends in 410 Gone (the operator relists)."""
    emulator.inject_watch_error(resource, 503, times=failures, as_event=False)
    emulator.inject_watch_error(resource, 410)
    emulator.inject_disconnect(resource)


async def gap_over(world: World, resource: str) -> None:
    await poll(lambda: pending(world.emulator, resource, "watch") == 0, within=20, what=f"the {resource} gap")


# ----- scenarios -----

async def sigkill_churn(world: World) -> None:
    world.start()
    await world.ready()
    async with world.churning():
        for _ in range(3):
            await world.pause(world.rng.uniform(0.6, 1.6))
            world.kill()
            world.fault(SIGKILL_CHURN)
            await world.pause(world.rng.uniform(0.1, 0.8))
            world.start()
        await world.ready()
        await world.pause(1.0)


async def sigkill_rebuild(world: World) -> None:
    world.start()
    await world.ready()
    async with world.churning():
        world.kill()
        for _ in range(2):
            slow_rebuild(world.emulator)
            process = world.start()
            await poll(lambda: process.readyz(), within=30, what="the probe server")  # noqa: B023
            await world.pause(world.rng.uniform(0.1, 1.0))
            if await process.readyz() == 503:
                world.fault(SIGKILL_REBUILD)
            else:
                world.fault(SIGKILL_CHURN)
            world.kill()
        world.start()
        await world.ready()
        await world.pause(1.0)


async def write_errors(world: World) -> None:
    emulator = world.emulator
    for code in CODES:
        emulator.inject_create_error(LEDGERS, code, retry_after=retry_after(code))
    world.fault("409/422/429/500/503 on ledger create", len(CODES))
    world.start()
    await world.ready()

    async def one_kind(label: str) -> None:
        resource, verb, target = WRITES[label]
        kind = verb if target == "any" else f"{verb}:{target}"
        for code in world.rng.sample(CODES, len(CODES)):
            if label == "ledger create":
                emulator.inject_create_error(LEDGERS, code, retry_after=retry_after(code))
                node = world.rng.choice([n for n in world.churn.node_names
                                         if emulator.get_object(LEDGERS, n) is not None] or ["-"])
                if node != "-":
                    world.churn.delete(LEDGERS, node)
            elif verb == "create":
                emulator.inject_create_error(resource, code, retry_after=retry_after(code))
            else:
                emulator.inject_patch_error(resource, code, retry_after=retry_after(code), target=target)  # type: ignore[arg-type]
            await poll(lambda: pending(emulator, resource, kind) == 0, within=15,
                       what=f"{code} on {label} to fire")
            world.fault(f"409/422/429/500/503 on {label}")
            await world.pause(world.rng.uniform(0.1, 0.4))

    async with world.churning():
        await asyncio.gather(*(one_kind(label) for label in WRITES))
        await world.pause(1.0)
    # Last: a quiet cluster, a ledger deleted behind the operator's back, its re-creation answered 409.
    node = world.churn.node_names[0]
    await poll(lambda: emulator.get_object(LEDGERS, node), within=15, what=f"the ledger of {node}")
    emulator.inject_create_error(LEDGERS, 409)
    world.churn.delete(LEDGERS, node)
    await poll(lambda: pending(emulator, LEDGERS, "create") == 0, within=15, what="the last 409 to fire")
    world.fault("409/422/429/500/503 on ledger create")


async def watch_gaps(world: World) -> None:
    world.start()
    await world.ready()
    churn = world.churn

    def pods_changed(now: float) -> None:
        churn.delete_some_pod()
        churn.add_bound_pod()
        churn.add_gated_pod(now)

    changes: dict[str, Callable[[float], None]] = {
        NODES: churn.flip_node,
        PODS: pods_changed,
        SLICES: lambda now: churn.delete(SLICES, f"{world.rng.choice(churn.node_names)}-mem-1"),
        CLAIMS: lambda now: churn.delete_unused_claims(),
        LEDGERS: churn.freeze_ledger,
    }
    async with world.churning():
        for resource in KINDS:
            await world.pause(0.5)
            watch_gap(world.emulator, resource)
            changes[resource](time_now())
            world.fault(f"watch gap ending in 410: {resource.rsplit('/', 1)[1]}")
            await gap_over(world, resource)
            if resource == SLICES:  # the deleted memory slices come back
                for node in churn.node_names:
                    if world.emulator.get_object(SLICES, f"{node}-mem-1") is None:
                        churn.publish_mem(node, 1, churn.generations[f"{node}-mem-0"])
        await world.pause(1.0)


async def short_journal(world: World) -> None:
    """Fast churn against a watch journal of a few changes: every reconnection is answered 410 Gone, and the
    operator relists, again and again, while gated pods come and go."""
    world.start()
    await world.ready()
    async with world.churning():
        for _ in range(4):
            await world.pause(world.rng.uniform(0.5, 1.0))
            for resource in KINDS:
                world.emulator.inject_disconnect(resource)
            world.fault("watch journal outrun: 410 relists under fast churn")
        await world.pause(1.0)


async def watch_errors(world: World) -> None:
    """ERROR events inside the watch streams (410 Gone, 500) and 5xx answers to the reconnections."""
    world.start()
    await world.ready()
    async with world.churning():
        for resource in KINDS:
            await world.pause(world.rng.uniform(0.3, 0.8))
            code = world.rng.choice((410, 500))
            world.emulator.inject_watch_error(resource, code, as_event=True)
            world.emulator.inject_watch_error(resource, world.rng.choice((500, 503)), as_event=False)
            world.fault("watch ERROR events and 5xx on reconnection")
            await poll(lambda: pending(world.emulator, resource, "watch") == 0, within=20,  # noqa: B023
                       what=f"the {resource} watch errors to fire")
        await world.pause(1.0)


async def shuffle(world: World) -> None:
    world.start()
    await world.ready()
    shuffles = [world.emulator.inject_watch_shuffle(resource, events=400, seed=world.seed * 31 + index)
                for index, resource in enumerate(KINDS)]
    async with world.churning():
        await world.pause(5.0)
    world.fault("duplicated and reordered events", sum(s.duplicated + s.swapped for s in shuffles))


async def apiserver_restart(world: World) -> None:
    world.start()
    await world.ready()
    async with world.churning():
        for seconds in (world.rng.uniform(1.0, 2.0), world.rng.uniform(5.2, 6.0)):
            await world.pause(world.rng.uniform(0.8, 1.5))
            await world.server.stop()
            world.fault("API server stopped and restarted")
            await world.pause(seconds)
            await world.server.start()
        await world.ready()
        await world.pause(1.5)


async def slices(world: World) -> None:
    world.start()
    await world.ready()
    churn, emulator = world.churn, world.emulator
    cpu_node, mem_node, regressed_node = world.rng.sample(churn.node_names, 3)
    async with world.churning():
        await world.pause(0.8)
        churn.delete(SLICES, f"{cpu_node}-cpu")
        churn.delete(SLICES, f"{mem_node}-mem-0")
        world.fault("ResourceSlice deleted", 2)
        await world.pause(world.rng.uniform(2.0, 3.0))
        churn.publish_cpu(cpu_node)
        churn.publish_mem(mem_node, 0, churn.generations[f"{mem_node}-mem-1"] + 1)
        churn.publish_mem(mem_node, 1, churn.generations[f"{mem_node}-mem-0"])
        # The regression: a newer generation, seen by the operator (its mapping changes), then an older one.
        name = f"{regressed_node}-cpu"
        churn.node_names.remove(regressed_node)  # the churn leaves this pool alone from now on
        before = (emulator.get_object(LEDGERS, regressed_node) or {}).get("status", {}).get("mappingVersion", 0)
        generation = churn.generations[name] + 1
        churn.generations[name] = generation
        churn.patch(SLICES, name, {"spec": cpu_slice(regressed_node, generation, "3")["spec"]})
        await poll(lambda: (emulator.get_object(LEDGERS, regressed_node) or {}).get("status", {}).get(
            "mappingVersion", 0) > before, within=15, what="the operator to see the newer generation")
        churn.patch(SLICES, name, {"spec": cpu_slice(regressed_node, generation - 1, "1")["spec"]})
        world.fault("pool generation regressed")
        await poll(lambda: (emulator.get_object(LEDGERS, regressed_node) or {}).get("status", {}).get(
            "rejectedSlices"), within=15, what="the refusal on the ledger")
        await world.pause(0.5)
        world.kill()
        world.fault(SIGKILL_CHURN)
        await world.pause(0.3)
        world.start()
        await world.ready()
        await world.pause(1.0)
    # The pool stays regressed (and left alone by the churn): the end state keeps the refusal.


async def node_gap(world: World) -> None:
    world.start()
    await world.ready()
    churn, emulator = world.churn, world.emulator
    gone = world.rng.choice(churn.node_names)
    async with world.churning():
        await world.pause(1.0)
        watch_gap(emulator, NODES, failures=3)
        churn.node_names.remove(gone)
        churn.delete(NODES, gone)
        churn.flip_node(time_now())
        world.fault("Node deleted during a nodes-watch gap")
        await world.pause(1.0)
        for pod in churn.live(PODS):  # the pod garbage collector's part
            if (pod.get("spec") or {}).get("nodeName") == gone:
                churn.delete(PODS, pod["metadata"]["name"], namespace=NS)
        await gap_over(world, NODES)
        await world.pause(1.5)
    assert emulator.get_object(LEDGERS, gone) is None


def time_now() -> float:
    return asyncio.get_running_loop().time()


SCENARIOS: dict[str, Callable[[World], Awaitable[None]]] = {
    "sigkill-churn": sigkill_churn,
    "sigkill-rebuild": sigkill_rebuild,
    "write-errors": write_errors,
    "watch-gaps": watch_gaps,
    "short-journal": short_journal,
    "watch-errors": watch_errors,
    "shuffle": shuffle,
    "apiserver-restart": apiserver_restart,
    "slices": slices,
    "node-gap": node_gap,
}


WORLDS: dict[str, dict[str, Any]] = {  # a scenario's world, where it is not the default
    "short-journal": {"journal_limit": 12, "pace": (0.005, 0.02)},
}


@pytest.mark.parametrize("seed", seeds(), ids=lambda seed: f"seed{seed}")
@pytest.mark.parametrize("scenario", list(SCENARIOS), ids=list(SCENARIOS))
async def test_the_operator_survives(scenario: str, seed: int, tmp_path: Path, record: list[Run]) -> None:
    """After the scenario's faults, no wrong release, no version back, ledgers equal audit, no request loop."""
    started = time.monotonic()
    async with World(seed, tmp_path, **WORLDS.get(scenario, {})) as world:
        try:
            await SCENARIOS[scenario](world)
            outcome = await world.finish()
        except BaseException:
            print(world.ops.tails())
            raise
        assert set(outcome.faults) <= set(ORDER), "a fault the report does not list"
        record.append(Run(scenario, seed, outcome, time.monotonic() - started))
        if not outcome.survived:
            print(world.ops.tails())
        assert [] == outcome.wrong, "\n".join(outcome.wrong)
        assert [] == outcome.wrong_by_record, "\n".join(outcome.wrong_by_record)
        assert [] == outcome.problems, "\n".join(outcome.problems)
