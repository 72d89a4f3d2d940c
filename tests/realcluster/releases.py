"""The Kubernetes releases the real-cluster suite runs against, and where their binaries live.

Rules:
1. A release is named by its minor (``v1.36``), pinned to one patch release in its Go module
   (``e2e/controlplane/<minor>/go.mod``) and written down here again; ``test_realcluster_pins.py`` checks that the
   two agree, so changing a pin means changing both.
2. Binaries live outside the tree, in ``$DRALEDGER_KUBE_CACHE`` or ``$XDG_CACHE_HOME/dra-ledger/kube`` or
   ``~/.cache/dra-ledger/kube``, under ``<patch release>/bin``.
3. The two API shapes of KEP-5517 differ only in field names; ``device_mapping`` and ``claim_status`` are the one
   place that knows them, so tests stay version-agnostic.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MODULES = ROOT / "e2e" / "controlplane"
COMPONENTS = ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager")
VERSIONS_ENV = "DRALEDGER_REALCLUSTER_VERSIONS"


def cache_root() -> Path:
    """Where built binaries are kept between runs."""
    explicit = os.environ.get("DRALEDGER_KUBE_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dra-ledger" / "kube"


@dataclass(frozen=True, slots=True)
class Release:
    """One pinned Kubernetes release and its API shape for node-allocatable mappings."""

    name: str  # the minor, as users select it: "v1.36"
    kubernetes: str  # k8s.io/kubernetes version in the module's go.mod
    etcd: str  # go.etcd.io/etcd/server/v3 version the release requires

    @property
    def module(self) -> Path:
        return MODULES / self.name

    @property
    def home(self) -> Path:
        return cache_root() / self.kubernetes

    @property
    def bin(self) -> Path:
        return self.home / "bin"

    def binary(self, component: str) -> Path:
        return self.bin / component

    @property
    def declared_features(self) -> list[str]:
        """What this release's kubelet, with DRANodeAllocatableResources on, puts in node.status.declaredFeatures.

        From v1.37 the NodeDeclaredFeatureValidator admission plugin refuses a ResourceSlice with node-allocatable
        mappings for a node that does not declare DRANodeAllocatableResources; v1.36 has no such feature name.
        """
        return [] if self.name == "v1.36" else ["DRANodeAllocatableResources"]

    @property
    def shape(self) -> str:
        """``mappings`` (v1.36: nodeAllocatableResourceMappings) or ``resources`` (v1.37: nodeAllocatableResources)."""
        return "mappings" if self.name == "v1.36" else "resources"

    def device_mapping(self, resource: str, multiplier: str, capacity_key: str | None = None) -> dict[str, Any]:
        """The fields a Device of a ResourceSlice carries to map its allocation onto node allocatable ``resource``.

        Without ``capacity_key``, each allocated device counts ``multiplier``; with it, the consumed capacity
        is multiplied by ``multiplier``.
        """
        if self.shape == "mappings":
            entry: dict[str, Any] = {"allocationMultiplier": multiplier}
            if capacity_key is not None:
                entry["capacityKey"] = capacity_key
            return {"nodeAllocatableResourceMappings": {resource: entry}}
        mapping = ({"deviceMultiplier": multiplier} if capacity_key is None
                   else {"capacityKey": capacity_key, "capacityMultiplier": multiplier})
        return {"nodeAllocatableResources": {resource: {"mapping": mapping}}}

    def claim_status(self, claim: str, containers: list[str], resources: dict[str, str]) -> dict[str, Any]:
        """One entry of pod.status.nodeAllocatableResourceClaimStatuses as the scheduler writes it (mapped only)."""
        if self.shape == "mappings":
            return {"resourceClaimName": claim, "containers": containers, "resources": resources}
        return {"resourceClaimName": claim, "containers": containers,
                "mapping": [{"name": name, "quantity": value} for name, value in sorted(resources.items())]}


RELEASES = {
    "v1.36": Release("v1.36", "v1.36.3", "v3.6.8"),
    "v1.37": Release("v1.37", "v1.37.2", "v3.7.0"),
}


def selected() -> list[Release]:
    """The releases ``DRALEDGER_REALCLUSTER_VERSIONS`` names (comma-separated minors; default: all)."""
    raw = os.environ.get(VERSIONS_ENV, "").strip()
    if not raw or raw == "all":
        return list(RELEASES.values())
    names = [part.strip() for part in raw.split(",") if part.strip()]
    unknown = [name for name in names if name not in RELEASES]
    if unknown:
        raise ValueError(f"{VERSIONS_ENV}: unknown release(s) {', '.join(unknown)}; known: {', '.join(RELEASES)}")
    return [RELEASES[name] for name in names]
