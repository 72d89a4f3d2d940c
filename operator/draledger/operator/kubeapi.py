"""A small async Kubernetes API client for the operator's own writes (ledgers, events, pod gates/status).

Rules:
1. Credentials are a ``kopf.ConnectionInfo`` (draledger.operator.connecting): in-cluster, a kubeconfig, or an explicit
   URL. A 401 loads them again (``login``) and retries once: rotated tokens and exec plugins keep working.
   Credentials past their ``expiration`` (connecting, rule 6) are loaded again before the request goes out.
2. 429, 5xx and connection errors are retried with capped exponential backoff (honouring Retry-After);
   409/422 are returned to the caller as ``Conflict`` (it re-reads and decides), 404 as ``NotFound``; other 4xx
   raise ``ApiError``. An error's body may be plain text (kube-apiserver's ``404 page not found``); only a
   successful answer that is not JSON counts as a broken server (retried like a connection error).
3. Nothing here decides what to write: callers pass complete patches. Writes carry ``fieldManager=draledger``
   and every request a ``draledger/<version>`` User-Agent, so the API server's audit log and managedFields
   name the operator.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import kopf
import msgspec

from draledger import __version__
from draledger.operator import clocks

JSON_PATCH = "application/json-patch+json"
FIELD_MANAGER = "draledger"
USER_AGENT = f"draledger/{__version__}"
MERGE_PATCH = "application/merge-patch+json"
_ENCODER = msgspec.json.Encoder()


def transport_cause(error: BaseException, timeout: float | None = None) -> str:
    """What went wrong with a request that got no answer, in a few words, for one line (``timeout``: the
    seconds it was given)."""
    if isinstance(error, aiohttp.ClientConnectorCertificateError):
        return f"TLS: the server's certificate is not trusted ({error.certificate_error})"
    if isinstance(error, aiohttp.ClientSSLError | ssl.SSLError):
        return f"TLS: {getattr(error, 'os_error', None) or error}"
    if isinstance(error, aiohttp.ClientConnectorError):
        os_error = error.os_error
        if isinstance(os_error, ConnectionRefusedError):
            return "connection refused"
        if isinstance(os_error, socket.gaierror):
            return f"unknown host {error.host} ({os_error.strerror})"
        return os_error.strerror or str(os_error) or type(os_error).__name__
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return "the server closed the connection"
    if isinstance(error, TimeoutError):
        return f"no answer within {timeout:g} s" if timeout else "no answer in time"
    if isinstance(error, json.JSONDecodeError):
        return "the answer is not JSON: is this a Kubernetes API server?"
    if isinstance(error, aiohttp.InvalidURL):
        return f"not a URL: {error}"
    if isinstance(error, KeyError):  # kopf looks the current context, its cluster and user up by name
        return f"it names {error} but does not define it"
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class ApiError(Exception):
    def __init__(self, status: int, body: Any, what: str) -> None:
        message = body.get("message") if isinstance(body, dict) else str(body)[:200]
        super().__init__(f"{what}: HTTP {status}: {message}")
        self.status = status
        self.body = body


class Conflict(ApiError):
    """409 or 422: the object changed under us (a resourceVersion test failed, or it already exists)."""


class NotFound(ApiError):
    """404: the object (or its parent) does not exist."""


def _error_body(text: str) -> Any:
    """An error answer's body: a Status, or plain text. kube-apiserver answers ``404 page not found`` (text)
    for an API it does not serve at all, e.g. a CRD not installed: that is a NotFound, not a broken server."""
    try:
        return json.loads(text) if text else None
    except ValueError:
        return text


def backoffs(base: float = 0.2, cap: float = 10.0, attempts: int = 8) -> list[float]:
    return [min(cap, base * 2**i) for i in range(attempts)]


class KubeApi:
    def __init__(
        self,
        info: kopf.ConnectionInfo,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        *,
        attempts: int = 8,
        timeout: float = 30.0,
        connect_timeout: float | None = None,
        login: Callable[[], kopf.ConnectionInfo] | None = None,
        now: Callable[[], datetime.datetime] = clocks.now,
        connections: int = 16,
    ) -> None:
        """``attempts`` retries of 429, 5xx and connection errors; ``timeout`` seconds per request, of which
        ``connect_timeout`` to connect (commands use short ones, so an unreachable server fails fast);
        ``now``, the wall clock that credentials expire by; ``connections``, the most open at once (a request
        beyond them waits for one, and its time counts against its ``timeout``)."""
        self.server = info.server.rstrip("/")
        self._info = info
        self._login = login
        self._now = now
        self._sleep = sleep
        self._attempts = attempts
        self._timeout = aiohttp.ClientTimeout(total=timeout, connect=connect_timeout)
        self._session: aiohttp.ClientSession | None = None
        self._connections = connections

    def _ssl(self) -> ssl.SSLContext | bool:
        info = self._info
        if not self.server.startswith("https"):
            return False
        if info.insecure:
            return False
        context = ssl.create_default_context(cafile=info.ca_path and str(info.ca_path))
        if info.ca_data:
            data = info.ca_data.decode() if isinstance(info.ca_data, bytes) else info.ca_data
            context.load_verify_locations(cadata=data)
        if info.certificate_path and info.private_key_path:
            context.load_cert_chain(str(info.certificate_path), str(info.private_key_path))
        return context

    def _headers(self) -> dict[str, str]:
        info = self._info
        headers = {"User-Agent": USER_AGENT}
        if info.token:
            headers["Authorization"] = f"{info.scheme or 'Bearer'} {info.token}"
        return headers

    async def relogin(self) -> bool:
        """Load the credentials again (after a 401); False when there is nothing to load them from."""
        if self._login is None:
            return False
        self._info = self._login()
        self.server = self._info.server.rstrip("/")
        if self._session is not None:
            await self._session.close()
            self._session = None
        return True

    def expired(self) -> bool:
        """Whether the credentials say they have expired (rule 1)."""
        expiration = self._info.expiration
        if expiration is None:
            return False
        if expiration.tzinfo is None:
            expiration = expiration.replace(tzinfo=datetime.UTC)  # naive: UTC, as Kopf reads it
        return self._now() >= expiration

    async def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(ssl=self._ssl(), limit=self._connections)
            auth = (
                aiohttp.BasicAuth(self._info.username, self._info.password or "")
                if self._info.username
                else None
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                headers=self._headers(),
                auth=auth,
                timeout=self._timeout,
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        params: dict[str, str] | None = None,
        what: str = "",
        reply: bool = True,
        attempts: int | None = None,
        decode: Callable[[bytes], Any] | None = None,
    ) -> Any:
        """The decoded response body (by ``decode`` when given, else ``json.loads``); None for ``reply=False``
        (a write whose answer nobody reads is not decoded: a ledger's is kilobytes, and the watch brings the
        object anyway). ``attempts`` overrides the client's number of retries for this call (the writer
        retries per node itself, so one node's trouble never holds a slot for long)."""
        what = what or f"{method} {path}"
        delays = backoffs(attempts=self._attempts if attempts is None else attempts)
        if method in ("POST", "PUT", "PATCH"):
            params = {**(params or {}), "fieldManager": FIELD_MANAGER}
        relogged = False
        if self.expired():
            relogged = await self.relogin()  # at most once per request, with the 401's
        for attempt in range(len(delays) + 1):
            try:
                session = await self.session()
                data = _ENCODER.encode(body) if body is not None else None
                async with session.request(
                    method,
                    self.server + path,
                    data=data,
                    params=params,
                    headers={"Content-Type": content_type},
                ) as response:
                    if response.status < 400 and not reply:
                        await response.read()
                        return None
                    if response.status < 400 and decode is not None:
                        return decode(await response.read())
                    text = await response.text()
                    if response.status < 400:
                        return json.loads(text) if text else None
                    payload = _error_body(text)
                    if response.status == 401 and not relogged and await self.relogin():
                        relogged = True  # expired or rotated credentials: fresh ones, once, at once
                        continue
                    if response.status in (409, 422):
                        raise Conflict(response.status, payload, what)
                    if response.status == 404:
                        raise NotFound(response.status, payload, what)
                    retryable = response.status == 429 or response.status >= 500
                    if not retryable or attempt == len(delays):
                        raise ApiError(response.status, payload, what)
                    delay = delays[attempt]
                    retry_after = response.headers.get("Retry-After", "")
                    if retry_after.isdigit():
                        delay = max(delay, float(retry_after))
            except (aiohttp.ClientConnectionError, TimeoutError, json.JSONDecodeError):
                if attempt == len(delays):
                    raise
                delay = delays[attempt]
            await self._sleep(delay)
        raise AssertionError("unreachable")

    # ----- conveniences -----
    async def get(self, path: str, *, attempts: int | None = None, **params: str) -> Any:
        return await self.request("GET", path, params=params or None, attempts=attempts)

    async def list_all(self, path: str, **params: str) -> list[dict[str, Any]]:
        """A paginated LIST (limit/continue)."""
        items: list[dict[str, Any]] = []
        query = {"limit": "500", **params}
        while True:
            page = await self.request("GET", path, params=query)
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items
            query = {**query, "continue": token}

    async def list_pages(
        self, path: str, decode: Callable[[bytes], Any], *, limit: int = 500, attempts: int | None = None,
        **params: str,
    ) -> AsyncIterator[tuple[list[dict[str, Any]], str]]:
        """A paginated LIST, one decoded page at a time, each with the list's resourceVersion (a continued
        list keeps the first page's): the caller never holds more than one page of a large collection."""
        query = {"limit": str(limit), **params}
        while True:
            page = await self.request("GET", path, params=query, decode=decode, attempts=attempts)
            metadata = page.get("metadata") or {}
            yield page.get("items") or [], str(metadata.get("resourceVersion") or "")
            token = metadata.get("continue")
            if not token:
                return
            query = {**query, "continue": token}

    async def create(self, path: str, body: dict[str, Any], *, attempts: int | None = None) -> Any:
        return await self.request("POST", path, body=body, attempts=attempts)

    async def merge_patch(
        self, path: str, patch: dict[str, Any], *, reply: bool = True, attempts: int | None = None
    ) -> Any:
        return await self.request("PATCH", path, body=patch, content_type=MERGE_PATCH, reply=reply, attempts=attempts)

    async def json_patch(
        self, path: str, ops: list[dict[str, Any]], *, attempts: int | None = None,
        decode: Callable[[bytes], Any] | None = None,
    ) -> Any:
        return await self.request("PATCH", path, body=ops, content_type=JSON_PATCH, attempts=attempts, decode=decode)
