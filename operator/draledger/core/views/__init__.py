"""Typed, frozen, slotted records read from raw API bodies (Nodes, Pods, ResourceSlices, ResourceClaims).

Rules:
1. A view keeps only the fields the ledger needs: never the raw body (a Pod dict costs ~30 KiB).
2. Both DRA shapes are read: v1.36 (``nodeAllocatableResourceMappings``, pod status ``resources``) and
   v1.37 (``nodeAllocatableResources`` mapping/overhead, pod status ``mapping``/``overhead``; v1.38 writes the
   same), for ``resource.k8s.io`` v1, v1beta2 and v1beta1 (device fields under ``basic``). A view is the same
   whatever the release: what a release refuses is recorded, and that release's rules leave it out.
3. Unknown fields are ignored. A malformed field becomes a named Problem on the view (kind, namespace/name,
   field, value) and reads as absent; it never raises, so one bad object never stops a ledger.
"""

from draledger.core.views.claims import AllocationResult, ClaimView, read_claim
from draledger.core.views.mappings import Mapping
from draledger.core.views.nodes import NodeView, read_node
from draledger.core.views.pods import ClaimStatus, PodClaim, PodView, read_pod
from draledger.core.views.problems import ObjectRef, Problem
from draledger.core.views.slices import DeviceView, SliceView, read_slice

__all__ = [
    "AllocationResult",
    "ClaimStatus",
    "ClaimView",
    "DeviceView",
    "Mapping",
    "NodeView",
    "ObjectRef",
    "PodClaim",
    "PodView",
    "Problem",
    "SliceView",
    "read_claim",
    "read_node",
    "read_pod",
    "read_slice",
]
