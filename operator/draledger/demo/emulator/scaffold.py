"""The HTTP plumbing under the emulator: request parsing, Status errors, discovery, resource resolution.

Rules:
1. Requests are parsed with :mod:`draledger.demo.emulator.parsing` (kube-apiserver's URL grammar) and appended to
   kmock's request log *before* handling, unchanged: reactions and assertions match requests by identity,
   so the logged object is the one that is handled.
2. Deliberate API answers (:class:`~draledger.demo.emulator.errors.ApiError`: 404, 409, 422, ...) are rendered as
   kube-apiserver's ``Status`` (with ``Retry-After`` when set) and are *not* collected into kmock's
   ``errors`` list, which keeps only unexpected failures (and thus stays small in long demos).
3. Discovery documents come from :mod:`draledger.demo.emulator.discovery`; ``/version`` reports
   ``server_version`` (default 1.36, the Kubernetes minor this project targets).
4. :meth:`ClusterScaffold.resolve` maps any declared group/version/plural to its storage resource (the
   preferred version of that group/plural) and what the store needs to know about it.

Pinned to kmock 0.8 internals: ``RawHandler.__call__`` is mirrored here, and ``_requests``, ``_errors``,
``_resources`` and the ``_serve_*`` fallbacks are used by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aiohttp.web
import attrs
import kmock
from kmock._internal import apps, rendering

from draledger.demo.emulator import discovery, errors
from draledger.demo.emulator.parsing import parse_request
from draledger.demo.emulator.printing import PrinterColumn
from draledger.demo.emulator.store import ResourceSpec

__all__ = ["ClusterScaffold"]


@attrs.define(kw_only=True)
class ClusterScaffold(kmock.KubernetesEmulator):
    """kmock's emulator with faithful URLs, errors and discovery; no object semantics of its own."""

    server_version: tuple[int, int] = (1, 36)
    # (group, plural) -> the columns of its server-side Table, filled by register_cluster_resources()
    printer_columns: dict[tuple[str, str], tuple[PrinterColumn, ...]] = attrs.field(factory=dict)

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        await raw_request.read()
        raw_response: aiohttp.web.StreamResponse | None = None
        try:
            if self.limit is not None and len(self._requests) >= self.limit:
                raise apps.KMockError("Too many requests have been served so far.")
            request = await parse_request(raw_request, id=len(self._requests))
            self._requests.append(request)
            try:
                response: aiohttp.web.StreamResponse = await self._handle(request)
                return response
            except rendering.StreamingError as exc:
                raw_response = exc.args[0]
                if exc.__cause__ is not None:
                    raise exc.__cause__ from None
                raise
        except Exception as exc:
            if not isinstance(exc, errors.ApiError):
                if not self._errors:
                    raise
                self._errors[-1].append(exc)
            if raw_response is None or not raw_response.prepared:
                rendered: aiohttp.web.StreamResponse = await self._render_error(exc)
                return rendered
            await self._stream_error(exc, raw_response)
            await raw_response.write_eof()
            return raw_response

    async def _render_error(self, exc: Exception) -> aiohttp.web.StreamResponse:
        if isinstance(exc, errors.ApiError):
            headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None
            return aiohttp.web.json_response(errors.status_body(exc), status=exc.status, headers=headers)
        response: aiohttp.web.StreamResponse = await super()._render_error(exc)
        return response

    # --- resources -----------------------------------------------------------------------------------

    def resolve(self, resource: kmock.resource | str | None) -> ResourceSpec | None:
        """The storage resource and its facts for a declared group/version/plural, or None."""
        if resource is None:
            return None
        wanted = kmock.resource(resource) if isinstance(resource, str) else resource
        siblings = [
            declared
            for declared in self._resources
            if declared.group == wanted.group and declared.plural == wanted.plural
        ]
        if wanted.plural is None or not any(declared.version == wanted.version for declared in siblings):
            return None
        storage = min(siblings, key=lambda declared: discovery.version_priority(str(declared.version)))
        info = self._resources[storage]
        return ResourceSpec(
            resource=storage,
            kind=info.kind or str(storage.plural).capitalize(),
            namespaced=bool(info.namespaced),
            status="status" in info.subresources,
        )

    def resolve_kind(self, api_version: str, kind: str) -> kmock.resource | None:
        """The declared resource that serves objects of this apiVersion and kind."""
        group, _, version = api_version.rpartition("/")
        for declared in self._resources:
            if (
                declared.group == group
                and declared.version == version
                and self._resources[declared].kind == kind
            ):
                return declared
        return None

    def require(self, resource: kmock.resource | str | None) -> ResourceSpec:
        spec = self.resolve(resource)
        if spec is None:
            raise errors.unknown_resource()
        return spec

    # --- discovery -----------------------------------------------------------------------------------

    def _discoverable(self) -> list[tuple[kmock.resource, kmock.ResourceInfo]]:
        pairs: list[tuple[kmock.resource, kmock.ResourceInfo]] = []
        for resource in self._get_resources():
            if resource.group is None or resource.version is None or resource.plural is None:
                continue
            info = self._resources[resource] if resource in self._resources else kmock.ResourceInfo()
            pairs.append((resource, info))
        return pairs

    async def _serve_server_version(self, request: rendering.Request) -> rendering.Payload:
        major, minor = self.server_version
        return {
            "major": str(major),
            "minor": str(minor),
            "gitVersion": f"v{major}.{minor}.0",
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.25.0",
            "compiler": "gc",
            "platform": "linux/amd64",
        }

    async def _serve_apis(self, request: rendering.Request) -> rendering.Payload:
        groups: dict[str, set[str]] = {}
        for resource, _ in self._discoverable():
            if resource.group:
                groups.setdefault(str(resource.group), set()).add(str(resource.version))
        items = []
        for group in sorted(groups):
            document = discovery.api_group(group, groups[group])
            items.append({key: document[key] for key in ("name", "versions", "preferredVersion")})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": items}

    async def _serve_group(self, request: rendering.Request) -> rendering.Payload:
        group = str(request.resource.group) if request.resource is not None else ""
        versions = {str(res.version) for res, _ in self._discoverable() if res.group == group}
        if not group or not versions:
            raise errors.unknown_resource()
        return discovery.api_group(group, versions)

    async def _serve_version(self, request: rendering.Request) -> rendering.Payload:
        wanted = request.resource
        group = str(wanted.group or "") if wanted is not None else ""
        version = str(wanted.version or "") if wanted is not None else ""
        pairs = [
            (res, info) for res, info in self._discoverable() if res.group == group and res.version == version
        ]
        if not pairs and group:
            raise errors.unknown_resource()
        return discovery.api_resource_list(group, version, pairs)


def api_version_of(resource: kmock.resource | None) -> str:
    """``group/version``, or just ``version`` for the core group."""
    assert resource is not None  # only called for requests that resolved to a declared resource
    return f"{resource.group}/{resource.version}" if resource.group else str(resource.version)


def with_api_version(obj: Mapping[str, Any], api_version: str) -> dict[str, Any]:
    """The object as served through one version of its resource (storage is shared between versions)."""
    if obj.get("apiVersion") == api_version:
        return dict(obj)
    rendered = dict(obj)
    rendered["apiVersion"] = api_version
    return rendered
