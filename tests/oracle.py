"""The naive oracle: every ledger recomputed from scratch, over plain lists of views, with linear scans.

It builds each node's ``ledger.NodeInputs`` as literally as the rules read: every kept value computed afresh by its
rule (``accounting.inputs.KEPT``), and shares nothing with ``ClusterState`` (no indexes, no kept values, no pools of
its own kind: its pools are scans). It is deliberately slow and obvious: the incremental engine must agree with it
on every node after any event stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from draledger.core.accounting.charges import pod_charge
from draledger.core.accounting.contributions import contribution
from draledger.core.accounting.fingerprints import mapping_fingerprint
from draledger.core.accounting.ledger import Flags, Ledger, NodeInputs, compute
from draledger.core.accounting.sums import NodeSums
from draledger.core.accounting.uses import ClaimFacts, ClaimUse, claim_facts, claim_keys, claim_uses
from draledger.core.accounting.zones import DEFAULT_NUMA_ATTRIBUTES, zone_capacity
from draledger.core.releases import Release
from draledger.core.views import ClaimView, DeviceView, NodeView, PodView, SliceView

PoolKey = tuple[str, str]


@dataclass
class NaivePool:
    """A pool as the rules read it (``core.pools.Pool``'s fields), every answer a scan of its slices."""

    slices: list[SliceView]

    def _newest(self) -> list[SliceView]:
        newest = max(s.generation for s in self.slices)
        return [s for s in self.slices if s.generation == newest]

    @property
    def invalid(self) -> str:
        names = [dev.name for view in self._newest() for dev in view.devices]
        twice = sorted({name for name in names if names.count(name) > 1})
        return f"duplicate device name {twice[0]}" if twice else ""

    @property
    def devices(self) -> dict[str, DeviceView]:
        if self.invalid:
            return {}
        return {dev.name: dev for view in sorted(self._newest(), key=lambda s: s.name) for dev in view.devices}

    @property
    def complete(self) -> bool:
        newest = self._newest()
        return len(newest) >= max(s.slice_count for s in newest)


@dataclass
class NaiveCatalog:
    nodes: list[NodeView] = field(default_factory=list)
    pods: list[PodView] = field(default_factory=list)
    claims: list[ClaimView] = field(default_factory=list)
    slices: list[SliceView] = field(default_factory=list)
    release: Release = "v1.36"
    attributes: tuple[str, ...] = DEFAULT_NUMA_ATTRIBUTES

    @staticmethod
    def _counted(pod: PodView) -> bool:
        return pod.node_name != "" and pod.phase not in ("Succeeded", "Failed")

    def pools(self) -> dict[PoolKey, NaivePool]:
        keys = {(s.driver, s.pool) for s in self.slices}
        return {key: NaivePool([s for s in self.slices if (s.driver, s.pool) == key]) for key in keys}

    def claim(self, key: tuple[str, str]) -> ClaimView | None:
        for claim in self.claims:
            if (claim.namespace, claim.name) == key:
                return claim
        return None

    def consumers(self, key: tuple[str, str]) -> tuple[tuple[str, str], ...]:
        namespace, name = key
        return tuple(sorted((pod.namespace, pod.name) for pod in self.pods if self._counted(pod)
                            and pod.namespace == namespace and any(c.claim_name == name for c in pod.claims)))

    def facts(self, key: tuple[str, str]) -> ClaimFacts:
        pools = self.pools()
        claim = self.claim(key)
        contrib = contribution(claim, pools, self.attributes, self.release) if claim is not None else None
        return claim_facts(claim, contrib, self.consumers(key), pools)

    def uses(self, pod: PodView) -> tuple[ClaimUse, ...]:
        return claim_uses(pod, {key: self.facts(key) for key in claim_keys(pod)}, self.release)

    def pods_on(self, node: str) -> list[PodView]:
        return sorted((p for p in self.pods if p.node_name == node and self._counted(p)),
                      key=lambda p: (p.namespace, p.name))

    def node_devices(self, node: str) -> list[tuple[PoolKey, DeviceView]]:
        pools = self.pools()
        out = []
        for view in sorted(self.slices, key=lambda s: s.name):
            pool = pools[(view.driver, view.pool)]
            if view.node_name == node and view in pool._newest() and not pool.invalid:
                out.extend(((view.driver, view.pool), dev) for dev in view.devices)
        return out

    def inputs(self, node: str) -> NodeInputs:
        """The node's inputs, every one computed by its rule from nothing."""
        sums = NodeSums()
        for pod in self.pods_on(node):
            sums.add(pod, self.release)
        charges = {pod.key: pod_charge(pod, {key: self.facts(key) for key in claim_keys(pod)}, self.release)
                   for pod in self.pods_on(node) if pod.claims or pod.claim_statuses}
        devices = self.node_devices(node)
        problems = tuple(p for view in sorted(self.slices, key=lambda s: s.name) if view.node_name == node
                         for p in view.problems)
        return NodeInputs(
            release=self.release, sums=sums, charges=charges, slice_problems=problems,
            node_pools=frozenset((s.driver, s.pool) for s in self.slices if s.node_name == node),
            pools=self.pools(),
            zone_capacity=zone_capacity(devices, self.attributes, self.release),
            fingerprint=mapping_fingerprint(devices, self.release),
        )

    def ledger(self, node: NodeView, flags: Flags | None = None) -> Ledger:
        return compute(node, self.inputs(node.name), flags or Flags())


def naive_ledgers(catalog: NaiveCatalog, flags: Flags | None = None) -> dict[str, Ledger]:
    """Every node's ledger, recomputed from nothing."""
    return {node.name: catalog.ledger(node, flags) for node in catalog.nodes}
