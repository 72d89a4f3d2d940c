"""``ClusterEmulator``: kmock's KubernetesEmulator made faithful where kopf, kubectl and dra-ledger need it.

Rules:
1. Every write (POST create, PATCH main or ``/status``, PUT, DELETE) is applied by the
   :class:`~draledger.demo.emulator.store.Store` *before* kmock's reactions are consulted, as kmock itself does:
   objects are tracked even when a DSL reaction answers the request. A write that fails (404, 409, 422,
   an injected fault) applies nothing and never reaches the reactions.
2. Reads (get, list, watch) are kmock fallbacks: a DSL reaction such as ``emulator['list v1/pods'] << 500``
   still overrides them, which is how read faults are injected.
3. Only declared resources are served (:func:`~draledger.demo.emulator.discovery.register_cluster_resources`);
   other resources answer 404 like an apiserver without that API, unless a DSL reaction answers them.
4. Test helpers act in-process with the same semantics as HTTP: :meth:`ClusterEmulator.load_objects`,
   :meth:`~ClusterEmulator.patch_object`, :meth:`~ClusterEmulator.delete_object`, and the ``inject_*`` faults
   (:mod:`draledger.demo.emulator.faults`).
5. Reads answer a ``kind: Table`` when the client's ``Accept`` asks for one, as ``kubectl get`` does
   (:mod:`draledger.demo.emulator.printing`); ages are computed with ``now``.

See the module docstrings of ``store``, ``watching``, ``listing``, ``selectors`` and ``patches`` for the
exact semantics, and docs/emulator.md for what is deliberately not emulated.
"""

from __future__ import annotations

import copy
import datetime
import random
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

import aiohttp.web
import attrs
import kmock
from kmock._internal import rendering

from draledger.demo.emulator import errors, patches, printing
from draledger.demo.emulator.faults import Faults, Shuffle, WatchFault, WriteFault, WriteTarget
from draledger.demo.emulator.listing import list_document
from draledger.demo.emulator.scaffold import ClusterScaffold, api_version_of, with_api_version
from draledger.demo.emulator.selectors import parse_selector
from draledger.demo.emulator.store import ResourceSpec, Store
from draledger.demo.emulator.watching import WatchParams, stream_events

__all__ = ["ClusterEmulator"]

ResourceRef = kmock.resource | str


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(tz=datetime.UTC)


def _header(request: rendering.Request, name: str) -> str:
    for key, value in request.headers.items():
        if key.lower() == name.lower():
            return str(value)
    return ""


@attrs.define(kw_only=True)
class ClusterEmulator(ClusterScaffold):
    """A faithful-enough kube-apiserver in memory: RVs, conflicts, watches, selectors, subresources, GC."""

    journal_limit: int = 1000  # retained changes per resource before watches from older RVs get 410
    history_limit: int = 10  # versions kept per object in ``emulator.objects[...].history``
    bookmark_interval: float | None = 60.0  # seconds without events before a BOOKMARK (if allowed)
    now: Callable[[], datetime.datetime] = _utcnow  # the clock for creation/deletion timestamps

    _store: Store = attrs.field(init=False)
    _faults: Faults = attrs.field(init=False, factory=Faults)
    _results: dict[rendering.Request, rendering.Payload] = attrs.field(init=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self._store = Store(
            self._objects, journal_limit=self.journal_limit, history_limit=self.history_limit, now=self.now
        )
        self.fallback[kmock.method.PUT] << self._serve_replace

    # --- public helpers ------------------------------------------------------------------------------

    @property
    def store(self) -> Store:
        return self._store

    @property
    def resource_version(self) -> int:
        """The current cluster-wide resourceVersion."""
        return self._store.clock.current

    def load_objects(self, objects: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Store objects as if created and reconciled earlier (keeps status/uid); each emits ADDED."""
        stored = []
        for obj in objects:
            api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
            resource = self.resolve_kind(api_version, kind)
            if resource is None:
                raise ValueError(f"no declared resource serves apiVersion={api_version!r} kind={kind!r}")
            spec = self.require(resource)
            namespace = (obj.get("metadata") or {}).get("namespace") if spec.namespaced else None
            created = self._store.create(spec, copy.deepcopy(obj), namespace, preload=True)
            stored.append(with_api_version(created, api_version))
        return stored

    def get_object(
        self, resource: ResourceRef, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        spec = self.require(resource)
        return self._store.get(spec.resource, namespace if spec.namespaced else None, name)

    def patch_object(
        self,
        resource: ResourceRef,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        content_type: str = patches.MERGE_PATCH,
    ) -> dict[str, Any]:
        """Patch in-process, exactly as ``PATCH`` over HTTP would (e.g. to play kubelet or the scheduler)."""
        spec = self.require(resource)
        ns = namespace if spec.namespaced else None
        return self._store.patch(spec, ns, name, copy.deepcopy(patch), content_type, subresource=subresource)

    def delete_object(
        self,
        resource: ResourceRef,
        name: str,
        *,
        namespace: str | None = None,
        propagation: str | None = None,
    ) -> dict[str, Any]:
        spec = self.require(resource)
        options = {"propagationPolicy": propagation} if propagation else {}
        return self._store.delete(spec, namespace if spec.namespaced else None, name, options)

    def inject_watch_error(
        self, resource: ResourceRef, status: int = 410, *, times: int = 1, as_event: bool | None = None
    ) -> None:
        """Fail the next ``times`` watch requests: an ERROR event (default for 410) or an HTTP status."""
        spec = self.require(resource)
        fault = WatchFault(status=status, as_event=(status == 410) if as_event is None else as_event)
        self._faults.arm_watch(spec.resource, fault, times)

    def inject_list_error(
        self, resource: ResourceRef, status: int, *, times: int = 1, retry_after: int | None = None
    ) -> None:
        """Fail the next ``times`` LIST requests of the resource with ``status`` (watches are not lists)."""
        self._faults.arm_list(self.require(resource).resource, WriteFault(status, retry_after), times)

    def inject_disconnect(self, resource: ResourceRef) -> None:
        """End every watch stream that is currently open on this resource (clients must reconnect)."""
        self._store.journal(self.require(resource).resource).disconnect()

    def inject_patch_error(
        self,
        resource: ResourceRef,
        status: int,
        *,
        times: int = 1,
        retry_after: int | None = None,
        name: str | None = None,
        target: WriteTarget = "any",
    ) -> None:
        """Fail the next ``times`` PATCH requests (main or status, or only the one ``target`` names; of the
        object ``name`` only, if given) with ``status``, applying nothing."""
        self._faults.arm_write(
            self.require(resource).resource, "patch", WriteFault(status, retry_after), times, name, target
        )

    def inject_create_error(
        self,
        resource: ResourceRef,
        status: int,
        *,
        times: int = 1,
        retry_after: int | None = None,
        name: str | None = None,
    ) -> None:
        """Fail the next ``times`` create (POST) requests (of an object named ``name`` only, if given) with
        ``status``, creating nothing."""
        self._faults.arm_write(
            self.require(resource).resource, "create", WriteFault(status, retry_after), times, name
        )

    def inject_watch_shuffle(
        self,
        resource: ResourceRef,
        *,
        events: int,
        seed: int = 0,
        duplicate: float = 0.25,
        swap: float = 0.5,
    ) -> Shuffle:
        """Duplicate and swap (never across one object) the resource's next ``events`` watch events; returns
        the shuffle, whose counters say what it did."""
        shuffle = Shuffle(events, duplicate, swap, random.Random(seed))
        self._faults.arm_shuffle(self.require(resource).resource, shuffle)
        return shuffle

    @property
    def faults(self) -> Faults:
        return self._faults

    # --- request handling ----------------------------------------------------------------------------

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        spec = self.resolve(request.resource)
        if spec is not None:
            early = await self._intercept(request, spec)
            if early is not None:
                return early
        elif request.resource is not None and request.resource.plural:
            # No API serves this resource (a CRD not installed): kube-apiserver's mux answers in plain text.
            return aiohttp.web.Response(status=404, text="404 page not found\n", content_type="text/plain")
        try:
            # Skip KubernetesEmulator._handle (its own object tracking); go to the reactions directly.
            response: aiohttp.web.StreamResponse = await super(kmock.KubernetesEmulator, self)._handle(
                request
            )
            return response
        finally:
            self._results.pop(request, None)

    async def _intercept(
        self, request: rendering.Request, spec: ResourceSpec
    ) -> aiohttp.web.StreamResponse | None:
        if request.action == kmock.action.WATCH:
            watch_fault = self._faults.take_watch(spec.resource)
            if watch_fault is None:
                return None
            error = (
                errors.expired("too old resource version (injected)")
                if watch_fault.status == 410
                else errors.from_status(watch_fault.status)
            )
            if not watch_fault.as_event:
                raise error
            event = {"type": "ERROR", "object": errors.status_body(error)}
            response: aiohttp.web.StreamResponse = await rendering.Response(payload=(event,))(request)
            return response
        if request.action == kmock.action.LIST:
            list_fault = self._faults.take_list(spec.resource)
            if list_fault is not None:
                raise errors.from_status(list_fault.status, retry_after=list_fault.retry_after)
            return None

        verb = self._verb(request)
        if verb is None:
            return None
        target = request.name
        if verb == "create" and isinstance(request.data, Mapping):
            meta = request.data.get("metadata")
            target = meta.get("name") if isinstance(meta, Mapping) and isinstance(meta.get("name"), str) else None
        write_fault = self._faults.take_write(spec.resource, verb, target, request.subresource)
        if write_fault is not None:
            raise errors.from_status(write_fault.status, retry_after=write_fault.retry_after)
        namespace = request.namespace if spec.namespaced else None
        api_version = api_version_of(request.resource)
        if verb == "create":
            created = self._store.create(spec, request.data, namespace)
            self._results[request] = rendering.Response(
                status=201, payload=with_api_version(created, api_version)
            )
            return None
        assert request.name is not None  # _verb() guarantees it for the other verbs
        if verb == "patch":
            result = self._store.patch(
                spec,
                namespace,
                request.name,
                request.data,
                _header(request, "Content-Type"),
                subresource=request.subresource,
            )
        elif verb == "update":
            result = self._store.replace(
                spec, namespace, request.name, request.data, subresource=request.subresource
            )
        else:
            options = dict(request.data) if isinstance(request.data, Mapping) else {}
            if "propagationPolicy" in request.params:
                options["propagationPolicy"] = request.params["propagationPolicy"]
            result = self._store.delete(spec, namespace, request.name, options)
        self._results[request] = with_api_version(result, api_version)
        return None

    @staticmethod
    def _verb(request: rendering.Request) -> str | None:
        if request.action == kmock.action.CREATE and request.name is None:
            return "create"
        if request.name is None:
            return None
        if request.action == kmock.action.UPDATE:
            return "patch"
        if request.action == kmock.action.DELETE and request.subresource is None:
            return "delete"
        if request.method == kmock.method.PUT:
            return "update"
        return None

    def _result(self, request: rendering.Request) -> rendering.Payload:
        if request not in self._results:
            raise kmock.KubernetesEndpointNotFoundError()
        return self._results[request]

    async def _serve_create(self, request: rendering.Request) -> rendering.Payload:
        return self._result(request)

    async def _serve_update(self, request: rendering.Request) -> rendering.Payload:
        return self._result(request)

    async def _serve_delete(self, request: rendering.Request) -> rendering.Payload:
        return self._result(request)

    async def _serve_replace(self, request: rendering.Request) -> rendering.Payload:
        return self._result(request)

    def _table_version(self, request: rendering.Request) -> str | None:
        """The Table version the client asked for (``Accept``), or None for plain JSON."""
        return printing.requested_table(_header(request, "Accept"))

    def _columns(self, spec: ResourceSpec) -> tuple[printing.PrinterColumn, ...]:
        return self.printer_columns.get((spec.group, spec.plural), ())

    async def _serve_fetch(self, request: rendering.Request) -> rendering.Payload:
        spec = self.require(request.resource)
        namespace = request.namespace if spec.namespaced else None
        obj = self._store.get(spec.resource, namespace, str(request.name))
        if obj is None or request.subresource not in (None, "status"):
            raise errors.not_found(spec.plural, spec.group, str(request.name))
        rendered = with_api_version(obj, api_version_of(request.resource))
        table = self._table_version(request)
        if table is None:
            return rendered
        return printing.object_table(
            rendered, self._columns(spec), version=table, params=request.params, now=self.now()
        )

    async def _serve_list(self, request: rendering.Request) -> rendering.Payload:
        spec = self.require(request.resource)
        selector = parse_selector(
            spec.plural, request.params.get("labelSelector"), request.params.get("fieldSelector")
        )
        api_version = api_version_of(request.resource)
        namespace = request.namespace if spec.namespaced else None
        items = [
            with_api_version(obj, api_version)
            for obj in self._store.live(spec.resource, namespace)
            if selector.matches(obj)
        ]
        document = list_document(
            items,
            kind=spec.kind,
            api_version=api_version,
            resource_version=self._store.clock.current,
            params=request.params,
        )
        table = self._table_version(request)
        if table is None:
            return document
        return printing.table_of(
            document["items"],
            self._columns(spec),
            version=table,
            metadata=document["metadata"],
            params=request.params,
            now=self.now(),
        )

    async def _serve_watch(self, request: rendering.Request) -> rendering.Response:  # type: ignore[override]
        """A watch stream, typed ``application/json`` like kube-apiserver's (kubectl picks its decoder by it).

        kmock renders a returned Response by copying its headers onto the fallback reaction's own Response,
        so every later watch gets the same header: harmless, as they all want it.
        """
        events = self._watch_events(request)
        return rendering.Response(headers={"Content-Type": "application/json"}, payload=events)

    async def _watch_events(self, request: rendering.Request) -> AsyncIterator[rendering.Payload]:
        spec = self.require(request.resource)
        selector = parse_selector(
            spec.plural, request.params.get("labelSelector"), request.params.get("fieldSelector")
        )
        params = WatchParams.parse(request.params)
        api_version = api_version_of(request.resource)
        namespace = request.namespace if spec.namespaced else None
        name = request.name

        def scope(obj: Mapping[str, Any]) -> bool:
            meta = obj.get("metadata") or {}
            return (namespace is None or meta.get("namespace") == namespace) and (
                name is None or meta.get("name") == name
            )

        table = self._table_version(request)
        columns = self._columns(spec)

        def render(obj: dict[str, Any]) -> dict[str, Any]:
            rendered = with_api_version(obj, api_version)
            if table is None:
                return rendered
            return printing.object_table(rendered, columns, version=table, params=request.params, now=self.now())

        yield b""  # send the headers now: a quiet watch must still look connected to the client
        faults, resource = self._faults, spec.resource

        def mangle(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
            shuffle = faults.shuffle(resource)
            return batch if shuffle is None else shuffle.mangle(batch)

        async for event in stream_events(
            self._store,
            spec,
            api_version=api_version,
            scope=scope,
            selector=selector,
            params=params,
            render=render,
            bookmark_interval=self.bookmark_interval,
            mangle=mangle,
        ):
            yield event
