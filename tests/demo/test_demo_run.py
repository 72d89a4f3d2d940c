"""`draledger demo` end to end: the whole story, non-interactively (stdout is a pipe), to a clean exit."""

from __future__ import annotations

import io
import os
import pathlib
import re
import subprocess

import pytest

from draledger.demo import run_demo
from tests.demo.conftest import draledger
from tests.generated_docs import check

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"

STEP_HEADERS = (
    "== [1/6] The operator starts: ledgers Rebuilding, new claim pods held ==",
    "== [2/6] Rebuilt: every ledger Ready, the gates open ==",
    "== [3/6] A ResourceSlice vanishes: worker-2 turns Stale ==",
    "== [4/6] The slice returns: Ready again, the held pod goes ==",
    "== [5/6] Freeze worker-3: new claim pods stay gated ==",
    "== [6/6] Resume worker-3: Ready, the last pod goes ==",
    "== Final ledgers (with NUMA zones) ==",
)


def section(output: str, header: str) -> str:
    """The output from ``header`` to the next step header."""
    start = output.index(header)
    end = output.find("\n== ", start + len(header))
    return output[start : end if end > 0 else len(output)]


def run_to_run(text: str) -> str:
    """``text`` with what changes from one run of the demo to the next blanked: the API's port, the times, the
    log file's name."""
    text = re.sub(r"http://127\.0\.0\.1:\d+", "http://127.0.0.1:PORT", text)
    text = re.sub(r"\(\d+\.\ds\)$", "(T)", text, flags=re.M)
    text = re.sub(r"; \d+\.\ds$", "; T", text, flags=re.M)
    return re.sub(r"^Operator and API logs: .*$", "Operator and API logs: LOG", text, flags=re.M)


def test_demo_fast_in_a_pipe(tmp_path: pathlib.Path) -> None:
    """`draledger demo --fast` plays every step, prints the final ledgers (3 nodes Ready) and exits 0, whatever
    the variables of `draledger run` hold (the demo takes none of them); its output is docs/demo.md's sample."""
    svg = tmp_path / "ledgers.svg"
    environ = {k: v for k, v in os.environ.items() if k != "FORCE_COLOR"}  # a pipe, as a user's would be
    environ |= {"DRALEDGER_COALESCE_WINDOW": "abc", "DRALEDGER_POD_STATUS": "bogus", "DRALEDGER_METRICS_PORT": "x"}
    result = subprocess.run(
        [*draledger(), "demo", "--fast", "--svg", str(svg)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, env=environ,
    )
    assert 0 == result.returncode, result.stdout + result.stderr
    out = result.stdout
    for header in STEP_HEADERS:
        assert header in out
    assert "Traceback" not in out + result.stderr
    assert "\x1b[" not in out, "no terminal control sequences in a pipe"
    assert "" == result.stderr

    rebuild = section(out, STEP_HEADERS[0])
    assert 3 == len(re.findall(r"^worker-\d\s+Rebuilding\s", rebuild, re.M))
    assert re.search(r"ml/notebook-a\s+Rebuilding\s", rebuild)
    stale = section(out, STEP_HEADERS[2])
    assert re.search(r"^worker-2\s+Stale\s", stale, re.M)
    assert re.search(r"ml/inference-1\s+ClaimUnresolved\s+ml/\S+: no ResourceSlice publishes pool \S+/worker-2", stale)
    assert "(metric draledger_gated_pods: ClaimUnresolved=1)" in stale
    assert "released web/report-1 (kept away from worker-2)" in stale
    frozen = section(out, STEP_HEADERS[4])
    assert re.search(r"^worker-3\s+Frozen\s", frozen, re.M)
    assert "backfilled batch/legacy-etl: cpu=8" in section(out, STEP_HEADERS[1])

    final = section(out, STEP_HEADERS[-1])
    rows = re.findall(r"^(worker-\d)\s+(\S+)\s", final, re.M)
    assert [("worker-1", "Ready"), ("worker-2", "Ready"), ("worker-3", "Ready")] == rows
    assert 6 == len(re.findall(r"^  numa-[01]\s", final, re.M))
    assert re.search(r"^3 ledgers Ready; 9 claims, each counted once; 5 gates released", final, re.M)
    assert "<svg" in svg.read_text()
    log = pathlib.Path(re.findall(r"^Operator and API logs: (.+)$", out, re.M)[-1])
    try:
        assert '"logger": "kopf' in log.read_text()
    finally:
        log.unlink()
    assert not (tmp_path / "draledger-demo.kubeconfig").exists(), "only --serve writes a kubeconfig"

    sample = "```console\n$ draledger demo --fast\n" + out.replace(f"wrote {svg}\n", "") + "```\n"
    check(DOCS / "demo.md", "sample", sample, run_to_run)


def test_demo_live_on_a_terminal(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a TTY the frames are redrawn in place (cursor up, clear) and the story still ends with exit 0."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = io.StringIO()
    code = run_demo(False, True, str(tmp_path / "unused"), out, log_file=str(tmp_path / "demo.log"), tty=True)
    text = out.getvalue()
    assert 0 == code, text
    assert re.search(r"\x1b\[\d+F\x1b\[J", text), "live frames are redrawn"
    assert "\x1b[?25l" in text, "the cursor is hidden"
    assert 1 == text.count("\x1b[?25h"), "and shown again once"
    assert "\x1b[32mReady\x1b[0m" in text
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    assert "== Final ledgers (with NUMA zones) ==" in plain
