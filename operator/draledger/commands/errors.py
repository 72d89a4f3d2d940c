"""How every command ends: the same exit codes everywhere, and one line on stderr instead of a traceback.

Rules:
1. Exit 0: done. Exit 1: an operation failed (the cluster refused or could not be reached, a node's phase
   matched ``audit --fail-on``). Exit 2: unusable input or usage (a file that cannot be read or written, a
   dump or export that cannot be used, an unusable kubeconfig, a bad flag or DRALEDGER_* variable).
2. What the outside world did wrong is one line, ``error: <object/file/server>: <cause>``. A bug of ours is
   one line too, unless ``DRALEDGER_DEBUG=1`` asks for the traceback.
3. Outputs are checked before the work that fills them: a picture that cannot be written must not cost a
   ten-minute audit first.
"""

from __future__ import annotations

import os
from typing import TextIO

OK, FAILED, UNUSABLE = 0, 1, 2
DEBUG = "DRALEDGER_DEBUG"

EXIT_CODES = """exit codes:
  0  done
  1  an operation failed: the cluster refused or could not be reached,
     or a node's phase matched --fail-on
  2  unusable input or usage: a file that cannot be read or written,
     a bad dump, export or kubeconfig, a bad flag"""


class CommandError(Exception):
    """Ends the command with one line on stderr and an exit code (1: the operation failed; 2: bad input)."""

    def __init__(self, message: str, code: int = FAILED) -> None:
        super().__init__(" ".join(message.split()))
        self.code = code


def writable(path: str) -> None:
    """CommandError(2) when ``path`` (``-``: standard output) cannot be written, said before any work."""
    if path == "-":
        return
    folder = os.path.dirname(path) or "."
    if os.path.isdir(path):
        raise CommandError(f"{path}: cannot write: it is a directory", UNUSABLE)
    if not os.path.isdir(folder):
        raise CommandError(f"{path}: cannot write: the folder {folder} does not exist", UNUSABLE)
    existed = os.path.exists(path)
    try:  # appending changes nothing; the only test that answers for read-only mounts, ACLs and root alike
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as error:
        raise CommandError(f"{path}: cannot write: {error.strerror or error}", UNUSABLE) from None
    if not existed:
        os.unlink(path)


def report(error: Exception, stderr: TextIO) -> int:
    """Write ``error`` as the one line of rule 2 and return the exit code; re-raise a bug under DRALEDGER_DEBUG."""
    from draledger.commands.dumps import DumpError
    from draledger.operator.connecting import CredentialsError
    from draledger.operator.kopfcompat import KopfVersionError
    from draledger.operator.options import ConfigError

    if isinstance(error, CommandError):
        line, code = str(error), error.code
    elif isinstance(error, DumpError | CredentialsError | ConfigError | KopfVersionError):
        line, code = str(error), UNUSABLE
    elif isinstance(error, OSError) and error.filename is not None:
        line, code = f"{error.filename}: {error.strerror or error}", UNUSABLE
    elif os.environ.get(DEBUG, "") not in ("", "0"):
        raise error
    else:
        cause = " ".join(str(error).split())
        what = f"{type(error).__name__}: {cause}" if cause else type(error).__name__
        line = f"internal error: {what} (set {DEBUG}=1 for the traceback)"
        code = FAILED
    stderr.write(f"error: {line}\n")
    return code
