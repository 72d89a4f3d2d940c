"""The naive oracle: every ledger recomputed from scratch, over plain lists of views, with linear scans.

It implements the ``accounting.ledger.LedgerCatalog`` protocol as literally as the protocol's docstrings read,
and shares nothing with ``ClusterState`` (no indexes, no caches, no dirty sets). It is deliberately slow
and obvious: the incremental engine must agree with it on every node after any event stream.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from draledger.core.accounting.catalog import ClaimKey, PodKey, PoolKey
from draledger.core.accounting.charges import PodCharge, pod_charge
from draledger.core.accounting.contributions import Contribution, contribution
from draledger.core.accounting.ledger import Flags, Ledger, compute, mapping_fingerprint, node_zone_capacity
from draledger.core.accounting.sums import NodeSums
from draledger.core.releases import Release
from draledger.core.resources import Resources
from draledger.core.views import ClaimView, DeviceView, NodeView, PodView, Problem, SliceView


@dataclass
class NaiveCatalog:
    nodes: list[NodeView] = field(default_factory=list)
    pods: list[PodView] = field(default_factory=list)
    claims: list[ClaimView] = field(default_factory=list)
    slices: list[SliceView] = field(default_factory=list)
    release: Release = "v1.36"

    # --- helpers, written for clarity ---
    def _pool_slices(self, pool: PoolKey) -> list[SliceView]:
        return [s for s in self.slices if (s.driver, s.pool) == pool]

    def _newest_generation(self, pool: PoolKey) -> int:
        return max(s.generation for s in self._pool_slices(pool))

    def _is_newest(self, view: SliceView) -> bool:
        return view.generation == self._newest_generation((view.driver, view.pool))

    @staticmethod
    def _counted(pod: PodView) -> bool:
        return pod.node_name != "" and pod.phase not in ("Succeeded", "Failed")

    # --- the Catalog protocol ---
    def claim(self, key: ClaimKey) -> ClaimView | None:
        for claim in self.claims:
            if (claim.namespace, claim.name) == key:
                return claim
        return None

    def consumers(self, key: ClaimKey) -> Sequence[PodKey]:
        namespace, name = key
        found = []
        for pod in self.pods:
            if self._counted(pod) and pod.namespace == namespace and any(c.claim_name == name for c in pod.claims):
                found.append((pod.namespace, pod.name))
        return sorted(found)

    def pool_exists(self, pool: PoolKey) -> bool:
        return len(self._pool_slices(pool)) > 0

    def pool_complete(self, pool: PoolKey) -> bool:
        if not self.pool_exists(pool):
            return False
        newest = [s for s in self._pool_slices(pool) if self._is_newest(s)]
        return len(newest) >= max(s.slice_count for s in newest)

    def pool_invalid(self, pool: PoolKey) -> str:
        names = [dev.name for view in self._pool_slices(pool) if self._is_newest(view) for dev in view.devices]
        twice = sorted({name for name in names if names.count(name) > 1})
        return f"duplicate device name {twice[0]}" if twice else ""

    def device(self, pool: PoolKey, name: str) -> DeviceView | None:
        if self.pool_invalid(pool):
            return None
        for view in self._pool_slices(pool):
            if self._is_newest(view):
                for dev in view.devices:
                    if dev.name == name:
                        return dev
        return None

    def node_devices(self, node: str) -> Iterable[tuple[PoolKey, DeviceView]]:
        out = []
        for view in sorted(self.slices, key=lambda s: s.name):
            if view.node_name == node and self._is_newest(view) and not self.pool_invalid((view.driver, view.pool)):
                out.extend(((view.driver, view.pool), dev) for dev in view.devices)
        return out

    def node_pools(self, node: str) -> Iterable[PoolKey]:
        return {(s.driver, s.pool) for s in self.slices if s.node_name == node}

    def slice_problems(self, node: str) -> Iterable[Problem]:
        out: list[Problem] = []
        for view in sorted(self.slices, key=lambda s: s.name):
            if view.node_name == node:
                out.extend(view.problems)
        return out

    def pods_on(self, node: str) -> Sequence[PodView]:
        on_node = [p for p in self.pods if p.node_name == node and self._counted(p)]
        return sorted(on_node, key=lambda p: (p.namespace, p.name))

    # --- the derived values: computed afresh every time, with nothing kept ---
    def node_sums(self, node: str) -> NodeSums:
        sums = NodeSums()
        for pod in self.pods_on(node):
            sums.add(pod, self.release)
        return sums

    def contribution(self, claim: ClaimView, attributes: tuple[str, ...]) -> Contribution:
        return contribution(claim, self, attributes, self.release)

    def mapping_fingerprint(self, node: str) -> str:
        return mapping_fingerprint(self, node)

    def zone_capacity(self, node: str, attributes: tuple[str, ...]) -> dict[int, Resources]:
        return node_zone_capacity(self, node, attributes)

    def pod_charge(self, pod: PodView, attributes: tuple[str, ...]) -> PodCharge:
        return pod_charge(pod, self, attributes)


def naive_ledgers(catalog: NaiveCatalog, flags: Flags | None = None) -> dict[str, Ledger]:
    """Every node's ledger, recomputed from nothing."""
    return {node.name: compute(node, catalog, flags or Flags()) for node in catalog.nodes}
