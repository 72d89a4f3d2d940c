"""The one container image of the real node: Debian's busybox-static packed as an OCI image layout, made locally.

Rules:
1. No registry is reachable, so the image is made here: one layer holding ``/bin/busybox`` and a link for each of
   its applets (``busybox --list``), plus the empty directories a container needs; a config whose entrypoint is
   ``/bin/sleep infinity``; a manifest; and an ``index.json`` naming it ``IMAGE`` (the annotation
   ``io.containerd.image.name``, which ``ctr images import`` reads).
2. The same image is the sandbox (pause) image and every container's image: ``sleep`` as PID 1 does the pause
   container's job. Pods name it with ``imagePullPolicy: Never``.
3. The layer is built byte for byte the same from the same busybox (sorted entries, fixed times and owners), so
   the digest only moves when Debian's busybox does.
4. Nothing here runs a process but ``busybox --list``.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

IMAGE = "docker.io/local/busybox:1"
BUSYBOX_CANDIDATES = ("/bin/busybox", "/usr/bin/busybox")
DIRECTORIES = ("dev", "etc", "proc", "sys", "tmp", "var", "var/run", "run", "root")
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar"


class ImageError(RuntimeError):
    """busybox-static is missing or is not a static busybox."""


def find_busybox() -> Path:
    """Debian's static busybox (``apt-get install busybox-static``); ImageError when there is none."""
    for candidate in BUSYBOX_CANDIDATES:
        path = Path(candidate)
        if path.is_file():
            return path
    found = shutil.which("busybox")
    if found:
        return Path(found)
    raise ImageError("busybox is not installed (apt-get install busybox-static)")


def _entry(name: str, kind: bytes, mode: int, **extra: str | int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    for key, value in extra.items():
        setattr(info, key, value)
    return info


def layer(busybox: Path) -> bytes:
    """The root filesystem as an uncompressed tar (module rule 3)."""
    applets = subprocess.run([str(busybox), "--list"], capture_output=True, text=True, timeout=30, check=True)
    names = sorted({name for name in applets.stdout.split() if name and "/" not in name and name != "busybox"})
    data = busybox.read_bytes()
    if b"/ld-linux" in data[:4096]:  # an ELF interpreter: a dynamic busybox needs a libc the image lacks
        raise ImageError(f"{busybox} is not a static busybox (apt-get install busybox-static)")
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for directory in ("bin", *DIRECTORIES):
            tar.addfile(_entry(directory, tarfile.DIRTYPE, 0o1777 if directory == "tmp" else 0o755))
        tar.addfile(_entry("bin/busybox", tarfile.REGTYPE, 0o755, size=len(data)), io.BytesIO(data))
        for name in names:
            tar.addfile(_entry(f"bin/{name}", tarfile.SYMTYPE, 0o777, linkname="busybox"))
        passwd = b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
        group = b"root:x:0:\nnogroup:x:65534:\n"
        for name, content in (("etc/passwd", passwd), ("etc/group", group)):
            tar.addfile(_entry(name, tarfile.REGTYPE, 0o644, size=len(content)), io.BytesIO(content))
    return out.getvalue()


def _blob(blobs: dict[str, bytes], data: bytes) -> dict[str, str | int]:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"digest": digest, "size": len(data)}


def oci_archive(path: Path, busybox: Path | None = None) -> Path:
    """Write the image as an OCI layout tar at ``path`` (what ``ctr images import`` takes) and return it."""
    rootfs = layer(busybox or find_busybox())
    blobs: dict[str, bytes] = {}
    layer_ref = {"mediaType": MEDIA_LAYER, **_blob(blobs, rootfs)}
    config = {
        "architecture": "amd64", "os": "linux",
        "config": {"Entrypoint": ["/bin/sleep"], "Cmd": ["infinity"], "Env": ["PATH=/bin"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [layer_ref["digest"]]},  # uncompressed: digest is the diff id
    }
    config_ref = {"mediaType": MEDIA_CONFIG, **_blob(blobs, json.dumps(config, sort_keys=True).encode())}
    manifest = {"schemaVersion": 2, "mediaType": MEDIA_MANIFEST, "config": config_ref, "layers": [layer_ref]}
    manifest_ref = {"mediaType": MEDIA_MANIFEST, **_blob(blobs, json.dumps(manifest, sort_keys=True).encode())}
    index = {"schemaVersion": 2, "manifests": [{**manifest_ref, "annotations": {
        "io.containerd.image.name": IMAGE, "org.opencontainers.image.ref.name": IMAGE.rsplit(":", 1)[1]}}]}
    files = {"oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
             "index.json": json.dumps(index, sort_keys=True).encode(),
             **{f"blobs/sha256/{digest.split(':', 1)[1]}": data for digest, data in sorted(blobs.items())}}
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for directory in ("blobs", "blobs/sha256"):
            tar.addfile(_entry(directory, tarfile.DIRTYPE, 0o755))
        for name, data in files.items():
            tar.addfile(_entry(name, tarfile.REGTYPE, 0o644, size=len(data)), io.BytesIO(data))
    return path
