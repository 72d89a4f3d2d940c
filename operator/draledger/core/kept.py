"""The numbers the state keeps per object, each a rule's result over plain data (accounting.inputs).

Rules:
1. A kept value is computed when it is first read, from the objects as they are then (core.objects), and kept until
   one of the inputs its row of ``accounting.inputs.KEPT`` names changes for an object it is kept for (``changed``,
   which reads the table): a contribution and a claim's facts per claim, a charge per claim-using pod, the mapping
   fingerprint and the zones' capacity per node.
2. A change reaches, per what a value is kept for: a pod's own key; a claim's key and its consumers; a pool's claims
   (those with a result in it), their consumers, and the nodes with a slice of it. The caller says what it reached.
3. Running sums per node (accounting.sums) move with every pod change and are counted again when the release
   changes: a node's ledger visits only the pods the sums cannot stand for.
4. A change of release drops every kept value (every row reads the release).
5. Kept values are only to be read: the ledger's pass and the releaser share them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final

from draledger.core.accounting.charges import PodCharge, pod_charge
from draledger.core.accounting.contributions import Contribution, contribution
from draledger.core.accounting.fingerprints import mapping_fingerprint
from draledger.core.accounting.inputs import Input, Per, dropped_by
from draledger.core.accounting.ledger import NodeInputs
from draledger.core.accounting.sums import NodeSums
from draledger.core.accounting.uses import ClaimFacts, ClaimUse, claim_facts, claim_keys, claim_uses
from draledger.core.accounting.zones import zone_capacity
from draledger.core.keys import ClaimKey, NodeName, PodKey
from draledger.core.objects import Objects
from draledger.core.releases import Release
from draledger.core.resources import Resources
from draledger.core.views import PodView

_NO_PODS: Final = NodeSums()  # a node without counted pods (only ever read)
_DROPS: Final = {change: dropped_by(change) for change in Input}  # rule 1: the table, read once


class Kept:
    """Rules 1 to 5 over ``objects``, under ``release`` and the NUMA ``attributes``."""

    def __init__(self, objects: Objects, release: Release, attributes: tuple[str, ...]) -> None:
        self.objects = objects
        self.release = release
        self.attributes = attributes
        self.sums: dict[NodeName, NodeSums] = {}  # rule 3, the keys of ``objects.pods_by_node``
        self.contribution: dict[ClaimKey, Contribution] = {}
        self.facts: dict[ClaimKey, ClaimFacts] = {}
        self.charge: dict[PodKey, PodCharge] = {}
        self.fingerprint: dict[NodeName, str] = {}
        self.zone_capacity: dict[NodeName, Mapping[int, Resources]] = {}
        self._values: dict[str, dict[Any, Any]] = {
            "contribution": self.contribution, "facts": self.facts, "charge": self.charge,
            "fingerprint": self.fingerprint, "zone_capacity": self.zone_capacity,
        }
        self._dropped = {change: [self._values[name] for names in per.values() for name in names]
                         for change, per in _DROPS.items()}

    def holds(self, change: Input) -> bool:
        """Whether any value a change of ``change`` drops is kept now (if not, the change reaches nothing)."""
        return any(self._dropped[change])

    # ----- rules 1, 2 and 4: what a change drops -----
    def changed(self, change: Input, claims: Collection[ClaimKey] = (), pods: Collection[PodKey] = (),
                nodes: Collection[NodeName] = ()) -> None:
        """Drop every value whose row reads ``change``, for the objects the change reached (rule 2)."""
        values = self._values
        for per, names in _DROPS[change].items():
            keys: Collection[Any] = claims if per is Per.CLAIM else pods if per is Per.POD else nodes
            for name in names:
                kept = values[name]
                if kept:
                    for key in keys:
                        kept.pop(key, None)

    def forget_node(self, node: NodeName) -> None:
        """The node is gone: its values go with it."""
        self.fingerprint.pop(node, None)
        self.zone_capacity.pop(node, None)

    def set_release(self, release: Release) -> None:
        """Rules 3 and 4."""
        self.release = release
        for kept in self._values.values():
            kept.clear()
        self.sums.clear()
        for node, pods in self.objects.pods_by_node.items():
            sums = self.sums[node] = NodeSums()
            for pod in pods.values():
                sums.add(pod, release)

    # ----- rule 3 -----
    def add_pod(self, pod: PodView) -> None:
        sums = self.sums.get(pod.node_name)
        if sums is None:
            sums = self.sums[pod.node_name] = NodeSums()
        sums.add(pod, self.release)

    def remove_pod(self, pod: PodView) -> None:
        sums = self.sums[pod.node_name]
        sums.remove(pod, self.release)
        if pod.node_name not in self.objects.pods_by_node:
            del self.sums[pod.node_name]

    def node_sums(self, node: NodeName) -> NodeSums:
        return self.sums.get(node) or _NO_PODS

    # ----- the values (rule 1) -----
    def facts_of(self, key: ClaimKey) -> ClaimFacts:
        """The claim's facts (accounting.uses): its view, contribution, consumers and incomplete pools."""
        found = self.facts.get(key)
        if found is None:
            objects = self.objects
            claim = objects.claims.get(key)
            contrib = None
            if claim is not None:
                contrib = self.contribution.get(key)
                if contrib is None:
                    contrib = self.contribution[key] = contribution(claim, objects.pools, self.attributes,
                                                                    self.release)
            found = self.facts[key] = claim_facts(claim, contrib, objects.consumers(key), objects.pools)
        return found

    def uses(self, pod: PodView) -> tuple[ClaimUse, ...]:
        """The pod's claims' uses (accounting.uses), from the facts kept for them."""
        return claim_uses(pod, {key: self.facts_of(key) for key in claim_keys(pod)}, self.release)

    def charge_of(self, pod: PodView) -> PodCharge:
        """What the claim-using pod adds to its node's ledger (accounting.charges)."""
        found = self.charge.get(pod.key)
        if found is None:
            facts = {key: self.facts_of(key) for key in claim_keys(pod)}
            found = self.charge[pod.key] = pod_charge(pod, facts, self.release)
        return found

    def inputs(self, node: NodeName) -> NodeInputs:
        """What the node's ledger is computed from (``ledger.compute``), every value kept."""
        objects = self.objects
        sums = self.node_sums(node)
        charges = {key: self.charge_of(pod) for key, pod in sums.special.items()
                   if pod.claims or pod.claim_statuses}
        fingerprint = self.fingerprint.get(node)
        capacity = self.zone_capacity.get(node)
        if fingerprint is None or capacity is None:
            devices = objects.node_devices(node)
            if fingerprint is None:
                fingerprint = self.fingerprint[node] = mapping_fingerprint(devices, self.release)
            if capacity is None:
                capacity = self.zone_capacity[node] = zone_capacity(devices, self.attributes, self.release)
        return NodeInputs(self.release, sums, charges, objects.slice_problems(node), objects.node_pools(node),
                          objects.pools, capacity, fingerprint)
