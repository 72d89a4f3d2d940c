"""Find and read the metadata files of one claim inside a container (no Kubernetes client).

Rules: files are looked up by the documented layout only (`resourceclaims/<claim>/<request>/` or
`resourceclaimtemplates/<podClaimName>/<request>/`, one `<driver>-metadata.json` per driver);
every file of the selection is read, size-limited, fully decoded and cross-checked (same claim
identity, its own request present, its devices from its own driver) before anything is returned.
This module must never return partial data, guess a path outside the layout, or write anything.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from draledger.devicemetadata import model
from draledger.devicemetadata.codec import decode_stream
from draledger.devicemetadata.errors import (
    MetadataError,
    MetadataInvalidError,
    MetadataMissingError,
    MissingCause,
)
from draledger.devicemetadata.model import (
    CLAIMS_SUBDIR,
    FILE_SUFFIX,
    TEMPLATES_SUBDIR,
    ClaimMetadata,
    DeviceMetadata,
    MetadataSource,
    RequestMetadata,
    check_path_segment,
)


@dataclass(frozen=True, slots=True)
class ClaimSelector:
    """Which claim (and optionally which request) to read, and under which root.

    `template=True` means `name` is the pod's claim name (`pod.spec.resourceClaims[].name`) of a
    claim generated from a ResourceClaimTemplate. `root=None` means the module's DEFAULT_ROOT.
    """

    name: str
    request: str | None = None
    template: bool = False
    root: Path | None = None

    def __post_init__(self) -> None:
        check_path_segment("claim name", self.name)
        if self.request is not None:
            if "/" in self.request:
                raise ValueError(
                    f"request {self.request!r}: pass the base request name; subrequests are stored under it"
                )
            check_path_segment("request name", self.request)

    @classmethod
    def claim(cls, name: str, request: str | None = None, *, root: Path | str | None = None) -> ClaimSelector:
        return cls(name, request, template=False, root=None if root is None else Path(root))

    @classmethod
    def pod_claim(
        cls, name: str, request: str | None = None, *, root: Path | str | None = None
    ) -> ClaimSelector:
        return cls(name, request, template=True, root=None if root is None else Path(root))

    @property
    def base_dir(self) -> Path:
        # Looked up at call time so that tests and docs can point DEFAULT_ROOT elsewhere.
        return self.root if self.root is not None else model.DEFAULT_ROOT

    @property
    def claim_dir(self) -> Path:
        return self.base_dir / (TEMPLATES_SUBDIR if self.template else CLAIMS_SUBDIR) / self.name

    def describe(self) -> str:
        kind = "template claim" if self.template else "claim"
        return f"{kind} {self.name!r}" + (f" request {self.request!r}" if self.request else "")


def read_metadata_file(
    path: Path | str,
    *,
    max_bytes: int = model.DEFAULT_MAX_BYTES,
    known: Sequence[str] = model.KNOWN_VERSIONS,
) -> DeviceMetadata:
    """Read and decode one metadata file (any layout), refusing files over `max_bytes`.

    `known` limits the versions used, e.g. to what one upstream release reads.
    """
    path = Path(path)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > max_bytes:
                raise MetadataInvalidError(path, f"{size} bytes is over the {max_bytes}-byte limit")
            # The size may grow between fstat and read; reading one byte more catches that too.
            data = f.read(max_bytes + 1)
    except FileNotFoundError:
        raise MetadataMissingError(
            path, "no such file", [MissingCause.CLAIM_NOT_PREPARED, MissingCause.WRITE_FAILED]
        ) from None
    except OSError as exc:
        if exc.errno == errno.EISDIR:
            raise MetadataInvalidError(path, "is a directory, not a metadata file") from None
        raise MetadataError(path, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise MetadataInvalidError(path, f"over the {max_bytes}-byte limit")
    return decode_stream(data, path, known=known)


def driver_files(request_dir: Path) -> list[tuple[str, Path]]:
    """`(driver, path)` for each `<driver>-metadata.json` in a request directory, sorted by driver."""
    out = []
    for entry in sorted(os.scandir(request_dir), key=lambda e: e.name):
        if entry.name.endswith(FILE_SUFFIX) and len(entry.name) > len(FILE_SUFFIX):
            out.append((entry.name[: -len(FILE_SUFFIX)], Path(entry.path)))
    return out


def read_metadata(selector: ClaimSelector, *, max_bytes: int = model.DEFAULT_MAX_BYTES) -> ClaimMetadata:
    """All drivers' metadata for the selected request (or every request of the claim), merged."""
    claim_dir = selector.claim_dir
    if not claim_dir.is_dir():
        raise _claim_missing(selector)
    if selector.request is not None:
        request_dirs = [claim_dir / selector.request]
        if not request_dirs[0].is_dir():
            raise _request_missing(selector, request_dirs[0])
    else:
        request_dirs = sorted(p for p in claim_dir.iterdir() if p.is_dir())
        if not request_dirs:
            raise MetadataMissingError(
                claim_dir,
                f"no request directories for {selector.describe()}",
                [MissingCause.DRIVER_WITHOUT_METADATA, MissingCause.WRITE_FAILED],
            )
    sources: list[MetadataSource] = []
    for request_dir in request_dirs:
        try:
            files = driver_files(request_dir)
        except FileNotFoundError:  # removed by an unprepare between listing and reading
            files = []
        if not files:
            raise MetadataMissingError(
                request_dir,
                f"no *{FILE_SUFFIX} file for {selector.describe()}",
                [MissingCause.DEFERRED_NOT_WRITTEN, MissingCause.WRITE_FAILED],
            )
        for driver, path in files:
            md = read_metadata_file(path, max_bytes=max_bytes)
            _check_file(selector, request_dir.name, driver, path, md)
            sources.append(MetadataSource(path=path, driver=driver, metadata=md))
    return merge(selector, sources)


def read_resource_claim_metadata(
    claim_name: str,
    request_name: str | None = None,
    *,
    root: Path | str | None = None,
    max_bytes: int = model.DEFAULT_MAX_BYTES,
) -> ClaimMetadata:
    """Metadata of a directly referenced ResourceClaim (`pod.spec.resourceClaims[].resourceClaimName`)."""
    return read_metadata(ClaimSelector.claim(claim_name, request_name, root=root), max_bytes=max_bytes)


def read_resource_claim_template_metadata(
    pod_claim_name: str,
    request_name: str | None = None,
    *,
    root: Path | str | None = None,
    max_bytes: int = model.DEFAULT_MAX_BYTES,
) -> ClaimMetadata:
    """Metadata of a claim generated from a template, by the pod's claim name."""
    return read_metadata(
        ClaimSelector.pod_claim(pod_claim_name, request_name, root=root), max_bytes=max_bytes
    )


def _check_file(
    selector: ClaimSelector, dir_request: str, driver: str, path: Path, md: DeviceMetadata
) -> None:
    if not any(r.base_name == dir_request for r in md.requests):
        names = ", ".join(r.name for r in md.requests) or "none"
        raise MetadataInvalidError(
            path, f"request {dir_request!r} is missing from its own file (has: {names})"
        )
    foreign = [r.name for r in md.requests if r.base_name != dir_request]
    if foreign:
        raise MetadataInvalidError(path, f"holds requests of another directory: {', '.join(foreign)}")
    for request in md.requests:
        for device in request.devices:
            if device.driver != driver:
                raise MetadataInvalidError(
                    path,
                    f"device {device.pool}/{device.name} is of driver {device.driver!r}, file is {driver!r}",
                )
    if selector.template and md.pod_claim_name != selector.name:
        raise MetadataInvalidError(
            path,
            f"podClaimName is {md.pod_claim_name!r}, but the file is under template claim {selector.name!r}",
        )
    if not selector.template and md.claim.name != selector.name:
        raise MetadataInvalidError(
            path, f"metadata.name is {md.claim.name!r}, but the file is under claim {selector.name!r}"
        )


def merge(selector: ClaimSelector, sources: list[MetadataSource]) -> ClaimMetadata:
    """One view over several drivers' files; they must all describe the same claim incarnation."""
    first = sources[0]
    for other in sources[1:]:
        if (other.metadata.claim, other.metadata.pod_claim_name) != (
            first.metadata.claim,
            first.metadata.pod_claim_name,
        ):
            raise MetadataInvalidError(
                other.path,
                f"describes claim {_identity(other)}, but {first.path} describes {_identity(first)}",
            )
    merged: dict[str, list[model.Device]] = {}
    for source in sources:
        for request in source.metadata.requests:
            merged.setdefault(request.name, []).extend(request.devices)
    return ClaimMetadata(
        claim=first.metadata.claim,
        pod_claim_name=first.metadata.pod_claim_name,
        requests=tuple(RequestMetadata(name, tuple(devices)) for name, devices in merged.items()),
        sources=tuple(sources),
    )


def _identity(source: MetadataSource) -> str:
    c = source.metadata.claim
    pod = f" podClaimName={source.metadata.pod_claim_name}" if source.metadata.pod_claim_name else ""
    return f"{c.namespace}/{c.name} uid={c.uid}{pod}"


def _claim_missing(selector: ClaimSelector) -> MetadataMissingError:
    causes = [
        MissingCause.CLAIM_NOT_PREPARED,
        MissingCause.DRIVER_WITHOUT_METADATA,
        MissingCause.WRITE_FAILED,
    ]
    if not selector.base_dir.is_dir():
        problem = (
            f"no device metadata is mounted in this container at all (looking for {selector.describe()})"
        )
    else:
        problem = f"no directory for {selector.describe()}"
        other = selector.base_dir / (CLAIMS_SUBDIR if selector.template else TEMPLATES_SUBDIR) / selector.name
        if other.is_dir():
            hint = "a direct claim: use --claim" if selector.template else "a template claim: use --template"
            problem += f"; {other} exists, so this is {hint}"
    return MetadataMissingError(selector.claim_dir, problem, causes)


def _request_missing(selector: ClaimSelector, request_dir: Path) -> MetadataMissingError:
    present = sorted(p.name for p in selector.claim_dir.iterdir() if p.is_dir())
    return MetadataMissingError(
        request_dir,
        f"no directory for {selector.describe()} (requests with metadata: {', '.join(present) or 'none'})",
        [
            MissingCause.REQUEST_WITHOUT_DEVICES,
            MissingCause.DRIVER_WITHOUT_METADATA,
            MissingCause.WRITE_FAILED,
        ],
    )
