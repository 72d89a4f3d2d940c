"""``draledger demo``: an embedded Kubernetes API, a realistic DRA cluster, the real operator, a short story.

:func:`run_demo` serves the emulator (:mod:`draledger.demo.emulator`, the one the tests use) on 127.0.0.1,
preloads the cluster of :mod:`draledger.demo.cluster` (and the ledgers of the operator's "previous run"),
starts the real operator in-process against it and plays :mod:`draledger.demo.story`. It needs no input:
it runs in CI and in a pipe, and exits by itself (0 when every step happened in time). With ``serve`` the
cluster stays up afterwards, with a kubeconfig for the real ``kubectl``, until SIGINT or SIGTERM.

The operator's and Kopf's logs go to a file (``log_file``, default a temporary file), never to the output.
Unusable options (a busy port, a file that cannot be written) end the command before anything starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
from collections.abc import Iterator
from typing import TextIO

__all__ = ["run_demo"]


@contextlib.contextmanager
def _logging_to(path: str) -> Iterator[None]:
    """Structlog JSON logs of the operator and Kopf (and warnings) into ``path``; restored afterwards."""
    from draledger.operator import logs

    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    stream = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed below, after the handlers are restored
    try:
        logs.configure("json", "info")
        for handler in root.handlers:
            if isinstance(handler, logging.StreamHandler):
                handler.setStream(stream)
        logging.captureWarnings(True)
        yield
    finally:
        logging.captureWarnings(False)
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        stream.close()


async def _play(
    *, serve: bool, fast: bool, kubeconfig: str, out: TextIO, port: int, svg: str | None, tty: bool | None
) -> int:
    from dataclasses import replace

    from draledger.demo import cluster
    from draledger.demo.emulator import serve_emulator
    from draledger.demo.screen import Screen
    from draledger.demo.story import Story
    from draledger.operator import clocks
    from draledger.operator.config import OperatorConfig
    from draledger.operator.running import Operator

    async with serve_emulator(port=port) as (emulator, url):
        now = clocks.now()
        objects = cluster.build_cluster(now)
        emulator.load_objects([*objects, *cluster.previous_ledgers(objects, now)])
        config = replace(
            OperatorConfig(),
            server=url,
            metrics_port=0,
            metrics_host="127.0.0.1",
            coalesce_window=0.1,
            watch_timeout=5,
            freshness_window=60.0,
            events=True,
        )
        operator = Operator(config, asyncio.Event())
        story = Story(emulator, url, operator, Screen(out, tty), fast=fast, serve=serve, kubeconfig=kubeconfig,
                      svg=svg)
        return await story.run()


def run_demo(
    serve: bool,
    fast: bool,
    kubeconfig: str,
    out: TextIO,
    *,
    port: int = 0,
    svg: str | None = None,
    log_file: str | None = None,
    tty: bool | None = None,
) -> int:
    """Play the demo; return the exit status (0: every step happened; 1: one did not; 130: interrupted).

    Its port and the files it will write are checked first (:mod:`draledger.demo.preflight`): a
    ``CommandError`` (exit status 2) before anything starts.
    """
    from draledger.demo import preflight

    preflight.check(port=port, log_file=log_file, svg=svg, kubeconfig=kubeconfig if serve else None)
    if log_file:
        path = log_file
    else:
        handle, path = tempfile.mkstemp(prefix="draledger-demo-", suffix=".log")
        os.close(handle)
    code = 130
    try:
        with _logging_to(path):
            code = asyncio.run(
                _play(serve=serve, fast=fast, kubeconfig=kubeconfig, out=out, port=port, svg=svg, tty=tty)
            )
    except KeyboardInterrupt:
        code = 130
    finally:
        out.write(f"Operator and API logs: {path}\n")
        out.flush()
    return code
