"""Write device metadata exactly as the Go kubeletplugin helper does, for Python DRA drivers and tests.

Rules: the bytes, names and modes are those of one upstream release's helper (releases.py; the
newest by default): host file `{pluginDataDir}/dra-device-metadata/{namespace}_{claim}/{baseRequest}/metadata.json`
plus CDI spec `{cdiDir}/{driver}_metadata_{claimUID}_{baseRequest}.json` mounting it read-only at
the container path. Prepare writes generation 1; `update` rewrites only the file, with the old
generation + 1 and the old podClaimName, as `Helper.UpdateRequestMetadata` does. Each write is
atomic (see atomic.py), size-limited, and bound to the claim's namespace, name and UID (a file of
another UID is never updated or removed). Only attributes the AttributePolicy allows are written.
This module must never trust an old file's content beyond its generation and podClaimName, and
`rebuild` rewrites everything from the caller's current claims.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from draledger.devicemetadata import atomic, model
from draledger.devicemetadata.codec import decode_stream, encode_stream, go_json
from draledger.devicemetadata.errors import MetadataError, MetadataInvalidError, MetadataMissingError
from draledger.devicemetadata.model import (
    ClaimRef,
    Device,
    DeviceAttribute,
    DeviceMetadata,
    NetworkData,
    RequestMetadata,
    base_request,
    check_path_segment,
)
from draledger.devicemetadata.policy import AttributePolicy
from draledger.devicemetadata.reading import read_metadata_file
from draledger.devicemetadata.releases import LATEST, UpstreamRelease

HOST_SUBDIR = "dra-device-metadata"
HOST_FILE = "metadata.json"
DEFAULT_CDI_DIR = Path("/var/run/cdi")
DEFAULT_PLUGINS_DIR = Path("/var/lib/kubelet/plugins")
DEFAULT_CONTAINER_ROOT = PurePosixPath(str(model.DEFAULT_ROOT))


@dataclass(frozen=True, slots=True)
class ClaimInfo:
    """The claim being prepared; `pod_claim_name` is set for template claims (from the
    `resource.kubernetes.io/pod-claim-name` annotation) and selects the template layout."""

    namespace: str
    name: str
    uid: str
    pod_claim_name: str | None = None

    def __post_init__(self) -> None:
        for what, value in (
            ("namespace", self.namespace),
            ("claim name", self.name),
            ("claim UID", self.uid),
        ):
            check_path_segment(what, value)
        if "_" in self.uid:  # the CDI file name uses '_' as its separator
            raise ValueError(f"invalid claim UID {self.uid!r}")
        if self.pod_claim_name is not None:
            check_path_segment("pod claim name", self.pod_claim_name)

    @property
    def ref(self) -> ClaimRef:
        return ClaimRef(self.namespace, self.name, self.uid)


@dataclass(frozen=True, slots=True)
class PreparedDevice:
    """A device as the driver prepared it: its published attributes and optional network data."""

    pool: str
    name: str
    attributes: Mapping[str, DeviceAttribute] = field(default_factory=dict, hash=False)
    network_data: NetworkData | None = None


@dataclass(frozen=True, slots=True)
class PreparedRequest:
    """`name` is the request (`gpu`) or the allocated subrequest (`gpu/large`)."""

    name: str
    devices: tuple[PreparedDevice, ...]

    def __post_init__(self) -> None:
        check_path_segment("request name", base_request(self.name))


@dataclass(frozen=True, slots=True)
class PreparedClaim:
    """Input to `rebuild`: a claim that is currently prepared, with its requests."""

    claim: ClaimInfo
    requests: tuple[PreparedRequest, ...]


@dataclass(frozen=True, slots=True)
class WriteResult:
    host_path: Path
    cdi_spec_path: Path
    cdi_device_id: str
    container_path: PurePosixPath
    generation: int
    dropped: tuple[str, ...] = ()  # "<pool>/<device>: <attribute>" the policy kept out


@dataclass(frozen=True, slots=True)
class RebuildResult:
    written: tuple[WriteResult, ...]
    removed: tuple[Path, ...]


class MetadataWriter:
    """One driver's metadata files. Thread-safe: read-modify-write steps hold one lock.

    `release` picks the upstream helper to match (default: the newest); `versions` defaults to
    that release's and is checked as its `Start` checks it.
    """

    def __init__(
        self,
        driver: str,
        *,
        plugin_data_dir: Path | str | None = None,
        cdi_dir: Path | str = DEFAULT_CDI_DIR,
        release: UpstreamRelease = LATEST,
        versions: Sequence[str] | None = None,
        policy: AttributePolicy | None = None,
        max_bytes: int = model.DEFAULT_MAX_BYTES,
        container_root: PurePosixPath | str = DEFAULT_CONTAINER_ROOT,
    ) -> None:
        self.driver = check_path_segment("driver name", driver)
        self.release = release
        self.versions = release.select_versions(versions)
        data_dir = Path(plugin_data_dir) if plugin_data_dir is not None else DEFAULT_PLUGINS_DIR / driver
        self.metadata_dir = data_dir / HOST_SUBDIR
        self.cdi_dir = Path(cdi_dir)
        self.policy = policy or AttributePolicy()
        self.max_bytes = max_bytes
        self.container_root = PurePosixPath(container_root)
        self._lock = threading.RLock()

    # --- layout ---------------------------------------------------------------------------------

    def claim_dir(self, claim: ClaimInfo) -> Path:
        return self.metadata_dir / f"{claim.namespace}_{claim.name}"

    def host_path(self, claim: ClaimInfo, request: str) -> Path:
        return self.claim_dir(claim) / base_request(request) / HOST_FILE

    def cdi_device_name(self, claim: ClaimInfo, request: str) -> str:
        return f"{claim.uid}_{base_request(request)}"

    def cdi_spec_path(self, claim: ClaimInfo, request: str) -> Path:
        return self.cdi_dir / f"{self.driver}_metadata_{self.cdi_device_name(claim, request)}.json"

    def container_path(self, claim: ClaimInfo, request: str) -> PurePosixPath:
        if claim.pod_claim_name:
            where = self.container_root / model.TEMPLATES_SUBDIR / claim.pod_claim_name
        else:
            where = self.container_root / model.CLAIMS_SUBDIR / claim.name
        return where / base_request(request) / f"{self.driver}{model.FILE_SUFFIX}"

    def cdi_spec(self, claim: ClaimInfo, request: str) -> dict[str, object]:
        """The CDI spec that bind-mounts the request's file read-only into the container."""
        name = self.cdi_device_name(claim, request)
        mount = {
            "hostPath": str(self.host_path(claim, request)),
            "containerPath": str(self.container_path(claim, request)),
            "options": ["ro", "bind"],
        }
        spec: dict[str, object] = {
            "cdiVersion": self.release.cdi_version(name),
            "kind": f"{self.driver}/metadata",
            "devices": [{"name": name, "containerEdits": {"mounts": [mount]}}],
        }
        if self.release.spec_container_edits:
            spec["containerEdits"] = {}
        return spec

    # --- operations -----------------------------------------------------------------------------

    def write(self, claim: ClaimInfo, request: PreparedRequest, *, generation: int = 1) -> WriteResult | None:
        """Prepare: write the file (generation 1) and its CDI spec. No devices: no file, returns None."""
        if not request.devices:
            return None
        with self._lock:
            return self._write(claim, request, generation)

    def update(self, claim: ClaimInfo, request: PreparedRequest) -> WriteResult:
        """Deferred metadata: rewrite a prepared request's file with new devices and generation + 1.

        Like upstream, the podClaimName comes from the old file and the CDI spec is left alone.
        """
        with self._lock:
            path = self.host_path(claim, request.name)
            try:
                old = read_metadata_file(path, max_bytes=self.max_bytes, known=self.release.known_versions)
            except MetadataMissingError:
                raise MetadataMissingError(
                    path,
                    f'request "{request.name}" not found in prepared claim {claim.namespace}/{claim.name}',
                    [],
                ) from None
            if old.claim != claim.ref:
                raise MetadataInvalidError(
                    path, f"belongs to claim uid {old.claim.uid}, not {claim.uid}: refusing to update it"
                )
            claim = ClaimInfo(claim.namespace, claim.name, claim.uid, old.pod_claim_name)
            return self._write(claim, request, old.generation + 1, spec=False)

    def remove(self, claim: ClaimInfo) -> list[Path]:
        """Unprepare: delete the claim's files and CDI specs (only those of this UID). Idempotent."""
        with self._lock:
            removed = self._remove_claim_dir(claim)
            for spec in sorted(self.cdi_dir.glob(f"{self.driver}_metadata_{claim.uid}_*.json")):
                if atomic.remove_file(spec):
                    removed.append(spec)
            return removed

    def rebuild(self, prepared: Iterable[PreparedClaim]) -> RebuildResult:
        """After a restart: rewrite every prepared claim from the given state, delete the rest.

        Generations stay monotonic (old + 1 when a valid file of the same UID exists, else 1),
        except that a request still without attributes or network data starts over at 1, so that
        readers keep waiting for its deferred update.
        """
        with self._lock:
            claims = list(prepared)
            wanted_dirs = {self.claim_dir(c.claim): c for c in claims}
            wanted_specs = {
                self.cdi_spec_path(c.claim, r.name) for c in claims for r in c.requests if r.devices
            }
            removed: list[Path] = []
            if self.metadata_dir.is_dir():
                for claim_dir in sorted(self.metadata_dir.iterdir()):
                    current = wanted_dirs.get(claim_dir)
                    if current is None:
                        _rmtree(claim_dir)
                        removed.append(claim_dir)
                        continue
                    keep = {base_request(r.name) for r in current.requests if r.devices}
                    for request_dir in sorted(p for p in claim_dir.iterdir() if p.name not in keep):
                        _rmtree(request_dir)
                        removed.append(request_dir)
            for spec in sorted(self.cdi_dir.glob(f"{self.driver}_metadata_*.json")):
                if spec not in wanted_specs and atomic.remove_file(spec):
                    removed.append(spec)
            written = []
            for c in claims:
                for r in c.requests:
                    if r.devices:
                        written.append(self._write(c.claim, r, self._rebuild_generation(c.claim, r)))
            return RebuildResult(tuple(written), tuple(removed))

    # --- internals ------------------------------------------------------------------------------

    def _write(
        self, claim: ClaimInfo, request: PreparedRequest, generation: int, *, spec: bool = True
    ) -> WriteResult:
        devices: list[Device] = []
        dropped: list[str] = []
        for d in request.devices:
            kept, out = self.policy.filter(d.attributes)
            dropped.extend(f"{d.pool}/{d.name}: {name}" for name in out)
            devices.append(Device(self.driver, d.pool, d.name, kept, d.network_data))
        metadata = DeviceMetadata(
            claim=claim.ref,
            generation=generation,
            requests=(RequestMetadata(request.name, tuple(devices)),),
            pod_claim_name=claim.pod_claim_name,
        )
        data = encode_stream(metadata, self.versions)
        host_path = self.host_path(claim, request.name)
        if len(data) > self.max_bytes:
            raise MetadataInvalidError(
                host_path, f"would be {len(data)} bytes, over the {self.max_bytes}-byte limit"
            )
        # The file first, then the spec that mounts it: a spec must never point at nothing.
        atomic.write_atomic(host_path, data)
        spec_path = self.cdi_spec_path(claim, request.name)
        if spec:
            atomic.write_atomic(spec_path, go_json(self.cdi_spec(claim, request.name)).encode())
        return WriteResult(
            host_path=host_path,
            cdi_spec_path=spec_path,
            cdi_device_id=f"{self.driver}/metadata={self.cdi_device_name(claim, request.name)}",
            container_path=self.container_path(claim, request.name),
            generation=generation,
            dropped=tuple(dropped),
        )

    def _rebuild_generation(self, claim: ClaimInfo, request: PreparedRequest) -> int:
        if not any(d.attributes or d.network_data for d in request.devices):
            return 1
        try:
            old = read_metadata_file(
                self.host_path(claim, request.name), max_bytes=self.max_bytes, known=self.release.known_versions
            )
        except MetadataError:
            return 1
        return old.generation + 1 if old.claim == claim.ref else 1

    def _remove_claim_dir(self, claim: ClaimInfo) -> list[Path]:
        claim_dir = self.claim_dir(claim)
        removed: list[Path] = []
        if not claim_dir.is_dir():
            return removed
        for request_dir in sorted(claim_dir.iterdir()):
            if _owner_uid(request_dir / HOST_FILE) in (claim.uid, None):
                _rmtree(request_dir)
                removed.append(request_dir)
        if _rmdir(claim_dir):
            removed.append(claim_dir)
        return removed


def _owner_uid(path: Path) -> str | None:
    """The claim UID a host file is bound to; None when there is no readable file to say so."""
    try:
        return decode_stream(path.read_bytes(), path).claim.uid
    except (OSError, MetadataError):
        return None


def _rmtree(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):  # already gone: removal is idempotent
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def _rmdir(path: Path) -> bool:
    """Remove a directory only if it is empty (another UID's files stay)."""
    try:
        path.rmdir()
    except OSError:  # missing, or not empty because another UID's request stays
        return False
    return True
