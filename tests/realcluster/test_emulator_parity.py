"""The emulator's behaviour tests, replayed over plain HTTP against the emulator and against kube-apiserver.

``Behaviours`` holds one test per standard API behaviour the project relies on (lists and pagination, watches
and resourceVersions, 410 Gone, conflicts, the status subresource, finalizers, owner-reference GC, selectors,
discovery, server-side Tables). ``TestEmulator`` runs them against ``draledger.demo.emulator`` (the fast run: no
marker), ``TestKubeApiserver`` against the real control plane of each release (the realcluster session), with
the ledger CRD applied. A test asserts the same answer on both, so the emulator is judged by the real server.

``Differences`` pins down, on both backends, each answer that differs: every one is listed in docs/emulator.md
("Differences from kube-apiserver") with why it does not matter to the project's tests, and fails here once
the emulator changes (so the table stays true). A behaviour the emulator gets wrong in a way that matters is a
``Behaviours`` test with an ``xfail(strict=True)`` override in ``TestEmulator``, to go when the emulator is fixed.

Rules: nothing relies on the emulator's internals (no store access, no fault injection); resourceVersions are
compared as numbers, never as literals; every name is unique, so tests share the real cluster; pods name a
scheduler that does not exist (kube-scheduler would write a condition to every pod it cannot place, a change
the test did not make); nothing sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest

from draledger.core.crds import PRINTER_COLUMNS
from draledger.demo.emulator import ClusterEmulator, serve_emulator
from tests.emulator.conftest import WatchStream
from tests.realcluster.cluster import ApiError, kubectl, wait_until
from tests.realcluster.launcher import ControlPlane
from tests.realcluster.releases import ROOT
from tests.realcluster.test_realcluster_crd import a_ledger

JSON = "application/json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
LEDGERS = "/apis/draledger.dev/v1alpha1/nodeallocatableledgers"
CRD = "nodeallocatableledgers.draledger.dev"
UNSCHEDULED = "parity-no-such-scheduler"  # module rule: no scheduler writes to the tests' pods
JOURNAL = 10  # the emulator's retained changes per resource (kube-apiserver's watch cache keeps more)
WITHIN = 30.0


# ------------------------------------------------------------------ one tiny client for both backends


@dataclass
class Backend:
    """JSON over HTTP to the emulator or to kube-apiserver (admin client certificate); cleans up after itself."""

    kind: str  # "emulator" or "kube-apiserver"
    session: aiohttp.ClientSession
    minor: int = 0  # kube-apiserver's release (38 for v1.38), where its answers differ between releases
    cluster_scoped: list[str] = field(default_factory=list)  # paths to delete afterwards
    namespaces: list[str] = field(default_factory=list)

    @property
    def real(self) -> bool:
        return self.kind == "kube-apiserver"

    async def call(self, method: str, path: str, body: Any = None, *, content_type: str = JSON,
                   params: dict[str, str] | None = None, accept: str = JSON) -> tuple[int, Any]:
        """The status and the decoded body (JSON, else the text)."""
        data = None if body is None else json.dumps(body)
        headers = {"Accept": accept, **({"Content-Type": content_type} if data is not None else {})}
        async with self.session.request(method, path, data=data, params=params, headers=headers) as response:
            text = await response.text()
        try:
            return response.status, json.loads(text)
        except ValueError:
            return response.status, text

    async def ok(self, method: str, path: str, body: Any = None, **kwargs: Any) -> dict[str, Any]:
        status, answer = await self.call(method, path, body, **kwargs)
        assert 200 <= status < 300, f"{method} {path}: {status} {answer}"
        assert isinstance(answer, dict)
        return answer

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        created = await self.ok("POST", path, body)
        if "namespace" not in created["metadata"]:
            self.cluster_scoped.append(f"{path}/{created['metadata']['name']}")
        return created

    async def get(self, path: str, **params: str) -> dict[str, Any]:
        return await self.ok("GET", path, params=params)

    async def merge(self, path: str, body: Any) -> dict[str, Any]:
        return await self.ok("PATCH", path, body, content_type=MERGE)

    async def json_patch(self, path: str, ops: list[dict[str, Any]]) -> dict[str, Any]:
        return await self.ok("PATCH", path, ops, content_type=JSON_PATCH)

    async def delete(self, path: str, body: Any = None) -> dict[str, Any]:
        return await self.ok("DELETE", path, body)

    @contextlib.asynccontextmanager
    async def watch(self, path: str, params: dict[str, str] | None = None) -> AsyncIterator[WatchStream]:
        async with self.session.get(path, params={"watch": "true", **(params or {})}) as response:
            assert 200 == response.status, await response.text()
            yield WatchStream(response)

    async def namespace(self) -> str:
        """A new namespace; on kube-apiserver, once its ``default`` ServiceAccount exists (pods need it)."""
        name = unique("parity")
        await self.ok("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": name}})
        self.namespaces.append(name)
        if self.real:
            await poll(lambda: self.call("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default"),
                       lambda answer: answer[0] == 200)
        return name

    async def node(self, **labels: str) -> dict[str, Any]:
        return await self.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                                   "metadata": {"name": unique("parity"), "labels": labels}})

    async def ledger(self, name: str = "", **metadata: Any) -> dict[str, Any]:
        return await self.create(LEDGERS, {"apiVersion": "draledger.dev/v1alpha1", "kind": "NodeAllocatableLedger",
                                           "metadata": {"name": name or unique("parity"), **metadata},
                                           "spec": {"frozen": False}})

    async def pod(self, namespace: str, name: str, **spec: Any) -> dict[str, Any]:
        labels = spec.pop("labels", {})
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
                "spec": {"containers": [{"name": "c", "image": "busybox"}], "schedulerName": UNSCHEDULED, **spec}}
        return await self.ok("POST", f"/api/v1/namespaces/{namespace}/pods", body)

    async def clean(self) -> None:
        """Delete what the test made (pods at once: there is no kubelet to confirm a graceful deletion)."""
        for namespace in self.namespaces:
            _, pods = await self.call("GET", f"/api/v1/namespaces/{namespace}/pods")
            for item in (pods.get("items") or []) if isinstance(pods, dict) else []:
                await self.call("DELETE", f"/api/v1/namespaces/{namespace}/pods/{item['metadata']['name']}",
                                params={"gracePeriodSeconds": "0"})
            await self.call("DELETE", f"/api/v1/namespaces/{namespace}")
        for path in reversed(self.cluster_scoped):
            _, current = await self.call("GET", path)
            if isinstance(current, dict) and current.get("metadata", {}).get("finalizers"):
                await self.call("PATCH", path, {"metadata": {"finalizers": None}}, content_type=MERGE)
            await self.call("DELETE", path)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def rv(obj: dict[str, Any]) -> int:
    """An object's (or a list's) resourceVersion as a number: both backends use a counter (etcd's revision)."""
    return int(obj["metadata"]["resourceVersion"])


async def poll(fetch: Callable[[], Awaitable[Any]], done: Callable[[Any], bool], within: float = WITHIN) -> Any:
    """Fetch until ``done`` says yes; the last answer. Fails with it after ``within`` s."""
    deadline = time.monotonic() + within
    while True:
        answer = await fetch()
        if done(answer):
            return answer
        assert time.monotonic() < deadline, f"still {answer!r} after {within:.0f} s"
        await asyncio.sleep(0.1)


def summary(events: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(e["type"], e["object"]["metadata"]["name"], rv(e["object"])) for e in events]


def owner(obj: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"]}


def valid_status(name: str) -> dict[str, Any]:
    """A ledger status the CRD's schema accepts (the first ``draledger audit`` prints for the example dump)."""
    status: dict[str, Any] = a_ledger(name)["status"]
    return status


# ------------------------------------------------------------------ the behaviours


class Behaviours:
    """Each test states one kube-apiserver behaviour; the subclasses provide the ``backend``."""

    # -- lists

    async def test_list_document(self, backend: Backend) -> None:
        """A list is a <Kind>List with apiVersion and a resourceVersion no older than the last write."""
        namespace = await backend.namespace()
        pod = await backend.pod(namespace, "p1")
        listed = await backend.get(f"/api/v1/namespaces/{namespace}/pods")
        assert ("PodList", "v1") == (listed["kind"], listed["apiVersion"])
        assert rv(listed) >= rv(pod)
        assert ["p1"] == [item["metadata"]["name"] for item in listed["items"]]

    async def test_custom_resource_list(self, backend: Backend) -> None:
        """Cluster-scoped custom resources list with their group/version, each item typed and without namespace."""
        made = await backend.ledger()
        listed = await backend.get(LEDGERS)
        item = next(i for i in listed["items"] if i["metadata"]["name"] == made["metadata"]["name"])
        assert ("NodeAllocatableLedgerList", "draledger.dev/v1alpha1") == (listed["kind"], listed["apiVersion"])
        assert ("NodeAllocatableLedger", "draledger.dev/v1alpha1") == (item["kind"], item["apiVersion"])
        assert "namespace" not in item["metadata"]

    async def test_namespace_scoping_and_key_order(self, backend: Backend) -> None:
        """A namespaced list sees its namespace; the cluster-wide list sees all, in (namespace, name) order."""
        first, second = sorted([await backend.namespace(), await backend.namespace()])
        await backend.pod(second, "a")
        await backend.pod(first, "b")
        await backend.pod(first, "a")
        scoped = await backend.get(f"/api/v1/namespaces/{first}/pods")
        everything = await backend.get("/api/v1/pods")
        keys = [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in everything["items"]
                if i["metadata"]["namespace"] in (first, second)]
        assert ["a", "b"] == [i["metadata"]["name"] for i in scoped["items"]]
        assert [(first, "a"), (first, "b"), (second, "a")] == keys

    async def test_namespaces_resource(self, backend: Backend) -> None:
        """The core namespaces resource itself can be created, fetched and listed."""
        namespace = await backend.namespace()
        fetched = await backend.get(f"/api/v1/namespaces/{namespace}")
        listed = await backend.get("/api/v1/namespaces")
        assert "Namespace" == fetched["kind"]
        assert namespace in [i["metadata"]["name"] for i in listed["items"]]

    async def test_limit_and_continue(self, backend: Backend) -> None:
        """limit/continue pages through every item once, with remainingItemCount and the first page's RV."""
        namespace = await backend.namespace()
        for index in range(5):
            await backend.pod(namespace, f"p{index}")
        path = f"/api/v1/namespaces/{namespace}/pods"
        first = await backend.get(path, limit="2")
        second = await backend.get(path, limit="2", **{"continue": first["metadata"]["continue"]})
        third = await backend.get(path, limit="2", **{"continue": second["metadata"]["continue"]})
        names = [i["metadata"]["name"] for page in (first, second, third) for i in page["items"]]
        assert [f"p{i}" for i in range(5)] == names
        assert (3, False) == (first["metadata"]["remainingItemCount"], "continue" in third["metadata"])
        assert {rv(first)} == {rv(page) for page in (first, second, third)}

    async def test_bad_continue_token_is_400(self, backend: Backend) -> None:
        """A malformed continue token answers 400 BadRequest."""
        status, answer = await backend.call("GET", "/api/v1/nodes", params={"continue": "%%%"})
        assert (400, "BadRequest") == (status, answer["reason"])

    # -- watches

    async def test_watch_from_rv_replays_only_newer_events(self, backend: Backend) -> None:
        """A watch from RV N gets the changes after N with their own RVs, then live changes."""
        namespace = await backend.namespace()
        pods = f"/api/v1/namespaces/{namespace}/pods"
        await backend.pod(namespace, "p1")
        since = await backend.pod(namespace, "p2")
        labelled = await backend.merge(f"{pods}/p1", {"metadata": {"labels": {"x": "1"}}})
        async with backend.watch(pods, {"resourceVersion": str(rv(since))}) as stream:
            replayed = await stream.take(1)
            created = await backend.pod(namespace, "p3")
            changed = await backend.merge(f"{pods}/p2", {"metadata": {"labels": {"x": "2"}}})
            live = await stream.take(2)
        assert [("MODIFIED", "p1", rv(labelled))] == summary(replayed)
        assert [("ADDED", "p3", rv(created)), ("MODIFIED", "p2", rv(changed))] == summary(live)

    async def test_watch_without_rv_starts_with_current_state(self, backend: Backend) -> None:
        """Without an RV, every live object comes first as ADDED with its own RV, then only changes."""
        namespace = await backend.namespace()
        pods = f"/api/v1/namespaces/{namespace}/pods"
        await backend.pod(namespace, "p1")
        p1 = await backend.merge(f"{pods}/p1", {"metadata": {"labels": {"x": "1"}}})
        p2 = await backend.pod(namespace, "p2")
        async with backend.watch(pods) as stream:
            initial = await stream.take(2)
            changed = await backend.merge(f"{pods}/p2", {"metadata": {"labels": {"x": "1"}}})
            live = await stream.take(1)
        assert {("ADDED", "p1", rv(p1)), ("ADDED", "p2", rv(p2))} == set(summary(initial))
        assert [("MODIFIED", "p2", rv(changed))] == summary(live)

    async def test_watch_is_per_resource_and_namespace(self, backend: Backend) -> None:
        """A namespaced watch sees neither other namespaces nor other resources."""
        here, elsewhere = await backend.namespace(), await backend.namespace()
        async with backend.watch(f"/api/v1/namespaces/{here}/pods", {"resourceVersion": "0"}) as stream:
            await backend.pod(elsewhere, "elsewhere")
            await backend.node()
            created = await backend.pod(here, "here")
            events = await stream.take(1)
        assert [("ADDED", "here", rv(created))] == summary(events)

    async def test_timeout_seconds_ends_the_stream(self, backend: Backend) -> None:
        """timeoutSeconds makes the server end a quiet stream cleanly, with no event."""
        namespace = await backend.namespace()
        async with backend.watch(f"/api/v1/namespaces/{namespace}/pods", {"timeoutSeconds": "1"}) as stream:
            events = await stream.rest(within=WITHIN)
        assert [] == events

    async def test_bookmarks_carry_a_current_rv(self, backend: Backend) -> None:
        """With allowWatchBookmarks, a stream that sees no change gets a BOOKMARK of its kind whose RV covers the
        changes outside its selection (a resume from it skips them)."""
        here, elsewhere = await backend.namespace(), await backend.namespace()
        pod = await backend.pod(here, "p1")
        params = {"allowWatchBookmarks": "true", "resourceVersion": str(rv(pod)), "timeoutSeconds": "4"}
        async with backend.watch(f"/api/v1/namespaces/{here}/pods", params) as stream:
            unseen = await backend.pod(elsewhere, "p2")  # kube-apiserver bookmarks only an RV that moved on
            events = await stream.rest(within=WITHIN)
        bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
        assert [] == [e for e in events if e["type"] != "BOOKMARK"]
        assert bookmarks
        assert ("Pod", "v1") == (bookmarks[-1]["object"]["kind"], bookmarks[-1]["object"]["apiVersion"])
        assert rv(bookmarks[-1]["object"]) >= rv(unseen)

    async def test_no_bookmarks_unless_allowed(self, backend: Backend) -> None:
        """Without allowWatchBookmarks, no BOOKMARK is sent."""
        namespace = await backend.namespace()
        pod = await backend.pod(namespace, "p1")
        params = {"resourceVersion": str(rv(pod)), "timeoutSeconds": "3"}
        async with backend.watch(f"/api/v1/namespaces/{namespace}/pods", params) as stream:
            events = await stream.rest(within=WITHIN)
        assert [] == events

    async def test_initial_events_end_bookmark(self, backend: Backend) -> None:
        """sendInitialEvents=true ends the initial state with a BOOKMARK annotated k8s.io/initial-events-end."""
        namespace = await backend.namespace()
        await backend.pod(namespace, "p1")
        params = {"sendInitialEvents": "true", "allowWatchBookmarks": "true", "resourceVersionMatch": "NotOlderThan"}
        async with backend.watch(f"/api/v1/namespaces/{namespace}/pods", params) as stream:
            added, bookmark = await stream.take(2, within=WITHIN)
        assert ("ADDED", "BOOKMARK") == (added["type"], bookmark["type"])
        assert {"k8s.io/initial-events-end": "true"} == bookmark["object"]["metadata"]["annotations"]

    # -- selectors

    async def test_list_with_selectors(self, backend: Backend) -> None:
        """labelSelector (set-based too) and fieldSelector filter lists server-side."""
        namespace = await backend.namespace()
        await backend.pod(namespace, "a", labels={"app": "x"}, nodeName="n1")
        await backend.pod(namespace, "b", labels={"app": "x"}, nodeName="n2")
        await backend.pod(namespace, "c", labels={"app": "y"}, nodeName="n1")
        pods = f"/api/v1/namespaces/{namespace}/pods"
        by_label = await backend.get(pods, labelSelector="app=x")
        by_both = await backend.get(pods, labelSelector="app in (x,y),!other", fieldSelector="spec.nodeName=n1")
        assert ["a", "b"] == [i["metadata"]["name"] for i in by_label["items"]]
        assert ["a", "c"] == [i["metadata"]["name"] for i in by_both["items"]]

    async def test_unsupported_field_selector_is_400(self, backend: Backend) -> None:
        """A field a resource cannot be selected by answers 400 BadRequest naming it."""
        status, answer = await backend.call("GET", "/api/v1/nodes", params={"fieldSelector": "spec.nodeName=n1"})
        assert (400, "BadRequest") == (status, answer["reason"])
        assert "field label not supported: spec.nodeName" in answer["message"]

    async def test_selector_watch_turns_leaving_into_deleted(self, backend: Backend) -> None:
        """A selector watch sees ADDED when an object starts matching and DELETED (its last matching state,
        with the change's RV) when it stops; changes outside the selection are not sent."""
        namespace = await backend.namespace()
        pods = f"/api/v1/namespaces/{namespace}/pods"
        await backend.pod(namespace, "p1", labels={"app": "x"})
        since = await backend.pod(namespace, "p2", labels={"app": "y"})
        async with backend.watch(pods, {"labelSelector": "app=x", "resourceVersion": str(rv(since))}) as stream:
            joined = await backend.merge(f"{pods}/p2", {"metadata": {"labels": {"app": "x"}}})
            left = await backend.merge(f"{pods}/p1", {"metadata": {"labels": {"app": "z"}}})
            await backend.merge(f"{pods}/p1", {"metadata": {"labels": {"other": "1"}}})
            stayed = await backend.merge(f"{pods}/p2", {"metadata": {"labels": {"more": "1"}}})
            events = await stream.take(3)
        assert [("ADDED", "p2", rv(joined)), ("DELETED", "p1", rv(left)), ("MODIFIED", "p2", rv(stayed))] == \
            summary(events)
        assert "x" == events[1]["object"]["metadata"]["labels"]["app"]

    async def test_field_selector_watch(self, backend: Backend) -> None:
        """A fieldSelector watch (kubectl's for one name) filters the initial state and the changes."""
        namespace = await backend.namespace()
        pods = f"/api/v1/namespaces/{namespace}/pods"
        await backend.pod(namespace, "p1")
        await backend.pod(namespace, "p2")
        async with backend.watch(pods, {"fieldSelector": "metadata.name=p2"}) as stream:
            initial = await stream.take(1)
            await backend.merge(f"{pods}/p1", {"metadata": {"labels": {"x": "1"}}})
            await backend.merge(f"{pods}/p2", {"metadata": {"labels": {"x": "1"}}})
            live = await stream.take(1)
        assert [("ADDED", "p2"), ("MODIFIED", "p2")] == [(e["type"], e["object"]["metadata"]["name"])
                                                         for e in initial + live]

    # -- conflicts and errors

    async def test_failed_test_op_is_422_and_applies_nothing(self, backend: Backend) -> None:
        """A JSON patch whose test op fails answers 422 Invalid and changes nothing, RV included."""
        namespace = await backend.namespace()
        path = f"/api/v1/namespaces/{namespace}/pods/p1"
        gates = [{"name": "ours.dev/gate"}, {"name": "other.io/gate"}]
        created = await backend.pod(namespace, "p1", schedulingGates=gates)
        bumped = await backend.merge(path, {"metadata": {"labels": {"bump": "1"}}})
        status, answer = await backend.call("PATCH", path, [
            {"op": "test", "path": "/metadata/resourceVersion", "value": created["metadata"]["resourceVersion"]},
            {"op": "remove", "path": "/spec/schedulingGates/0"}], content_type=JSON_PATCH)
        stored = await backend.get(path)
        assert (422, "Status", "Invalid", 422) == (status, answer["kind"], answer["reason"], answer["code"])
        assert (gates, rv(bumped)) == (stored["spec"]["schedulingGates"], rv(stored))

    async def test_passing_test_op_applies(self, backend: Backend) -> None:
        """A JSON patch whose test op holds is applied, with a new RV."""
        namespace = await backend.namespace()
        created = await backend.pod(namespace, "p1", schedulingGates=[{"name": "ours.dev/gate"},
                                                                      {"name": "other.io/gate"}])
        patched = await backend.json_patch(f"/api/v1/namespaces/{namespace}/pods/p1", [
            {"op": "test", "path": "/metadata/resourceVersion", "value": created["metadata"]["resourceVersion"]},
            {"op": "remove", "path": "/spec/schedulingGates/0"}])
        assert [{"name": "other.io/gate"}] == patched["spec"]["schedulingGates"]
        assert rv(patched) > rv(created)

    async def test_removing_a_missing_path_is_422(self, backend: Backend) -> None:
        """Removing a path that does not exist is 422 as well."""
        namespace = await backend.namespace()
        await backend.pod(namespace, "p1")
        status, _ = await backend.call("PATCH", f"/api/v1/namespaces/{namespace}/pods/p1",
                                       [{"op": "remove", "path": "/spec/schedulingGates/0"}], content_type=JSON_PATCH)
        assert 422 == status

    async def test_duplicate_create_is_409_already_exists(self, backend: Backend) -> None:
        """Creating a live name again answers 409 AlreadyExists naming it."""
        namespace = await backend.namespace()
        await backend.pod(namespace, "p1")
        status, answer = await backend.call("POST", f"/api/v1/namespaces/{namespace}/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
        assert (409, "AlreadyExists", {"name": "p1", "kind": "pods"}) == (status, answer["reason"], answer["details"])

    async def test_recreate_after_delete(self, backend: Backend) -> None:
        """A deleted name can be created again, with a new uid."""
        namespace = await backend.namespace()
        first = await backend.pod(namespace, "p1")
        await backend.delete(f"/api/v1/namespaces/{namespace}/pods/p1")
        second = await backend.pod(namespace, "p1")
        assert first["metadata"]["uid"] != second["metadata"]["uid"]

    async def test_stale_merge_patch_rv_is_409_conflict(self, backend: Backend) -> None:
        """A merge patch carrying an old resourceVersion answers 409 Conflict and applies nothing."""
        namespace = await backend.namespace()
        path = f"/api/v1/namespaces/{namespace}/pods/p1"
        created = await backend.pod(namespace, "p1")
        await backend.merge(path, {"metadata": {"labels": {"a": "1"}}})
        stale = {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"], "labels": {"a": "2"}}}
        status, answer = await backend.call("PATCH", path, stale, content_type=MERGE)
        assert (409, "Conflict") == (status, answer["reason"])
        assert "1" == (await backend.get(path))["metadata"]["labels"]["a"]

    async def test_current_merge_patch_rv_applies(self, backend: Backend) -> None:
        """A merge patch carrying the current resourceVersion is applied."""
        namespace = await backend.namespace()
        created = await backend.pod(namespace, "p1")
        patched = await backend.merge(f"/api/v1/namespaces/{namespace}/pods/p1", {"metadata": {
            "resourceVersion": created["metadata"]["resourceVersion"], "labels": {"a": "2"}}})
        assert "2" == patched["metadata"]["labels"]["a"]
        assert rv(patched) > rv(created)

    async def test_put_with_stale_rv_is_409(self, backend: Backend) -> None:
        """PUT is a full replace guarded by the body's resourceVersion."""
        created = await backend.ledger()
        path = f"{LEDGERS}/{created['metadata']['name']}"
        await backend.merge(path, {"metadata": {"labels": {"a": "1"}}})
        status, answer = await backend.call("PUT", path, created)
        assert (409, "Conflict") == (status, answer["reason"])

    async def test_delete_precondition_mismatch_is_409(self, backend: Backend) -> None:
        """DELETE with a stale resourceVersion precondition answers 409."""
        created = await backend.ledger()
        path = f"{LEDGERS}/{created['metadata']['name']}"
        await backend.merge(path, {"metadata": {"labels": {"a": "1"}}})
        status, _ = await backend.call("DELETE", path, {"preconditions": {
            "resourceVersion": created["metadata"]["resourceVersion"]}})
        assert 409 == status

    async def test_missing_object_is_404_not_found(self, backend: Backend) -> None:
        """Patch, get and delete of a missing object answer 404 NotFound, the get naming it."""
        namespace = await backend.namespace()
        path = f"/api/v1/namespaces/{namespace}/pods/nope"
        patch_status, patched = await backend.call("PATCH", path, {"metadata": {}}, content_type=MERGE)
        get_status, got = await backend.call("GET", path)
        delete_status, _ = await backend.call("DELETE", path)
        assert (404, 404, 404) == (patch_status, get_status, delete_status)
        assert ("NotFound", 'pods "nope" not found') == (got["reason"], got["message"])
        assert "NotFound" == patched["reason"]

    # -- the status subresource and finalizers

    async def test_main_patch_ignores_status(self, backend: Backend) -> None:
        """A patch to the main resource applies its spec changes and drops its status changes."""
        namespace = await backend.namespace()
        await backend.pod(namespace, "p1", schedulingGates=[{"name": "g"}])
        patched = await backend.merge(f"/api/v1/namespaces/{namespace}/pods/p1",
                                      {"spec": {"schedulingGates": None}, "status": {"phase": "Running"}})
        assert ("Pending", None) == (patched["status"]["phase"], patched["spec"].get("schedulingGates"))

    async def test_status_patch_ignores_spec(self, backend: Backend) -> None:
        """A patch to /status changes status only: a spec change in it is dropped; the RV moves on."""
        namespace = await backend.namespace()
        created = await backend.pod(namespace, "p1", nodeName="n1")
        patched = await backend.merge(f"/api/v1/namespaces/{namespace}/pods/p1/status",
                                      {"spec": {"nodeName": "n2"}, "status": {"phase": "Running"}})
        assert ("n1", "Running") == (patched["spec"]["nodeName"], patched["status"]["phase"])
        assert rv(patched) > rv(created)

    async def test_status_json_patch_with_test_op(self, backend: Backend) -> None:
        """Kopf's JSON patch to a custom resource's /status (test the RV, add /status) leaves spec alone."""
        created = await backend.ledger()
        name = created["metadata"]["name"]
        status = valid_status(name)
        patched = await backend.json_patch(f"{LEDGERS}/{name}/status", [
            {"op": "test", "path": "/metadata/resourceVersion", "value": created["metadata"]["resourceVersion"]},
            {"op": "add", "path": "/status", "value": status}])
        assert ({"frozen": False}, status) == (patched["spec"], patched["status"])

    async def test_create_drops_status(self, backend: Backend) -> None:
        """Creates ignore status where there is a status subresource; pods start Pending."""
        name = unique("parity")
        ledger = await backend.create(LEDGERS, {"apiVersion": "draledger.dev/v1alpha1",
                                                "kind": "NodeAllocatableLedger", "metadata": {"name": name},
                                                "status": valid_status(name)})
        namespace = await backend.namespace()
        pod = await backend.ok("POST", f"/api/v1/namespaces/{namespace}/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}, "status": {"phase": "Running"}})
        assert (None, "Pending") == (ledger.get("status"), pod["status"]["phase"])

    async def test_custom_resource_status_patch_ignores_metadata(self, backend: Backend) -> None:
        """A custom resource's /status patch changes no label or annotation (pods differ: see Differences)."""
        created = await backend.ledger(labels={"a": "1"})
        patched = await backend.merge(f"{LEDGERS}/{created['metadata']['name']}/status",
                                      {"metadata": {"labels": {"x": "1"}, "annotations": {"y": "2"}}})
        assert ({"a": "1"}, None) == (patched["metadata"]["labels"], patched["metadata"].get("annotations"))

    async def test_node_create_keeps_status(self, backend: Backend) -> None:
        """A Node is created with the status in the body (a kubelet registers its capacity that way)."""
        status = {"capacity": {"cpu": "16", "pods": "110"}, "allocatable": {"cpu": "15", "pods": "110"}}
        created = await backend.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                                         "metadata": {"name": unique("parity")}, "status": status})
        assert (status["capacity"], status["allocatable"]) == (
            (created.get("status") or {}).get("capacity"), (created.get("status") or {}).get("allocatable"))

    async def test_status_of_a_resource_without_the_subresource_is_404(self, backend: Backend) -> None:
        """/status of a resource that has no status subresource is 404."""
        name = unique("parity")
        await backend.create("/apis/resource.k8s.io/v1/resourceslices", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": "parity.example.com", "pool": {"name": "p", "generation": 1,
                                                               "resourceSliceCount": 1}, "allNodes": True,
                     "devices": []}})
        status, _ = await backend.call("PATCH", f"/apis/resource.k8s.io/v1/resourceslices/{name}/status",
                                       {"status": {}}, content_type=MERGE)
        assert 404 == status

    async def test_finalizers_hold_the_deletion(self, backend: Backend) -> None:
        """DELETE marks deletionTimestamp (MODIFIED); emptying finalizers removes the object (DELETED)."""
        created = await backend.ledger(finalizers=["parity.draledger.dev/hold"])
        path = f"{LEDGERS}/{created['metadata']['name']}"
        async with backend.watch(LEDGERS, {"resourceVersion": str(rv(created)),
                                           "fieldSelector": f"metadata.name={created['metadata']['name']}"}) as stream:
            marked = await backend.delete(path)
            still_there = await backend.get(path)
            released = await backend.merge(path, {"metadata": {"finalizers": None}})
            events = await stream.take(2)
        status, _ = await backend.call("GET", path)
        assert marked["metadata"]["deletionTimestamp"] == still_there["metadata"]["deletionTimestamp"]
        assert ["MODIFIED", "DELETED"] == [e["type"] for e in events]
        assert rv(events[0]["object"]) == rv(still_there)
        assert rv(events[1]["object"]) > rv(still_there)
        assert (None, 404) == (released["metadata"].get("finalizers"), status)

    async def test_put_replaces_but_keeps_status(self, backend: Backend) -> None:
        """PUT with the current RV replaces spec and metadata; status still only changes through /status."""
        created = await backend.ledger()
        name = created["metadata"]["name"]
        with_status = await backend.ok("PUT", f"{LEDGERS}/{name}/status", {**created, "status": valid_status(name)})
        body = {**with_status, "spec": {"frozen": True, "reason": "put"}, "status": {**valid_status(name),
                                                                                   "phase": "Frozen"}}
        replaced = await backend.ok("PUT", f"{LEDGERS}/{name}", body)
        assert ({"frozen": True, "reason": "put"}, with_status["status"]) == (replaced["spec"], replaced["status"])
        assert rv(replaced) > rv(with_status)

    # -- resourceVersions and server fields

    async def test_every_write_takes_a_newer_rv_across_resources(self, backend: Backend) -> None:
        """Creates, patches and /status patches take ever newer RVs from one clock shared by all resources."""
        namespace = await backend.namespace()
        pods = f"/api/v1/namespaces/{namespace}/pods"
        first = await backend.pod(namespace, "p1")
        node = await backend.node()
        second = await backend.pod(namespace, "p2")
        labelled = await backend.merge(f"{pods}/p1", {"metadata": {"labels": {"x": "1"}}})
        running = await backend.merge(f"{pods}/p1/status", {"status": {"phase": "Running"}})
        versions = [rv(obj) for obj in (first, node, second, labelled, running)]
        assert sorted(set(versions)) == versions

    async def test_noop_patch_keeps_rv(self, backend: Backend) -> None:
        """A patch that changes nothing is a no-op: the same RV."""
        namespace = await backend.namespace()
        created = await backend.pod(namespace, "p1", labels={"x": "1"})
        same = await backend.merge(f"/api/v1/namespaces/{namespace}/pods/p1", {"metadata": {"labels": {"x": "1"}}})
        assert rv(created) == rv(same)

    async def test_delete_takes_a_new_rv(self, backend: Backend) -> None:
        """The deleted object comes back with a new RV, and the list's RV is no older."""
        namespace = await backend.namespace()
        created = await backend.pod(namespace, "p1")
        deleted = await backend.delete(f"/api/v1/namespaces/{namespace}/pods/p1")
        listed = await backend.get(f"/api/v1/namespaces/{namespace}/pods")
        assert rv(listed) >= rv(deleted) > rv(created)
        assert [] == listed["items"]

    async def test_create_sets_uid_timestamp_generation(self, backend: Backend) -> None:
        """Creates get a 36-character uid, an RFC 3339 creationTimestamp (UTC, seconds) and generation 1."""
        meta = (await backend.ledger())["metadata"]
        assert (1, 36) == (meta["generation"], len(meta["uid"]))
        assert time.strptime(meta["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ")

    async def test_generate_name(self, backend: Backend) -> None:
        """generateName gets a 5-character suffix."""
        created = await backend.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                                         "metadata": {"generateName": "parity-"}})
        assert created["metadata"]["name"].startswith("parity-")
        assert len("parity-") + 5 == len(created["metadata"]["name"])

    async def test_generation_bumps_on_spec_only(self, backend: Backend) -> None:
        """generation moves on spec changes, not on metadata or status changes."""
        created = await backend.ledger()
        name = created["metadata"]["name"]
        labelled = await backend.merge(f"{LEDGERS}/{name}", {"metadata": {"labels": {"x": "y"}}})
        statused = await backend.merge(f"{LEDGERS}/{name}/status", {"status": valid_status(name)})
        frozen = await backend.merge(f"{LEDGERS}/{name}", {"spec": {"frozen": True}})
        assert [1, 1, 2] == [o["metadata"]["generation"] for o in (labelled, statused, frozen)]

    async def test_creation_timestamp_cannot_be_changed(self, backend: Backend) -> None:
        """A patch of creationTimestamp is ignored."""
        created = await backend.ledger()
        patched = await backend.merge(f"{LEDGERS}/{created['metadata']['name']}",
                                      {"metadata": {"creationTimestamp": "1999-01-01T00:00:00Z"}})
        assert created["metadata"]["creationTimestamp"] == patched["metadata"]["creationTimestamp"]

    # -- owner references

    async def test_deleting_an_owner_deletes_its_dependents(self, backend: Backend) -> None:
        """Deleting a Node deletes the ledger it owns (the real GC does it shortly after); others stay."""
        node = await backend.node()
        owned = await backend.ledger(ownerReferences=[owner(node)])
        unowned = await backend.ledger()
        await backend.delete(f"/api/v1/nodes/{node['metadata']['name']}")
        await poll(lambda: backend.call("GET", f"{LEDGERS}/{owned['metadata']['name']}"),
                   lambda answer: answer[0] == 404)
        assert unowned["metadata"]["uid"] == (await backend.get(f"{LEDGERS}/{unowned['metadata']['name']}"))[
            "metadata"]["uid"]

    async def test_another_live_owner_keeps_the_dependent(self, backend: Backend) -> None:
        """A dependent with another live owner survives the deletion of one owner."""
        first, second = await backend.node(), await backend.node()
        shared = await backend.ledger(ownerReferences=[owner(first), owner(second)])
        await backend.delete(f"/api/v1/nodes/{first['metadata']['name']}")
        # the real GC drops the dead owner's reference: that write proves it has looked at the dependent
        path = f"{LEDGERS}/{shared['metadata']['name']}"
        if backend.real:
            await poll(lambda: backend.get(path), lambda got: len(got["metadata"]["ownerReferences"]) == 1)
        assert shared["metadata"]["uid"] == (await backend.get(path))["metadata"]["uid"]

    # -- discovery and Tables

    async def test_core_group_version(self, backend: Backend) -> None:
        """/api/v1 lists core resources with their scope, verbs and the status subresources."""
        document = await backend.get("/api/v1")
        names = {r["name"]: r for r in document["resources"]}
        assert ("APIResourceList", "v1") == (document["kind"], document["groupVersion"])
        assert {"namespaces", "nodes", "pods", "pods/status", "nodes/status", "events"} <= set(names)
        assert (True, False) == (names["pods"]["namespaced"], names["nodes"]["namespaced"])
        assert {"list", "watch", "patch", "create", "delete", "get", "update"} <= set(names["pods"]["verbs"])

    async def test_ledger_resource(self, backend: Backend) -> None:
        """The ledger is cluster-scoped, with a status subresource, short name nal and category draledger."""
        document = await backend.get("/apis/draledger.dev/v1alpha1")
        ledger = next(r for r in document["resources"] if r["name"] == "nodeallocatableledgers")
        assert (False, "NodeAllocatableLedger", ["nal"], ["draledger"]) == (
            ledger["namespaced"], ledger["kind"], ledger["shortNames"], ledger["categories"])
        assert "nodeallocatableledgers/status" in [r["name"] for r in document["resources"]]

    async def test_preferred_version_is_ga(self, backend: Backend) -> None:
        """resource.k8s.io prefers v1, in the group document and in the group list."""
        group = await backend.get("/apis/resource.k8s.io")
        groups = await backend.get("/apis")
        listed = next(g for g in groups["groups"] if g["name"] == "resource.k8s.io")
        assert ("v1", "v1") == (group["preferredVersion"]["version"], listed["preferredVersion"]["version"])

    async def test_unknown_group_is_404(self, backend: Backend) -> None:
        """An API group the server does not serve answers 404."""
        status, _ = await backend.call("GET", "/apis/example.com")
        assert 404 == status

    async def test_an_api_that_is_not_served_answers_404_page_not_found(self, backend: Backend) -> None:
        """A path of no served API (e.g. a CRD not installed) is ``404 page not found``: plain text (clients that
        decode every error as JSON break on it: KubeApi did), a NotFound Status from kube-apiserver v1.38 on."""
        status, answer = await backend.call("GET", "/apis/example.com/v1/widgets")
        said = answer.get("message") if isinstance(answer, dict) else str(answer).strip()
        assert (404, "404 page not found", backend.real and backend.minor >= 38) == (
            status, said, isinstance(answer, dict) and answer.get("reason") == "NotFound")

    async def test_ledger_table_has_the_crd_columns(self, backend: Backend) -> None:
        """``kubectl get nal``'s Accept gets a Table: Name, then the CRD's printer columns, filled from status."""
        created = await backend.ledger()
        name = created["metadata"]["name"]
        await backend.merge(f"{LEDGERS}/{name}/status", {"status": valid_status(name)})
        table = await backend.ok("GET", f"{LEDGERS}/{name}", accept=TABLE)
        columns = [column["name"] for column in table["columnDefinitions"]]
        status = valid_status(name)
        assert ("Table", "meta.k8s.io/v1") == (table["kind"], table["apiVersion"])
        assert ["Name", *[column["name"] for column in PRINTER_COLUMNS]] == columns
        cells = dict(zip(columns, table["rows"][0]["cells"], strict=True))
        assert (name, status["phase"], status["claimCount"]) == (cells["Name"], cells["Phase"], cells["Claims"])


# ------------------------------------------------------------------ the differences (docs/emulator.md)


def expected(backend: Backend, *, emulator: Any, kube_apiserver: Any) -> Any:
    """What ``backend`` answers: each difference is pinned on both sides."""
    return kube_apiserver if backend.real else emulator


class Differences:
    """Each test shows one difference listed in docs/emulator.md, with each backend's own answer."""

    async def test_list_items_of_built_in_kinds_are_untyped(self, backend: Backend) -> None:
        """kube-apiserver's items of a built-in list carry no kind/apiVersion; the emulator's do."""
        namespace = await backend.namespace()
        await backend.pod(namespace, "p1")
        item = (await backend.get(f"/api/v1/namespaces/{namespace}/pods"))["items"][0]
        assert expected(backend, emulator=("Pod", "v1"), kube_apiserver=(None, None)) == (
            item.get("kind"), item.get("apiVersion"))

    async def test_server_side_apply(self, backend: Backend) -> None:
        """Server-side apply: applied by kube-apiserver, 415 from the emulator."""
        namespace = await backend.namespace()
        await backend.pod(namespace, "p1")
        status, answer = await backend.call("PATCH", f"/api/v1/namespaces/{namespace}/pods/p1", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "labels": {"applied": "yes"}}},
            content_type="application/apply-patch+yaml", params={"fieldManager": "parity"})
        labels = answer.get("metadata", {}).get("labels") if status == 200 else None
        assert expected(backend, emulator=(415, None), kube_apiserver=(200, {"applied": "yes"})) == (status, labels)

    async def test_defaulting(self, backend: Backend) -> None:
        """kube-apiserver defaults a namespace's phase and name label and a pod's QoS class; the emulator only a
        pod's phase."""
        namespace = await backend.namespace()
        made = await backend.get(f"/api/v1/namespaces/{namespace}")
        pod = await backend.pod(namespace, "p1")
        assert expected(backend, emulator=(None, None, ["phase"]), kube_apiserver=(
            {"phase": "Active"}, {"kubernetes.io/metadata.name": namespace}, ["phase", "qosClass"])) == (
            made.get("status"), made["metadata"].get("labels"), sorted(pod["status"]))

    async def test_pod_status_patch_with_metadata(self, backend: Backend) -> None:
        """A pods/status patch changes labels and annotations on kube-apiserver; the emulator keeps them."""
        namespace = await backend.namespace()
        await backend.pod(namespace, "p1", labels={"a": "1"})
        patched = await backend.merge(f"/api/v1/namespaces/{namespace}/pods/p1/status", {
            "metadata": {"labels": {"x": "1"}}, "status": {"phase": "Running"}})
        assert expected(backend, emulator={"a": "1"}, kube_apiserver={"a": "1", "x": "1"}) == \
            patched["metadata"]["labels"]

    async def test_validation(self, backend: Backend) -> None:
        """A changed uid and a scheduling gate added after creation: 422 from kube-apiserver, accepted by the
        emulator (which keeps the uid and adds the gate)."""
        namespace = await backend.namespace()
        path = f"/api/v1/namespaces/{namespace}/pods/p1"
        await backend.pod(namespace, "p1")
        forged, _ = await backend.call("PATCH", path, {"metadata": {"uid": "forged"}}, content_type=MERGE)
        gated, _ = await backend.call("PATCH", path, [{"op": "add", "path": "/spec/schedulingGates",
                                                       "value": [{"name": "late"}]}], content_type=JSON_PATCH)
        assert expected(backend, emulator=(200, 200), kube_apiserver=(422, 422)) == (forged, gated)

    async def test_strategic_merge_patch_of_a_list(self, backend: Backend) -> None:
        """A strategic merge patch merges containers by name on kube-apiserver; the emulator replaces the list."""
        namespace = await backend.namespace()
        await backend.pod(namespace, "p1", containers=[{"name": "c", "image": "busybox"},
                                                       {"name": "d", "image": "busybox"}])
        patched = await backend.ok("PATCH", f"/api/v1/namespaces/{namespace}/pods/p1", {
            "spec": {"containers": [{"name": "d", "image": "busybox:2"}]}},
            content_type="application/strategic-merge-patch+json")
        assert expected(backend, emulator=[("d", "busybox:2")],
                        kube_apiserver=[("c", "busybox"), ("d", "busybox:2")]) == [
            (c["name"], c["image"]) for c in patched["spec"]["containers"]]

    async def test_missing_namespace(self, backend: Backend) -> None:
        """A pod in a namespace that does not exist: 404 from kube-apiserver, created by the emulator."""
        namespace = unique("parity-missing")
        status, _ = await backend.call("POST", f"/api/v1/namespaces/{namespace}/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], "schedulerName": UNSCHEDULED}})
        assert expected(backend, emulator=201, kube_apiserver=404) == status

    async def test_built_in_tables_are_a_subset(self, backend: Backend) -> None:
        """The emulator prints a subset of kube-apiserver's columns for pods, nodes, events and namespaces (and
        the same for slices, claims and ledgers)."""
        namespace = await backend.namespace()
        columns = {}
        for path in (f"/api/v1/namespaces/{namespace}/pods", "/api/v1/nodes", f"/api/v1/namespaces/{namespace}/events",
                     "/api/v1/namespaces", "/apis/resource.k8s.io/v1/resourceslices",
                     f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"):
            table = await backend.ok("GET", path, accept=TABLE)
            columns[path.rsplit("/", 1)[1]] = [column["name"] for column in table["columnDefinitions"]]
        assert expected(backend, emulator={
            "pods": ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node"],
            "nodes": ["Name", "Status", "Roles", "Age", "Version", "Internal-IP", "OS-Image"],
            "events": ["Last Seen", "Type", "Reason", "Object", "Message", "Name"],
            "namespaces": ["Name", "Age"],
            "resourceslices": ["Name", "Node", "Driver", "Pool", "Age"],
            "resourceclaims": ["Name", "State", "Age"],
        }, kube_apiserver={
            "pods": ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"],
            "nodes": ["Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP", "OS-Image",
                      "Kernel-Version", "Container-Runtime"],
            "events": ["Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen",
                       "Count", "Name"],
            "namespaces": ["Name", "Status", "Age"],
            "resourceslices": ["Name", "Node", "Driver", "Pool", "Age"],
            "resourceclaims": ["Name", "State", "Age"],
        }) == columns

    async def test_dra_beta_version(self, backend: Backend) -> None:
        """resource.k8s.io/v1beta2: served by the emulator, not by kube-apiserver's default configuration."""
        status, _ = await backend.call("GET", "/apis/resource.k8s.io/v1beta2")
        assert expected(backend, emulator=200, kube_apiserver=404) == status

    async def test_deleting_a_bound_pod(self, backend: Backend) -> None:
        """A pod on a node is deleted gracefully by kube-apiserver (marked, waiting for its kubelet); the
        emulator removes it at once."""
        namespace = await backend.namespace()
        await backend.pod(namespace, "p1", nodeName="n1")
        deleted = await backend.delete(f"/api/v1/namespaces/{namespace}/pods/p1")
        status, _ = await backend.call("GET", f"/api/v1/namespaces/{namespace}/pods/p1")
        assert expected(backend, emulator=(False, 404), kube_apiserver=(True, 200)) == (
            "deletionTimestamp" in deleted["metadata"], status)

    async def test_deleting_a_pod_is_marked_first(self, backend: Backend) -> None:
        """Even a pod deleted at once (on no node) is first marked by kube-apiserver (MODIFIED with a
        deletionTimestamp), then removed (DELETED); the emulator sends DELETED only."""
        namespace = await backend.namespace()
        created = await backend.pod(namespace, "p1")
        params = {"resourceVersion": str(rv(created))}
        async with backend.watch(f"/api/v1/namespaces/{namespace}/pods", params) as stream:
            deleted = await backend.delete(f"/api/v1/namespaces/{namespace}/pods/p1")
            events = await stream.take(2 if backend.real else 1)
        assert expected(backend, emulator=["DELETED"], kube_apiserver=["MODIFIED", "DELETED"]) == [
            e["type"] for e in events]
        assert rv(deleted) == rv(events[-1]["object"])

    async def test_delete_collection(self, backend: Backend) -> None:
        """DELETE of a collection: done by kube-apiserver, 404 from the emulator."""
        namespace = await backend.namespace()
        await backend.pod(namespace, "p1")
        status, _ = await backend.call("DELETE", f"/api/v1/namespaces/{namespace}/pods")
        assert expected(backend, emulator=404, kube_apiserver=200) == status

    async def test_list_pages_are_a_snapshot(self, backend: Backend) -> None:
        """Later pages show kube-apiserver's state at the first page; the emulator's show the current state."""
        namespace = await backend.namespace()
        path = f"/api/v1/namespaces/{namespace}/pods"
        for name in ("a", "b", "c"):
            await backend.pod(namespace, name)
        first = await backend.get(path, limit="2")
        await backend.pod(namespace, "d")
        await backend.delete(f"{path}/c")
        rest = await backend.get(path, limit="2", **{"continue": first["metadata"]["continue"]})
        assert expected(backend, emulator=["a", "b", "d"], kube_apiserver=["a", "b", "c"]) == [
            item["metadata"]["name"] for item in first["items"] + rest["items"]]

    async def test_releasing_the_last_finalizer_answers(self, backend: Backend) -> None:
        """The update that removes a deleting object answers with the marked object's RV on kube-apiserver up to
        v1.37, with a new one (its deletion's) from v1.38 on and on the emulator (all send DELETED with a new RV)."""
        created = await backend.ledger(finalizers=["parity.draledger.dev/hold"])
        path = f"{LEDGERS}/{created['metadata']['name']}"
        marked = await backend.delete(path)
        released = await backend.merge(path, {"metadata": {"finalizers": None}})
        assert expected(backend, emulator=True, kube_apiserver=backend.minor >= 38) == (rv(released) > rv(marked))

    async def test_orphan_deletion_drops_owner_references(self, backend: Backend) -> None:
        """propagationPolicy=Orphan: kube-apiserver's GC removes the owner's reference from the dependent before
        the owner goes; the emulator leaves it."""
        node = await backend.node()
        owned = await backend.ledger(ownerReferences=[owner(node)])
        await backend.delete(f"/api/v1/nodes/{node['metadata']['name']}", {"propagationPolicy": "Orphan"})
        await poll(lambda: backend.call("GET", f"/api/v1/nodes/{node['metadata']['name']}"),
                   lambda answer: answer[0] == 404)
        kept = await backend.get(f"{LEDGERS}/{owned['metadata']['name']}")
        assert expected(backend, emulator=[owner(node)], kube_apiserver=None) == \
            kept["metadata"].get("ownerReferences")

    async def test_watch_history(self, backend: Backend) -> None:
        """How far back a watch resumes: the emulator keeps ``journal_limit`` changes per resource, then answers
        410 Expired; kube-apiserver's watch cache keeps at least 75 s of them, and etcd until it is compacted
        (every 5 min), so a young cluster replays them all."""
        namespace = await backend.namespace()
        pods = [await backend.pod(namespace, f"p{index}") for index in range(JOURNAL + 2)]
        params = {"resourceVersion": str(rv(pods[0])), "timeoutSeconds": "2"}
        async with backend.watch(f"/api/v1/namespaces/{namespace}/pods", params) as stream:
            events = await stream.rest(within=WITHIN)
        assert expected(backend, emulator=[("ERROR", 410)], kube_apiserver=[("ADDED", None)] * (JOURNAL + 1)) == [
            (e["type"], e["object"].get("code")) for e in events]


# ------------------------------------------------------------------ the two backends


async def _emulator_backend() -> AsyncIterator[Backend]:
    emulator = ClusterEmulator(journal_limit=JOURNAL, bookmark_interval=1.0)
    async with serve_emulator(emulator=emulator) as (_, url), aiohttp.ClientSession(url) as session:
        yield Backend("emulator", session)


class TestEmulator(Behaviours, Differences):
    """The behaviours against ``draledger.demo.emulator`` (the fast run)."""

    @pytest.fixture
    async def backend(self) -> AsyncIterator[Backend]:
        async for made in _emulator_backend():
            yield made


@pytest.fixture(scope="session")
def ledger_crd(control_plane: ControlPlane) -> str:
    """The committed CRD on the control plane (applied unless another test already did), served, and known to the
    garbage collector."""
    api = control_plane.api()
    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD}"
    if api.get_or_none(path) is None:
        kubectl(control_plane.kubeconfig, "apply", "-f", str(ROOT / "crds" / "nodeallocatableledgers.yaml"))

    def served() -> bool:
        try:
            return bool(api.get(LEDGERS))
        except ApiError as error:  # 404 until Established, 429 while its storage initializes
            if error.status in (404, 429):
                return False
            raise

    wait_until(served, within=60, what="the ledgers to be served")
    # kube-controller-manager's garbage collector finds a new resource by discovery, every 30 s: until then it
    # neither deletes nor orphans ledgers. One owned ledger, collected, says it knows them.
    node = api.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": unique("parity-gc")}})
    owned = api.create(LEDGERS, {"apiVersion": "draledger.dev/v1alpha1", "kind": "NodeAllocatableLedger",
                                 "metadata": {"name": unique("parity-gc"), "ownerReferences": [owner(node)]}})
    api.delete(f"/api/v1/nodes/{node['metadata']['name']}")
    wait_until(lambda: api.get_or_none(f"{LEDGERS}/{owned['metadata']['name']}") is None, within=90,
               what="the garbage collector to collect ledgers")
    return CRD


class TestKubeApiserver(Behaviours, Differences):
    """The same behaviours against the real kube-apiserver of each release (the realcluster session)."""

    @pytest.fixture
    async def backend(self, control_plane: ControlPlane, ledger_crd: str) -> AsyncIterator[Backend]:
        assert control_plane.pki is not None
        context = ssl.create_default_context(cafile=str(control_plane.pki.ca_cert))
        context.load_cert_chain(str(control_plane.pki.admin.cert), str(control_plane.pki.admin.key))
        async with aiohttp.ClientSession(control_plane.server,
                                         connector=aiohttp.TCPConnector(ssl=context)) as session:
            made = Backend("kube-apiserver", session, minor=int(control_plane.release.name.split(".")[1]))
            try:
                yield made
            finally:
                await made.clean()
