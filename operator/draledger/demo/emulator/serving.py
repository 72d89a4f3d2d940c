"""Running the emulator on a local HTTP port, and pointing kubeconfig-reading clients at it.

Rules:
1. :func:`serve_emulator` enters the emulator (kmock starts its stream feeder) and a ``kmock.Server`` on
   ``host:port`` (port 0: a free port), declares the cluster resources unless told not to, and yields the
   emulator with its base URL (``http://127.0.0.1:PORT``, no trailing slash). Both stop on exit.
2. Plain HTTP only (kmock 0.8 has no TLS). Bind to loopback unless you mean otherwise.
3. :class:`EmulatorServer` serves an already entered emulator on one port that it keeps: ``stop()`` closes
   the listening socket and every open connection at once (watch streams end as a dying API server's do,
   without a clean end of the response), ``start()`` listens again on the same port, the store untouched.
   That is an API server stopped and restarted, as clients see it.
4. :func:`write_kubeconfig` writes a kubeconfig (JSON, which is valid YAML) with one cluster, one user with
   no credentials and one current context, for the real ``kubectl`` and for kopf's kubeconfig login.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any

import aiohttp.test_utils
import aiohttp.web_runner
import aiohttp.web_server
import kmock

from draledger.demo.emulator.cluster import ClusterEmulator
from draledger.demo.emulator.discovery import register_cluster_resources

__all__ = ["EmulatorServer", "serve_emulator", "write_kubeconfig"]

SHUTDOWN_TIMEOUT = 0.1  # seconds an open request (a watch) gets to end by itself when the server stops


@contextlib.asynccontextmanager
async def serve_emulator(
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    emulator: ClusterEmulator | None = None,
    register: bool = True,
) -> AsyncIterator[tuple[ClusterEmulator, str]]:
    """Serve an emulator over HTTP for the duration of the ``async with`` block."""
    emulator = emulator if emulator is not None else ClusterEmulator()
    if register:
        register_cluster_resources(emulator)
    async with emulator, kmock.Server(emulator, host=host, port=port or None) as server:
        yield emulator, str(server.url).rstrip("/")


class _QuickStopServer(aiohttp.test_utils.RawTestServer):
    """aiohttp's test server, but stopping cancels open requests at once rather than after 60 s."""

    async def _make_runner(self, debug: bool = True, **kwargs: Any) -> aiohttp.web_runner.ServerRunner:
        server = aiohttp.web_server.Server(self._handler, loop=self._loop, debug=debug, **kwargs)
        return aiohttp.web_runner.ServerRunner(server, debug=debug, shutdown_timeout=SHUTDOWN_TIMEOUT, **kwargs)


class EmulatorServer:
    """Rule 3: an emulator on a port that survives ``stop()`` and ``start()`` (the emulator must be entered)."""

    def __init__(self, emulator: ClusterEmulator, host: str = "127.0.0.1", port: int = 0) -> None:
        self.emulator = emulator
        self.host = host
        self.port = port
        self._server: kmock.Server | None = None

    @property
    def url(self) -> str:
        if not self.port:
            raise RuntimeError("the server has not been started yet")
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._server is not None

    async def start(self) -> str:
        """Listen (on the port of the first start, once there was one); returns the URL."""
        if self._server is not None:
            return self.url
        server = kmock.Server(self.emulator, host=self.host, port=self.port or None, server_cls=_QuickStopServer)
        await server.__aenter__()
        self._server, self.port = server, server.port
        return self.url

    async def stop(self) -> None:
        """Stop listening and drop every connection, open watches included; the store is kept."""
        server, self._server = self._server, None
        if server is not None:
            await server.__aexit__(None, None, None)

    async def __aenter__(self) -> EmulatorServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()


def write_kubeconfig(
    path: str | os.PathLike[str],
    url: str,
    *,
    context: str = "draledger-emulator",
    namespace: str = "default",
) -> pathlib.Path:
    """Write a kubeconfig for ``url`` to ``path`` and return the path."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {"server": url}}],
        "users": [{"name": context, "user": {}}],
        "contexts": [
            {"name": context, "context": {"cluster": context, "user": context, "namespace": namespace}}
        ],
        "current-context": context,
        "preferences": {},
    }
    target = pathlib.Path(path)
    target.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return target
