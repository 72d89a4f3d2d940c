"""``create_slice`` (tests/realcluster/cluster.py rule 3): a slice refused on kube-apiserver's stale view of its node
is tried again; a refusal the stored Node confirms is raised at once.

From v1.37 the NodeDeclaredFeatures admission plugin reads the slice's node from an informer, which can lag behind a
Node just created: a fidelity batch under load once had 9 of its slices refused with 403 "node ... not found for
device" for nodes it had created a moment before.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.realcluster import cluster
from tests.realcluster.cluster import ApiError, create_slice

SLICE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "n0-0"},
         "spec": {"driver": "d.example.com", "nodeName": "n0", "pool": {"name": "n0"}, "devices": []}}
NOT_FOUND = 'resourceslices.resource.k8s.io "n0-0" is forbidden: node "n0" not found for device "core-4"'
NO_FEATURE = ('resourceslices.resource.k8s.io "n0-0" is forbidden: node "n0" does not support '
              "DRANodeAllocatableResources feature")
WITH_FEATURE = {"metadata": {"name": "n0"}, "status": {"declaredFeatures": ["DRANodeAllocatableResources"]}}


class Server:
    """Refuses the first ``refusals`` creates with 403 ``message``; ``node`` is the stored Node (None: absent)."""

    def __init__(self, refusals: int, message: str, node: dict[str, Any] | None) -> None:
        self.refusals, self.message, self.node = refusals, message, node
        self.posts: list[str] = []

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.posts.append(path)
        if len(self.posts) <= self.refusals:
            raise ApiError("POST", path, 403, {"kind": "Status", "message": self.message})
        return body

    def get_or_none(self, path: str) -> dict[str, Any] | None:
        assert "/api/v1/nodes/n0" == path
        return self.node


@pytest.fixture(autouse=True)
def no_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster, "POLL", 0.0)


@pytest.mark.parametrize("message", [NOT_FOUND, NO_FEATURE])
def test_a_refusal_the_stored_node_contradicts_is_tried_again(message: str) -> None:
    server = Server(3, message, WITH_FEATURE)
    assert SLICE == create_slice(server, SLICE)  # type: ignore[arg-type]
    assert ["/apis/resource.k8s.io/v1/resourceslices"] * 4 == server.posts


def test_a_slice_goes_to_its_own_api_version() -> None:
    server = Server(0, NOT_FOUND, WITH_FEATURE)
    create_slice(server, {**SLICE, "apiVersion": "resource.k8s.io/v1beta2"})  # type: ignore[arg-type]
    assert ["/apis/resource.k8s.io/v1beta2/resourceslices"] == server.posts


@pytest.mark.parametrize(("message", "node"), [
    (NOT_FOUND, None),  # the node does not exist: the refusal stands
    (NO_FEATURE, {"metadata": {"name": "n0"}, "status": {"declaredFeatures": []}}),  # it does not declare it
    ('resourceslices.resource.k8s.io "n0-0" is forbidden: something else', WITH_FEATURE),
], ids=["no-node", "no-feature", "another-refusal"])
def test_a_refusal_the_stored_node_confirms_is_raised_at_once(message: str, node: dict[str, Any] | None) -> None:
    server = Server(1, message, node)
    with pytest.raises(ApiError):
        create_slice(server, SLICE)  # type: ignore[arg-type]
    assert 1 == len(server.posts)


def test_a_stale_refusal_is_raised_after_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster, "ADMISSION_LAG", 0.0)
    server = Server(10**6, NOT_FOUND, WITH_FEATURE)
    with pytest.raises(ApiError, match="not found for device"):
        create_slice(server, SLICE)  # type: ignore[arg-type]
    assert len(server.posts) <= 2
