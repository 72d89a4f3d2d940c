"""The incremental cluster state: upsert or delete one object, learn which nodes it touched.

Rules:
1. An update is remove(the stored old view) + add(the new view), using what was stored, never re-derived
   from the incoming object (kube-scheduler's NodeInfo does the same). A counted pod that stays counted on
   its node, with the same claims, takes a shorter path to the same indexes: its sums move by the
   difference, its claim indexes stand.
2. Every mutation returns the set of node names whose ledger may have changed; ``ledger(node)`` recomputes
   one node from the indexes, touching only that node's pods, claims and pools.
3. A ResourceSlice update whose pool generation is older than the one stored for the same slice is
   rejected (``GenerationRegression``) and changes nothing.
4. Only views are kept (typed, frozen records), never raw bodies.
5. What depends only on a node's ResourceSlices (its mapping fingerprint and NUMA zone capacity) is cached
   per node and dropped by every upsert or delete of a slice in a pool the node has slices of; a claim's
   contribution is cached per claim and dropped by a change of the claim or of a pool it has results in.
6. Each node keeps running sums of its counted pods' claim-free footprints (``accounting.sums.NodeSums``),
   updated by every pod add, change and removal: a ledger pass visits only the pods the sums cannot stand
   for (claims, claim statuses, problems), and gives what a pass over every pod gives, formats included.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from draledger.accounting.catalog import ClaimKey, PodKey, PoolKey
from draledger.accounting.contributions import Contribution, contribution
from draledger.accounting.footprints import Resources
from draledger.accounting.ledger import Flags, Ledger, compute, mapping_fingerprint, node_zone_capacity
from draledger.accounting.sums import NodeSums
from draledger.views import ClaimView, DeviceView, NodeView, PodView, Problem, SliceView

Dirty = set[str]
_NO_PODS = NodeSums()  # a node without counted pods (only ever read)


class GenerationRegression(Exception):
    """A ResourceSlice arrived with an older pool generation than one already seen for it."""


@dataclass(slots=True)
class _Pool:
    slices: dict[str, SliceView]
    devices: dict[str, DeviceView] | None = None  # newest generation, built lazily
    newest: int = 0

    def refresh(self) -> None:
        self.newest = max((s.generation for s in self.slices.values()), default=0)
        self.devices = None

    def newest_slices(self) -> list[SliceView]:
        return [s for s in self.slices.values() if s.generation == self.newest]

    def device_index(self) -> dict[str, DeviceView]:
        if self.devices is None:
            # A device name published twice in the newest generation (a driver bug) resolves to its first
            # occurrence by slice name, so the ledger never depends on the order the slices arrived in.
            index: dict[str, DeviceView] = {}
            for view in sorted(self.newest_slices(), key=lambda s: s.name):
                for device in view.devices:
                    index.setdefault(device.name, device)
            self.devices = index
        return self.devices

    def complete(self) -> bool:
        newest = self.newest_slices()
        expected = max((s.slice_count for s in newest), default=0)
        return len(newest) >= expected


@dataclass(slots=True)
class _SliceDerived:
    """Per-node values that depend only on the node's ResourceSlices (dropped whenever those change)."""

    fingerprint: str | None = None
    attributes: tuple[str, ...] | None = None  # the NUMA attributes ``capacity`` was computed with
    capacity: dict[int, Resources] | None = None  # never mutated once stored


def _claim_keys(pod: PodView) -> frozenset[ClaimKey]:
    """The ResourceClaims a pod consumes, by (namespace, name): the template claims not yet generated aside."""
    return frozenset((pod.namespace, c.claim_name) for c in pod.claims if c.claim_name)


class ClusterState:
    """Implements ``accounting.catalog.Catalog`` over incrementally maintained indexes."""

    def __init__(self) -> None:
        self.nodes: dict[str, NodeView] = {}
        self.pods: dict[PodKey, PodView] = {}
        self.claims: dict[ClaimKey, ClaimView] = {}
        self.slices: dict[str, SliceView] = {}
        self._pods_by_node: dict[str, dict[PodKey, PodView]] = {}
        self._sums: dict[str, NodeSums] = {}  # node -> its counted pods' running sums (same keys as above)
        self._pod_claims: dict[PodKey, frozenset[ClaimKey]] = {}
        self._consumers: dict[ClaimKey, set[PodKey]] = {}
        self._claim_pools: dict[ClaimKey, frozenset[PoolKey]] = {}
        self._pool_claims: dict[PoolKey, set[ClaimKey]] = {}
        self._pools: dict[PoolKey, _Pool] = {}
        self._node_slices: dict[str, set[str]] = {}
        self._consumers_sorted: dict[ClaimKey, tuple[PodKey, ...]] = {}
        self._derived: dict[str, _SliceDerived] = {}  # node -> mapping fingerprint and zone capacity
        # claim -> (its view, the NUMA attributes, its contribution): dropped when the claim changes or a
        # slice of a pool it has results in does (the view is checked too, so a missed drop cannot serve
        # an old claim's figures).
        self._contributions: dict[ClaimKey, tuple[ClaimView, tuple[str, ...], Contribution]] = {}

    # ----- nodes -----
    def upsert_node(self, node: NodeView) -> Dirty:
        self.nodes[node.name] = node
        return {node.name}

    def delete_node(self, name: str) -> Dirty:
        self.nodes.pop(name, None)
        self._derived.pop(name, None)
        return {name}

    # ----- pods -----
    def upsert_pod(self, pod: PodView) -> Dirty:
        pod_key = pod.key  # one tuple, shared by every index
        node = pod.node_name
        old = self.pods.get(pod_key)
        if old is not None and old.node_name == node and pod.counted and old.counted:
            # The common update: a counted pod stays on its node (a resize, a status change), with the
            # claims it had. The same as delete + add below, without the claim bookkeeping: the claim
            # indexes (consumers, their sorted tuples) stand; re-inserted so the indexes keep the new view's
            # key tuple and ``pods`` keeps the order delete + add gives it.
            keys = self._pod_claims.get(pod_key)
            if (keys == _claim_keys(pod)) if pod.claims else keys is None:
                del self.pods[pod_key]
                self.pods[pod_key] = pod
                on_node = self._pods_by_node[node]
                del on_node[pod_key]
                on_node[pod_key] = pod
                self._sums[node].replace(old, pod)
                return {node} if keys is None else self._consumer_nodes(keys, {node})
        dirty = self.delete_pod(pod_key)
        self.pods[pod_key] = pod
        if pod.counted:
            self._pods_by_node.setdefault(node, {})[pod_key] = pod
            sums = self._sums.get(node)
            if sums is None:
                sums = self._sums[node] = NodeSums()
            sums.add(pod)
            dirty.add(node)
            if pod.claims:
                keys = _claim_keys(pod)
                if keys:  # most pods have no claim: store nothing for them
                    self._pod_claims[pod_key] = keys
                    for key in keys:
                        self._consumers.setdefault(key, set()).add(pod_key)
                        self._consumers_sorted.pop(key, None)
                    self._consumer_nodes(keys, dirty)
        return dirty

    def delete_pod(self, key: PodKey) -> Dirty:
        old = self.pods.pop(key, None)
        if old is None or not old.counted:
            return set()
        on_node = self._pods_by_node.get(old.node_name, {})
        on_node.pop(key, None)
        self._sums[old.node_name].remove(old)
        if not on_node:
            self._pods_by_node.pop(old.node_name, None)
            del self._sums[old.node_name]
        dirty = {old.node_name}
        keys = self._pod_claims.pop(key, None)
        if keys:
            for claim in keys:
                users = self._consumers.get(claim)
                if users is not None:
                    users.discard(key)
                    if not users:
                        del self._consumers[claim]
                self._consumers_sorted.pop(claim, None)
            self._consumer_nodes(keys, dirty)
        return dirty

    # ----- claims -----
    def upsert_claim(self, claim: ClaimView) -> Dirty:
        self._contributions.pop(claim.key, None)
        self._forget_claim_pools(claim.key)
        self.claims[claim.key] = claim
        pools = frozenset(r.pool_key for r in claim.results)
        self._claim_pools[claim.key] = pools
        for pool in pools:
            self._pool_claims.setdefault(pool, set()).add(claim.key)
        return self._consumer_nodes({claim.key})

    def delete_claim(self, key: ClaimKey) -> Dirty:
        self._contributions.pop(key, None)
        self._forget_claim_pools(key)
        self.claims.pop(key, None)
        return self._consumer_nodes({key})

    def _forget_claim_pools(self, key: ClaimKey) -> None:
        for pool in self._claim_pools.pop(key, frozenset()):
            claims = self._pool_claims.get(pool)
            if claims is not None:
                claims.discard(key)
                if not claims:
                    del self._pool_claims[pool]

    # ----- slices -----
    def upsert_slice(self, view: SliceView) -> Dirty:
        old = self.slices.get(view.name)
        if old is not None and old.pool_key == view.pool_key and view.generation < old.generation:
            raise GenerationRegression(
                f"ResourceSlice {view.name}: pool {view.driver}/{view.pool} generation {view.generation} "
                f"is older than the stored {old.generation}; ignored"
            )
        dirty = self.delete_slice(view.name)
        self.slices[view.name] = view
        pool = self._pools.setdefault(view.pool_key, _Pool({}))
        pool.slices[view.name] = view
        pool.refresh()
        if view.node_name:
            self._node_slices.setdefault(view.node_name, set()).add(view.name)
        # after: the node's slice set and the pool's newest generation changed
        self._forget_derived(view.pool_key, pool)
        return dirty | self._pool_nodes(view.pool_key)

    def delete_slice(self, name: str) -> Dirty:
        old = self.slices.pop(name, None)
        if old is None:
            return set()
        pool = self._pools[old.pool_key]
        dirty = self._pool_nodes(old.pool_key)  # before: the nodes that saw it
        # before: every node with a slice of the pool, the deleted one's too
        self._forget_derived(old.pool_key, pool)
        del pool.slices[name]
        if pool.slices:
            pool.refresh()
        else:
            del self._pools[old.pool_key]
        if old.node_name:
            names = self._node_slices.get(old.node_name, set())
            names.discard(name)
            if not names:
                self._node_slices.pop(old.node_name, None)
        return dirty

    def _forget_derived(self, pool_key: PoolKey, pool: _Pool) -> None:
        """Drop the cached fingerprint and zone capacity of every node with a slice in the pool, and the
        cached contributions of every claim with a result in it.

        A node's devices are its slices of each pool's newest generation, so a slice change reaches the
        nodes of every slice in the same pool (its newest generation may move), not only its own node.
        """
        for other in pool.slices.values():
            if other.node_name:
                self._derived.pop(other.node_name, None)
        for claim in self._pool_claims.get(pool_key, ()):
            self._contributions.pop(claim, None)

    # ----- which nodes a change reaches -----
    def _consumer_nodes(self, claims: Iterable[ClaimKey], into: Dirty | None = None) -> Dirty:
        """The nodes of the pods that consume ``claims``, added to ``into`` (a new set by default)."""
        nodes: Dirty = set() if into is None else into
        consumers, pods = self._consumers, self.pods
        for claim in claims:
            users = consumers.get(claim)
            if users:
                for pod in users:
                    nodes.add(pods[pod].node_name)
        return nodes

    def pool_nodes(self, pool_key: PoolKey) -> Dirty:
        """The nodes whose ledgers a change of the pool reaches: those with a slice of it, and the nodes of
        the pods whose claims have results in it."""
        return self._pool_nodes(pool_key)

    def _pool_nodes(self, pool_key: PoolKey) -> Dirty:
        pool = self._pools.get(pool_key)
        nodes = {s.node_name for s in pool.slices.values() if s.node_name} if pool else set()
        return nodes | self._consumer_nodes(self._pool_claims.get(pool_key, ()))

    # ----- Catalog -----
    def claim(self, key: ClaimKey) -> ClaimView | None:
        return self.claims.get(key)

    def consumers(self, key: ClaimKey) -> Sequence[PodKey]:
        cached = self._consumers_sorted.get(key)
        if cached is None:
            cached = self._consumers_sorted[key] = tuple(sorted(self._consumers.get(key, ())))
        return cached

    def pool_exists(self, pool: PoolKey) -> bool:
        return pool in self._pools

    def pool_complete(self, pool: PoolKey) -> bool:
        found = self._pools.get(pool)
        return found is not None and found.complete()

    def device(self, pool: PoolKey, name: str) -> DeviceView | None:
        found = self._pools.get(pool)
        return found.device_index().get(name) if found is not None else None

    def node_devices(self, node: str) -> Iterable[tuple[PoolKey, DeviceView]]:
        for name in sorted(self._node_slices.get(node, ())):
            view = self.slices[name]
            if view.generation == self._pools[view.pool_key].newest:
                for device in view.devices:
                    yield view.pool_key, device

    def node_pools(self, node: str) -> Iterable[PoolKey]:
        return {self.slices[name].pool_key for name in self._node_slices.get(node, ())}

    def slice_problems(self, node: str) -> Iterable[Problem]:
        for name in sorted(self._node_slices.get(node, ())):
            yield from self.slices[name].problems

    def pods_on(self, node: str) -> Sequence[PodView]:
        pods = self._pods_by_node.get(node)
        return [pods[k] for k in sorted(pods)] if pods else []

    # ----- results -----
    def ledger(self, node: str, flags: Flags | None = None) -> Ledger | None:
        view = self.nodes.get(node)
        if view is None:
            return None
        flags = flags or Flags()
        derived = self._derived.get(node)
        if derived is None:
            derived = self._derived[node] = _SliceDerived()
        if derived.fingerprint is None:
            derived.fingerprint = mapping_fingerprint(self, node)
        if derived.capacity is None or derived.attributes != flags.numa_attributes:
            derived.capacity = node_zone_capacity(self, node, flags.numa_attributes)
            derived.attributes = flags.numa_attributes
        attributes = flags.numa_attributes
        cache = self._contributions

        def contribution_of(claim: ClaimView) -> Contribution:
            hit = cache.get(claim.key)
            if hit is not None and hit[0] is claim and hit[1] == attributes:
                return hit[2]
            found = contribution(claim, self, attributes)
            cache[claim.key] = (claim, attributes, found)
            return found

        return compute(
            view,
            self,
            flags,
            fingerprint=derived.fingerprint,
            capacity=derived.capacity,
            contribution_of=contribution_of,
            sums=self._sums.get(node) or _NO_PODS,
        )
