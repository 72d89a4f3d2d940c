"""The test driver's pins, without building or running anything: each release's module builds against that
release's kubelet-plugin helper, with the toolchain the control plane of the release uses."""

from __future__ import annotations

import re

import pytest

from tests.realcluster import building
from tests.realcluster.releases import RELEASES, Release
from tests.realnode.drivers import DRIVER_MODULES, driver_spec

RELEASE_PARAMS = [pytest.param(release, id=release.name) for release in RELEASES.values()]


def required(release: Release, module: str) -> str:
    text = (DRIVER_MODULES / release.name / "go.mod").read_text(encoding="utf-8")
    found = re.search(rf"^\s*{re.escape(module)} (v\S+)$", text, re.MULTILINE)
    assert found, f"{release.name}: go.mod does not require {module}"
    return found.group(1)


@pytest.mark.parametrize("release", RELEASE_PARAMS)
def test_each_module_pins_its_releases_staging_modules(release: Release) -> None:
    """k8s.io/dynamic-resource-allocation, api, apimachinery and client-go are v0.<minor>.<patch> of the release."""
    staging = "v0." + release.kubernetes.split(".", 1)[1]
    for module in ("dynamic-resource-allocation", "api", "apimachinery", "client-go"):
        assert staging == required(release, f"k8s.io/{module}"), module


@pytest.mark.parametrize("release", RELEASE_PARAMS)
def test_each_module_builds_the_shared_program_with_the_releases_toolchain(release: Release) -> None:
    """driver.go is the shared program; release.go is v0.36's own or v0.37's shared one; the toolchain pin is the
    control plane's, so the helper's dependencies compile once per machine Go."""
    module = DRIVER_MODULES / release.name
    assert (DRIVER_MODULES / "shared" / "driver.go").resolve() == (module / "driver.go").resolve()
    shared_release = (DRIVER_MODULES / "shared" / "release_v037.go").resolve()
    assert (release.name != "v1.36") == ((module / "release.go").resolve() == shared_release)
    assert building.toolchain(release.module) == building.toolchain(module)
    assert ("driver",) == driver_spec(release).outputs
