"""Fixtures for the device-metadata tests: golden trees copied to tmp, a fake clock, a writer."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from draledger.devicemetadata import ClaimInfo, MetadataWriter
from tests.devicemetadata.helpers import GOLDEN, FakeClock


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
