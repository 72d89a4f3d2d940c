"""The Python side of the test driver's ``--metadata=python`` mode: draledger.devicemetadata's MetadataWriter at work.

``python tests/realnode/pywriter.py --release v1.37`` reads ONE JSON request on stdin and answers on stdout:
- ``{"op": "write", "claim": CLAIM}``: at prepare, ``MetadataWriter.write`` per request; the answer maps each base
  request name to the CDI device ID the driver adds to the request's first device (as the Go helper does);
- ``{"op": "update", "claim": CLAIM}``: ``MetadataWriter.update`` of the claim's one request (generation + 1);
- ``{"op": "remove", "claim": CLAIM}``: at unprepare, ``MetadataWriter.remove``;
- ``{"op": "rebuild", "claims": [CLAIM, ...]}``: at the driver's start, ``MetadataWriter.rebuild`` of what it has
  prepared.
Every request also carries ``driver``, ``pluginDir`` and ``cdiDir``. CLAIM is ``{namespace, name, uid,
podClaimName?, requests: [{name, devices: [{request, pool, device, attributes}]}]}`` with attributes in the
resource.k8s.io JSON (``{"int": 0}``). The writer matches the release's Go helper (``--release`` picks
``releases.V0_36``, ``V0_37`` or ``V0_38``). Errors go to stderr with exit code 1: the driver fails the prepare.

Rules: the driver calls this once per operation, under the helper's serialization; nothing here knows the kubelet
or the API server, which is the library's promise (no Kubernetes client).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from draledger.devicemetadata import (
    ClaimInfo,
    DeviceAttribute,
    MetadataWriter,
    PreparedClaim,
    PreparedDevice,
    PreparedRequest,
)
from draledger.devicemetadata.model import ATTRIBUTE_KINDS
from draledger.devicemetadata.releases import RELEASES, UpstreamRelease


def upstream(release: str) -> UpstreamRelease:
    """The helper release a Kubernetes minor (``v1.37``) ships with."""
    for candidate in RELEASES:
        if candidate.kubernetes == release.removeprefix("v"):
            return candidate
    raise ValueError(f"--release {release}: no device-metadata release for it")


def attribute(raw: dict[str, Any]) -> DeviceAttribute:
    if len(raw) != 1:
        raise ValueError(f"an attribute has exactly one value: {raw}")
    ((kind, value),) = raw.items()
    if kind not in ATTRIBUTE_KINDS:
        raise ValueError(f"unknown attribute type {kind!r}")
    return DeviceAttribute(kind, tuple(value) if isinstance(value, list) else value)


def claim_of(raw: dict[str, Any]) -> ClaimInfo:
    return ClaimInfo(raw["namespace"], raw["name"], raw["uid"], raw.get("podClaimName") or None)


def requests_of(raw: dict[str, Any]) -> list[PreparedRequest]:
    out = []
    for request in raw.get("requests") or []:
        devices = tuple(PreparedDevice(device["pool"], device["device"], {
            name: attribute(value) for name, value in (device.get("attributes") or {}).items()})
            for device in request.get("devices") or [])
        out.append(PreparedRequest(request["name"], devices))
    return out


def serve(request: dict[str, Any], release: UpstreamRelease) -> dict[str, str]:
    writer = MetadataWriter(request["driver"], plugin_data_dir=request["pluginDir"], cdi_dir=request["cdiDir"],
                            release=release)
    op = request["op"]
    if op == "rebuild":
        writer.rebuild(PreparedClaim(claim_of(raw), tuple(requests_of(raw))) for raw in request["claims"])
        return {}
    claim = claim_of(request["claim"])
    if op == "write":
        answer = {}
        for prepared in requests_of(request["claim"]):
            result = writer.write(claim, prepared)
            if result is not None:
                answer[prepared.name.split("/", 1)[0]] = result.cdi_device_id
        return answer
    if op == "update":
        (prepared,) = requests_of(request["claim"])
        writer.update(claim, prepared)
        return {}
    if op == "remove":
        writer.remove(claim)
        return {}
    raise ValueError(f"unknown op {op!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--release", required=True, help="the Kubernetes minor, e.g. v1.37")
    args = parser.parse_args(argv)
    try:
        answer = serve(json.load(sys.stdin), upstream(args.release))
    except (ValueError, KeyError, OSError) as error:
        print(f"pywriter: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    json.dump(answer, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
