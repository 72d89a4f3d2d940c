"""The pins and the build cache, without building: go.mod agrees with releases.py, and stamps decide rebuilds."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.realcluster import building
from tests.realcluster.releases import COMPONENTS, RELEASES, Release, selected

STAGING = ("api", "apiextensions-apiserver", "apimachinery", "apiserver", "client-go", "component-base",
           "controller-manager", "dynamic-resource-allocation", "kube-scheduler", "kubelet")


@pytest.mark.parametrize("release", [pytest.param(release, id=release.name) for release in RELEASES.values()])
class TestPins:
    def test_go_mod_requires_the_release_and_its_etcd(self, release: Release) -> None:
        """go.mod requires k8s.io/kubernetes and etcd's server at the versions releases.py names."""
        text = (release.module / "go.mod").read_text(encoding="utf-8")
        assert re.search(rf"^\s*k8s\.io/kubernetes {re.escape(release.kubernetes)}$", text, re.MULTILINE)
        assert re.search(rf"^\s*go\.etcd\.io/etcd/server/v3 {re.escape(release.etcd)}$", text, re.MULTILINE)

    def test_every_staging_module_is_replaced_by_the_same_release(self, release: Release) -> None:
        """Each replace points a k8s.io staging module at v0.<minor>.<patch> of the same release."""
        text = (release.module / "go.mod").read_text(encoding="utf-8")
        replaced = dict(re.findall(r"^\s*(k8s\.io/[a-z-]+) => \1 (v\S+)$", text, re.MULTILINE))
        staging_version = "v0." + release.kubernetes.split(".", 1)[1]
        assert {f"k8s.io/{name}" for name in STAGING} <= set(replaced)
        assert {staging_version} == set(replaced.values())

    def test_the_module_names_the_four_binaries(self, release: Release) -> None:
        """tools.go keeps the three commands in go.mod; etcd/main.go is etcd's own main."""
        tools = (release.module / "tools.go").read_text(encoding="utf-8")
        assert tools.startswith("//go:build tools")
        for command in ("kube-apiserver", "kube-scheduler", "kube-controller-manager"):
            assert f'_ "k8s.io/kubernetes/cmd/{command}"' in tools
        assert "etcdmain.Main(os.Args)" in (release.module / "etcd" / "main.go").read_text(encoding="utf-8")


class TestStamp:
    @pytest.fixture
    def cached(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Release:
        """v1.36 with a cache in tmp_path holding four fake binaries and a stamp for key ``k``."""
        monkeypatch.setenv("DRALEDGER_KUBE_CACHE", str(tmp_path))
        release = RELEASES["v1.36"]
        release.bin.mkdir(parents=True)
        for name in COMPONENTS:
            release.binary(name).write_text("#!/bin/sh\n", encoding="utf-8")
            release.binary(name).chmod(0o755)
        (release.home / "stamp.json").write_text(json.dumps({"key": "k"}), encoding="utf-8")
        return release

    def test_a_matching_stamp_reuses_the_binaries(self, cached: Release) -> None:
        """Same key and all four binaries present: current."""
        assert building.is_current(cached, "k")

    def test_another_key_rebuilds(self, cached: Release) -> None:
        """A different key (the pins, Go or the flags changed): not current."""
        assert not building.is_current(cached, "other")

    def test_a_missing_binary_rebuilds(self, cached: Release) -> None:
        """A binary gone from bin/: not current, whatever the stamp says."""
        cached.binary("kube-scheduler").unlink()
        assert not building.is_current(cached, "k")

    def test_the_key_covers_the_pins_go_and_flags(self) -> None:
        """The key differs per release and per Go version, and is stable for the same inputs."""
        release = RELEASES["v1.36"]
        key = building.stamp_key(release, "go version go1.26.8 linux/amd64")
        assert key == building.stamp_key(release, "go version go1.26.8 linux/amd64")
        assert key != building.stamp_key(release, "go version go1.27.3 linux/amd64")
        assert key != building.stamp_key(RELEASES["v1.37"], "go version go1.26.8 linux/amd64")

    def test_ldflags_stamp_the_release_version(self) -> None:
        """/version of the built binaries names the pinned release, not v0.0.0-master."""
        flags = building.ldflags(RELEASES["v1.37"])
        assert flags.startswith("-s -w ")
        assert "-X k8s.io/component-base/version.gitVersion=v1.37.2" in flags
        assert "-X k8s.io/component-base/version.gitMinor=37" in flags


class TestSelection:
    @pytest.mark.parametrize(("raw", "expected"), [
        pytest.param("", ["v1.36", "v1.37"], id="default"),
        pytest.param("all", ["v1.36", "v1.37"], id="all"),
        pytest.param("v1.37", ["v1.37"], id="one"),
        pytest.param(" v1.37 , v1.36 ", ["v1.37", "v1.36"], id="spaces"),
    ])
    def test_versions_are_selected_by_env(self, monkeypatch: pytest.MonkeyPatch, raw: str,
                                          expected: list[str]) -> None:
        """DRALEDGER_REALCLUSTER_VERSIONS picks the releases, all by default."""
        monkeypatch.setenv("DRALEDGER_REALCLUSTER_VERSIONS", raw)
        assert expected == [release.name for release in selected()]

    def test_an_unknown_version_is_an_error(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A typo is refused with the known names rather than silently running nothing."""
        monkeypatch.setenv("DRALEDGER_REALCLUSTER_VERSIONS", "v1.35")
        with pytest.raises(ValueError, match=r"unknown release.*v1\.35.*known: v1\.36, v1\.37"):
            selected()
