"""The one entry from raw objects (``ClusterState.apply``): what it did, said as data (``Applied``)."""

from __future__ import annotations

import pytest

from draledger.core.accounting.ledger import RejectedSlice
from draledger.core.loading import load
from draledger.core.state import ClusterState
from strategies import CPU1, claim_obj, container, device, direct, node_obj, pod_obj, result, slice_obj

CLAIM_POD = pod_obj("p", containers=[container("a", claims=["x"])], resource_claims=[direct("x", "c")])


def numa_slice(generation: int = 1) -> dict[str, object]:
    return slice_obj("s", generation=generation,
                     devices=[device("d", attributes={"numaNode": 1, "socket": 2, "model": "x"}, v136=CPU1)])


class TestApplied:
    @pytest.mark.parametrize(("kind", "body", "key"), [
        pytest.param("nodes", node_obj("n1"), "n1", id="node"),
        pytest.param("pods", CLAIM_POD, ("t", "p"), id="pod"),
        pytest.param("resourceclaims", claim_obj("c", results=[result("d")]), ("t", "c"), id="claim"),
        pytest.param("resourceslices", numa_slice(), "s", id="slice"),
    ])
    def test_an_upsert_says_its_key_view_and_dirty_nodes(self, kind: str, body: dict[str, object],
                                                        key: object) -> None:
        """Each kind's object is read into its view and stored under its key; it touches node n1."""
        state = ClusterState()
        for other in (node_obj("n1"), CLAIM_POD, claim_obj("c", results=[result("d")]), numa_slice()):
            state.apply({"Node": "nodes", "Pod": "pods", "ResourceClaim": "resourceclaims",
                         "ResourceSlice": "resourceslices"}[str(other["kind"])], None, other)
        applied = state.apply(kind, "MODIFIED", body)
        assert (key, {"n1"}, None, False) == (applied.key, applied.dirty, applied.refused, applied.outside)
        assert key == (applied.view.key if kind in ("pods", "resourceclaims") else applied.view.name)

    def test_a_deletion_is_by_name_and_carries_no_view(self) -> None:
        """DELETED reads only the name: the object goes, and its view is None."""
        state = ClusterState()
        state.apply("nodes", None, node_obj("n1"))
        state.apply("pods", None, CLAIM_POD)
        applied = state.apply("pods", "DELETED", {"metadata": {"name": "p", "namespace": "t"}})
        assert (("t", "p"), None, {"n1"}, {}) == (applied.key, applied.view, applied.dirty, state.pods)

    def test_a_regression_is_refused_as_data(self) -> None:
        """An older pool generation of a stored slice changes nothing and says what it was refused against."""
        state = ClusterState()
        state.apply("resourceslices", None, numa_slice(generation=3))
        applied = state.apply("resourceslices", None, numa_slice(generation=2))
        assert (RejectedSlice("s", "dra.example.com", "n1", 3, 2), set(), 3) == (
            applied.refused, applied.dirty, state.slices["s"].generation)

    def test_a_node_not_admitted_is_deleted(self) -> None:
        """A Node the caller does not admit is not accounted for: deleted if it was, and said to be outside."""
        state = ClusterState()
        state.apply("nodes", None, node_obj("n1"))
        applied = state.apply("nodes", None, node_obj("n1"), admit=lambda node: False)
        assert (True, {"n1"}, {}) == (applied.outside, applied.dirty, state.nodes)


class TestNumaAttributes:
    @pytest.mark.parametrize(("attributes", "kept"), [
        pytest.param(("numaNode",), {"numaNode": 1}, id="numaNode"),
        pytest.param(("socket", "numaNode"), {"numaNode": 1, "socket": 2}, id="both"),
    ])
    def test_apply_keeps_only_the_states_attributes(self, attributes: tuple[str, ...],
                                                    kept: dict[str, int]) -> None:
        """A dump's slices keep the NUMA attributes of the state they are loaded into, as the operator's do (one
        path: views.slices rule 6), and no other."""
        state = load([numa_slice()], "test", attributes=attributes).state
        assert kept == state.slices["s"].devices[0].attributes
