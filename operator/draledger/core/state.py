"""The incremental cluster state: upsert or delete one object, learn which nodes it touched.

Rules:
1. An update is remove(the stored old view) + add(the new view), using what was stored, never re-derived
   from the incoming object (kube-scheduler's NodeInfo does the same). A pod that keeps its node and its
   claims leaves the claim indexes as they are.
2. Every mutation returns the set of node names whose ledger may have changed; ``ledger(node)`` recomputes
   one node from the indexes, touching only that node's pods, claims and pools.
3. A ResourceSlice update whose pool generation is older than the one stored for the same slice is
   rejected (``GenerationRegression``) and changes nothing.
4. Only views are kept (typed, frozen records), never raw bodies.
5. What depends only on a node's ResourceSlices (its mapping fingerprint and NUMA zone capacity) is cached
   per node and dropped by every upsert or delete of a slice in a pool the node has slices of; a claim's
   contribution is cached per claim and dropped by a change of the claim or of a pool it has results in.
6. Each node keeps running sums of its counted pods' claim-free footprints (``accounting.sums.NodeSums``),
   updated by every pod add, change and removal: a ledger visits only the pods the sums cannot stand for
   (claims, claim statuses, problems). The sums follow ``release``'s rules; ``set_release`` recounts them and
   drops every derived value (the release is an input of every rule).
7. ``apply(kind, event_type, body)`` is the one entry for raw objects of the four kinds (a watch event, or
   an item of a dump): it reads the body and upserts or deletes the view. Views are the same under every release
   (views, rule 2), so objects may be loaded before the release is known.
8. ``held`` indexes the pods that carry the product's scheduling gate (``views.pods.GATE``), the ones gate
   release looks at.
9. A claim-using pod's charge (``ledger.pod_charge``) is cached per pod, checked against what it was computed
   from (the pod's view, each claim's view, contribution and consumers, the attributes and the release) by
   identity, so a missed drop cannot serve an old charge; the other pods of a node cost only their entry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from draledger.core.accounting.catalog import ClaimKey, PodKey, PoolKey
from draledger.core.accounting.charges import PodCharge, pod_charge
from draledger.core.accounting.contributions import Contribution, contribution
from draledger.core.accounting.ledger import Flags, Ledger, compute, mapping_fingerprint, node_zone_capacity
from draledger.core.accounting.sums import NodeSums
from draledger.core.releases import OLDEST, Release
from draledger.core.resources import Resources
from draledger.core.views import (
    ClaimView,
    DeviceView,
    NodeView,
    PodView,
    Problem,
    SliceView,
    read_claim,
    read_node,
    read_pod,
    read_slice,
)
from draledger.core.views.slices import DeviceMemo

Dirty = set[str]
_NO_PODS = NodeSums()  # a node without counted pods (only ever read)


class GenerationRegression(Exception):
    """A ResourceSlice arrived with an older pool generation than one already seen for it."""

    def __init__(self, message: str, name: str = "") -> None:
        super().__init__(message)
        self.name = name


@dataclass(slots=True)
class _Pool:
    slices: dict[str, SliceView]
    devices: dict[str, DeviceView] | None = None  # newest generation, built lazily
    invalid: str = ""  # why the newest generation is invalid (built with ``devices``)
    newest: int = 0

    def refresh(self) -> None:
        self.newest = max((s.generation for s in self.slices.values()), default=0)
        self.devices = None

    def newest_slices(self) -> list[SliceView]:
        return [s for s in self.slices.values() if s.generation == self.newest]

    def device_index(self) -> dict[str, DeviceView]:
        if self.devices is None:
            # A device name published twice in the newest generation makes the pool invalid, as the allocator
            # calls it (validateDeviceNames): no device of it resolves, whatever order the slices arrived in.
            index: dict[str, DeviceView] = {}
            twice: list[str] = []
            for view in sorted(self.newest_slices(), key=lambda s: s.name):
                for device in view.devices:
                    if device.name in index:
                        twice.append(device.name)
                    index[device.name] = device
            self.invalid = f"duplicate device name {sorted(twice)[0]}" if twice else ""
            self.devices = {} if twice else index
        return self.devices

    def complete(self) -> bool:
        newest = self.newest_slices()
        expected = max((s.slice_count for s in newest), default=0)
        return len(newest) >= expected


class _Charged(NamedTuple):
    pod: PodView
    attributes: tuple[str, ...]
    release: Release
    charge: PodCharge


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
    """Implements ``accounting.ledger.LedgerCatalog`` over incrementally maintained indexes."""

    def __init__(self, release: Release = OLDEST) -> None:
        self.release: Release = release
        self.nodes: dict[str, NodeView] = {}
        self.pods: dict[PodKey, PodView] = {}
        self.claims: dict[ClaimKey, ClaimView] = {}
        self.slices: dict[str, SliceView] = {}
        self.held: set[PodKey] = set()  # pods held by the product's gate (rule 8)
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
        self._charges: dict[PodKey, _Charged] = {}  # claim-using pod -> its charge (rule 9)

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
        held = self.held
        if pod.gate_info is not None:
            held.add(pod_key)
        elif held:
            held.discard(pod_key)
        node = pod.node_name
        old = self.pods.get(pod_key)
        keys = _claim_keys(pod) if pod.claims else None
        if old is not None and old.counted and pod.counted and old.node_name == node and (
            self._pod_claims.get(pod_key) == keys
        ):
            # The common update (a resize, a status change): the pod keeps its node and its claims, so the
            # claim indexes stand; its sums move from the old view's footprint to the new one's.
            self.pods[pod_key] = pod
            self._pods_by_node[node][pod_key] = pod
            sums = self._sums[node]
            sums.remove(old, self.release)
            sums.add(pod, self.release)
            return {node} if keys is None else self._consumer_nodes(keys, {node})
        dirty = self._remove_pod(pod_key)
        self.pods[pod_key] = pod
        if pod.counted:
            self._pods_by_node.setdefault(node, {})[pod_key] = pod
            found = self._sums.get(node)
            if found is None:
                found = self._sums[node] = NodeSums()
            found.add(pod, self.release)
            dirty.add(node)
            if keys:  # most pods have no claim: store nothing for them
                self._pod_claims[pod_key] = keys
                for key in keys:
                    self._consumers.setdefault(key, set()).add(pod_key)
                    self._consumers_sorted.pop(key, None)
                self._consumer_nodes(keys, dirty)
        return dirty

    def delete_pod(self, key: PodKey) -> Dirty:
        self.held.discard(key)
        return self._remove_pod(key)

    def _remove_pod(self, key: PodKey) -> Dirty:
        self._charges.pop(key, None)
        old = self.pods.pop(key, None)
        if old is None or not old.counted:
            return set()
        on_node = self._pods_by_node.get(old.node_name, {})
        on_node.pop(key, None)
        self._sums[old.node_name].remove(old, self.release)
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
                f"is older than the stored {old.generation}; ignored",
                view.name,
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

    # ----- LedgerCatalog (accounting.catalog.Catalog, then the derived values) -----
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

    def pool_invalid(self, pool: PoolKey) -> str:
        found = self._pools.get(pool)
        if found is None:
            return ""
        found.device_index()
        return found.invalid

    def device(self, pool: PoolKey, name: str) -> DeviceView | None:
        found = self._pools.get(pool)
        return found.device_index().get(name) if found is not None else None

    def node_devices(self, node: str) -> Iterable[tuple[PoolKey, DeviceView]]:
        for name in sorted(self._node_slices.get(node, ())):
            view = self.slices[name]
            if view.generation == self._pools[view.pool_key].newest and not self.pool_invalid(view.pool_key):
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

    def node_sums(self, node: str) -> NodeSums:
        return self._sums.get(node) or _NO_PODS

    # ----- derived values, cached (rule 5) -----
    def contribution(self, claim: ClaimView, attributes: tuple[str, ...]) -> Contribution:
        hit = self._contributions.get(claim.key)
        if hit is not None and hit[0] is claim and hit[1] == attributes:
            return hit[2]
        found = contribution(claim, self, attributes, self.release)
        self._contributions[claim.key] = (claim, attributes, found)
        return found

    def pod_charge(self, pod: PodView, attributes: tuple[str, ...]) -> PodCharge:
        hit = self._charges.get(pod.key)
        if hit is not None and hit.pod is pod and hit.attributes == attributes and hit.release == self.release and (
            self._unchanged(hit.charge)
        ):
            return hit.charge
        found = pod_charge(pod, self, attributes)
        self._charges[pod.key] = _Charged(pod, attributes, self.release, found)
        return found

    def _unchanged(self, charge: PodCharge) -> bool:
        """Whether every claim the charge was computed from is as it was (rule 9)."""
        for use in charge.uses:
            key = use.key
            if self.claims.get(key) is not use.claim or self._consumers_sorted.get(key) is not use.consumers:
                return False
            if use.claim is not None:
                cached = self._contributions.get(key)
                if cached is None or cached[2] is not use.contribution:
                    return False
        return True

    def _derived_of(self, node: str) -> _SliceDerived:
        derived = self._derived.get(node)
        if derived is None:
            derived = self._derived[node] = _SliceDerived()
        return derived

    def mapping_fingerprint(self, node: str) -> str:
        derived = self._derived_of(node)
        if derived.fingerprint is None:
            derived.fingerprint = mapping_fingerprint(self, node)
        return derived.fingerprint

    def zone_capacity(self, node: str, attributes: tuple[str, ...]) -> dict[int, Resources]:
        derived = self._derived_of(node)
        if derived.capacity is None or derived.attributes != attributes:
            derived.capacity = node_zone_capacity(self, node, attributes)
            derived.attributes = attributes
        return derived.capacity

    # ----- raw objects and the rules' release -----
    def apply(
        self, kind: str, event_type: str | None, body: Mapping[str, Any], memo: DeviceMemo | None = None
    ) -> Dirty:
        """One raw object of ``kind`` (nodes, pods, resourceclaims, resourceslices) upserted, or deleted for
        ``event_type == "DELETED"`` (by name; the view is not read). ``GenerationRegression`` from slices."""
        if event_type == "DELETED":
            meta = body.get("metadata")
            meta = meta if isinstance(meta, dict) else {}
            name = meta["name"] if isinstance(meta.get("name"), str) else ""
            namespace = meta["namespace"] if isinstance(meta.get("namespace"), str) else ""
            if kind == "pods":
                return self.delete_pod((namespace, name))
            if kind == "resourceclaims":
                return self.delete_claim((namespace, name))
            if kind == "nodes":
                return self.delete_node(name)
            if memo is not None:
                memo.forget(name)
            return self.delete_slice(name)
        if kind == "pods":
            return self.upsert_pod(read_pod(body))
        if kind == "resourceclaims":
            return self.upsert_claim(read_claim(body))
        if kind == "nodes":
            return self.upsert_node(read_node(body))
        return self.upsert_slice(read_slice(body, memo))

    def set_release(self, release: Release) -> Dirty:
        """Follow ``release``'s rules from now on: the running sums are recounted and every derived value dropped
        (every node is dirty)."""
        if release == self.release:
            return set()
        self.release = release
        for node, pods in self._pods_by_node.items():
            sums = self._sums[node] = NodeSums()
            for pod in pods.values():
                sums.add(pod, release)
        self._derived.clear()
        self._contributions.clear()
        self._charges.clear()
        return set(self.nodes)

    def shapes_seen(self) -> bool:
        """Whether any object has the v1.37 shape (a slice with ``nodeAllocatableResources``, a pod status with
        ``mapping``/``overhead``): what a v1.36 server cannot hold (core.releases, rule 3)."""
        return any(s.shape == "v1.37" for s in self.slices.values()) or any(
            s.shape == "v1.37" for pod in self.pods.values() for s in pod.claim_statuses or ()
        )

    # ----- results -----
    def ledger(self, node: str, flags: Flags | None = None) -> Ledger | None:
        view = self.nodes.get(node)
        if view is None:
            return None
        return compute(view, self, flags or Flags())
