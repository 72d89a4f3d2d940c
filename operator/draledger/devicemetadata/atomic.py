"""Crash-safe file replacement for the metadata writer.

Rules: write a temp file in the target's own directory, fsync it, os.replace it over the target,
then fsync the directory, so a concurrent reader opens either the old or the new file, never a mix,
and a crash leaves one of the two. Files end up 0644 and created directories 0755 whatever the umask.
This module must never write the target in place or leave a temp file behind on error.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

FILE_MODE = 0o644
DIR_MODE = 0o755


def ensure_dir(path: Path) -> None:
    """Create `path` and missing parents with mode 0755 (explicitly, not via the umask)."""
    missing = []
    current = path
    while not current.exists():
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # a concurrent writer made it first
            directory.mkdir()
            os.chmod(directory, DIR_MODE)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    ensure_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), FILE_MODE)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def remove_file(path: Path) -> bool:
    """Delete a file if present; True when something was deleted."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    fsync_dir(path.parent)
    return True
