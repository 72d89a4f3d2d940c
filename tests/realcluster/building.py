"""Build the pinned Go binaries the real-cluster and real-node suites run, once: releases and tools.

``python -m tests.realcluster.building [--version v1.36|...|all] [--tool NAME[@VERSION]|all] [--force] [all]``
builds what is missing. The Python API is what the suites call:
- ``ensure(release)``: etcd, kube-apiserver, kube-scheduler, kube-controller-manager and the kubelet of a release;
- ``tool("helm")``, ``tool("kustomize", "v5.5.0")``: the path of a pinned tool's binary (its siblings, e.g.
  containerd's shim and ``ctr``, are in the same directory);
- ``build(spec)``: any ``BuildSpec``; ``machine_lock()``: the lock every Go build on this machine takes.

Rules:
1. Sources come only from the Go module proxy, through a module in the tree that pins them (go.mod and go.sum):
   ``e2e/controlplane/<minor>/`` for a release, ``e2e/tools/<name>/<version>/`` for a tool. Everything a spec
   names is built by ONE ``go build``, so that the packages its binaries share are compiled once.
2. The toolchain is pinned by the module too: its go.mod's ``toolchain`` line, else the machine's ``go``
   (``GOTOOLCHAIN=local``). An exported ``GOTOOLCHAIN`` does not change what the builder uses, so a build made
   under ``.ci/run`` (which exports one for other Go commands) is reused by a shell that exports none.
3. A build is reused when ``stamp.json`` beside ``bin/`` carries the same key: a hash of the module's files
   (go.mod, go.sum, *.go, below the module too), the ``go version``, the flags, targets, tags and environment.
   Anything else is rebuilt.
4. Binaries are built into ``bin.new/`` and renamed into place, and the stamp is written last, so an
   interrupted build is never mistaken for a finished one.
5. One build at a time, machine-wide: ``machine_lock()`` (a flock on ``<cache>/dra-ledger/kube/build.lock``,
   wherever the binaries go) serialises builders: 2 cores cannot afford two Go builds at once, and two builders
   of the same spec would trample each other.
6. Progress goes to stderr: what is built, then a line every ``HEARTBEAT`` seconds with the elapsed time and
   packages compiled so far; the full ``go build -v`` output is kept in ``build.log`` beside ``bin/``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.realcluster.releases import COMPONENTS, RELEASES, TOOLS, Release, Tool, find_tool, user_cache

HEARTBEAT = 30.0
GOFLAGS = "-trimpath -buildvcs=false"
LDFLAGS = "-s -w"  # no symbol table, no DWARF: a third smaller, and linking is faster
VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
COMMANDS = ("kube-apiserver", "kube-scheduler", "kube-controller-manager", "kubelet")
TARGETS = (*(f"k8s.io/kubernetes/cmd/{command}" for command in COMMANDS), "./etcd")
BUILD_TIMEOUT = 3600.0
STAMP_FORMAT = 2
LOCK_ENV = "DRALEDGER_BUILD_LOCK"


class BuildError(RuntimeError):
    """The build failed; the message ends with the tail of its log."""


class GoMissing(BuildError):
    """No ``go`` on this machine."""


@dataclass(frozen=True, slots=True)
class BuildSpec:
    """One ``go build`` in one pinned module: what it builds, with which flags, and where the binaries go."""

    label: str  # for people: "v1.36.3", "helm v4.3.2"
    module: Path  # the Go module that pins the sources
    targets: tuple[str, ...]  # the packages, as ``go build`` takes them
    outputs: tuple[str, ...]  # the binaries the build must write into bin/
    home: Path  # bin/, stamp.json and build.log live here
    ldflags: str = LDFLAGS
    tags: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # pinned environment (CGO_ENABLED, ...)
    needs: tuple[tuple[str, str], ...] = ()  # (file that must exist, how to get it)
    facts: dict[str, str] = field(default_factory=dict)  # written into stamp.json for people

    @property
    def bin(self) -> Path:
        return self.home / "bin"

    @property
    def log(self) -> Path:
        return self.home / "build.log"

    def command(self, go: str, out: Path) -> list[str]:
        tags = [f"-tags={','.join(self.tags)}"] if self.tags else []
        return [go, "build", "-v", *tags, f"-ldflags={self.ldflags}", "-o", f"{out}/", *self.targets]


@dataclass(frozen=True, slots=True)
class Built:
    """What ``build`` did for one spec."""

    spec: BuildSpec
    rebuilt: bool
    seconds: float


def say(message: str) -> None:
    print(f"[realcluster] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ specs of what the tree pins


def ldflags(release: Release) -> str:
    """``-s -w`` plus the version stamping of the release's hack/lib/version.sh, so /version reports the release."""
    major, minor = release.kubernetes.lstrip("v").split(".")[:2]
    values = {"gitVersion": release.kubernetes, "gitMajor": major, "gitMinor": minor, "gitTreeState": "clean"}
    stamps = [f"-X {package}.{key}={value}" for package in VERSION_PACKAGES for key, value in values.items()]
    return " ".join([LDFLAGS, *stamps])


def release_spec(release: Release) -> BuildSpec:
    """A release's control plane and kubelet, built together (rule 1)."""
    return BuildSpec(release.kubernetes, release.module, TARGETS, COMPONENTS, release.home, ldflags(release),
                     facts={"kubernetes": release.kubernetes, "etcd": release.etcd})


def tool_spec(tool: Tool) -> BuildSpec:
    stamps = [f"-X {variable}={value}" for variable, value in tool.stamps]
    return BuildSpec(tool.label, tool.module, tool.packages, tool.outputs, tool.home, " ".join([LDFLAGS, *stamps]),
                     tool.tags, dict(tool.env), tool.needs, facts={"tool": tool.name, "version": tool.version})


# ------------------------------------------------------------------ go


def find_go() -> str:
    """``$DRALEDGER_GO``, ``go`` on PATH, or the standard install in /usr/local/go; GoMissing otherwise."""
    for candidate in (os.environ.get("DRALEDGER_GO"), shutil.which("go"), "/usr/local/go/bin/go"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise GoMissing("go is not installed (not on PATH, not in /usr/local/go; set DRALEDGER_GO to use another)")


def toolchain(module: Path) -> str:
    """The module's ``toolchain`` line (``go1.27.3``), else ``local``: the GOTOOLCHAIN its builds use (rule 2)."""
    found = re.search(r"^toolchain\s+(\S+)\s*$", (module / "go.mod").read_text(encoding="utf-8"), re.MULTILINE)
    return found.group(1) if found else "local"


def go_env(go: str, spec: BuildSpec) -> dict[str, str]:
    env = dict(os.environ)
    env.update(spec.env)
    env["GOFLAGS"] = GOFLAGS
    env["GOTOOLCHAIN"] = toolchain(spec.module)
    env["GOWORK"] = "off"
    env["PATH"] = f"{Path(go).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def go_version(go: str, spec: BuildSpec) -> str:
    """``go version`` as the module sees it (its toolchain line changes it; the first call may fetch it)."""
    done = subprocess.run([go, "version"], capture_output=True, text=True, timeout=600, check=False,
                          env=go_env(go, spec), cwd=spec.module)
    if done.returncode != 0:
        raise BuildError(f"`go version` in {spec.module} failed: {done.stderr.strip()}")
    return done.stdout.strip()


# ------------------------------------------------------------------ stamps and the lock


def stamp_key(spec: BuildSpec, version: str) -> str:
    """The hash that decides whether the binaries in the cache are still the ones the pins describe."""
    digest = hashlib.sha256()
    settings = [str(STAMP_FORMAT), version, GOFLAGS, spec.ldflags, " ".join(spec.targets), ",".join(spec.tags),
                json.dumps(sorted(spec.env.items()))]
    digest.update("\0".join(settings).encode() + b"\0")
    files = sorted(path for path in spec.module.rglob("*")
                   if path.is_file() and (path.suffix == ".go" or path.name in ("go.mod", "go.sum")))
    for path in files:
        digest.update(str(path.relative_to(spec.module)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def is_current(spec: BuildSpec, key: str) -> bool:
    try:
        stamp = json.loads((spec.home / "stamp.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(stamp.get("key") == key and all(os.access(spec.bin / name, os.X_OK) for name in spec.outputs))


def lock_path() -> Path:
    """``$DRALEDGER_BUILD_LOCK``, else ``<cache>/dra-ledger/kube/build.lock``, whatever the binary caches are."""
    explicit = os.environ.get(LOCK_ENV)
    return Path(explicit) if explicit else user_cache() / "kube" / "build.lock"


@contextlib.contextmanager
def machine_lock() -> Iterator[None]:
    """Hold the machine's build lock (rule 5); say so once when another build holds it."""
    path = lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"another build holds {path}; waiting for it")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# ------------------------------------------------------------------ building


def _elapsed(seconds: float) -> str:
    return f"{int(seconds) // 60}m{int(seconds) % 60:02d}s"


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _run_build(go: str, spec: BuildSpec, out: Path) -> None:
    command = spec.command(go, out)
    counts = {"packages": 0, "downloads": 0}
    last = [""]
    env = go_env(go, spec)
    with spec.log.open("w", encoding="utf-8") as sink:
        pinned = " ".join(f"{name}='{env[name]}'" for name in ("GOFLAGS", "GOTOOLCHAIN", *sorted(spec.env)))
        sink.write(f"$ {pinned} {' '.join(command)}   (in {spec.module})\n")
        sink.flush()
        process = subprocess.Popen(command, cwd=spec.module, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   start_new_session=True)

        def pump() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                sink.write(line)
                if line.startswith("go: downloading"):
                    counts["downloads"] += 1
                elif line.strip() and not line.startswith(("#", " ", "go:")):
                    counts["packages"] += 1
                    last[0] = line.strip()
            sink.flush()

        reader = threading.Thread(target=pump, name=f"build-{spec.label}", daemon=True)
        reader.start()
        started = time.monotonic()
        try:
            while True:
                try:
                    process.wait(timeout=HEARTBEAT)
                    break
                except subprocess.TimeoutExpired:
                    elapsed = time.monotonic() - started
                    say(f"building {spec.label}: {_elapsed(elapsed)}, {counts['packages']} packages compiled"
                        f", {counts['downloads']} modules downloaded; last {last[0] or '-'}")
                    if elapsed > BUILD_TIMEOUT:
                        raise BuildError(f"go build of {spec.label} ran over {BUILD_TIMEOUT:.0f} s") from None
        finally:
            if process.poll() is None:
                os.killpg(process.pid, 9)
                process.wait()
            reader.join(timeout=30)
            if process.stdout is not None:
                process.stdout.close()
    if process.returncode != 0:
        raise BuildError(f"go build of {spec.label} failed (exit {process.returncode}); log {spec.log}:\n"
                         f"{_tail(spec.log)}")


def build(spec: BuildSpec, *, force: bool = False) -> Built:
    """Make ``spec.bin`` hold the binaries the pins describe, building them if needed (rules 3 to 6)."""
    go = find_go()
    missing = [f"{path} ({how})" for path, how in spec.needs if not os.path.exists(path)]
    if missing:
        raise BuildError(f"{spec.label} needs {', '.join(missing)}")
    version = go_version(go, spec)
    key = stamp_key(spec, version)
    if not force and is_current(spec, key):
        return Built(spec, rebuilt=False, seconds=0.0)
    with machine_lock():
        if not force and is_current(spec, key):  # built by whoever held the lock
            return Built(spec, rebuilt=False, seconds=0.0)
        spec.home.mkdir(parents=True, exist_ok=True)
        out = spec.home / "bin.new"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        say(f"building {spec.label} ({', '.join(spec.outputs)}) with {version} from {spec.module} into {spec.bin};"
            f" a first build takes minutes, log {spec.log}")
        started = time.monotonic()
        _run_build(go, spec, out)
        absent = [name for name in spec.outputs if not os.access(out / name, os.X_OK)]
        if absent:
            raise BuildError(f"go build of {spec.label} succeeded but did not write {', '.join(absent)}")
        shutil.rmtree(spec.bin, ignore_errors=True)
        out.rename(spec.bin)
        seconds = time.monotonic() - started
        stamp = {"key": key, "go": version, **spec.facts, "seconds": round(seconds, 1),
                 "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        (spec.home / "stamp.json").write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
        say(f"built {spec.label} in {_elapsed(seconds)}")
        return Built(spec, rebuilt=True, seconds=seconds)


def ensure(release: Release, *, force: bool = False) -> Built:
    """Make ``release.bin`` hold the release's five binaries (COMPONENTS), building them if needed."""
    return build(release_spec(release), force=force)


def tool(name: str, version: str | None = None, *, force: bool = False) -> Path:
    """The path of pinned tool ``name``'s binary (the newest pinned version by default), built if needed.

    ValueError for a tool or version that is not pinned; BuildError (GoMissing) when it cannot be built.
    """
    pinned = find_tool(name, version)
    build(tool_spec(pinned), force=force)
    return pinned.binary()


# ------------------------------------------------------------------ the command line


def _selected(args: argparse.Namespace) -> list[BuildSpec]:
    everything = args.everything == "all"
    releases = (list(RELEASES.values()) if everything or args.version == "all"
                else [RELEASES[args.version]] if args.version else [])
    tools: list[Tool] = []
    for wanted in (["all"] if everything else args.tool or []):
        if wanted == "all":
            tools += [pinned for versions in TOOLS.values() for pinned in versions if not pinned.on_request]
        else:
            name, _, version = wanted.partition("@")
            tools.append(find_tool(name, version or None))
    if not releases and not tools:  # no selection: what it always did, every release
        releases = list(RELEASES.values())
    return [*map(release_spec, releases), *map(tool_spec, tools)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.realcluster.building", description=__doc__.split("\n")[0])
    parser.add_argument("everything", nargs="?", choices=["all"], help="every release and every tool")
    parser.add_argument("--version", choices=[*RELEASES, "all"], help="a release to build, or all of them")
    parser.add_argument("--tool", action="append", metavar="NAME[@VERSION]",
                        help=f"a tool to build (repeatable; all = every tool but {', '.join(on_request())}); "
                             f"known: {', '.join(TOOLS)}")
    parser.add_argument("--force", action="store_true", help="rebuild even when the stamp matches")
    args = parser.parse_args(argv)
    try:
        specs = _selected(args)
    except ValueError as error:
        parser.error(str(error))
    total = time.monotonic()
    try:
        for spec in specs:
            done = build(spec, force=args.force)
            if not done.rebuilt:
                say(f"{spec.label}: binaries in {spec.bin} are current (stamp matches), not rebuilt")
    except BuildError as error:
        say(str(error))
        return 1
    say(f"{len(specs)} build(s) ready in {_elapsed(time.monotonic() - total)}")
    return 0


def on_request() -> list[str]:
    return [pinned.label for versions in TOOLS.values() for pinned in versions if pinned.on_request]


if __name__ == "__main__":
    sys.exit(main())
