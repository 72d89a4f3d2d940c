"""DRA device metadata (KEP-5304) for Python: read it in containers, write it from DRA drivers.

Rules: standard library only; readers never hand out partial or invalid data and tell a missing
file apart from a bad one; writers produce, atomically, byte for byte what the kubeletplugin helper
of k8s.io/dynamic-resource-allocation writes (v0.37.2 by default, v0.36.3 on request: releases.py),
and the interop tests prove both directions against that Go code. This package must never import a
Kubernetes client or talk to the API server.
"""

from draledger.devicemetadata.errors import (
    MetadataError,
    MetadataInvalidError,
    MetadataMissingError,
    MetadataNotReadyError,
    MissingCause,
    UnsupportedVersionError,
)
from draledger.devicemetadata.fallback import ResolvedAttributes, resolve_attributes, wait_for_metadata
from draledger.devicemetadata.model import (
    DEFAULT_MAX_BYTES,
    DEFAULT_ROOT,
    KNOWN_VERSIONS,
    PCI_BUS_ID,
    V1ALPHA1,
    V1BETA1,
    ClaimMetadata,
    ClaimRef,
    Device,
    DeviceAttribute,
    DeviceMetadata,
    MetadataSource,
    NetworkData,
    RequestMetadata,
)
from draledger.devicemetadata.policy import AttributePolicy
from draledger.devicemetadata.reading import (
    ClaimSelector,
    read_metadata,
    read_metadata_file,
    read_resource_claim_metadata,
    read_resource_claim_template_metadata,
)
from draledger.devicemetadata.releases import UpstreamRelease
from draledger.devicemetadata.writing import (
    ClaimInfo,
    MetadataWriter,
    PreparedClaim,
    PreparedDevice,
    PreparedRequest,
    RebuildResult,
    WriteResult,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_ROOT",
    "KNOWN_VERSIONS",
    "PCI_BUS_ID",
    "V1ALPHA1",
    "V1BETA1",
    "AttributePolicy",
    "ClaimInfo",
    "ClaimMetadata",
    "ClaimRef",
    "ClaimSelector",
    "Device",
    "DeviceAttribute",
    "DeviceMetadata",
    "MetadataError",
    "MetadataInvalidError",
    "MetadataMissingError",
    "MetadataNotReadyError",
    "MetadataSource",
    "MetadataWriter",
    "MissingCause",
    "NetworkData",
    "PreparedClaim",
    "PreparedDevice",
    "PreparedRequest",
    "RebuildResult",
    "RequestMetadata",
    "ResolvedAttributes",
    "UnsupportedVersionError",
    "UpstreamRelease",
    "WriteResult",
    "read_metadata",
    "read_metadata_file",
    "read_resource_claim_metadata",
    "read_resource_claim_template_metadata",
    "resolve_attributes",
    "wait_for_metadata",
]
