"""What ``draledger demo`` checks before it starts anything: its port and the files it will write.

Rules:
1. Every check runs before the emulator, the operator or the story starts (``errors.py`` rule 3): a picture
   that cannot be written must not cost the whole story first, and a busy port must not end in a traceback.
2. A failed check is a ``CommandError`` with exit status 2 and one line naming the port or the path.
3. Nothing is created: a file is only written where the story would write it anyway.
"""

from __future__ import annotations

import errno
import socket
from typing import Final

from draledger.commands.errors import UNUSABLE, CommandError, writable

__all__ = ["HOST", "check"]

HOST: Final = "127.0.0.1"


def check_port(port: int) -> None:
    """The emulator can listen on ``port`` (0: any free port, always fine)."""
    if not 0 <= port <= 65535:
        raise CommandError(f"--port {port}: not a TCP port (0 to 65535)", UNUSABLE)
    if port == 0:
        return
    try:
        with socket.create_server((HOST, port)):  # SO_REUSEADDR, as the emulator's server binds
            pass
    except OSError as error:
        state = "is in use" if error.errno == errno.EADDRINUSE else "cannot be used"
        raise CommandError(f"port {port} on {HOST} {state} ({error.strerror or error})", UNUSABLE) from None


def check(*, port: int, log_file: str | None, svg: str | None, kubeconfig: str | None) -> None:
    """Rule 1 for every output of the run; ``kubeconfig`` only when it will be written (``--serve``)."""
    check_port(port)
    for path in (log_file, svg, kubeconfig):
        if path:
            writable(path)
