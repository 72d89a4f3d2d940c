"""Running the emulator on a local HTTP port, and pointing kubeconfig-reading clients at it.

Rules:
1. :func:`serve_emulator` enters the emulator (kmock starts its stream feeder) and a ``kmock.Server`` on
   ``host:port`` (port 0: a free port), declares the cluster resources unless told not to, and yields the
   emulator with its base URL (``http://127.0.0.1:PORT``, no trailing slash). Both stop on exit.
2. Plain HTTP only (kmock 0.8 has no TLS). Bind to loopback unless you mean otherwise.
3. :func:`write_kubeconfig` writes a kubeconfig (JSON, which is valid YAML) with one cluster, one user with
   no credentials and one current context, for the real ``kubectl`` and for kopf's kubeconfig login.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
from collections.abc import AsyncIterator

import kmock

from draledger.emulator.cluster import ClusterEmulator
from draledger.emulator.discovery import register_cluster_resources

__all__ = ["serve_emulator", "write_kubeconfig"]


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
