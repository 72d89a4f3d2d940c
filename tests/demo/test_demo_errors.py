"""`draledger demo` with unusable options: one line on stderr, exit 2, and nothing started (issue 16).

"Nothing started" is observable: the story's first line (``draledger demo: embedded Kubernetes API at ...``)
is never printed, and the log file, which the demo opens before it starts the emulator, is never created.
"""

from __future__ import annotations

import pathlib
import re
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from draledger.commands.errors import CommandError
from draledger.demo import preflight
from tests.demo.conftest import draledger


def demo(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*draledger(), "demo", "--fast", *args],
        cwd=cwd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )


def assert_refused(result: subprocess.CompletedProcess[str], pattern: str) -> None:
    """Exit 2, exactly one stderr line matching ``pattern``, and no output at all: the story never began."""
    assert 2 == result.returncode, result.stdout + result.stderr
    assert re.fullmatch(pattern + r"\n", result.stderr), result.stderr
    assert "" == result.stdout


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.create_server(("127.0.0.1", 0)) as listening:
        yield listening.getsockname()[1]


class TestRefusedBeforeTheStory:
    def test_busy_port(self, tmp_path: pathlib.Path, busy_port: int) -> None:
        """A port another process listens on: one line naming it, exit 2, no log file opened."""
        log = tmp_path / "demo.log"
        result = demo("--port", str(busy_port), "--log-file", str(log), cwd=tmp_path)
        assert_refused(result, rf"error: port {busy_port} on 127\.0\.0\.1 is in use \(.+\)")
        assert not log.exists()

    def test_not_a_port(self, tmp_path: pathlib.Path) -> None:
        """A number beyond 65535 is refused as a port, not turned into an OverflowError."""
        assert_refused(demo("--port", "70000", cwd=tmp_path), r"error: --port '70000': must be an integer "
                       r"from 0 to 65535 \(see draledger demo --help\)")

    def test_log_file_in_a_missing_folder(self, tmp_path: pathlib.Path) -> None:
        """The log's folder does not exist: the line names the path and the folder; nothing is created."""
        log = tmp_path / "missing" / "demo.log"
        result = demo("--log-file", str(log), cwd=tmp_path)
        assert_refused(result, re.escape(f"error: {log}: cannot write: the folder {log.parent} does not exist"))
        assert not log.parent.exists()

    @pytest.mark.parametrize("where", [
        pytest.param("missing/ledgers.svg", id="missing-folder"),
        pytest.param("a-file/ledgers.svg", id="folder-is-a-file"),
        pytest.param("a-folder", id="path-is-a-folder"),
    ])
    def test_unwritable_svg(self, tmp_path: pathlib.Path, where: str) -> None:
        """An SVG that could not be written is refused before the story, not after it (no log file opened)."""
        (tmp_path / "a-file").write_text("not a folder\n")
        (tmp_path / "a-folder").mkdir()
        svg, log = tmp_path / where, tmp_path / "demo.log"
        result = demo("--svg", str(svg), "--log-file", str(log), cwd=tmp_path)
        assert_refused(result, re.escape(f"error: {svg}: cannot write: ") + ".+")
        assert not log.exists()

    def test_serve_kubeconfig_in_a_missing_folder(self, tmp_path: pathlib.Path) -> None:
        """--serve would write its kubeconfig into a missing folder: refused before the story."""
        config, log = tmp_path / "missing" / "demo.kubeconfig", tmp_path / "demo.log"
        result = demo("--serve", "--kubeconfig", str(config), "--log-file", str(log), cwd=tmp_path)
        assert_refused(result, re.escape(f"error: {config}: cannot write: the folder {config.parent} does not exist"))
        assert not log.exists()


class TestPreflight:
    def test_kubeconfig_is_checked_only_for_serve(self, tmp_path: pathlib.Path) -> None:
        """Without --serve no kubeconfig is written, so its path is not checked (None), the others are."""
        preflight.check(port=0, log_file=None, svg=None, kubeconfig=None)
        with pytest.raises(CommandError) as raised:
            preflight.check(port=0, log_file=None, svg=None, kubeconfig=str(tmp_path / "missing" / "k"))
        assert 2 == raised.value.code

    def test_a_free_port_passes_and_stays_free(self) -> None:
        """Checking a free port does not keep it: the emulator can bind it right after."""
        with socket.create_server(("127.0.0.1", 0)) as probe:
            port = probe.getsockname()[1]
        preflight.check(port=port, log_file=None, svg=None, kubeconfig=None)
        with socket.create_server(("127.0.0.1", port)):
            pass


def test_without_the_demo_extra(tmp_path: pathlib.Path) -> None:
    """Without kmock, `draledger demo` says which extra to install, in one line, and exits 2."""
    code = "import sys; sys.modules['kmock'] = None\nfrom draledger.commands.cli import main\nmain(['demo', '--fast'])"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert 2 == result.returncode, result.stderr
    assert ("error: draledger demo needs the Python package 'kmock', from the demo extra: "
            "pip install 'dra-ledger[demo]'\n") == result.stderr
    assert "" == result.stdout
