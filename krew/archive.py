"""Build krew's archive of the kubectl plugin: ``python krew/archive.py [OUT]`` writes ``kubectl-draledger.zip``.

The archive holds the launcher ``kubectl-draledger`` and the LICENSE. It is built byte for byte the same
everywhere (stored, not compressed: no zlib version can change it; fixed dates and modes), so the sha256 in
``draledger.yaml`` is the archive's wherever it is built, and a test rebuilds it to check.
"""

from __future__ import annotations

import hashlib
import io
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MEMBERS = ((HERE / "kubectl-draledger", 0o755), (HERE.parent / "LICENSE", 0o644))
NAME = "kubectl-draledger.zip"


def archive() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as zipped:
        for path, mode in MEMBERS:
            info = zipfile.ZipInfo(path.name, date_time=(1980, 1, 1, 0, 0, 0))
            info.create_system = 3  # unix, so that the mode below is read
            info.external_attr = (0o100000 | mode) << 16
            zipped.writestr(info, path.read_bytes())
    return buffer.getvalue()


def sha256() -> str:
    return hashlib.sha256(archive()).hexdigest()


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(NAME)
    out.write_bytes(archive())
    print(f"{out} sha256 {sha256()}")
