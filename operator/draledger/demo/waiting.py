"""The story's clock: polling with a deadline, pauses for the eye, signals and the operator's task.

Rules:
1. State is waited for by polling a check with a deadline (:meth:`Pacer.until`), never by a sleep; a missed
   deadline is :class:`DemoFailed`, which says what did not happen.
2. The only sleeps that are not polls are the pauses between steps, for the human eye; ``fast`` removes them.
3. Every poll first checks for SIGINT/SIGTERM and for the operator's task: :class:`Stopped` when either
   stopped the story (Kopf installs its own signal handlers when it starts, so an operator that stops by
   itself is taken as a signal), :class:`DemoFailed` when the operator crashed.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable
from typing import Final, Protocol

__all__ = ["DemoFailed", "Drawing", "Pacer", "Stopped"]

POLL: Final = 0.05
SPINNER: Final = "|/-\\"
WITHIN: Final = 30.0  # seconds any single wait may take before the demo gives up
PAUSE: Final = 2.0  # seconds between steps for the human eye (not with --fast)


class DemoFailed(Exception):
    """Something the story waited for did not happen in time."""


class Stopped(Exception):
    """SIGINT/SIGTERM (or the operator stopped on its own, e.g. by Kopf's own signal handler)."""


class Drawing(Protocol):
    """The frame of the current step, as :class:`draledger.demo.frames.Board` draws it."""

    progress: str

    def show(self) -> None:
        """Redraw the frame in place (on a terminal)."""

    def commit(self) -> None:
        """Leave the frame on screen."""


class Pacer:
    """The story's time: its start, the operator's task, the signals it answers; one per run."""

    def __init__(self, drawing: Drawing, *, fast: bool) -> None:
        self.drawing = drawing
        self.fast = fast
        self.loop = asyncio.get_running_loop()
        self.started = self.loop.time()
        self.interrupted = asyncio.Event()
        self.task: asyncio.Task[None] | None = None  # the operator, once started
        self.ticks = 0

    def elapsed(self) -> float:
        return self.loop.time() - self.started

    def check(self) -> None:
        """Raise :class:`Stopped` or :class:`DemoFailed` if a signal or the operator ended the story."""
        if self.interrupted.is_set():
            raise Stopped
        if self.task is not None and self.task.done():
            error = None if self.task.cancelled() else self.task.exception()
            if error is not None:
                raise DemoFailed(f"the operator stopped: {error!r}")
            raise Stopped

    async def until(self, what: str, check: Callable[[], bool], within: float = WITHIN) -> None:
        """Poll ``check`` until it holds (redrawing the live frame), or fail after ``within`` seconds."""
        drawing = self.drawing
        begun = self.loop.time()
        deadline = begun + within
        while True:
            self.check()
            if check():
                drawing.progress = f"  ok: {what} ({self.loop.time() - begun:.1f}s)"
                drawing.show()
                return
            now = self.loop.time()
            if now > deadline:
                drawing.progress = f"  FAILED: {what}: not within {within:.0f}s"
                raise DemoFailed(f"timed out waiting for: {what}")
            self.ticks += 1
            drawing.progress = f"  {SPINNER[self.ticks // 2 % len(SPINNER)]} waiting: {what} ({now - begun:.1f}s)"
            if self.ticks % 2 == 0:
                drawing.show()
            await asyncio.sleep(POLL)

    async def end_step(self) -> None:
        """Let a human look (redrawing, not waiting for state), then leave the frame on screen."""
        if not self.fast:
            until = self.loop.time() + PAUSE
            while self.loop.time() < until:
                self.check()
                self.drawing.show()
                await asyncio.sleep(0.2)
        self.drawing.commit()
        self.install_signals()  # Kopf installed its own handlers when it started: take them back

    async def idle(self) -> None:
        """Wait, doing nothing, until a signal or the operator stops (raises :class:`Stopped`)."""
        while True:
            self.check()
            await asyncio.sleep(0.2)

    def _interrupt(self) -> None:
        self.interrupted.set()

    def install_signals(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                self.loop.add_signal_handler(sig, self._interrupt)

    def remove_signals(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                self.loop.remove_signal_handler(sig)
