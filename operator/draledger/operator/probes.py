"""The HTTP endpoints: ``/metrics`` (Prometheus), ``/healthz`` (liveness) and ``/readyz`` (rebuilt).

With leader election, ``/readyz`` also names this replica's role (``ready: leader``, ``ready: standby``): a
warm standby is Ready, since it serves the webhook and can take over without a rebuild."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from draledger.operator.metrics import Metrics


def application(
    metrics: Metrics, alive: Callable[[], bool], ready: Callable[[], bool], role: Callable[[], str] | None = None
) -> web.Application:
    async def metrics_handler(_: web.Request) -> web.Response:
        body = generate_latest(metrics.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok\n") if alive() else web.Response(status=500, text="writer stopped\n")

    async def readyz(_: web.Request) -> web.Response:
        said = f": {role()}" if role is not None else ""
        if ready():
            return web.Response(text=f"ready{said}\n")
        return web.Response(status=503, text=f"rebuilding{said}\n")

    app = web.Application()
    app.router.add_get("/metrics", metrics_handler)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app


async def serve(app: web.Application, host: str, port: int) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    addresses = runner.addresses  # the sockets bound: port 0 asks for a free port
    return runner, (addresses[0][1] if addresses else port)
