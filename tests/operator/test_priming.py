"""Priming (operator.priming): our own paginated LIST before Kopf starts, and Kopf's watches resume from it.

The unit tests drive ``prime_kind`` against a scripted client; the others run the real operator (real Kopf,
real HTTP) against the emulator and check what it asked the server and what it ends up holding.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from draledger.demo.emulator import ClusterEmulator, serve_emulator
from draledger.operator import handlers, priming
from draledger.operator.config import OperatorConfig
from draledger.operator.metrics import Metrics
from draledger.operator.running import Operator
from draledger.operator.runtime import Runtime
from draledger.operator.stored import StoredLedgers
from tests.integration.harness import NODES, PODS, case_items, eventually, phase_is, running, status

KIND = {"Node": "nodes", "Pod": "pods", "ResourceSlice": "resourceslices", "ResourceClaim": "resourceclaims"}


def lists(emulator: ClusterEmulator, plural: str) -> list[Any]:
    """The LIST (not WATCH) requests the emulator served for a resource, in order."""
    return [
        r for r in emulator["get"]
        if r.resource is not None and r.resource.plural == plural and r.name is None and "watch" not in r.params
    ]


def watches(emulator: ClusterEmulator, plural: str) -> list[Any]:
    return [r for r in emulator["get"] if r.resource is not None and r.resource.plural == plural
            and "watch" in r.params]


class ScriptedApi:
    """``list_pages`` answers from a script: one entry per attempt, a list of pages or an exception."""

    def __init__(self, attempts: list[list[list[dict[str, Any]]] | Exception]) -> None:
        self.attempts = attempts

    async def list_pages(
        self, path: str, decode: Callable[[bytes], Any], *, limit: int, attempts: int | None = None, **params: str
    ) -> AsyncIterator[tuple[list[dict[str, Any]], str]]:
        script = self.attempts.pop(0)
        if isinstance(script, Exception):
            raise script
        for page in script:
            yield page, "77"


class TestPrimeKind:
    async def test_a_failed_attempt_is_listed_again_and_what_it_alone_read_is_forgotten(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A LIST that breaks after its first page starts over; a pod only that page held does not linger."""
        no_wait = asyncio.sleep
        monkeypatch.setattr(asyncio, "sleep", lambda _: no_wait(0))
        pods = [i for i in case_items("v08") if i["kind"] == "Pod"]

        class Broken(list[dict[str, Any]]):
            def __iter__(self) -> Any:
                yield from pods[:2]
                raise ConnectionError("connection reset")

        runtime = Runtime(OperatorConfig(), Metrics(), lambda: 0.0)
        api = ScriptedApi([[Broken()], [pods[1:]]])

        counts: dict[str, int] = {}
        await priming.prime_all(runtime, api, {"pods": "/api/v1/pods"}, {"pods": {}}, counts)  # type: ignore[arg-type]

        assert {"pods": 2} == counts
        assert {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods[1:]} == set(runtime.state.pods)
        runtime.priming_done.set()
        assert "77" == await runtime.resume_from("pods")
        assert None is await runtime.resume_from("pods")  # taken once: a later Kopf listing is a real one

    async def test_a_refused_kind_does_not_keep_the_others_unlisted(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Claims LISTs refused: pods (and the gated pods among them) are listed meanwhile, claims once they
        answer; each kind is complete when priming ends."""
        rounds: list[set[str]] = []
        no_wait = asyncio.sleep

        async def next_round(_: float) -> None:
            rounds.append({"pods"} if runtime.state.pods else set())
            await no_wait(0)

        monkeypatch.setattr(asyncio, "sleep", next_round)
        items = case_items("v08")
        pods = [i for i in items if i["kind"] == "Pod"]
        claims = [i for i in items if i["kind"] == "ResourceClaim"]

        class ByPath:
            def __init__(self) -> None:
                self.apis = {"/pods": ScriptedApi([[pods]]),
                             "/claims": ScriptedApi([ConnectionError("503"), ConnectionError("503"), [claims]])}

            def list_pages(self, path: str, *args: Any, **kwargs: Any) -> Any:
                return self.apis[path].list_pages(path, *args, **kwargs)

        runtime = Runtime(OperatorConfig(), Metrics(), lambda: 0.0)
        counts: dict[str, int] = {}
        await priming.prime_all(runtime, ByPath(), {"resourceclaims": "/claims", "pods": "/pods"},  # type: ignore[arg-type]
                                {"resourceclaims": {}, "pods": {}}, counts)

        assert [{"pods"}, {"pods"}] == rounds  # the pods were in the state while the claims were refused
        assert {"pods": len(pods), "resourceclaims": len(claims)} == counts
        assert {"pods": "77", "resourceclaims": "77"} == runtime.primed

    async def test_a_list_without_a_version_leaves_the_kind_to_kopf(self) -> None:
        """No resourceVersion to resume from: nothing primed stays, and Kopf lists the kind itself."""
        pods = [i for i in case_items("v08") if i["kind"] == "Pod"]

        class NoVersion(ScriptedApi):
            async def list_pages(self, *args: Any, **kwargs: Any) -> AsyncIterator[tuple[list[dict[str, Any]], str]]:
                yield pods, ""

        runtime = Runtime(OperatorConfig(), Metrics(), lambda: 0.0)

        assert 0 == await priming.prime_kind(runtime, NoVersion([]), "pods", "/api/v1/pods", {})  # type: ignore[arg-type]
        assert not runtime.state.pods
        runtime.priming_done.set()
        assert None is await runtime.resume_from("pods")

    def test_pages_msgspec_refuses_are_read_by_json(self) -> None:
        """An integer beyond 64 bits is valid JSON: the page is still read, as Kopf's client reads it."""
        assert {"items": [{"n": 2**70}]} == priming.decode(b'{"items": [{"n": %d}]}' % 2**70)


class TestPrimedOperator:
    async def test_kopf_lists_nothing_itself_and_its_watches_resume_from_our_list(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """One paginated LIST per kind (ours, pods filtered as Kopf's are); Kopf's watches start at its version;
        the ledgers are the same as ever, and an event after the start still reaches them."""
        monkeypatch.setattr(priming, "PAGE", 2)
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(case_items("v08"))
            async with running(url) as operator:
                await eventually(phase_is(emulator, "n1", "Ready"))
                for kind in KIND.values():  # every LIST is ours
                    agents = [r.headers.get("User-Agent", "") for r in lists(emulator, kind)]
                    assert agents, kind
                    assert all(agent.startswith("draledger/") for agent in agents), (kind, agents)
                    assert [] == [r for r in watches(emulator, kind) if "resourceVersion" not in r.params]
                pod_lists = lists(emulator, "pods")
                assert 2 == len(pod_lists)  # 3 pods, 2 per page
                assert all("status.phase!=Succeeded" in r.params.get("fieldSelector", "") for r in pod_lists)
                assert operator.runtime.rebuilt.is_set()
                assert {"p1", "p2", "p3"} <= {name for _, name in operator.runtime.state.pods}
                before = status(emulator, "n1")["ledgerVersion"]
                emulator.delete_object(PODS, "p1", namespace=case_items("v08")[7]["metadata"].get("namespace"))
                await eventually(lambda: status(emulator, "n1")["ledgerVersion"] > before, what="a new write")

    async def test_a_deletion_compacted_away_before_the_watch_starts_is_still_forgotten(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Our pod list's version is too old for the watch (410 Gone): Kopf lists pods again, in pages as ours
        are, and a pod deleted between our LIST and the watch, whose DELETED event nobody will send, leaves
        the state."""
        pods = [i for i in case_items("v08") if i["kind"] == "Pod"]
        gone = pods[0]["metadata"]
        emulator = ClusterEmulator(journal_limit=2)
        primed = Operator._prime

        async def prime_then_churn(self: Operator) -> None:
            await primed(self)
            assert (gone["namespace"], gone["name"]) in self.runtime.state.pods
            emulator.delete_object(PODS, gone["name"], namespace=gone["namespace"])
            for n in range(3):  # more changes than the journal keeps: the pods' version is compacted away
                emulator.patch_object(NODES, "n3", {"metadata": {"labels": {"churn": str(n)}}})
                emulator.patch_object(PODS, pods[2]["metadata"]["name"], {"metadata": {"labels": {"c": str(n)}}},
                                      namespace=pods[2]["metadata"]["namespace"])

        monkeypatch.setattr(Operator, "_prime", prime_then_churn)
        monkeypatch.setattr(handlers, "PAGE", 1)
        async with serve_emulator(emulator=emulator) as (emulator, url):
            emulator.load_objects(case_items("v08"))
            async with running(url) as operator:
                await eventually(operator.runtime.rebuilt.is_set, what="the rebuild")
                await eventually(lambda: len(lists(emulator, "pods")) >= 2, what="Kopf's relist of pods")
                await eventually(lambda: (gone["namespace"], gone["name"]) not in operator.runtime.state.pods,
                                 what="the deleted pod forgotten")
                relist = [r for r in lists(emulator, "pods") if not r.headers.get("User-Agent", "").startswith(
                    "draledger/")]
                assert len(relist) == len(pods) - 1  # the two pods left, one per page
                assert all(r.params.get("limit") == "1" for r in relist)
                assert "continue" in relist[-1].params


class TestLedgerStream:
    async def test_each_ledger_event_reaches_the_stored_mirror_once_at_the_stream(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The ledgers' events (our own writes coming back) go to the writer's mirror of what is stored from the
        stream, not through Kopf's per-event processing as well: no event is applied twice, and a write still
        comes back."""
        seen: list[tuple[str | None, str]] = []
        callers: set[str] = set()
        original = StoredLedgers.ledger_event

        def ledger_event(self: StoredLedgers, event_type: str | None, body: Any) -> None:
            seen.append((event_type, str((body.get("metadata") or {}).get("resourceVersion"))))
            callers.add(sys._getframe(1).f_code.co_name)  # the stream's wrapper, or Kopf's handler
            original(self, event_type, body)

        monkeypatch.setattr(StoredLedgers, "ledger_event", ledger_event)
        async with serve_emulator() as (emulator, url):
            emulator.load_objects(case_items("v08"))
            async with running(url) as operator:
                await eventually(phase_is(emulator, "n1", "Ready"))
                written = str(emulator.get_object("draledger.dev/v1alpha1/nodeallocatableledgers", "n1")
                              ["metadata"]["resourceVersion"])
                await eventually(lambda: any(rv == written for _, rv in seen), what="the write's own event")
                assert operator.writer.stored.of("n1").resource_version == written
        assert len(seen) == len(set(seen))
        assert {"take"} == callers  # watching.Hooks.take, at the stream
