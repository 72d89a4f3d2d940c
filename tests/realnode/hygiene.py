"""What a real node leaves on the host, found and removed: mounts, cgroups, log links, stray processes.

Rules:
1. Everything is found by where it lives (a path prefix of the node's own directories, the node's own cgroup
   root) or by what it serves (its containerd socket in a command line): nothing here touches what another node
   or another program made.
2. Removal is idempotent and never raises for what is already gone; mounts are detached (``MNT_DETACH``) deepest
   first, cgroups removed leaves first.
3. Pure host work: no Kubernetes API, no container runtime.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
CONTAINER_LOG_LINKS = Path("/var/log/containers")  # where every kubelet links its containers' logs

_LIBC = ctypes.CDLL(None, use_errno=True)
_MNT_DETACH = 2


def _prefixes(directories: tuple[Path, ...]) -> tuple[str, ...]:
    return tuple(str(path.resolve()) + "/" for path in directories)


def mounts_under(*directories: Path) -> list[str]:
    """Mount points at or below ``directories``, deepest first."""
    prefixes = _prefixes(directories)
    points = set()
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point.startswith(prefixes) or point + "/" in prefixes:
            points.add(point)
    return sorted(points, key=lambda point: -point.count("/"))


def unmount_under(*directories: Path) -> None:
    for _ in range(3):  # a bind mount may hide another under it
        points = mounts_under(*directories)
        if not points:
            return
        for point in points:
            _LIBC.umount2(point.encode(), _MNT_DETACH)


def hierarchies() -> list[Path]:
    """Every mounted cgroup hierarchy (v1 controllers, the named systemd one, and the unified one)."""
    return [path for path in sorted(CGROUP_ROOT.iterdir()) if path.is_dir() and (path / "cgroup.procs").exists()]


def make_cgroup_root(name: str) -> None:
    """``/<name>`` in every hierarchy; a new v1 cpuset is empty (no task could join it), so it gets its parent's."""
    for hierarchy in hierarchies():
        path = hierarchy / name.lstrip("/")
        path.mkdir(exist_ok=True)
        if (hierarchy / "cpuset.cpus").exists():
            for file in ("cpuset.cpus", "cpuset.mems"):
                (path / file).write_text((hierarchy / file).read_text())


def remove_cgroup_root(name: str) -> None:
    for hierarchy in hierarchies():
        top = hierarchy / name.lstrip("/")
        if not top.exists():
            continue
        for path in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            with contextlib.suppress(OSError):
                path.rmdir()
        with contextlib.suppress(OSError):
            top.rmdir()


def cgroup_roots(name: str) -> list[Path]:
    """Where ``/<name>`` still exists."""
    return [hierarchy / name.lstrip("/") for hierarchy in hierarchies() if (hierarchy / name.lstrip("/")).exists()]


def remove_log_links(*directories: Path) -> None:
    """The links in /var/log/containers that point below ``directories``."""
    mine = _prefixes(directories)
    with contextlib.suppress(OSError):
        for link in CONTAINER_LOG_LINKS.iterdir():
            with contextlib.suppress(OSError):
                if link.is_symlink() and os.readlink(link).startswith(mine):
                    link.unlink()


def pids_with_argument(argument: str) -> list[int]:
    """Processes whose command line has ``argument`` as one of its words."""
    wanted = argument.encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if wanted in (entry / "cmdline").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
    return found


def kill_with_argument(argument: str) -> None:
    """SIGKILL each process that has ``argument`` in its command line (a shim serving a socket of ours)."""
    for pid in pids_with_argument(argument):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
