"""Wall-clock time as the API shows it (RFC 3339, whole seconds, UTC): the one clock of the shell and the
commands. The core never reads a clock; it is given times."""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> datetime:
    """The wall clock, in UTC."""
    return datetime.now(UTC)


def now_rfc3339() -> str:
    return now().replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
