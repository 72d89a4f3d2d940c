"""The build this process runs: its version, the commit it was built from, and Python.

Rules:
1. The version is the package's (``draledger.__version__``, which pyproject.toml reads too).
2. The commit is, in order: the file ``BUILD_COMMIT`` beside the package, written when an image or a wheel is
   built from a checkout (the Dockerfile's ``DRALEDGER_COMMIT`` build argument); else, for a checkout the
   package runs from (an editable install: git tracks this very package), what git says of it; else
   ``unknown``. Never an error: a missing git, a folder that is no work tree or a slow git (2 s) gives
   ``unknown``.
3. Each is looked up once per process, when first asked (``--version``, the ``draledger_build_info`` metric),
   never when a command's parser is built.
"""

from __future__ import annotations

import functools
import platform
import re
import subprocess
from pathlib import Path

import draledger

UNKNOWN = "unknown"
PACKAGE = Path(draledger.__file__).resolve().parent
COMMIT_FILE = PACKAGE / "BUILD_COMMIT"
_COMMIT = re.compile(r"[0-9a-f]{7,40}(-dirty)?")


def version() -> str:
    return draledger.__version__


@functools.cache
def commit() -> str:
    """The commit of this build (rule 2), 12 hex digits, ``-dirty`` when git saw uncommitted changes."""
    try:
        written = COMMIT_FILE.read_text(encoding="utf-8").strip()
    except OSError:
        written = ""
    if _COMMIT.fullmatch(written):
        return _short(written)
    return _from_git(PACKAGE) or UNKNOWN


def _short(text: str) -> str:
    digits, _, dirty = text.partition("-")
    return digits[:12] + (f"-{dirty}" if dirty else "")


def _from_git(folder: Path) -> str:
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=2,
                              check=True)
        return done.stdout.strip()

    try:
        git("ls-files", "--error-unmatch", "--", "__init__.py")  # this package's own checkout, not one around a venv
        head = git("rev-parse", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no", "--", ".")
    except (OSError, subprocess.SubprocessError):
        return ""
    if not _COMMIT.fullmatch(head):
        return ""
    return _short(head) + ("-dirty" if changed else "")


def python() -> str:
    return f"{platform.python_implementation()} {platform.python_version()}"


def describe() -> str:
    """``draledger 0.1.0 (commit 8cede1f2a3b4, CPython 3.11.7)``: what ``draledger --version`` prints."""
    return f"draledger {version()} (commit {commit()}, {python()})"
