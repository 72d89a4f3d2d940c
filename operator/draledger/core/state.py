"""The incremental cluster state: apply one raw object, learn which nodes it touched, compute a node's ledger.

Rules:
1. ``apply(kind, event_type, body)`` is the one entry for raw objects of the four kinds (nodes, pods,
   resourceclaims, resourceslices): a watch event of the operator or an item of a dump (core.loading). It reads
   the body into its view (views.slices keep only the state's NUMA attributes) and upserts it, or deletes the
   object by name for ``event_type == "DELETED"``, and says what it did (``Applied``). Views are the same under
   every release (views, rule 2), so objects may be applied before the release is known.
2. What is where is ``core.objects``'s (only views are kept; an update is remove + add of the stored view); what
   is computed from it is ``core.kept``'s. Every change says which nodes it touched and which inputs of the kept
   values it changed (accounting.inputs): the pod, a claim, a claim's consumers, a pool.
3. A ResourceSlice whose pool generation is older than the one stored for the same slice is refused and changes
   nothing: ``Applied.refused`` carries the refusal as data (the stored generation and the older one).
4. A Node the caller does not admit (``admit``: the operator's ``--node-selector``) is deleted instead, and
   ``Applied.outside`` says so: it is not the caller's to account for.
5. ``ledger(node, flags)`` computes one node's ledger from what is kept (``ledger.compute`` reads plain data);
   ``uses(pod)`` gives a pod's claims' uses, the one path to them for the gate and the planned statuses.
6. ``set_release`` follows another release's rules: the running sums are counted again and every kept value
   dropped (every node is dirty). The NUMA attributes are the state's for its life (accounting.inputs, rule 4).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from draledger.core.accounting.inputs import Input
from draledger.core.accounting.ledger import Flags, Ledger, RejectedSlice, compute
from draledger.core.accounting.uses import ClaimUse
from draledger.core.accounting.zones import DEFAULT_NUMA_ATTRIBUTES
from draledger.core.kept import Kept
from draledger.core.keys import ClaimKey, NodeName, PodKey, PoolKey
from draledger.core.objects import Dirty, Objects, claim_set
from draledger.core.releases import OLDEST, Release
from draledger.core.views import (
    ClaimView,
    NodeView,
    PodView,
    SliceView,
    read_claim,
    read_node,
    read_pod,
    read_slice,
)
from draledger.core.views.slices import DeviceMemo

__all__ = ["KINDS", "Applied", "ClusterState", "Dirty"]

KINDS = ("nodes", "pods", "resourceslices", "resourceclaims")


class Applied(NamedTuple):
    """What ``apply`` did with one raw object (rules 1, 3 and 4)."""

    key: NodeName | PodKey | ClaimKey | str  # a slice's key is its name
    view: NodeView | PodView | ClaimView | SliceView | None  # None: deleted
    dirty: Dirty  # the nodes whose ledgers it may change
    refused: RejectedSlice | None = None  # rule 3
    outside: bool = False  # rule 4


class ClusterState:
    """Rules 1 to 6."""

    def __init__(self, release: Release = OLDEST, attributes: tuple[str, ...] = DEFAULT_NUMA_ATTRIBUTES) -> None:
        self.attributes = attributes
        objects = self._objects = Objects()
        self._kept = Kept(objects, release, attributes)
        # The objects, to be read (core.objects holds them).
        self.nodes = objects.nodes
        self.pods = objects.pods
        self.claims = objects.claims
        self.slices = objects.slices
        self.held = objects.held

    @property
    def release(self) -> Release:
        return self._kept.release

    @property
    def kept(self) -> Kept:
        """The numbers kept per object (core.kept), to be read."""
        return self._kept

    @property
    def objects(self) -> Objects:
        """The objects and the indexes between them (core.objects), to be read."""
        return self._objects

    # ----- raw objects (rules 1, 3 and 4) -----
    def apply(
        self, kind: str, event_type: str | None, body: Mapping[str, Any], memo: DeviceMemo | None = None,
        admit: Callable[[NodeView], bool] | None = None,
    ) -> Applied:
        """One raw object of ``kind``; ``memo`` keeps a republished slice's devices unread (views.slices, rule 4)."""
        if event_type == "DELETED":
            meta = body.get("metadata")
            meta = meta if isinstance(meta, dict) else {}
            name = meta["name"] if isinstance(meta.get("name"), str) else ""
            namespace = meta["namespace"] if isinstance(meta.get("namespace"), str) else ""
            return self.delete(kind, (namespace, name) if kind in ("pods", "resourceclaims") else name, memo)
        if kind == "pods":  # the most frequent kind first
            pod = read_pod(body)
            return Applied(pod.key, pod, self.upsert_pod(pod))
        if kind == "resourceclaims":
            claim = read_claim(body)
            return Applied(claim.key, claim, self.upsert_claim(claim))
        if kind == "nodes":
            node = read_node(body)
            if admit is not None and not admit(node):
                return Applied(node.name, node, self.delete_node(node.name), outside=True)
            return Applied(node.name, node, self.upsert_node(node))
        view = read_slice(body, memo, self.attributes)
        old = self.slices.get(view.name)
        if old is not None and old.pool_key == view.pool_key and view.generation < old.generation:
            refused = RejectedSlice(view.name, view.driver, view.pool, old.generation, view.generation)
            return Applied(view.name, view, set(), refused)
        return Applied(view.name, view, self.upsert_slice(view))

    def delete(self, kind: str, key: Any, memo: DeviceMemo | None = None) -> Applied:
        """The object of ``kind`` with ``key`` is gone (a name, or (namespace, name) for pods and claims)."""
        if kind == "pods":
            return Applied(key, None, self.delete_pod(key))
        if kind == "resourceclaims":
            return Applied(key, None, self.delete_claim(key))
        if kind == "nodes":
            return Applied(key, None, self.delete_node(key))
        if memo is not None:
            memo.forget(key)
        return Applied(key, None, self.delete_slice(key))

    # ----- nodes -----
    def upsert_node(self, node: NodeView) -> Dirty:
        self.nodes[node.name] = node
        return {node.name}

    def delete_node(self, name: NodeName) -> Dirty:
        self.nodes.pop(name, None)
        self._kept.forget_node(name)
        return {name}

    # ----- pods -----
    def upsert_pod(self, pod: PodView) -> Dirty:
        objects, kept = self._objects, self._kept
        objects.hold(pod)
        key = pod.key
        old = objects.pods.get(key)
        claims = claim_set(pod) if pod.claims else None
        if old is None:  # a new pod (most of a listing's): nothing to remove first
            objects.add_pod(pod, claims)
            if not pod.counted:
                return set()
            kept.add_pod(pod)
            dirty = {pod.node_name}
            if claims:
                self._consumers_changed(claims)
                objects.consumer_nodes(claims, dirty)
            return dirty
        if objects.moves(old, pod, claims):
            # The common update (a resize, a status change): the pod keeps its node and its claims.
            objects.move_pod(pod)
            kept.remove_pod(old)
            kept.add_pod(pod)
            if kept.charge:
                kept.changed(Input.POD, pods=(key,))
            node = pod.node_name
            return {node} if claims is None else objects.consumer_nodes(claims, {node})
        dirty = self._remove_pod(key)
        objects.add_pod(pod, claims)
        if pod.counted:
            kept.add_pod(pod)
            dirty.add(pod.node_name)
            if claims:
                self._consumers_changed(claims)
                objects.consumer_nodes(claims, dirty)
        return dirty

    def _consumers_changed(self, claims: frozenset[ClaimKey]) -> None:
        if self._kept.holds(Input.CONSUMERS):
            self._kept.changed(Input.CONSUMERS, claims=claims, pods=set(self._objects.users(claims)))

    def delete_pod(self, key: PodKey) -> Dirty:
        self.held.discard(key)
        return self._remove_pod(key)

    def _remove_pod(self, key: PodKey) -> Dirty:
        objects, kept = self._objects, self._kept
        old, claims = objects.remove_pod(key)
        if old is None:
            return set()
        if kept.charge:
            kept.changed(Input.POD, pods=(key,))
        if not old.counted:
            return set()
        kept.remove_pod(old)
        dirty = {old.node_name}
        if claims:
            self._consumers_changed(claims)
            objects.consumer_nodes(claims, dirty)
        return dirty

    # ----- claims -----
    def upsert_claim(self, claim: ClaimView) -> Dirty:
        self._objects.put_claim(claim)
        return self._claim_changed(claim.key)

    def delete_claim(self, key: ClaimKey) -> Dirty:
        self._objects.drop_claim(key)
        return self._claim_changed(key)

    def _claim_changed(self, key: ClaimKey) -> Dirty:
        objects, kept = self._objects, self._kept
        if kept.holds(Input.CLAIM):
            kept.changed(Input.CLAIM, claims=(key,), pods=set(objects.users((key,))))
        return objects.consumer_nodes((key,))

    # ----- slices (``apply`` refuses a regression first: rule 3) -----
    def upsert_slice(self, view: SliceView) -> Dirty:
        dirty = self.delete_slice(view.name)
        self._objects.put_slice(view)
        self._pool_changed(view.pool_key)  # after: the pool's newest generation may have moved
        return dirty | self._objects.pool_nodes(view.pool_key)

    def delete_slice(self, name: str) -> Dirty:
        objects = self._objects
        old = objects.slices.get(name)
        if old is None:
            return set()
        dirty = objects.pool_nodes(old.pool_key)  # before: the nodes that saw it
        self._pool_changed(old.pool_key)  # before: its own node's values too
        objects.drop_slice(name)
        return dirty

    def _pool_changed(self, pool: PoolKey) -> None:
        objects, kept = self._objects, self._kept
        if kept.holds(Input.POOL):
            claims = set(objects.pool_claims(pool))
            kept.changed(Input.POOL, claims=claims, pods=set(objects.users(claims)), nodes=objects.slice_nodes(pool))

    def pool_nodes(self, pool: PoolKey) -> Dirty:
        """The nodes whose ledgers a change of the pool reaches (core.objects, rule 3)."""
        return self._objects.pool_nodes(pool)

    # ----- the rules' release (rule 6) -----
    def set_release(self, release: Release) -> Dirty:
        """Follow ``release``'s rules from now on (every node is then dirty)."""
        if release == self.release:
            return set()
        self._kept.set_release(release)
        return set(self.nodes)

    def shapes_seen(self) -> bool:
        """Whether any object has the v1.37 shape (a slice with ``nodeAllocatableResources``, a pod status with
        ``mapping``/``overhead``): what a v1.36 server cannot hold (core.releases, rule 3)."""
        return any(s.shape == "v1.37" for s in self.slices.values()) or any(
            s.shape == "v1.37" for pod in self.pods.values() for s in pod.claim_statuses or ()
        )

    # ----- results (rule 5) -----
    def ledger(self, node: NodeName, flags: Flags | None = None) -> Ledger | None:
        view = self.nodes.get(node)
        if view is None:
            return None
        return compute(view, self._kept.inputs(node), flags or Flags())

    def uses(self, pod: PodView) -> tuple[ClaimUse, ...]:
        """The pod's claims' uses (accounting.uses), for the gate's decision and the planned statuses."""
        return self._kept.uses(pod)

    def pods_on(self, node: NodeName) -> list[PodView]:
        """The counted pods bound to the node, sorted by namespace/name."""
        return self._objects.pods_on(node)

    def special_pods(self, node: NodeName) -> Mapping[PodKey, PodView]:
        """The node's counted pods that its running sums cannot stand for: claims, claim statuses, problems."""
        return self._kept.node_sums(node).special
