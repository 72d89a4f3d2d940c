"""Refused ResourceSlice updates: a slice whose pool generation went back stays refused until its driver publishes
the generation again, across restarts too.

Rules:
1. A slice the state refuses (``Applied.refused``: older than the stored one) is refused here, with the newer
   generation it was refused against, on the nodes its pool reaches; those nodes' ledgers say so (Stale,
   ``GenerationRegression``) and keep the record in ``status.rejectedSlices``.
2. A refusal read back from a stored ledger (``seed``, at start) is a floor: the process that saw the newer
   version is gone, so the stored version counts (what a recompute of the stored objects gives), and the slice
   stays refused until a version at or above the floor comes.
3. A slice applied at or above its refusal, or deleted, is refused no more: its nodes are written again.
4. Nothing here reads the world or marks anything: each call returns the nodes whose ledgers it changed, and
   whether a new refusal was counted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import structlog

from draledger.core.accounting.ledger import RejectedSlice
from draledger.core.keys import NodeName, PoolKey
from draledger.core.state import Applied
from draledger.core.views import SliceView

log = structlog.get_logger("draledger")


class Refusals:
    """Rules 1 to 4; ``pool_nodes`` says which nodes a change of a pool reaches (``ClusterState.pool_nodes``)."""

    def __init__(self, pool_nodes: Callable[[PoolKey], set[NodeName]]) -> None:
        self.pool_nodes = pool_nodes
        self.rejected: dict[str, tuple[RejectedSlice, frozenset[NodeName]]] = {}  # slice -> refusal, its nodes
        self.floors: dict[str, RejectedSlice] = {}  # rule 2

    def applied(self, applied: Applied) -> tuple[set[NodeName], bool]:
        """A slice event applied to the state (rules 1 to 3): the nodes to mark, and whether a refusal is new."""
        view = applied.view
        assert isinstance(view, SliceView)
        floor = self.floors.get(view.name)
        if floor is not None and (floor.driver, floor.pool) == view.pool_key and view.generation < floor.generation:
            return self._refuse(view, floor.generation)
        self.floors.pop(view.name, None)
        if applied.refused is not None:
            log.warning("slice generation regression rejected", slice=view.name, generation=view.generation,
                        stored=applied.refused.generation)
            return self._refuse(view, applied.refused.generation)
        return self.forget(view.name), False

    def _refuse(self, view: SliceView, generation: int) -> tuple[set[NodeName], bool]:
        record = RejectedSlice(view.name, view.driver, view.pool, generation, view.generation)
        before = self.rejected.get(view.name)
        if before is not None and before[0] == record:
            return set(), False
        nodes = {view.node_name} if view.node_name else set()
        nodes |= self.pool_nodes(view.pool_key)
        if before is not None:
            nodes |= before[1]
        self.rejected[view.name] = (record, frozenset(nodes))
        return nodes, True

    def forget(self, name: str) -> set[NodeName]:
        """The slice is current again, or gone (rule 3): the nodes its refusal was on."""
        self.floors.pop(name, None)
        before = self.rejected.pop(name, None)
        return set(before[1]) if before is not None else set()

    def seed(self, node: NodeName, records: Iterable[RejectedSlice]) -> None:
        """Refusals read back from a stored ledger (rule 2)."""
        for record in records:
            self.floors[record.name] = record
            before = self.rejected.get(record.name)
            nodes = (before[1] if before else frozenset()) | {node}
            self.rejected[record.name] = (record, nodes)

    def of(self, node: NodeName) -> tuple[RejectedSlice, ...]:
        """The refusals the node's ledger shows, by slice name."""
        return tuple(sorted((r for r, nodes in self.rejected.values() if node in nodes), key=lambda r: r.name))
