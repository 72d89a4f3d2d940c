"""The demo's output helpers: snapshots in a pipe, redrawn frames on a terminal; small formatting rules."""

from __future__ import annotations

import io
import re

import pytest

from draledger.commands.tables import ledger_table
from draledger.demo.frames import describe_devices
from draledger.demo.observing import complete
from draledger.demo.screen import Screen, colour_wanted


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
    screen = Screen(out, tty=True, colour=True)
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


SGR = re.compile(r"\x1b\[[0-9;]*m")  # colour and bold: Select Graphic Rendition


@pytest.mark.parametrize(("tty", "environ", "expected"), [
    pytest.param(True, {}, True, id="terminal"),
    pytest.param(False, {}, False, id="pipe"),
    pytest.param(True, {"NO_COLOR": "1"}, False, id="no-color-on-a-terminal"),
    pytest.param(True, {"NO_COLOR": "false"}, False, id="no-color-any-value"),
    pytest.param(True, {"NO_COLOR": ""}, True, id="no-color-empty-is-unset"),
    pytest.param(False, {"FORCE_COLOR": "1"}, True, id="force-color-in-a-pipe"),
    pytest.param(False, {"FORCE_COLOR": ""}, False, id="force-color-empty-is-unset"),
    pytest.param(True, {"NO_COLOR": "1", "FORCE_COLOR": "1"}, False, id="no-color-wins"),
])
def test_colour_wanted(tty: bool, environ: dict[str, str], expected: bool) -> None:
    """Colour on a terminal; NO_COLOR (any non-empty value) turns it off, FORCE_COLOR on, NO_COLOR wins."""
    assert expected == colour_wanted(tty, environ)


def test_no_color_on_a_terminal_keeps_the_redraw(monkeypatch: pytest.MonkeyPatch) -> None:
    """With NO_COLOR a terminal still gets its frames redrawn in place, but not one colour or bold code."""
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    out = io.StringIO()
    screen = Screen(out, tty=True)
    screen.live("== [1/6] one ==\nworker-1   Rebuilding\n")
    screen.commit("== [1/6] one ==\nworker-1   Ready\n")
    text = out.getvalue()
    assert "\x1b[2F\x1b[J" in text
    assert [] == SGR.findall(text)
    assert text.endswith("== [1/6] one ==\nworker-1   Ready\n\n")


def test_force_color_in_a_pipe_colours_without_moving_the_cursor(monkeypatch: pytest.MonkeyPatch) -> None:
    """FORCE_COLOR colours a pipe's snapshots; the cursor is never moved there (no live frames)."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    out = io.StringIO()
    screen = Screen(out, tty=False)
    screen.start()
    screen.live("worker-1   Rebuilding\n")
    screen.commit("== [1/6] one ==\nworker-1   Ready\n")
    screen.stop()
    assert "\x1b[1m== [1/6] one ==\x1b[0m\nworker-1   \x1b[32mReady\x1b[0m\n\n" == out.getvalue()


def test_a_pipe_gets_no_escape_code_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a terminal and without FORCE_COLOR, not one escape character is written."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    out = io.StringIO()
    screen = Screen(out)  # a StringIO is not a terminal
    screen.start()
    screen.live("worker-1   Rebuilding\n")
    screen.commit("== [1/6] one ==\nworker-1   Overcommitted\n")
    screen.say("done")
    screen.stop()
    assert "\x1b" not in out.getvalue()
