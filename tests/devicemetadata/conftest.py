"""Fixtures for the device-metadata tests: golden trees copied to tmp, a fake clock, a writer, and
for the interop tests the upstream Go programs (built once per session and release) with the
vectors they generate and our writer's replay of the same scenario."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from draledger.devicemetadata import ClaimInfo, MetadataWriter
from draledger.devicemetadata.releases import RELEASES, UpstreamRelease
from tests.devicemetadata import upstream
from tests.devicemetadata.helpers import GOLDEN, FakeClock
from tests.devicemetadata.replaying import PythonVectors, Replay, load_scenario, snapshot


@pytest.fixture
def golden() -> Path:
    return GOLDEN


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A writable copy of the golden in-container tree."""
    target = tmp_path / "container"
    shutil.copytree(GOLDEN / "container", target)
    return target


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def writer(tmp_path: Path) -> MetadataWriter:
    return MetadataWriter(
        "gpu.example.com",
        plugin_data_dir=tmp_path / "plugins" / "gpu.example.com",
        cdi_dir=tmp_path / "cdi",
    )


@pytest.fixture
def claim() -> ClaimInfo:
    return ClaimInfo(namespace="gpu-test1", name="gpu-claim", uid="c7e7b22e-5a1d-4d5b-9a55-0c6f1f0e2a10")


# --- interop with the upstream Go code (tests/devicemetadata/go) ------------------------------------


def _say(config: pytest.Config, message: str) -> None:
    """Print past pytest's capture, so a long cold build is visible while it runs."""
    capture = config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        sys.stderr.write(f"\n[devicemetadata] {message}\n")


@pytest.fixture(scope="session", params=RELEASES, ids=[r.module_version for r in RELEASES])
def go_program(request: pytest.FixtureRequest, pytestconfig: pytest.Config) -> upstream.GoProgram:
    """The release's Go program, built into the cache on first use (skips without `go`)."""
    release: UpstreamRelease = request.param
    go = upstream.find_go()
    if go is None:
        if upstream.required():
            pytest.fail(f"{upstream.MISSING_GO}; {upstream.REQUIRE_ENV} is set", pytrace=False)
        pytest.skip(upstream.MISSING_GO)
    return upstream.GoProgram(release, upstream.build(release, go, lambda m: _say(pytestconfig, m)))


@pytest.fixture(scope="session")
def go_vectors(go_program: upstream.GoProgram, tmp_path_factory: pytest.TempPathFactory) -> upstream.GoVectors:
    """The scenario as the real helper of the release ran it."""
    out = tmp_path_factory.mktemp(f"go-{go_program.release.module_version}")
    return upstream.GoVectors(go_program, go_program.generate(out), out / "node")


@pytest.fixture(scope="session")
def python_vectors(go_program: upstream.GoProgram, tmp_path_factory: pytest.TempPathFactory) -> PythonVectors:
    """The scenario as our writer runs it, each step's metadata files decoded by the Go program."""
    out = tmp_path_factory.mktemp(f"python-{go_program.release.module_version}")
    node, copies = out / "node", out / "steps"
    scenario = load_scenario()
    replay = Replay(node, go_program.release, scenario)
    outcomes, snapshots, to_decode = [], [], []
    for index, step in enumerate(scenario["steps"]):
        outcomes.append(replay.run(step))
        snapshots.append(snapshot(node))
        for rel in sorted(snapshots[-1]):
            if rel.endswith("/metadata.json"):  # keep this step's version: later steps rewrite it
                copy = copies / str(index) / rel
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(node / rel, copy)
                to_decode.append((index, rel, copy))
    decoded: list[dict[str, dict[str, Any]]] = [{} for _ in outcomes]
    for (index, rel, _), result in zip(to_decode, go_program.decode([c for _, _, c in to_decode]), strict=True):
        decoded[index][rel] = result
    return PythonVectors(node, outcomes, snapshots, decoded)
