"""The real operator as a separate process (``python -m draledger run``), so that SIGKILL really kills it.

Rules:
1. Each process starts in its own session (its own process group); ``kill()`` sends SIGKILL to the whole
   group and reaps it. :class:`Operators` remembers every process it started and kills them all when the
   test ends, whatever happened: no orphans.
2. Short windows keep a scenario quick: coalescing 50 ms, watch requests of 2 s (a healthy quiet stream
   makes contact every 2 s), freshness window 5 s (an API server stopped longer than that turns the ledgers
   Stale), ``--pod-status backfill``, Events on.
3. Each process gets its own free metrics port (``/readyz`` tells whether the rebuild is over) and its own
   log file; a failing scenario prints the tail of every log.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import aiohttp

ARGS = (
    "--coalesce-window", "0.05",
    "--coalesce-window-max", "0.5",
    "--watch-timeout", "2",
    "--freshness-window", "5",
    "--pod-status", "backfill",
    "--log-format", "json",
    "--metrics-host", "127.0.0.1",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class OperatorProcess:
    def __init__(self, server: str, log: Path, args: Sequence[str] = ()) -> None:
        """``args``: flags after the usual ones (tests/faults/test_failover.py adds leader election)."""
        self.port = free_port()
        self.log = log
        self.started = time.monotonic()
        env = {k: v for k, v in os.environ.items() if not k.startswith("DRALEDGER_")}
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "draledger", "run", "--server", server,
                 "--metrics-port", str(self.port), *ARGS, *args],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True,
            )

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL to the process group, then reap."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    async def get(self, path: str) -> tuple[int, str] | None:
        """(status, body) of the probe server, or None while nothing listens."""
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session, \
                    session.get(f"http://127.0.0.1:{self.port}{path}") as response:
                return response.status, await response.text()
        except (aiohttp.ClientError, TimeoutError):
            return None

    async def readyz(self) -> int | None:
        answer = await self.get("/readyz")
        return None if answer is None else answer[0]

    async def gauge(self, name: str) -> dict[str, float]:
        """A metric's samples by their label text, e.g. ``{'reason="Conflict"': 0.0}``."""
        answer = await self.get("/metrics")
        samples: dict[str, float] = {}
        for line in (answer[1] if answer else "").splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                labels = line[len(name):].split("}", 1)[0].lstrip("{") if "{" in line.split(" ")[0] else ""
                samples[labels] = float(line.rsplit(" ", 1)[1])
        return samples


class Operators:
    """Every operator process of one scenario (rule 1)."""

    def __init__(self, server: str, logs: Path) -> None:
        self.server = server
        self.logs = logs
        self.started: list[OperatorProcess] = []

    @property
    def current(self) -> OperatorProcess:
        return self.started[-1]

    def start(self) -> OperatorProcess:
        assert not self.started or not self.current.alive, "one operator at a time"
        process = OperatorProcess(self.server, self.logs / f"operator-{len(self.started)}.log")
        self.started.append(process)
        return process

    def kill_all(self) -> None:
        for process in self.started:
            process.kill()

    def tails(self, lines: int = 40) -> str:
        out = []
        for process in self.started:
            text = process.log.read_text(errors="replace").splitlines() if process.log.exists() else []
            out.append(f"--- {process.log.name} (exit {process.process.poll()})\n" + "\n".join(text[-lines:]))
        return "\n".join(out)
