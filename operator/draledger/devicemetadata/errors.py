"""Errors of the device-metadata reader and writer.

Rules: every error names the path it is about and the problem, in one readable message; a missing
file (`MetadataMissingError`) is kept apart from a bad one (`MetadataInvalidError`) so that an
application can fall back on the first and must not paper over the second.
This module must never do I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from draledger.devicemetadata.model import ClaimMetadata


class MissingCause(enum.Enum):
    """Known reasons for a metadata file to be absent; a container cannot tell them apart alone."""

    CLAIM_NOT_PREPARED = "the claim is not prepared on this node or not referenced by this container"
    DRIVER_WITHOUT_METADATA = "the DRA driver does not support device metadata or has it disabled"
    WRITE_FAILED = "the driver failed to write the file at prepare (it only logs that and goes on)"
    REQUEST_WITHOUT_DEVICES = "the request got no devices from this driver, so no file is written"
    DEFERRED_NOT_WRITTEN = "deferred metadata (network drivers) is not written yet"


class MetadataError(Exception):
    """Base class: something about `path` prevents handing out metadata."""

    def __init__(self, path: Path | str, problem: str) -> None:
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class MetadataMissingError(MetadataError):
    """No metadata file where one was expected; `causes` lists what can explain it."""

    def __init__(self, path: Path | str, problem: str, causes: Sequence[MissingCause]) -> None:
        self.causes = tuple(causes)
        explained = "; ".join(c.value for c in self.causes)
        super().__init__(path, f"{problem} (possible causes: {explained})" if explained else problem)
        self.problem = problem


class MetadataInvalidError(MetadataError):
    """A file exists but is truncated, malformed, too large, inconsistent or of the wrong types."""


class UnsupportedVersionError(MetadataInvalidError):
    """The stream holds no object of an apiVersion this library knows."""

    def __init__(self, path: Path | str, found: Sequence[str], known: Sequence[str]) -> None:
        self.found = tuple(found)
        self.known = tuple(known)
        super().__init__(
            path,
            f"no known apiVersion in the stream: found [{', '.join(self.found) or 'nothing'}], "
            f"this library reads [{', '.join(self.known)}]",
        )


class MetadataNotReadyError(MetadataError):
    """`wait` ran out of time while deferred metadata was still at generation 1 without attributes."""

    def __init__(self, path: Path | str, problem: str, last: ClaimMetadata) -> None:
        self.last = last
        super().__init__(path, problem)
