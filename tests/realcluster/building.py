"""Build etcd, kube-apiserver, kube-scheduler and kube-controller-manager of a pinned release, once.

``python -m tests.realcluster.building [--version v1.36|v1.37|all] [--force]`` builds what is missing; the
real-cluster fixtures call ``ensure`` the same way.

Rules:
1. Sources come only from the Go module proxy, through the module in ``e2e/controlplane/<minor>/`` (its go.mod
   requires ``k8s.io/kubernetes`` and replaces every staging module with the same release). All four binaries
   are built by ONE ``go build`` so that the packages they share are compiled once.
2. A build is reused when ``stamp.json`` beside ``bin/`` carries the same key: a hash of the module's files
   (go.mod, go.sum, *.go), the Go version and the build flags. Anything else is rebuilt.
3. Binaries are built into ``bin.new/`` and renamed into place, and the stamp is written last, so an
   interrupted build is never mistaken for a finished one.
4. One build at a time, machine-wide: a lock file in the cache root serialises builders (2 cores cannot
   afford two Go builds at once, and two builders of the same release would trample each other).
5. Progress goes to stderr: what is built, then a line every ``HEARTBEAT`` seconds with the elapsed time and
   packages compiled so far; the full ``go build -v`` output is kept in ``<release>/build.log``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.realcluster.releases import COMPONENTS, RELEASES, Release, cache_root

HEARTBEAT = 30.0
GOFLAGS = "-trimpath -buildvcs=false"
LDFLAGS = "-s -w"  # no symbol table, no DWARF: a third smaller, and linking is faster
VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
TARGETS = ("k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-scheduler",
           "k8s.io/kubernetes/cmd/kube-controller-manager", "./etcd")
BUILD_TIMEOUT = 3600.0
STAMP_FORMAT = 1


class BuildError(RuntimeError):
    """The build failed; the message ends with the tail of its log."""


class GoMissing(BuildError):
    """No ``go`` on this machine."""


@dataclass(frozen=True, slots=True)
class Built:
    """What ``ensure`` did for one release."""

    release: Release
    rebuilt: bool
    seconds: float


def say(message: str) -> None:
    print(f"[realcluster] {message}", file=sys.stderr, flush=True)


def find_go() -> str:
    """``$DRALEDGER_GO``, ``go`` on PATH, or the standard install in /usr/local/go; GoMissing otherwise."""
    for candidate in (os.environ.get("DRALEDGER_GO"), shutil.which("go"), "/usr/local/go/bin/go"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise GoMissing("go is not installed (not on PATH, not in /usr/local/go; set DRALEDGER_GO to use another)")


def go_env(go: str) -> dict[str, str]:
    env = dict(os.environ)
    env["GOFLAGS"] = GOFLAGS
    env.setdefault("GOTOOLCHAIN", "local")  # an exported GOTOOLCHAIN=go1.27.3 (see docs/e2e.md) wins
    env["PATH"] = f"{Path(go).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def go_version(go: str, release: Release) -> str:
    """``go version`` as the module sees it (an exported GOTOOLCHAIN changes it)."""
    done = subprocess.run([go, "version"], capture_output=True, text=True, timeout=600, check=False,
                          env=go_env(go), cwd=release.module)
    if done.returncode != 0:
        raise BuildError(f"`go version` failed: {done.stderr.strip()}")
    return done.stdout.strip()


def ldflags(release: Release) -> str:
    """``-s -w`` plus the version stamping of the release's hack/lib/version.sh, so /version reports the release."""
    major, minor = release.kubernetes.lstrip("v").split(".")[:2]
    values = {"gitVersion": release.kubernetes, "gitMajor": major, "gitMinor": minor, "gitTreeState": "clean"}
    stamps = [f"-X {package}.{key}={value}" for package in VERSION_PACKAGES for key, value in values.items()]
    return " ".join([LDFLAGS, *stamps])


def stamp_key(release: Release, version: str) -> str:
    """The hash that decides whether the binaries in the cache are still the ones the pins describe."""
    digest = hashlib.sha256()
    digest.update(f"{STAMP_FORMAT}\0{version}\0{GOFLAGS}\0{ldflags(release)}\0{' '.join(TARGETS)}\0".encode())
    files = sorted(path for path in release.module.rglob("*")
                   if path.is_file() and (path.suffix == ".go" or path.name in ("go.mod", "go.sum")))
    for path in files:
        digest.update(str(path.relative_to(release.module)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def is_current(release: Release, key: str) -> bool:
    try:
        stamp = json.loads((release.home / "stamp.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(stamp.get("key") == key and all(os.access(release.binary(name), os.X_OK) for name in COMPONENTS))


@contextlib.contextmanager
def machine_lock() -> Iterator[None]:
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with (root / "build.lock").open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"another build holds {root / 'build.lock'}; waiting for it")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _elapsed(seconds: float) -> str:
    return f"{int(seconds) // 60}m{int(seconds) % 60:02d}s"


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _run_build(go: str, release: Release, out: Path, log: Path) -> None:
    command = [go, "build", "-v", f"-ldflags={ldflags(release)}", "-o", f"{out}/", *TARGETS]
    counts = {"packages": 0, "downloads": 0}
    last = [""]
    with log.open("w", encoding="utf-8") as sink:
        sink.write(f"$ GOFLAGS='{GOFLAGS}' {' '.join(command)}   (in {release.module})\n")
        sink.flush()
        process = subprocess.Popen(command, cwd=release.module, env=go_env(go), stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, start_new_session=True)

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

        reader = threading.Thread(target=pump, name=f"build-{release.name}", daemon=True)
        reader.start()
        started = time.monotonic()
        try:
            while True:
                try:
                    process.wait(timeout=HEARTBEAT)
                    break
                except subprocess.TimeoutExpired:
                    elapsed = time.monotonic() - started
                    say(f"building {release.kubernetes}: {_elapsed(elapsed)}, {counts['packages']} packages compiled"
                        f", {counts['downloads']} modules downloaded; last {last[0] or '-'}")
                    if elapsed > BUILD_TIMEOUT:
                        raise BuildError(f"go build of {release.kubernetes} ran over {BUILD_TIMEOUT:.0f} s") from None
        finally:
            if process.poll() is None:
                os.killpg(process.pid, 9)
                process.wait()
            reader.join(timeout=30)
            if process.stdout is not None:
                process.stdout.close()
    if process.returncode != 0:
        raise BuildError(f"go build of {release.kubernetes} failed (exit {process.returncode}); log {log}:\n"
                         f"{_tail(log)}")


def ensure(release: Release, *, force: bool = False) -> Built:
    """Make ``release.bin`` hold the four binaries the pins describe, building them if needed."""
    go = find_go()
    version = go_version(go, release)
    key = stamp_key(release, version)
    if not force and is_current(release, key):
        return Built(release, rebuilt=False, seconds=0.0)
    with machine_lock():
        if not force and is_current(release, key):  # built by whoever held the lock
            return Built(release, rebuilt=False, seconds=0.0)
        release.home.mkdir(parents=True, exist_ok=True)
        out = release.home / "bin.new"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        log = release.home / "build.log"
        say(f"building {release.kubernetes} ({', '.join(COMPONENTS)}) with {version} from {release.module}"
            f" into {release.bin}; the first build takes many minutes, log {log}")
        started = time.monotonic()
        _run_build(go, release, out, log)
        missing = [name for name in COMPONENTS if not os.access(out / name, os.X_OK)]
        if missing:
            raise BuildError(f"go build of {release.kubernetes} succeeded but did not write {', '.join(missing)}")
        shutil.rmtree(release.bin, ignore_errors=True)
        out.rename(release.bin)
        seconds = time.monotonic() - started
        stamp = {"key": key, "go": version, "kubernetes": release.kubernetes, "etcd": release.etcd,
                 "seconds": round(seconds, 1), "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        (release.home / "stamp.json").write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
        say(f"built {release.kubernetes} in {_elapsed(seconds)}")
        return Built(release, rebuilt=True, seconds=seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.realcluster.building", description=__doc__.split("\n")[0])
    parser.add_argument("--version", default="all", choices=[*RELEASES, "all"],
                        help="the release to build (default: all, one after the other)")
    parser.add_argument("--force", action="store_true", help="rebuild even when the stamp matches")
    args = parser.parse_args(argv)
    releases = list(RELEASES.values()) if args.version == "all" else [RELEASES[args.version]]
    total = time.monotonic()
    try:
        for release in releases:
            done = ensure(release, force=args.force)
            if not done.rebuilt:
                say(f"{release.kubernetes}: binaries in {release.bin} are current (stamp matches), not rebuilt")
    except BuildError as error:
        say(str(error))
        return 1
    say(f"control planes ready in {_elapsed(time.monotonic() - total)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
