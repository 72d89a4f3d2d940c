"""What each release of the Go kubelet-plugin helper writes, so that our writer can match either one.

Rules: one frozen record per `k8s.io/dynamic-resource-allocation` release that the interop tests
(tests/devicemetadata/go) run against; each fact here was read from that release's code and is
checked against files its helper really wrote. The newest final release is the default. A record says
which metadata versions the release knows and writes, how it treats versions it does not know,
and how it fills in the CDI spec. This module must never do I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from draledger.devicemetadata.model import V1ALPHA1, V1BETA1


@dataclass(frozen=True, slots=True)
class UpstreamRelease:
    """One release of the Go helper (`kubeletplugin`) and decoder (`devicemetadata`)."""

    module_version: str  # of k8s.io/dynamic-resource-allocation
    kubernetes: str
    known_versions: tuple[str, ...]  # registered in the release's metadata scheme, newest first
    default_versions: tuple[str, ...]  # what our writer encodes unless told otherwise
    required_version: str | None  # Start refuses a version list without it
    refuses_unknown_versions: bool  # Start fails on a version it does not know (else: silently skipped)
    minimal_cdi_version: bool  # cdiVersion is the CDI library's minimum for the spec (else always 0.5.0)
    spec_container_edits: bool  # the spec carries an empty top-level "containerEdits": {}

    @property
    def name(self) -> str:
        return f"k8s.io/dynamic-resource-allocation@{self.module_version}"

    def select_versions(self, versions: Sequence[str] | None) -> tuple[str, ...]:
        """The versions a helper of this release encodes, in order, or ValueError as its Start fails."""
        wanted = self.default_versions if versions is None else tuple(versions)
        if self.refuses_unknown_versions:
            if not wanted:
                raise ValueError("metadata versions must be selected explicitly, none chosen")
            for version in wanted:
                if version not in self.known_versions:
                    raise ValueError(f"metadata version {version!r} is not supported by {self.name}")
            if self.required_version is not None and self.required_version not in wanted:
                raise ValueError(
                    f"the latest metadata version is {self.required_version} and must be enabled explicitly"
                )
            return wanted
        known = tuple(v for v in wanted if v in self.known_versions)
        if not known:
            raise ValueError(f"none of the requested metadata versions {list(wanted)} is supported by {self.name}")
        return known

    def cdi_version(self, device_name: str) -> str:
        """The spec's cdiVersion: v0.37 asks specs-go for the minimum, which is 0.5.0 only because
        CDI device names may start with a digit from 0.5.0 on (and a claim UID often does)."""
        if not self.minimal_cdi_version:
            return "0.5.0"
        return "0.5.0" if device_name[:1].isdigit() else "0.3.0"


V0_36 = UpstreamRelease(
    module_version="v0.36.3",
    kubernetes="1.36",
    known_versions=(V1ALPHA1,),
    default_versions=(V1ALPHA1,),
    required_version=None,
    refuses_unknown_versions=False,
    minimal_cdi_version=False,
    spec_container_edits=False,
)
V0_37 = UpstreamRelease(
    module_version="v0.37.2",
    kubernetes="1.37",
    known_versions=(V1BETA1, V1ALPHA1),
    default_versions=(V1BETA1, V1ALPHA1),  # newest first: v0.36 readers skip v1beta1 and use v1alpha1
    required_version=V1BETA1,
    refuses_unknown_versions=True,
    minimal_cdi_version=True,
    spec_container_edits=True,
)
# v0.38.0-beta.0: kubeletplugin/metadata.go, devicemetadata/ and api/metadata/ are v0.37.2's, byte for byte
V0_38 = UpstreamRelease(
    module_version="v0.38.0-beta.0",
    kubernetes="1.38",
    known_versions=(V1BETA1, V1ALPHA1),
    default_versions=(V1BETA1, V1ALPHA1),
    required_version=V1BETA1,
    refuses_unknown_versions=True,
    minimal_cdi_version=True,
    spec_container_edits=True,
)
RELEASES: tuple[UpstreamRelease, ...] = (V0_36, V0_37, V0_38)
LATEST = V0_37  # the newest final release: v0.38 is a pre-release (and writes the same)
