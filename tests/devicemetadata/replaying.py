"""Our side of the interop tests: replay go/scenario.json with MetadataWriter, snapshot like the Go program.

Rules: the same inputs and steps as go/shared/vectors.go. A prepare step writes every request the
listed devices belong to (grouped by full request name, as the helper's processPreparedClaim does)
and answers with the CDI IDs the helper injects (its own IDs, plus the metadata ID on the first
device of each base request); an update step calls `update` with a ClaimInfo that has no
podClaimName (upstream's UpdateRequestMetadata takes none); an unprepare step calls `remove`.
Snapshots and decoded objects have exactly the shapes the Go program prints.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from draledger.devicemetadata import (
    ClaimInfo,
    DeviceAttribute,
    DeviceMetadata,
    MetadataError,
    MetadataWriter,
    NetworkData,
    PreparedDevice,
    PreparedRequest,
    WriteResult,
)
from draledger.devicemetadata.codec import encode_object
from draledger.devicemetadata.model import AttributeKind, base_request
from draledger.devicemetadata.releases import UpstreamRelease
from tests.devicemetadata.upstream import SCENARIO

Snapshot = dict[str, dict[str, str | None]]  # relative path -> {"mode": "0644", "data": text or None}


def load_scenario() -> dict[str, Any]:
    scenario: dict[str, Any] = json.loads(SCENARIO.read_text(encoding="utf-8"))
    return scenario


def claim_info(raw: Mapping[str, Any], *, pod_claim_name: bool = True) -> ClaimInfo:
    return ClaimInfo(
        raw["namespace"], raw["name"], raw["uid"], raw.get("podClaimName") if pod_claim_name else None
    )


def attribute(raw: Mapping[str, Any]) -> DeviceAttribute:
    """`{"ints": [0, 1]}` (resource.k8s.io/v1 JSON) as a typed attribute."""
    ((kind, value),) = raw.items()
    return DeviceAttribute(cast(AttributeKind, kind), tuple(value) if isinstance(value, list) else value)


def prepared_device(raw: Mapping[str, Any]) -> PreparedDevice:
    metadata = raw.get("metadata") or {}
    net = metadata.get("networkData")
    network = (
        None
        if net is None
        else NetworkData(net.get("interfaceName", ""), tuple(net.get("ips", ())), net.get("hardwareAddress", ""))
    )
    attributes = {name: attribute(value) for name, value in (metadata.get("attributes") or {}).items()}
    return PreparedDevice(raw["pool"], raw["device"], attributes, network)


@dataclass(frozen=True, slots=True)
class StepOutcome:
    error: str | None
    response: list[dict[str, Any]] | None


class Replay:
    """One node: a writer per driver under root/plugins/<driver>, CDI specs in root/cdi."""

    def __init__(self, root: Path, release: UpstreamRelease, scenario: Mapping[str, Any]) -> None:
        self.root = root
        self.release = release
        self.claims: Mapping[str, Any] = scenario["claims"]
        self.writers: dict[str, MetadataWriter] = {}

    def writer(self, driver: str) -> MetadataWriter:
        if driver not in self.writers:
            self.writers[driver] = MetadataWriter(
                driver,
                plugin_data_dir=self.root / "plugins" / driver,
                cdi_dir=self.root / "cdi",
                release=self.release,
            )
        return self.writers[driver]

    def run(self, step: Mapping[str, Any]) -> StepOutcome:
        writer = self.writer(step["driver"])
        raw_claim = self.claims[step["claim"]]
        if step["op"] == "prepare":
            return StepOutcome(None, self._prepare(writer, claim_info(raw_claim), step["devices"]))
        if step["op"] == "update":
            request = PreparedRequest(step["request"], tuple(prepared_device(d) for d in step["devices"]))
            try:
                self._check(writer.update(claim_info(raw_claim, pod_claim_name=False), request))
            except MetadataError as exc:
                return StepOutcome(str(exc), None)
            return StepOutcome(None, None)
        if step["op"] == "unprepare":
            writer.remove(claim_info(raw_claim))
            return StepOutcome(None, None)
        raise ValueError(f"unknown op {step['op']!r}")

    def _prepare(self, writer: MetadataWriter, claim: ClaimInfo, devices: list[Any]) -> list[dict[str, Any]]:
        by_request: dict[str, list[PreparedDevice]] = {}
        for raw in devices:
            for name in raw["requests"]:
                by_request.setdefault(name, []).append(prepared_device(raw))
        written: dict[str, WriteResult] = {}
        for name, prepared in by_request.items():
            result = writer.write(claim, PreparedRequest(name, tuple(prepared)))
            if result is not None:
                written[base_request(name)] = self._check(result)
        response, injected = [], set()
        for raw in devices:
            names = [base_request(name) for name in raw["requests"]]
            ids = list(raw.get("cdiDeviceIDs", []))
            for name in names:
                if name in written and name not in injected:
                    ids.append(written[name].cdi_device_id)
                    injected.add(name)
            response.append(
                {"requestNames": names, "poolName": raw["pool"], "deviceName": raw["device"], "cdiDeviceIDs": ids}
            )
        return response

    @staticmethod
    def _check(result: WriteResult) -> WriteResult:
        if result.dropped:  # the shared inputs must reach the file unchanged
            raise AssertionError(f"the attribute policy dropped {result.dropped}")
        return result


def snapshot(root: Path) -> Snapshot:
    """Every file and directory under root with its mode and text, as the Go program records them."""
    out: Snapshot = {}
    for directory, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(directory) / name
            rel = str(path.relative_to(root))
            mode = f"{path.stat().st_mode & 0o777:04o}"
            out[rel] = {"mode": mode, "data": None if path.is_dir() else path.read_text(encoding="utf-8")}
    return out


def canonical(md: DeviceMetadata) -> dict[str, Any]:
    """The object as the Go program prints a decoded file: versioned JSON without kind and apiVersion."""
    obj = encode_object(md, md.api_version)
    del obj["kind"], obj["apiVersion"]
    return obj


def mount_all(node: Path, container_root: Path) -> list[str]:
    """Do what the runtime does with the CDI specs: bind each hostPath at its containerPath (a symlink
    here) under container_root. Returns the container paths, sorted."""
    mounted = []
    for spec_path in sorted((node / "cdi").glob("*.json")):
        spec = json.loads(spec_path.read_text(encoding="utf-8"))
        for device in spec["devices"]:
            for m in device["containerEdits"]["mounts"]:
                target = container_root / m["containerPath"].lstrip("/")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.symlink_to(m["hostPath"])
                mounted.append(m["containerPath"])
    return sorted(mounted)


@dataclass(frozen=True, slots=True)
class PythonVectors:
    """Our writer's replay of the scenario: per step its outcome, its snapshot, and what the Go
    decoder made of each metadata file of that step (path relative to the node)."""

    node: Path
    outcomes: list[StepOutcome]
    snapshots: list[Snapshot]
    decoded_by_go: list[dict[str, dict[str, Any]]]
