"""What the real-cluster and real-node suites run: Kubernetes releases and pinned tools, and where their binaries live.

Rules:
1. A release is named by its minor (``v1.36``), pinned to one patch release in its Go module
   (``e2e/controlplane/<minor>/go.mod``) and written down here again; a tool is pinned in its own Go module
   (``e2e/tools/<name>/<version>/go.mod``). ``test_realcluster_pins.py`` checks that each module and its record
   here agree, so changing a pin means changing both.
2. Binaries live outside the tree: a release's in ``$DRALEDGER_KUBE_CACHE`` (else ``<cache>/dra-ledger/kube``)
   under ``<patch release>/bin``, a tool's in ``$DRALEDGER_TOOLS_CACHE`` (else ``<cache>/dra-ledger/tools``) under
   ``<name>-<version>/bin``, where ``<cache>`` is ``$XDG_CACHE_HOME`` or ``~/.cache``.
3. The two API shapes of KEP-5517 differ only in field names; ``device_mapping`` and ``claim_status`` are the one
   place that knows them, so tests stay version-agnostic. v1.38 has v1.37's shape (its rules differ, its JSON
   does not).
4. Nothing here builds or runs anything: ``building`` does, from these records.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MODULES = ROOT / "e2e" / "controlplane"
TOOL_MODULES = ROOT / "e2e" / "tools"
COMPONENTS = ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager", "kubelet")
VERSIONS_ENV = "DRALEDGER_REALCLUSTER_VERSIONS"


def user_cache() -> Path:
    """``$XDG_CACHE_HOME/dra-ledger`` or ``~/.cache/dra-ledger``: the default home of every cache below."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dra-ledger"


def cache_root() -> Path:
    """Where built release binaries are kept between runs."""
    explicit = os.environ.get("DRALEDGER_KUBE_CACHE")
    return Path(explicit) if explicit else user_cache() / "kube"


def tools_root() -> Path:
    """Where built tools are kept between runs."""
    explicit = os.environ.get("DRALEDGER_TOOLS_CACHE")
    return Path(explicit) if explicit else user_cache() / "tools"


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
        mappings for a node that does not declare DRANodeAllocatableResources (v1.38 unchanged:
        plugin/pkg/admission/nodedeclaredfeatures/admission.go:216-300); v1.36 has no such feature name.
        """
        return [] if self.name == "v1.36" else ["DRANodeAllocatableResources"]

    @property
    def shape(self) -> str:
        """``mappings`` (v1.36: nodeAllocatableResourceMappings) or ``resources`` (v1.37 and v1.38:
        nodeAllocatableResources; v1.38's JSON is v1.37's, field for field)."""
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
    "v1.38": Release("v1.38", "v1.38.0-beta.0", "v3.7.3"),  # v1.38.0 is not on the module proxy yet
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


@dataclass(frozen=True, slots=True)
class Tool:
    """One pinned version of a tool built from the Go module proxy: its module, the commands, the version stamps.

    ``stamps`` are the ``-X`` settings of the tool's own release build (its Makefile or goreleaser file), so that
    ``<tool> version`` names the pin; ``on_request`` tools are built only when asked for by name (never by
    ``--tool all``).
    """

    name: str  # as callers ask for it: "helm"
    version: str  # the module version pinned in go.mod: "v4.3.2"
    module_path: str  # the Go module that version belongs to
    packages: tuple[str, ...]  # the main packages built, the tool's own command first
    stamps: tuple[tuple[str, str], ...] = ()  # (-X variable, value)
    tags: tuple[str, ...] = ()  # build tags, as the tool's release build sets them
    env: tuple[tuple[str, str], ...] = ()  # pinned environment of the build, e.g. CGO_ENABLED
    needs: tuple[tuple[str, str], ...] = ()  # (file that must exist, how to get it), checked before building
    on_request: bool = False

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"

    @property
    def module(self) -> Path:
        return TOOL_MODULES / self.name / self.version

    @property
    def home(self) -> Path:
        return tools_root() / f"{self.name}-{self.version}"

    @property
    def bin(self) -> Path:
        return self.home / "bin"

    @property
    def outputs(self) -> tuple[str, ...]:
        """The binaries ``go build -o bin/`` writes: each package's last element, a /vN suffix dropped."""
        names = []
        for package in self.packages:
            parts = package.split("/")
            major = parts[-1][1:] if parts[-1].startswith("v") else ""
            names.append(parts[-2] if len(parts) > 1 and major.isdigit() else parts[-1])
        return tuple(names)

    def binary(self, name: str = "") -> Path:
        """The path of one of the tool's binaries (its own command by default)."""
        return self.bin / (name or self.outputs[0])


def _kustomize(version: str) -> Tool:
    return Tool("kustomize", version, "sigs.k8s.io/kustomize/kustomize/v5", ("sigs.k8s.io/kustomize/kustomize/v5",),
                stamps=(("sigs.k8s.io/kustomize/api/provenance.version", version),), env=(("CGO_ENABLED", "0"),))


CONTAINERD = "github.com/containerd/containerd/v2"
# Each tool's versions, oldest first; the last one is what ``tool(name)`` gives without a version.
TOOLS: dict[str, tuple[Tool, ...]] = {
    "containerd": (Tool(
        "containerd", "v2.4.2", CONTAINERD,
        (f"{CONTAINERD}/cmd/containerd", f"{CONTAINERD}/cmd/containerd-shim-runc-v2", f"{CONTAINERD}/cmd/ctr"),
        stamps=((f"{CONTAINERD}/version.Version", "v2.4.2"), (f"{CONTAINERD}/version.Package", CONTAINERD)),
        tags=("urfave_cli_no_docs",)),),
    "helm": (Tool(
        "helm", "v4.3.2", "helm.sh/helm/v4", ("helm.sh/helm/v4/cmd/helm",),
        stamps=(("helm.sh/helm/v4/internal/version.version", "v4.3.2"),
                ("helm.sh/helm/v4/internal/version.gitTreeState", "clean")),
        env=(("CGO_ENABLED", "0"),)),),
    # v5.0.1: the oldest v5 the proxy serves (v5.0.0 is not); v5.5.0: what kubectl 1.32 embeds; v5.8.2: the newest
    # that builds (v5.8.3 requires a k8s.io/kube-openapi whose module zip the proxy refuses, 403)
    "kustomize": (_kustomize("v5.0.1"), _kustomize("v5.5.0"), _kustomize("v5.8.2")),
    # runc with seccomp (the kubelet's RuntimeDefault profile needs it) links libseccomp: a hook for the real-node
    # suite, which may use Debian's runc instead; built only when asked for.
    "runc": (Tool(
        "runc", "v1.5.3", "github.com/opencontainers/runc", ("github.com/opencontainers/runc",),
        tags=("seccomp", "urfave_cli_no_docs"), env=(("CGO_ENABLED", "1"),),  # not libpathrs: a Rust library
        needs=(("/usr/include/seccomp.h", "apt-get install libseccomp-dev"),), on_request=True),),
}


def find_tool(name: str, version: str | None = None) -> Tool:
    """The pinned tool ``name`` at ``version`` (the newest pinned one by default); ValueError names what exists."""
    versions = TOOLS.get(name)
    if versions is None:
        raise ValueError(f"unknown tool {name!r}; known: {', '.join(TOOLS)}")
    if version is None:
        return versions[-1]
    for tool in versions:
        if tool.version == version:
            return tool
    raise ValueError(f"{name} {version} is not pinned; pinned: {', '.join(tool.version for tool in versions)}")
