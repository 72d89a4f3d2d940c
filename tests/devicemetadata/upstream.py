"""The Go side of the interop tests: build the pinned upstream programs once, run them, read their output.

Rules: one Go module per upstream release in go/v<major>.<minor>/ (go.mod and go.sum pin
k8s.io/dynamic-resource-allocation; the program, go/shared/vectors.go, is symlinked in). Binaries
live outside the tree in ~/.cache/dra-ledger/devicemetadata/<release>/<key>/, where the key hashes
go.mod, go.sum, every Go source and the Go version, so a changed pin or program is rebuilt and an
unchanged one never is. `go` is $DRALEDGER_GO, else on PATH, else /usr/local/go/bin/go (as the
real-cluster suite finds it). Nothing here decides
what is right: it only hands the tests what the real Go code wrote and decoded, and models
upstream's own merge of several drivers' files (devicemetadata.readRequestDir).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from draledger.devicemetadata.releases import UpstreamRelease
from tests.realcluster.building import machine_lock, toolchain

GO_DIR = Path(__file__).resolve().parent / "go"
SCENARIO = GO_DIR / "scenario.json"
FALLBACK_GO = Path("/usr/local/go/bin/go")
REQUIRE_ENV = "DRALEDGER_REQUIRE_REALCLUSTER"
MISSING_GO = (
    "Go interop tests: `go` not found ($DRALEDGER_GO, PATH, /usr/local/go/bin/go; Go >= 1.26 is needed; "
    f"set {REQUIRE_ENV}=1 to fail instead of skipping)"
)
BUILD_TIMEOUT = 3600  # a cold build compiles client-go and gRPC; the machine may be busy with others


def find_go() -> str | None:
    for candidate in (os.environ.get("DRALEDGER_GO"), shutil.which("go"), str(FALLBACK_GO)):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def required() -> bool:
    """CI sets DRALEDGER_REQUIRE_REALCLUSTER=1 to make a missing toolchain a failure, not a skip."""
    return os.environ.get(REQUIRE_ENV, "") == "1"


def module_dir(release: UpstreamRelease) -> Path:
    major_minor = ".".join(release.module_version.split(".")[:2])  # v0.37.2 -> v0.37
    return GO_DIR / major_minor


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dra-ledger" / "devicemetadata"


def _go_env(release: UpstreamRelease) -> dict[str, str]:
    # The module's own toolchain line, else the machine's Go, as the builder pins it (tests.realcluster.building,
    # rule 2): the vectors of v0.36 and v0.37 reuse what the control planes compiled, whatever GOTOOLCHAIN says.
    return {**os.environ, "GOWORK": "off", "GOFLAGS": f"{os.environ.get('GOFLAGS', '')} -mod=readonly".strip(),
            "GOTOOLCHAIN": toolchain(module_dir(release))}


def build_key(release: UpstreamRelease, go: str) -> str:
    """A hash of what the binary is made of: pins, sources (symlinks followed) and toolchain."""
    version = subprocess.run(
        [go, "env", "GOVERSION"], cwd=module_dir(release), env=_go_env(release),
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout.strip()  # fmt: skip
    digest = hashlib.sha256(version.encode())
    directory = module_dir(release)
    for path in sorted([directory / "go.mod", directory / "go.sum", *directory.glob("*.go")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build(release: UpstreamRelease, go: str, say: Callable[[str], None]) -> Path:
    """The release's binary from the cache, built first if the key is new."""
    binary = cache_root() / release.module_version / build_key(release, go) / "vectors"
    if binary.exists():
        say(f"using cached {release.name} vectors program {binary}")
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    say(f"building {release.name} vectors program (go build in {module_dir(release)}) -> {binary}")
    started = time.monotonic()
    fd, tmp = tempfile.mkstemp(dir=binary.parent, prefix=".vectors.", suffix=".tmp")
    os.close(fd)
    try:
        with machine_lock():  # one Go build at a time on the machine
            proc = subprocess.run(
                [go, "build", "-trimpath", "-o", tmp, "."], cwd=module_dir(release), env=_go_env(release),
                capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False,
            )  # fmt: skip
        if proc.returncode != 0:
            raise RuntimeError(f"go build for {release.name} failed:\n{proc.stdout}{proc.stderr}")
        os.replace(tmp, binary)  # concurrent sessions may race; either complete binary wins
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    say(f"built {release.name} vectors program in {time.monotonic() - started:.0f}s")
    return binary


@dataclass(frozen=True, slots=True)
class GoProgram:
    """One release's built program."""

    release: UpstreamRelease
    binary: Path

    def generate(self, out: Path, scenario: Path = SCENARIO) -> dict[str, Any]:
        """Run the scenario with the real helper into out/node; the parsed out/results.json."""
        self._run("generate", str(scenario), str(out))
        results: dict[str, Any] = json.loads((out / "results.json").read_text(encoding="utf-8"))
        return results

    def decode(self, paths: Sequence[Path]) -> list[dict[str, Any]]:
        """What `devicemetadata.DecodeMetadataFromStream` makes of each file, in order."""
        if not paths:
            return []
        decoded: list[dict[str, Any]] = json.loads(self._run("decode", *map(str, paths)))
        return decoded

    def _run(self, *args: str) -> str:
        proc = subprocess.run(
            [str(self.binary), *args], capture_output=True, text=True, timeout=300, check=False
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{self.binary} {args[0]} failed ({proc.returncode}):\n{proc.stderr}")
        return proc.stdout


@dataclass(frozen=True, slots=True)
class GoVectors:
    """What the real helper wrote for the scenario: results.json, and the node tree it left."""

    program: GoProgram
    results: dict[str, Any]
    node: Path

    @property
    def steps(self) -> list[dict[str, Any]]:
        steps: list[dict[str, Any]] = self.results["steps"]
        return steps

    def files(self, index: int = -1) -> dict[str, dict[str, Any]]:
        """The node's files and directories after step `index` (relative path -> mode, data)."""
        files: dict[str, dict[str, Any]] = self.steps[index]["files"]
        return files

    def snapshot(self, index: int, root: Path) -> dict[str, dict[str, str | None]]:
        """The node after step `index` with its root renamed to `root` (CDI specs hold absolute paths)."""
        old, new = self.results["root"], str(root)
        return {
            rel: {"mode": e["mode"], "data": None if e.get("data") is None else e["data"].replace(old, new)}
            for rel, e in self.files(index).items()
        }

    def host_paths(self) -> dict[str, str]:
        """containerPath -> hostPath relative to the node, from the final CDI specs."""
        out = {}
        for rel, entry in self.files().items():
            if rel.startswith("cdi/"):
                for device in json.loads(entry["data"])["devices"]:
                    for m in device["containerEdits"]["mounts"]:
                        out[m["containerPath"]] = str(Path(m["hostPath"]).relative_to(self.node))
        return out


def cdi_summary(spec_text: str, root: str) -> dict[str, Any]:
    """What a CDI spec says: kind, version, and per device its mounts (hostPath relative to root)."""
    spec = json.loads(spec_text)
    return {
        "kind": spec["kind"],
        "cdiVersion": spec["cdiVersion"],
        "devices": {
            device["name"]: [
                (m["hostPath"].removeprefix(root), m["containerPath"], m["options"])
                for m in device["containerEdits"]["mounts"]
            ]
            for device in spec["devices"]
        },
    }


def go_merge(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """devicemetadata.readRequestDir: requests merged by name in file order, the first podClaimName."""
    requests: dict[str, dict[str, Any]] = {}
    pod_claim_name = None
    for obj in objects:
        pod_claim_name = pod_claim_name or obj.get("podClaimName")
        for request in obj["requests"]:
            merged = requests.setdefault(request["name"], {"name": request["name"], "devices": []})
            merged["devices"].extend(request.get("devices", []))
    return {"podClaimName": pod_claim_name, "requests": list(requests.values())}
