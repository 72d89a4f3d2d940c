"""What an application does when the metadata file is not (yet) there: wait, or use env vars.

Rules: the wait is bounded by a deadline on an injectable clock and sleep (tests never sleep);
"ready" means every driver file is final (generation > 1 or attributes present). The env-var
fallback is all-or-nothing: every wanted attribute comes from the file, or every one from the
environment, never a mix, and it only applies when the file is missing (or has not the attributes),
never when a file is invalid. This module must never invent a value or hide an invalid file.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from draledger.devicemetadata import model
from draledger.devicemetadata.errors import (
    MetadataError,
    MetadataInvalidError,
    MetadataMissingError,
    MetadataNotReadyError,
    MissingCause,
)
from draledger.devicemetadata.model import ClaimMetadata, DeviceAttribute
from draledger.devicemetadata.reading import ClaimSelector, read_metadata


def wait_for_metadata(
    selector: ClaimSelector,
    *,
    timeout: float = 10.0,
    interval: float = 0.25,
    ready: Callable[[ClaimMetadata], bool] = lambda md: md.ready,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    max_bytes: int = model.DEFAULT_MAX_BYTES,
) -> ClaimMetadata:
    """Poll until the selected metadata is ready; after `timeout` raise the last problem seen.

    Missing and invalid files are retried (a writer may still be busy); on the deadline the last
    error is raised as is, or MetadataNotReadyError (with `.last`) if the file stayed un-ready.
    """
    if timeout < 0 or interval <= 0:
        raise ValueError("timeout must be >= 0 and interval > 0")
    deadline = clock() + timeout
    while True:
        last_error: MetadataError
        try:
            md = read_metadata(selector, max_bytes=max_bytes)
        except (MetadataMissingError, MetadataInvalidError) as exc:
            last_error = exc
        else:
            if ready(md):
                return md
            last_error = MetadataNotReadyError(
                md.sources[0].path.parent,
                f"metadata for {selector.describe()} still not ready after {timeout:g}s "
                f"(generation {md.generation}, no attributes yet)",
                md,
            )
        now = clock()
        if now >= deadline:
            raise last_error
        sleep(min(interval, deadline - now))


@dataclass(frozen=True, slots=True)
class ResolvedAttributes:
    """Attribute values and where they came from: `"file"` or `"env"` (then all are `string`)."""

    source: Literal["file", "env"]
    values: Mapping[str, DeviceAttribute] = field(hash=False)
    metadata: ClaimMetadata | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", MappingProxyType(dict(self.values)))


def resolve_attributes(
    selector: ClaimSelector,
    env_vars: Mapping[str, str],
    *,
    driver: str | None = None,
    environ: Mapping[str, str] | None = None,
    max_bytes: int = model.DEFAULT_MAX_BYTES,
) -> ResolvedAttributes:
    """Read the wanted attributes from the metadata file, else from explicit environment variables.

    `env_vars` maps attribute name -> environment variable name, e.g.
    `{"resource.kubernetes.io/pciBusID": "GPU_PCI_BUS_ID"}`. Each attribute comes from the first
    device (in file order, of `driver` if given) that has it. If the file is missing or lacks any
    wanted attribute, all values come from the environment as `string` attributes; if some variables
    are unset too, MetadataMissingError lists both what the file and the environment lacked.
    An invalid file raises MetadataInvalidError: the environment never masks broken metadata.
    """
    env = os.environ if environ is None else environ
    problem: MetadataMissingError
    try:
        md = read_metadata(selector, max_bytes=max_bytes)
    except MetadataMissingError as exc:
        problem = exc
    else:
        found = {name: md.attribute(name, driver=driver) for name in env_vars}
        lacking = [name for name, value in found.items() if value is None]
        if not lacking:
            return ResolvedAttributes("file", {k: v for k, v in found.items() if v is not None}, md)
        causes = [] if md.ready else [MissingCause.DEFERRED_NOT_WRITTEN]
        problem = MetadataMissingError(
            md.sources[0].path.parent, f"attributes not in the metadata: {', '.join(lacking)}", causes
        )
    unset = [var for var in env_vars.values() if var not in env]
    if unset:
        raise MetadataMissingError(
            problem.path,
            f"{problem.problem}; fallback environment variables unset: {', '.join(unset)}",
            problem.causes,
        )
    return ResolvedAttributes(
        "env", {name: DeviceAttribute.of_string(env[var]) for name, var in env_vars.items()}
    )
