"""The demo's output helpers: snapshots in a pipe, redrawn frames on a terminal; small formatting rules."""

from __future__ import annotations

import io

from draledger.commands.tables import ledger_table
from draledger.demo.screen import Screen
from draledger.demo.story import complete, describe_devices


def test_pipe_gets_plain_snapshots() -> None:
    """Without a TTY, live frames are not written and committed ones are written once, without escapes."""
    out = io.StringIO()
    screen = Screen(out, tty=False)
    screen.start()
    screen.live("== [1/6] one ==\nworker-1   Ready\n")
    assert "" == out.getvalue()
    screen.commit("== [1/6] one ==\nworker-1   Ready\n")
    screen.stop()
    assert "== [1/6] one ==\nworker-1   Ready\n\n" == out.getvalue()


def test_terminal_frames_are_redrawn_in_place() -> None:
    """On a TTY the second frame first moves the cursor up over the first and clears, phases are coloured."""
    out = io.StringIO()
    screen = Screen(out, tty=True)
    screen.live("a\nworker-1   Rebuilding\n")
    screen.live("a\nworker-1   Ready\n")
    text = out.getvalue()
    assert "\x1b[2F\x1b[J" in text
    assert "\x1b[90mRebuilding\x1b[0m" in text
    assert "\x1b[32mReady\x1b[0m" in text
    screen.commit("done\n")
    assert out.getvalue().endswith("\x1b[2F\x1b[Jdone\n\n")


def test_devices_are_summarised() -> None:
    """Cores are counted, other devices named."""
    assert "gpu-1, 4 cores, hugepages-2mi-1" == describe_devices(
        ["gpu-1", "core-12", "core-13", "core-14", "core-15", "hugepages-2mi-1"]
    )
    assert "1 core" == describe_devices(["core-0"])


def test_a_ledger_without_status_still_renders() -> None:
    """A ledger just created (no status yet) renders as a row with placeholders."""
    table = ledger_table([complete({"metadata": {"name": "worker-9"}})])
    assert table.splitlines()[1].split()[:2] == ["worker-9", "-"]
