"""What the accounting of one node may ask about the rest of the cluster.

Both the incremental ``ClusterState`` and the tests' naive oracle implement this protocol, so the rules in
``ledger.py`` are written once; the last five methods are the derived values a catalog may keep.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from draledger.core.views import ClaimView, DeviceView, PodView, Problem

if TYPE_CHECKING:
    from draledger.core.accounting.contributions import Contribution
    from draledger.core.accounting.footprints import Resources
    from draledger.core.accounting.ledger import PodCharge
    from draledger.core.accounting.sums import NodeSums

PodKey = tuple[str, str]
ClaimKey = tuple[str, str]
PoolKey = tuple[str, str]


class Catalog(Protocol):
    api: str  # "v1.36" | "v1.37": whose rules the footprints follow (accounting.footprints, rule 5)

    def claim(self, key: ClaimKey) -> ClaimView | None:
        """The ResourceClaim, if it exists."""

    def consumers(self, key: ClaimKey) -> Sequence[PodKey]:
        """Counted pods (on any node) that consume the claim, sorted by namespace/name."""

    def pool_exists(self, pool: PoolKey) -> bool:
        """Whether any ResourceSlice of the pool exists."""

    def pool_complete(self, pool: PoolKey) -> bool:
        """Whether the newest generation of the pool has all of its ``resourceSliceCount`` slices."""

    def device(self, pool: PoolKey, name: str) -> DeviceView | None:
        """The device among the slices of the pool's newest generation."""

    def node_devices(self, node: str) -> Iterable[tuple[PoolKey, DeviceView]]:
        """Devices of the newest generation of slices published for the node (``spec.nodeName``)."""

    def node_pools(self, node: str) -> Iterable[PoolKey]:
        """Pools with at least one slice published for the node."""

    def slice_problems(self, node: str) -> Iterable[Problem]:
        """Problems of the ResourceSlices published for the node."""

    def pods_on(self, node: str) -> Sequence[PodView]:
        """Counted pods bound to the node, sorted by namespace/name."""

    def node_sums(self, node: str) -> NodeSums:
        """The running sums of the node's counted pods (accounting.sums)."""

    def contribution(self, claim: ClaimView, attributes: tuple[str, ...]) -> Contribution:
        """``contributions.contribution(claim, self, attributes)`` (a catalog may cache it)."""

    def mapping_fingerprint(self, node: str) -> str:
        """``ledger.mapping_fingerprint(self, node)`` (a catalog may cache it)."""

    def zone_capacity(self, node: str, attributes: tuple[str, ...]) -> dict[int, Resources]:
        """``ledger.node_zone_capacity(self, node, attributes)`` (a catalog may cache it; only to be read)."""

    def pod_charge(self, pod: PodView, attributes: tuple[str, ...]) -> PodCharge:
        """``ledger.pod_charge(pod, self, attributes)`` (a catalog may cache it)."""
