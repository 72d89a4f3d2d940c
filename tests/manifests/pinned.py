"""The pinned helm and kustomize binaries the manifest and chart tests run (built by tests.realcluster.building).

Rules:
1. Every binary is one of ``TOOLS`` (tests/realcluster/releases.py), built from the Go module proxy and cached by
   ``building.tool``; nothing else is downloaded or looked up on PATH, so a test runs the version it names.
2. Builds happen before the first test (``prepare``, from the conftest.py of tests/manifests and of
   tests/realcluster), outside every test's timeout, and only for the tools that selected tests use (``needed``:
   the ``helm`` fixture, a ``kustomize_version`` parameter).
3. A tool that cannot be built skips the tests that need it with one line; with DRALEDGER_REQUIRE_REALCLUSTER=1
   (set by .ci/run) they fail instead, as the real-cluster suite does.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.realcluster import building
from tests.realcluster.releases import TOOLS

REQUIRE_ENV = "DRALEDGER_REQUIRE_REALCLUSTER"
KUSTOMIZE_VERSIONS = tuple(tool.version for tool in TOOLS["kustomize"])
HELM = TOOLS["helm"][-1].version

_BUILT: dict[str, Path | str] = {}  # "name@version" -> the binary, or why there is none


def label(name: str, version: str) -> str:
    return f"{name}@{version}"


def prepare(labels: Iterable[str]) -> None:
    """Build (or find in the cache) each ``name@version`` once, remembering the binary or the reason it failed."""
    for wanted in labels:
        if wanted in _BUILT:
            continue
        name, _, version = wanted.partition("@")
        try:
            _BUILT[wanted] = building.tool(name, version)
        except building.BuildError as error:
            _BUILT[wanted] = f"{wanted} cannot be built: {str(error).splitlines()[0]}"
            building.say(str(error))


def needed(item: pytest.Item) -> list[str]:
    """The ``name@version`` of every pinned tool a test uses (rule 2)."""
    labels = []
    if "helm" in getattr(item, "fixturenames", ()):
        labels.append(label("helm", HELM))
    callspec = getattr(item, "callspec", None)
    version = callspec.params.get("kustomize_version") if callspec is not None else None
    if isinstance(version, str):
        labels.append(label("kustomize", version))
    return labels


def prepare_for(items: Iterable[pytest.Item]) -> None:
    """``prepare`` what the tests ``items`` need, each tool once."""
    prepare(dict.fromkeys(wanted for item in items for wanted in needed(item)))


@pytest.fixture(scope="session")
def helm() -> Path:
    """The pinned helm binary (rule 3 when there is none)."""
    return binary("helm", HELM)


def binary(name: str, version: str) -> Path:
    """The binary of ``name`` at ``version``; skips (or fails, rule 3) the calling test when there is none."""
    wanted = label(name, version)
    prepare([wanted])
    found = _BUILT[wanted]
    if isinstance(found, Path):
        return found
    if os.environ.get(REQUIRE_ENV, "") == "1":
        pytest.fail(f"{found} ({REQUIRE_ENV}=1)", pytrace=False)
    pytest.skip(f"{found} (set {REQUIRE_ENV}=1 to fail instead)")
