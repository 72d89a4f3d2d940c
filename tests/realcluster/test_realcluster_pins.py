"""The pins and the build cache, without building: go.mod agrees with releases.py, and stamps decide rebuilds."""

from __future__ import annotations

import fcntl
import json
import re
from pathlib import Path

import pytest

from tests.realcluster import building
from tests.realcluster.releases import COMPONENTS, RELEASES, TOOLS, Release, Tool, find_tool, selected

STAGING = ("api", "apiextensions-apiserver", "apimachinery", "apiserver", "client-go", "component-base",
           "controller-manager", "dynamic-resource-allocation", "kube-scheduler", "kubelet")
EVERY_TOOL = [pytest.param(pinned, id=pinned.label.replace(" ", "-")) for versions in TOOLS.values()
              for pinned in versions]


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

    def test_the_module_names_the_five_binaries(self, release: Release) -> None:
        """tools.go keeps the four commands in go.mod; etcd/main.go is etcd's own main; one build writes all."""
        tools = (release.module / "tools.go").read_text(encoding="utf-8")
        assert tools.startswith("//go:build tools")
        for command in building.COMMANDS:
            assert f'_ "k8s.io/kubernetes/cmd/{command}"' in tools
        assert "etcdmain.Main(os.Args)" in (release.module / "etcd" / "main.go").read_text(encoding="utf-8")
        assert set(COMPONENTS) == set(building.release_spec(release).outputs)

    def test_the_toolchain_is_the_one_the_go_line_needs(self, release: Release) -> None:
        """A release that needs Go 1.27 (v1.38) pins go1.27.3 in go.mod; the others build with the machine's Go."""
        text = (release.module / "go.mod").read_text(encoding="utf-8")
        go_line = re.search(r"^go (\S+)$", text, re.MULTILINE)
        assert go_line is not None
        expected = "go1.27.3" if go_line.group(1).startswith("1.27") else "local"
        assert expected == building.toolchain(release.module)


class TestV138:
    def test_the_new_staging_modules_are_replaced(self) -> None:
        """v1.38 requires k8s.io/apiextensions-api and k8s.io/ktesting; both are replaced like the others."""
        text = (RELEASES["v1.38"].module / "go.mod").read_text(encoding="utf-8")
        for name in ("apiextensions-api", "ktesting"):
            assert f"\tk8s.io/{name} => k8s.io/{name} v0.38.0-beta.0\n" in text

    def test_the_kubelet_builds_against_the_iptables_stand_in(self) -> None:
        """sigs.k8s.io/iptables-wrappers (the proxy refuses its zip) is replaced by the stand-in in the module."""
        module = RELEASES["v1.38"].module
        assert "replace sigs.k8s.io/iptables-wrappers => ./iptables-wrappers\n" in (module / "go.mod").read_text()
        stand_in = (module / "iptables-wrappers" / "pkg" / "iptables" / "iptables.go").read_text(encoding="utf-8")
        assert "return nil" in stand_in.split("func NewBestEffort", 1)[1]


@pytest.mark.parametrize("pinned", EVERY_TOOL)
class TestToolPins:
    def test_go_mod_requires_the_pinned_version(self, pinned: Tool) -> None:
        """e2e/tools/<name>/<version>/go.mod requires the tool's module at the version releases.py names."""
        text = (pinned.module / "go.mod").read_text(encoding="utf-8")
        assert re.search(rf"^(require |\t){re.escape(pinned.module_path)} {re.escape(pinned.version)}$", text,
                         re.MULTILINE)
        assert (pinned.module / "go.sum").is_file()

    def test_tools_go_imports_every_package_built(self, pinned: Tool) -> None:
        """tools.go keeps each built package in go.mod and go.sum."""
        tools = (pinned.module / "tools.go").read_text(encoding="utf-8")
        assert tools.startswith("//go:build tools")
        for package in pinned.packages:
            assert f'_ "{package}"' in tools

    def test_the_spec_stamps_the_version_and_lives_in_the_tools_cache(self, pinned: Tool,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: Path) -> None:
        """A tool is built into <tools cache>/<name>-<version>/bin with its version stamps in -ldflags."""
        monkeypatch.setenv("DRALEDGER_TOOLS_CACHE", str(tmp_path))
        spec = building.tool_spec(pinned)
        assert tmp_path / f"{pinned.name}-{pinned.version}" / "bin" == spec.bin
        for variable, value in pinned.stamps:
            assert f"-X {variable}={value}" in spec.ldflags


class TestTools:
    @pytest.mark.parametrize(("name", "version", "expected"), [
        pytest.param("containerd", None, ("containerd", "containerd-shim-runc-v2", "ctr"), id="containerd"),
        pytest.param("helm", None, ("helm",), id="helm"),
        pytest.param("kustomize", "v5.0.1", ("kustomize",), id="kustomize-major-suffix"),
        pytest.param("runc", None, ("runc",), id="runc-module-root"),
    ])
    def test_outputs_are_the_names_go_build_writes(self, name: str, version: str | None,
                                                   expected: tuple[str, ...]) -> None:
        """Each package's binary is named by its last element, a /vN suffix dropped."""
        assert expected == find_tool(name, version).outputs

    def test_the_newest_pinned_version_is_the_default(self) -> None:
        """tool("kustomize") is the last pinned version; the three kustomizes users have are pinned."""
        assert ("v5.0.1", "v5.5.0", "v5.8.2") == tuple(pinned.version for pinned in TOOLS["kustomize"])
        assert "v5.8.2" == find_tool("kustomize").version

    @pytest.mark.parametrize(("name", "version", "message"), [
        pytest.param("kubectl", None, r"unknown tool 'kubectl'; known: containerd, helm", id="unknown-tool"),
        pytest.param("kustomize", "v5.0.0", r"kustomize v5\.0\.0 is not pinned; pinned: v5\.0\.1, v5\.5\.0",
                     id="unpinned-version"),
    ])
    def test_what_is_not_pinned_is_refused_by_name(self, name: str, version: str | None, message: str) -> None:
        """A typo or an unpinned version names what is pinned instead of building nothing."""
        with pytest.raises(ValueError, match=message):
            building.tool(name, version)

    def test_a_missing_prerequisite_is_named_before_go_runs(self, monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path: Path) -> None:
        """A spec that needs a file (runc's seccomp.h) fails with the file and how to get it, building nothing."""
        monkeypatch.setenv("DRALEDGER_TOOLS_CACHE", str(tmp_path))
        spec = building.tool_spec(find_tool("runc"))
        spec = building.BuildSpec(spec.label, spec.module, spec.targets, spec.outputs, spec.home,
                                  needs=((str(tmp_path / "seccomp.h"), "apt-get install libseccomp-dev"),))
        with pytest.raises(building.BuildError, match=r"runc v1\.5\.3 needs .*seccomp\.h \(apt-get install libsec"):
            building.build(spec)
        assert not spec.home.exists()


class TestStamp:
    @pytest.fixture
    def cached(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> building.BuildSpec:
        """v1.36's spec with a cache in tmp_path holding its five fake binaries and a stamp for key ``k``."""
        monkeypatch.setenv("DRALEDGER_KUBE_CACHE", str(tmp_path))
        spec = building.release_spec(RELEASES["v1.36"])
        spec.bin.mkdir(parents=True)
        for name in COMPONENTS:
            (spec.bin / name).write_text("#!/bin/sh\n", encoding="utf-8")
            (spec.bin / name).chmod(0o755)
        (spec.home / "stamp.json").write_text(json.dumps({"key": "k"}), encoding="utf-8")
        return spec

    def test_a_matching_stamp_reuses_the_binaries(self, cached: building.BuildSpec) -> None:
        """Same key and all five binaries present: current."""
        assert building.is_current(cached, "k")

    def test_another_key_rebuilds(self, cached: building.BuildSpec) -> None:
        """A different key (the pins, Go or the flags changed): not current."""
        assert not building.is_current(cached, "other")

    def test_a_missing_binary_rebuilds(self, cached: building.BuildSpec) -> None:
        """A binary gone from bin/ (the kubelet of a build made before it was added): not current."""
        (cached.bin / "kubelet").unlink()
        assert not building.is_current(cached, "k")

    def test_the_key_covers_the_pins_go_and_flags(self) -> None:
        """The key differs per release, per Go version and per environment, and is stable for the same inputs."""
        spec = building.release_spec(RELEASES["v1.36"])
        key = building.stamp_key(spec, "go version go1.26.8 linux/amd64")
        assert key == building.stamp_key(spec, "go version go1.26.8 linux/amd64")
        assert key != building.stamp_key(spec, "go version go1.27.3 linux/amd64")
        assert key != building.stamp_key(building.release_spec(RELEASES["v1.37"]), "go version go1.26.8 linux/amd64")
        cgo_off = building.BuildSpec(spec.label, spec.module, spec.targets, spec.outputs, spec.home, spec.ldflags,
                                     env={"CGO_ENABLED": "0"})
        assert key != building.stamp_key(cgo_off, "go version go1.26.8 linux/amd64")

    def test_ldflags_stamp_the_release_version(self) -> None:
        """/version of the built binaries names the pinned release, not v0.0.0-master."""
        flags = building.ldflags(RELEASES["v1.37"])
        assert flags.startswith("-s -w ")
        assert "-X k8s.io/component-base/version.gitVersion=v1.37.2" in flags
        assert "-X k8s.io/component-base/version.gitMinor=37" in flags

    def test_an_exported_toolchain_changes_no_build(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """GOTOOLCHAIN exported by .ci/run is overridden by each module's own pin, so stamps never flip."""
        monkeypatch.setenv("GOTOOLCHAIN", "go1.27.3")
        assert "local" == building.go_env("go", building.release_spec(RELEASES["v1.37"]))["GOTOOLCHAIN"]
        monkeypatch.setenv("GOTOOLCHAIN", "local")
        assert "go1.27.3" == building.go_env("go", building.release_spec(RELEASES["v1.38"]))["GOTOOLCHAIN"]


class TestLock:
    def test_the_lock_stays_machine_wide_when_the_caches_move(self, monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
        """Pointing the binary caches elsewhere (a cold measurement) keeps the one lock in the user's cache."""
        monkeypatch.delenv(building.LOCK_ENV, raising=False)
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        monkeypatch.setenv("DRALEDGER_KUBE_CACHE", str(tmp_path / "kube"))
        monkeypatch.setenv("DRALEDGER_TOOLS_CACHE", str(tmp_path / "tools"))
        assert tmp_path / "xdg" / "dra-ledger" / "kube" / "build.lock" == building.lock_path()

    def test_a_second_builder_cannot_take_the_held_lock(self, monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
        """While machine_lock() is held, another exclusive flock on the same file is refused."""
        monkeypatch.setenv(building.LOCK_ENV, str(tmp_path / "build.lock"))
        with building.machine_lock(), (tmp_path / "build.lock").open("a") as other, pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with (tmp_path / "build.lock").open("a") as other:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released on exit


class TestCommandLine:
    @pytest.mark.parametrize(("argv", "expected"), [
        pytest.param([], ["v1.36.3", "v1.37.2", "v1.38.0-beta.0"], id="default-every-release"),
        pytest.param(["--version", "v1.38"], ["v1.38.0-beta.0"], id="one-release"),
        pytest.param(["--tool", "helm", "--tool", "kustomize@v5.5.0"], ["helm v4.3.2", "kustomize v5.5.0"],
                     id="tools-only"),
        pytest.param(["--tool", "all"], ["containerd v2.4.2", "helm v4.3.2", "kustomize v5.0.1",
                                         "kustomize v5.5.0", "kustomize v5.8.2"], id="every-tool-but-runc"),
        pytest.param(["all"], ["v1.36.3", "v1.37.2", "v1.38.0-beta.0", "containerd v2.4.2", "helm v4.3.2",
                               "kustomize v5.0.1", "kustomize v5.5.0", "kustomize v5.8.2"], id="all"),
    ])
    def test_the_selection(self, monkeypatch: pytest.MonkeyPatch, argv: list[str], expected: list[str]) -> None:
        """What each invocation builds, in order: releases first, then tools; runc only when named."""
        built: list[str] = []

        def fake(spec: building.BuildSpec, *, force: bool = False) -> building.Built:
            built.append(spec.label)
            return building.Built(spec, rebuilt=False, seconds=0.0)

        monkeypatch.setattr(building, "build", fake)
        assert 0 == building.main(argv)
        assert expected == built

    def test_an_unknown_tool_is_a_usage_error(self, capsys: pytest.CaptureFixture[str]) -> None:
        """--tool kubectl exits 2 with one line naming the tools that are pinned."""
        with pytest.raises(SystemExit) as exited:
            building.main(["--tool", "kubectl"])
        assert 2 == exited.value.code
        assert "unknown tool 'kubectl'; known: containerd, helm, kustomize, runc" in capsys.readouterr().err


class TestSelection:
    @pytest.mark.parametrize(("raw", "expected"), [
        pytest.param("", ["v1.36", "v1.37", "v1.38"], id="default"),
        pytest.param("all", ["v1.36", "v1.37", "v1.38"], id="all"),
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
        with pytest.raises(ValueError, match=r"unknown release.*v1\.35.*known: v1\.36, v1\.37, v1\.38"):
            selected()
