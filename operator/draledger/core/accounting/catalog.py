"""What the accounting of one node may ask about the rest of the cluster: lookups over the views.

Both the incremental ``ClusterState`` and the tests' naive oracle implement this protocol, so the rules are
written once. The derived values a catalog may keep besides (a claim's contribution, a pod's charge, a node's
sums, zones and mapping fingerprint) are ``ledger.LedgerCatalog``'s: they are the rules' own results, and this
module stays below every rule that asks it something.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from draledger.core.releases import Release
from draledger.core.views import ClaimView, DeviceView, PodView, Problem

PodKey = tuple[str, str]
ClaimKey = tuple[str, str]
PoolKey = tuple[str, str]


class Catalog(Protocol):
    release: Release  # whose rules apply (core.releases)

    def claim(self, key: ClaimKey) -> ClaimView | None:
        """The ResourceClaim, if it exists."""

    def consumers(self, key: ClaimKey) -> Sequence[PodKey]:
        """Counted pods (on any node) that consume the claim, sorted by namespace/name."""

    def pool_exists(self, pool: PoolKey) -> bool:
        """Whether any ResourceSlice of the pool exists."""

    def pool_complete(self, pool: PoolKey) -> bool:
        """Whether the newest generation of the pool has all of its ``resourceSliceCount`` slices."""

    def pool_invalid(self, pool: PoolKey) -> str:
        """Why the pool's newest generation is invalid ("" when it is not): a device name published twice."""

    def device(self, pool: PoolKey, name: str) -> DeviceView | None:
        """The device among the slices of the pool's newest generation (None in an invalid pool)."""

    def node_devices(self, node: str) -> Iterable[tuple[PoolKey, DeviceView]]:
        """Devices of the newest generation of slices published for the node (``spec.nodeName``)."""

    def node_pools(self, node: str) -> Iterable[PoolKey]:
        """Pools with at least one slice published for the node."""

    def slice_problems(self, node: str) -> Iterable[Problem]:
        """Problems of the ResourceSlices published for the node."""

    def pods_on(self, node: str) -> Sequence[PodView]:
        """Counted pods bound to the node, sorted by namespace/name."""
