"""The objects the ledgers are computed from, and the indexes between them: what is where, and who uses what.

Rules:
1. Only views are kept (typed, frozen records), never raw bodies.
2. An update is remove(the stored old view) + add(the new view), using what was stored, never re-derived from the
   incoming object (kube-scheduler's NodeInfo does the same). A pod that keeps its node and its claims keeps its
   place in every index (``moves``).
3. Every change returns the nodes whose ledgers it may change: a pod's node and the nodes of the pods that consume
   its claims; a claim's consumers' nodes; a slice's pool's nodes (each node with a slice of the pool, and the
   nodes of the pods whose claims have results in it), before and after the change.
4. A node's devices are its slices of each pool's newest generation, none from an invalid pool (core.pools).
5. ``held`` indexes the pods that carry the product's scheduling gate (``views.pods.GATE``): the gate's releaser
   looks at those only.
6. No rule is computed here: what is computed from these objects is kept beside them (core.kept).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from draledger.core.keys import ClaimKey, NodeName, PodKey, PoolKey
from draledger.core.pools import Pool
from draledger.core.views import ClaimView, DeviceView, NodeView, PodView, Problem, SliceView

Dirty = set[NodeName]


def claim_set(pod: PodView) -> frozenset[ClaimKey] | None:
    """The ResourceClaims a pod consumes, by (namespace, name), the template claims not yet generated aside; None
    for a pod without claims (most pods: nothing is stored for them)."""
    if not pod.claims:
        return None
    return frozenset(ClaimKey((pod.namespace, c.claim_name)) for c in pod.claims if c.claim_name)


class Objects:
    """The views of the four kinds, and the indexes rules 2 to 5 keep."""

    def __init__(self) -> None:
        self.nodes: dict[NodeName, NodeView] = {}
        self.pods: dict[PodKey, PodView] = {}
        self.claims: dict[ClaimKey, ClaimView] = {}
        self.slices: dict[str, SliceView] = {}
        self.pools: dict[PoolKey, Pool] = {}
        self.held: set[PodKey] = set()  # rule 5
        self.pods_by_node: dict[NodeName, dict[PodKey, PodView]] = {}  # counted pods only
        self._pod_claims: dict[PodKey, frozenset[ClaimKey]] = {}  # counted pods with claims only
        self._consumers: dict[ClaimKey, set[PodKey]] = {}
        self._consumers_sorted: dict[ClaimKey, tuple[PodKey, ...]] = {}
        self._claim_pools: dict[ClaimKey, frozenset[PoolKey]] = {}
        self._pool_claims: dict[PoolKey, set[ClaimKey]] = {}
        self._node_slices: dict[NodeName, set[str]] = {}

    # ----- pods -----
    def moves(self, old: PodView | None, pod: PodView, claims: frozenset[ClaimKey] | None) -> bool:
        """Whether ``pod`` replaces ``old`` in place: both counted on the same node, with the same claims (rule 2)."""
        return (old is not None and old.counted and pod.counted and old.node_name == pod.node_name
                and self._pod_claims.get(pod.key) == claims)

    def hold(self, pod: PodView) -> None:
        """Rule 5."""
        if pod.gate_info is not None:
            self.held.add(pod.key)
        elif self.held:
            self.held.discard(pod.key)

    def move_pod(self, pod: PodView) -> None:
        """``pod`` replaces its stored view in place (``moves`` said so)."""
        self.pods[pod.key] = pod
        self.pods_by_node[pod.node_name][pod.key] = pod

    def add_pod(self, pod: PodView, claims: frozenset[ClaimKey] | None) -> None:
        """``pod``, whose key holds no view (``remove_pod`` first), with its claims (``claim_set``)."""
        key = pod.key
        self.pods[key] = pod
        if not pod.counted:
            return
        self.pods_by_node.setdefault(pod.node_name, {})[key] = pod
        if claims:  # most pods have no claim: store nothing for them
            self._pod_claims[key] = claims
            for claim in claims:
                self._consumers.setdefault(claim, set()).add(key)
                self._consumers_sorted.pop(claim, None)

    def remove_pod(self, key: PodKey) -> tuple[PodView | None, frozenset[ClaimKey]]:
        """The pod's view, gone from every index, and the claims it consumed (empty when it was not counted)."""
        old = self.pods.pop(key, None)
        if old is None or not old.counted:
            return old, frozenset()
        on_node = self.pods_by_node[old.node_name]
        del on_node[key]
        if not on_node:
            del self.pods_by_node[old.node_name]
        claims = self._pod_claims.pop(key, frozenset())
        for claim in claims:
            users = self._consumers.get(claim)
            if users is not None:
                users.discard(key)
                if not users:
                    del self._consumers[claim]
            self._consumers_sorted.pop(claim, None)
        return old, claims

    # ----- claims -----
    def put_claim(self, claim: ClaimView) -> None:
        self.drop_claim(claim.key)
        self.claims[claim.key] = claim
        pools = frozenset(r.pool_key for r in claim.results)
        self._claim_pools[claim.key] = pools
        for pool in pools:
            self._pool_claims.setdefault(pool, set()).add(claim.key)

    def drop_claim(self, key: ClaimKey) -> None:
        self.claims.pop(key, None)
        for pool in self._claim_pools.pop(key, frozenset()):
            claims = self._pool_claims.get(pool)
            if claims is not None:
                claims.discard(key)
                if not claims:
                    del self._pool_claims[pool]

    # ----- slices -----
    def put_slice(self, view: SliceView) -> None:
        """``view``, whose name holds no slice (``drop_slice`` first)."""
        self.slices[view.name] = view
        pool = self.pools.get(view.pool_key)
        if pool is None:
            pool = self.pools[view.pool_key] = Pool()
        pool.put(view)
        if view.node_name:
            self._node_slices.setdefault(view.node_name, set()).add(view.name)

    def drop_slice(self, name: str) -> SliceView | None:
        old = self.slices.pop(name, None)
        if old is None:
            return None
        pool = self.pools[old.pool_key]
        pool.drop(name)
        if not pool.slices:
            del self.pools[old.pool_key]
        if old.node_name:
            names = self._node_slices[old.node_name]
            names.discard(name)
            if not names:
                del self._node_slices[old.node_name]
        return old

    # ----- who uses what (rule 3) -----
    def consumers(self, key: ClaimKey) -> tuple[PodKey, ...]:
        """The counted pods (on any node) that consume the claim, sorted by namespace/name."""
        found = self._consumers_sorted.get(key)
        if found is None:
            found = self._consumers_sorted[key] = tuple(sorted(self._consumers.get(key, ())))
        return found

    def users(self, claims: Iterable[ClaimKey]) -> Iterator[PodKey]:
        """The counted pods that consume any of ``claims`` (unsorted, a pod once per claim)."""
        consumers = self._consumers
        for claim in claims:
            yield from consumers.get(claim, ())

    def consumer_nodes(self, claims: Iterable[ClaimKey], into: Dirty | None = None) -> Dirty:
        """The nodes of the pods that consume ``claims``, added to ``into`` (a new set by default)."""
        nodes: Dirty = set() if into is None else into
        pods = self.pods
        for pod in self.users(claims):
            nodes.add(pods[pod].node_name)
        return nodes

    def pool_claims(self, pool: PoolKey) -> Iterable[ClaimKey]:
        """The claims with a result in the pool."""
        return self._pool_claims.get(pool, ())

    def slice_nodes(self, pool: PoolKey) -> Dirty:
        """The nodes with a slice of the pool."""
        found = self.pools.get(pool)
        return {s.node_name for s in found.slices.values() if s.node_name} if found is not None else set()

    def pool_nodes(self, pool: PoolKey) -> Dirty:
        """The nodes whose ledgers a change of the pool reaches (rule 3)."""
        return self.consumer_nodes(self.pool_claims(pool), self.slice_nodes(pool))

    # ----- a node's slices (rule 4) -----
    def node_devices(self, node: NodeName) -> list[tuple[PoolKey, DeviceView]]:
        out: list[tuple[PoolKey, DeviceView]] = []
        pools, slices = self.pools, self.slices
        for name in sorted(self._node_slices.get(node, ())):
            view = slices[name]
            pool = pools[view.pool_key]
            if view.generation == pool.newest and not pool.invalid:
                out.extend((view.pool_key, device) for device in view.devices)
        return out

    def node_pools(self, node: NodeName) -> frozenset[PoolKey]:
        return frozenset(self.slices[name].pool_key for name in self._node_slices.get(node, ()))

    def slice_problems(self, node: NodeName) -> tuple[Problem, ...]:
        slices = self.slices
        return tuple(p for name in sorted(self._node_slices.get(node, ())) for p in slices[name].problems)

    def pods_on(self, node: NodeName) -> list[PodView]:
        """The counted pods bound to the node, sorted by namespace/name."""
        pods = self.pods_by_node.get(node)
        return [pods[k] for k in sorted(pods)] if pods else []
