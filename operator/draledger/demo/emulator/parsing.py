"""Turning an aiohttp request into a kmock ``Request``, with kube-apiserver's URL grammar.

Why this exists: kmock 0.8's ``parse_path`` raises on ``/api/v1/namespaces`` and reads
``/api/v1/namespaces/ns1`` as "namespace ns1, no resource", so the core ``namespaces`` resource (which kopf
and ``kubectl get ns`` list) cannot be served. This module mirrors ``kmock.Request._parse`` (pinned to
kmock 0.8) with a parser that follows the apiserver's routes:

- ``/api/v1/{plural}[/{name}[/{subresource}]]`` and ``/apis/{group}/{version}/...`` (cluster-wide);
- ``/api/v1/namespaces/{ns}/{plural}[/{name}[/{subresource}]]`` (namespaced);
- ``/api/v1/namespaces[/{name}[/status|/finalize]]`` (the namespaces resource itself).

Rules: the produced Request has exactly the fields kmock's parser fills, so kmock's DSL filters
(``emulator['list v1/pods']``, ``kmock.namespace('ns1')``) keep matching. Non-Kubernetes paths get no
resource, as in kmock.
"""

from __future__ import annotations

from typing import Any

import aiohttp.web
import kmock
from kmock._internal import parsing, rendering

__all__ = ["parse_path", "parse_request"]

_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


def parse_path(path: str) -> parsing.ParsedPath:
    """Split an API path into group, version, plural, namespace, name and subresource."""
    parts = [part for part in path.strip("/").split("/") if part]
    version: str | None
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 2 and parts[0] == "apis":
        group, version, rest = parts[1], (parts[2] if len(parts) > 2 else None), parts[3:]
    else:
        return parsing.ParsedPath()

    namespace: str | None = None
    if rest[:1] == ["namespaces"] and (len(rest) <= 2 or rest[2] in _NAMESPACE_SUBRESOURCES):
        pass  # the namespaces resource itself: namespaces[/name[/status]]
    elif rest[:1] == ["namespaces"]:
        namespace, rest = rest[1], rest[2:]
    plural = rest[0] if rest else None
    name = rest[1] if len(rest) > 1 else None
    subresource = "/".join(rest[2:]) or None
    return parsing.ParsedPath(group, version, plural, namespace, name, subresource)


async def parse_request(raw_request: aiohttp.web.BaseRequest, *, id: int) -> rendering.Request:
    """The same Request that ``kmock.Request._parse`` builds, but with :func:`parse_path`."""
    body = await raw_request.read()
    text = await raw_request.text()
    data: Any
    try:
        data = await raw_request.json()
    except ValueError:
        try:
            data = await raw_request.post() or None
        except ValueError:
            data = None

    k8s = parse_path(raw_request.path)
    resource = (
        None if k8s.group is None else kmock.resource(group=k8s.group, version=k8s.version, plural=k8s.plural)
    )
    method = kmock.method(raw_request.method)
    action = parsing.guess_k8s(k8s, method, dict(raw_request.query))
    return rendering.Request(
        id=id,
        raw_request=raw_request,
        url=raw_request.url,
        method=raw_request.method,
        params=dict(raw_request.query),
        headers=dict(raw_request.headers),
        cookies=dict(raw_request.cookies),
        data=data,
        body=body,
        text=text,
        action=action,
        resource=resource,
        namespace=k8s.namespace,
        name=k8s.name,
        subresource=k8s.subresource,
    )
