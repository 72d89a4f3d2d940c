"""The krew plugin manifest (krew/draledger.yaml): the fields krew requires, as its validation states them, an
archive whose sha256 is the one the manifest names, and a launcher that runs `kubectl draledger`."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

import draledger

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "krew" / "draledger.yaml"


def archive_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("krew_archive", ROOT / "krew" / "archive.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def manifest() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(MANIFEST.read_text())
    return loaded


class TestManifest:
    def test_the_fields_krew_requires(self) -> None:
        """apiVersion, kind, a safe name equal to the file's, a one-line short description, a v-prefixed
        semantic version (the package's), and at least one platform."""
        plugin = manifest()
        assert ("krew.googlecontainertools.github.com/v1alpha2", "Plugin") == (plugin["apiVersion"], plugin["kind"])
        name = plugin["metadata"]["name"]
        assert re.fullmatch(r"[\w-]+", name)
        assert MANIFEST.stem == name
        spec = plugin["spec"]
        assert spec["shortDescription"]
        assert not re.search(r"[\r\n]", spec["shortDescription"])
        assert f"v{draledger.__version__}" == spec["version"]
        assert re.fullmatch(r"v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?", spec["version"])
        assert spec["platforms"]

    def test_every_platform(self) -> None:
        """Each platform: an https uri of this version's release, a sha256, a bin, files with from and to,
        and a selector of os and arch only."""
        for platform in manifest()["spec"]["platforms"]:
            assert platform["uri"].startswith("https://")
            assert f"/v{draledger.__version__}/" in platform["uri"]
            assert re.fullmatch(r"[a-f0-9]{64}", platform["sha256"])
            assert platform["bin"]
            assert platform["files"]
            assert all(f["from"] and f["to"] for f in platform["files"])
            labels = platform["selector"]["matchLabels"]
            assert labels
            assert set(labels) <= {"os", "arch"}

    def test_linux_and_macos_on_amd64_and_arm64(self) -> None:
        """The launcher is a POSIX shell script: the four platforms where one runs."""
        selected = {(p["selector"]["matchLabels"]["os"], p["selector"]["matchLabels"]["arch"])
                    for p in manifest()["spec"]["platforms"]}
        assert {("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"), ("darwin", "arm64")} == selected


class TestArchive:
    def test_the_sha256_is_the_archives(self) -> None:
        """The archive krew/archive.py builds has the sha256 every platform names (rebuilt here, byte for byte)."""
        built = archive_module().archive()
        assert {hashlib.sha256(built).hexdigest()} == {p["sha256"] for p in manifest()["spec"]["platforms"]}
        assert built == archive_module().archive()

    def test_the_archive_holds_the_files_and_an_executable_bin(self) -> None:
        """Every `from` is in the archive, and the bin is executable."""
        with zipfile.ZipFile(io.BytesIO(archive_module().archive())) as zipped:
            modes = {info.filename: info.external_attr >> 16 for info in zipped.infolist()}
        for platform in manifest()["spec"]["platforms"]:
            assert {f["from"] for f in platform["files"]} <= set(modes)
            assert modes[platform["bin"]] & 0o111


class TestLauncher:
    def test_it_runs_the_command_as_the_kubectl_plugin(self) -> None:
        """`kubectl-draledger audit --help`, through the launcher, reads `kubectl draledger`."""
        env = {**os.environ, "KUBECTL_DRALEDGER_PYTHON": sys.executable}
        done = subprocess.run(["sh", str(ROOT / "krew" / "kubectl-draledger"), "audit", "--help"], env=env,
                              capture_output=True, text=True, timeout=60, check=False)
        assert (0, "") == (done.returncode, done.stderr)
        assert done.stdout.startswith("usage: kubectl draledger audit ")

    def test_without_the_package_it_says_what_to_install(self) -> None:
        """A Python without dra-ledger: one line saying what to install, exit 2."""
        env = {**os.environ, "KUBECTL_DRALEDGER_PYTHON": "false"}
        done = subprocess.run(["sh", str(ROOT / "krew" / "kubectl-draledger"), "--version"], env=env,
                              capture_output=True, text=True, timeout=60, check=False)
        assert 2 == done.returncode
        assert 1 == len(done.stderr.splitlines())
        assert "pip install dra-ledger" in done.stderr
