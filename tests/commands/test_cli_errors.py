"""Every command's bad input ends in one line, ``error: <file/object/server>: <cause>``, and the documented exit
code (2: unusable input or usage; 1: a failed operation), before any work is done; a bug of ours is one line
too, unless DRALEDGER_DEBUG=1 asks for the traceback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from draledger.commands import audit, cli
from draledger.operator import kopfcompat
from strategies import as_list, container, node_obj, pod_obj


def draledger(capfd: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``draledger ARGV...`` through the console entry point, in process: exit code, stdout, stderr."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(list(argv))
    out, err = capfd.readouterr()
    code = exit_info.value.code
    assert isinstance(code, int)
    return code, out, err


def closed_port_url() -> str:
    """A local URL nothing listens on: a command that connected first would fail with exit 1, not 2."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    path = tmp_path / "dump.json"
    items = [node_obj("n1"), pod_obj("p", containers=[container("a", {"cpu": "1"})])]
    path.write_text(json.dumps(as_list(items)), encoding="utf-8")
    return path


def bad_inputs(tmp: Path, dump: Path) -> list[tuple[list[str], str]]:
    """(argv, the one line on stderr) for every command's unusable inputs; each exits 2 with nothing on stdout."""
    (tmp / "not-utf8.json").write_bytes(b'{"kind": "List", "items": ["\xff"]}')
    (tmp / "text.txt").write_text("hello, this is no dump\n", encoding="utf-8")
    (tmp / "list.json").write_text("[1, 2]", encoding="utf-8")
    (tmp / "string.json").write_text('"just a string"', encoding="utf-8")
    (tmp / "nal.yaml").write_text("apiVersion: v1\nkind: List\nitems:\n- kind: NodeAllocatableLedger\n",
                                  encoding="utf-8")
    missing, folder = tmp / "missing.json", tmp / "a-folder"
    folder.mkdir()
    server = closed_port_url()
    kubectl = "kubectl get nodes,pods,resourceslices,resourceclaims -A -o json"
    return [
        (["audit", "-f", str(missing)], f"{missing}: cannot read: No such file or directory"),
        (["audit", "-f", str(folder)], f"{folder}: cannot read: Is a directory"),
        (["audit", "-f", str(tmp / "not-utf8.json")],
         f"{tmp / 'not-utf8.json'}: cannot read: not UTF-8 text (byte 0xff at offset 28)"),
        (["audit", "-f", str(tmp / "text.txt")],
         f"{tmp / 'text.txt'}: neither JSON nor YAML of a List: it starts with 'hello, this is no dump' (JSON "
         "starts with { or [, YAML with an apiVersion, kind or items key)"),
        (["audit", "-f", str(tmp / "nal.yaml")],
         f"{tmp / 'nal.yaml'}: the dump has no Node objects (it holds 1 NodeAllocatableLedger): dump with {kubectl}"),
        (["audit", "-f", str(dump), "--svg", str(tmp / "nowhere" / "x.svg")],
         f"{tmp / 'nowhere' / 'x.svg'}: cannot write: the folder {tmp / 'nowhere'} does not exist"),
        (["audit", "-f", str(dump), "--svg", str(folder)], f"{folder}: cannot write: it is a directory"),
        (["export", "-f", str(missing)], f"{missing}: cannot read: No such file or directory"),
        (["export", "-f", str(dump), "--output-file", str(tmp / "nowhere" / "x.yaml")],
         f"{tmp / 'nowhere' / 'x.yaml'}: cannot write: the folder {tmp / 'nowhere'} does not exist"),
        (["export", "-f", str(tmp / "nal.yaml")],
         f"{tmp / 'nal.yaml'}: the dump has no Node objects (it holds 1 NodeAllocatableLedger): dump with {kubectl}"),
        (["export"], "export: needs --from-cluster or -f DUMP"),
        (["export", "--from-cluster", "--kubeconfig", str(missing)],
         f"cannot use the kubeconfig {missing}: no such file"),
        (["export", "--from-cluster", "--server", server, "--to", str(tmp / "nowhere" / "x.yaml")],
         f"{tmp / 'nowhere' / 'x.yaml'}: cannot write: the folder {tmp / 'nowhere'} does not exist"),
        (["report", "--server", server, "--svg", str(tmp / "nowhere" / "x.svg")],
         f"{tmp / 'nowhere' / 'x.svg'}: cannot write: the folder {tmp / 'nowhere'} does not exist"),
        (["report", "--kubeconfig", str(missing), "--svg", str(tmp / "x.svg")],
         f"cannot use the kubeconfig {missing}: no such file"),
        (["freeze", "--all", "--kubeconfig", str(missing)], f"cannot use the kubeconfig {missing}: no such file"),
        (["resume", "--all", "--server", server, "--since-export", str(tmp / "list.json")],
         f"{tmp / 'list.json'}: not a draledger export (no draledgerExport block): write one with "
         "`draledger export --from-cluster`"),
        (["resume", "--all", "--server", server, "--since-export", str(tmp / "string.json")],
         f"{tmp / 'string.json'}: neither JSON nor YAML of a List: it starts with '\"just a string\"' (JSON starts "
         "with { or [, YAML with an apiVersion, kind or items key)"),
        (["resume", "--all", "--server", server, "--since-export", str(dump)],
         f"{dump}: not a draledger export (no draledgerExport block): write one with "
         "`draledger export --from-cluster`"),
        (["resume", "--all", "--server", server, "--since-export", str(missing)],
         f"{missing}: cannot read: No such file or directory"),
    ]


def test_every_bad_input_is_one_line_and_exit_2(tmp_path: Path, dump: Path,
                                                capfd: pytest.CaptureFixture[str]) -> None:
    """Each command refuses what it cannot use: exit 2, nothing on stdout, one line naming the file (or the
    kubeconfig), before any work (an audit's table is not printed first; no server is contacted first)."""
    failures = []
    for argv, line in bad_inputs(tmp_path, dump):
        got = draledger(capfd, *argv)
        if (2, "", f"error: {line}\n") != got:
            failures.append((argv, got))
    assert [] == failures


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads and writes files whatever their mode")
def test_unreadable_and_unwritable_files(tmp_path: Path, dump: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A dump that cannot be read, a picture that cannot be written: exit 2 in one line naming the file."""
    dump.chmod(0)
    assert (2, "", f"error: {dump}: cannot read: Permission denied\n") == draledger(capfd, "audit", "-f", str(dump))
    dump.chmod(0o644)
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert (2, "", f"error: {locked / 'x.svg'}: cannot write: Permission denied\n") == draledger(
        capfd, "audit", "-f", str(dump), "--svg", str(locked / "x.svg"))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["audit"], "the following arguments are required: -f/--filename", id="audit-without-a-file"),
        pytest.param(["audit", "-f", "x", "--fail-on", "Broken"], "unknown phase 'Broken'", id="bad-phase"),
        pytest.param(["audit", "-f", "x", "-o", "wide"], "invalid choice: 'wide'", id="bad-output"),
        pytest.param(["export", "-o", "csv"], "invalid choice: 'csv'", id="export-bad-output"),
        pytest.param(["freeze"], "one of the arguments --node --all is required", id="freeze-nothing"),
        pytest.param(["run", "--metrics-port", "eighty"], "--metrics-port 'eighty': not an integer from 0 to 65535",
                     id="run-bad-int"),
        pytest.param(["nonsense"], "invalid choice: 'nonsense'", id="unknown-command"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], message: str, capfd: pytest.CaptureFixture[str]) -> None:
    """A usage error is argparse's: exit 2, the usage and one line saying what is wrong."""
    code, out, err = draledger(capfd, *argv)
    assert (2, "") == (code, out)
    assert message in err.splitlines()[-1]


def test_an_unexpected_error_is_one_line(monkeypatch: pytest.MonkeyPatch, dump: Path,
                                         capfd: pytest.CaptureFixture[str]) -> None:
    """A bug of ours is one line and exit 1, with the hint to set DRALEDGER_DEBUG=1 for the traceback."""

    def broken(*args: object, **kwargs: object) -> int:
        raise RuntimeError("a bug\nover two lines")

    monkeypatch.setattr(audit, "run", broken)
    monkeypatch.delenv("DRALEDGER_DEBUG", raising=False)
    assert (1, "", "error: internal error: RuntimeError: a bug over two lines (set DRALEDGER_DEBUG=1 for the "
            "traceback)\n") == draledger(capfd, "audit", "-f", str(dump))


def test_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch, dump: Path) -> None:
    """With DRALEDGER_DEBUG=1 the bug propagates, so Python prints its traceback."""

    def broken(*args: object, **kwargs: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr(audit, "run", broken)
    monkeypatch.setenv("DRALEDGER_DEBUG", "1")
    with pytest.raises(RuntimeError, match="a bug"):
        cli.main(["audit", "-f", str(dump)])


def test_the_real_process(tmp_path: Path) -> None:
    """The installed entry (`python -m draledger`) prints the same single line and exit code, no traceback."""
    done = subprocess.run([sys.executable, "-m", "draledger", "audit", "-f", str(tmp_path / "nope.json")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert (2, "", f"error: {tmp_path / 'nope.json'}: cannot read: No such file or directory\n") == (
        done.returncode, done.stdout, done.stderr)


def test_run_with_an_unusable_kubeconfig(tmp_path: Path) -> None:
    """`draledger run` with a kubeconfig that does not exist: one line naming it, exit 2."""
    done = subprocess.run([sys.executable, "-m", "draledger", "run", "--kubeconfig", str(tmp_path / "nope")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert (2, f"error: cannot use the kubeconfig {tmp_path / 'nope'}: no such file\n") == (
        done.returncode, done.stderr)


def test_run_with_an_unsupported_kopf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capfd: pytest.CaptureFixture[str]) -> None:
    """`draledger run` with a Kopf other than the pinned one stops at once: one line naming the pin, exit 2."""
    monkeypatch.setattr(kopfcompat, "version", lambda name: "1.46.0")
    assert (2, "", "error: kopf 1.46.0 is installed; this operator reaches into Kopf's internals and runs only on "
            "1.45.2: install kopf==1.45.2\n") == draledger(capfd, "run", "--kubeconfig", str(tmp_path / "nope"))


def test_a_read_only_file_system(tmp_path: Path, dump: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """An output on a read-only mount is refused before the work, even for root (/proc/version: EACCES/EROFS)."""
    code, out, err = draledger(capfd, "audit", "-f", str(dump), "--svg", "/proc/version")
    assert (2, "") == (code, out)
    assert err.startswith("error: /proc/version: cannot write: ")
    assert 1 == len(err.splitlines())


def test_the_checked_output_is_not_left_behind(tmp_path: Path, dump: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Checking that an output can be written leaves no empty file when the work then fails."""
    picture = tmp_path / "x.svg"
    code, _, _ = draledger(capfd, "audit", "-f", str(dump), "-f", str(tmp_path / "missing.json"), "--svg", str(picture))
    assert (2, False) == (code, picture.exists())
