"""The release in force (operator/releasing.py) against the emulator: ``/version`` read at start and after every
reconnection, and a control-plane upgrade seen while the operator runs."""

from __future__ import annotations

from typing import Any

from draledger.demo.emulator import ClusterEmulator, serve_emulator
from tests.integration.harness import PODS, case_items, eventually, phase_is, running, status

NODES = ("n1", "n2", "n3")


def release_events(emulator: ClusterEmulator) -> list[dict[str, Any]]:
    return [e for e in emulator.store.live(emulator.require("v1/events").resource) if e["reason"] == "ReleaseChanged"]


def releases(emulator: ClusterEmulator) -> dict[str, str]:
    return {node: status(emulator, node).get("release", "") for node in NODES}


class TestReleasing:
    async def test_the_first_reading_decides_the_rules(self) -> None:
        """A v1.37 server: every ledger follows v1.37's rules from its first write, and no Event says it changed."""
        async with serve_emulator(emulator=ClusterEmulator(server_version=(1, 37))) as (emulator, url):
            emulator.load_objects(case_items("v08"))
            async with running(url):
                for node in NODES:
                    await eventually(lambda node=node: status(emulator, node).get("phase"), what=f"{node}'s ledger")
                assert ({node: "v1.37" for node in NODES}, []) == (releases(emulator), release_events(emulator))

    async def test_an_upgrade_seen_after_a_reconnection_rewrites_every_ledger(self) -> None:
        """The server moves from v1.36 to v1.38 while the operator runs: after the next reconnection of a watch
        stream every ledger is written again under v1.38, and one ReleaseChanged Event names both releases."""
        async with serve_emulator(emulator=ClusterEmulator(server_version=(1, 36))) as (emulator, url):
            emulator.load_objects(case_items("v08"))
            async with running(url, watch_timeout=1) as operator:
                for node in NODES:
                    await eventually(phase_is(emulator, node, "Ready"))
                assert {node: "v1.36" for node in NODES} == releases(emulator)
                versions = {node: status(emulator, node)["ledgerVersion"] for node in NODES}
                emulator.server_version = (1, 38)
                emulator.inject_watch_error(PODS, 500)
                emulator.inject_disconnect(PODS)
                await eventually(lambda: releases(emulator) == {node: "v1.38" for node in NODES}, within=30,
                                 what="every ledger under v1.38")
                assert all(status(emulator, node)["ledgerVersion"] > versions[node] for node in NODES)
                events = await eventually(lambda: release_events(emulator), what="the ReleaseChanged Event")
                assert (["CustomResourceDefinition"], "v1.38") == (
                    [e["involvedObject"]["kind"] for e in events], operator.runtime.release)
                assert "(were v1.36's)" in events[0]["message"]

    async def test_a_reconnection_without_an_upgrade_changes_nothing(self) -> None:
        """The same release read again after a reconnection: no Event, the rules stay."""
        async with serve_emulator(emulator=ClusterEmulator(server_version=(1, 37))) as (emulator, url):
            emulator.load_objects(case_items("v08"))
            async with running(url, watch_timeout=1) as operator:
                await eventually(phase_is(emulator, "n1", "Ready"))
                reads = len([r for r in emulator["get"] if r.url.path == "/version"])
                emulator.inject_watch_error(PODS, 500)
                emulator.inject_disconnect(PODS)
                await eventually(lambda: len([r for r in emulator["get"] if r.url.path == "/version"]) > reads,
                                 within=30, what="/version read again")
                assert ([], "v1.37") == (release_events(emulator), operator.runtime.release)
