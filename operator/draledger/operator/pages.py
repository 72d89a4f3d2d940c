"""LIST pages decoded into only what the views read (priming's decoder).

A pod in a real cluster is 8 to 26 KiB of JSON (env, volumes, probes, managed fields, container statuses), of
which the ledger's view reads a few hundred bytes. Decoding a whole page into dicts allocates every field of
every object, only for the reference counts to free them a moment later, interleaved with the views that stay:
the heap keeps the holes (benchmarks/results/scale.md). So each kind's page is decoded against a schema of the fields
its reader looks at (``core.views``), and msgspec skips every other field without building it.

Rules:
1. The schemas are ``TypedDict``s with every key optional: a decoded object is a plain ``dict`` with the same
   keys as the full one, less those no reader looks at. Each reader gets exactly the values it would get from
   the full object; ``tests/operator/test_pages.py`` holds the views equal over the conformance dumps, the
   benchmark's realistic objects and malformed ones.
2. Only containers are pruned; every leaf (and every object a reader may quote in a problem) is ``Any``, kept
   as sent, so a value of the wrong type still reaches the reader and becomes its named problem.
3. A page the schema refuses (an object where a list was expected, say) is decoded whole, untyped
   (``priming.decode``): a malformed object costs its page the saving, never its correctness.
"""

from __future__ import annotations

from typing import Any, Generic, TypedDict, TypeVar

import msgspec


class Metadata(TypedDict, total=False):
    name: Any
    namespace: Any
    uid: Any
    resourceVersion: Any
    creationTimestamp: Any


class NodeMetadata(Metadata, total=False):
    labels: Any


class PodMetadata(Metadata, total=False):
    annotations: msgspec.Raw  # only whether there are any (a gate release adds its record): never decoded


# ----- pods (views.pods.read_pod) -----
class ContainerResources(TypedDict, total=False):
    requests: Any
    limits: Any
    claims: Any


class Container(TypedDict, total=False):
    name: Any
    resources: ContainerResources
    restartPolicy: Any


class PodSpec(TypedDict, total=False):
    nodeName: Any
    containers: list[Container]
    initContainers: list[Container]
    resourceClaims: Any
    resources: Any
    overhead: Any
    affinity: Any
    schedulingGates: Any


class ContainerStatus(TypedDict, total=False):
    name: Any
    resources: Any
    allocatedResources: Any


class PodCondition(TypedDict, total=False):
    type: Any
    reason: Any


class PodStatus(TypedDict, total=False):
    phase: Any
    resourceClaimStatuses: Any
    extendedResourceClaimStatus: Any
    nodeAllocatableResourceClaimStatuses: Any
    containerStatuses: list[ContainerStatus]
    initContainerStatuses: list[ContainerStatus]
    resources: Any
    allocatedResources: Any
    conditions: list[PodCondition]


class Pod(TypedDict, total=False):
    metadata: PodMetadata
    spec: PodSpec
    status: PodStatus


# ----- nodes (views.nodes.read_node) -----
class NodeInfo(TypedDict, total=False):
    kubeletVersion: Any


class NodeStatus(TypedDict, total=False):
    allocatable: Any
    conditions: Any
    nodeInfo: NodeInfo


class Node(TypedDict, total=False):
    metadata: NodeMetadata
    status: NodeStatus


# ----- claims (views.claims.read_claim) -----
class ClaimStatus(TypedDict, total=False):
    allocation: Any
    reservedFor: Any


class Claim(TypedDict, total=False):
    metadata: Metadata
    status: ClaimStatus


# ----- slices (views.slices.read_slice) -----
class Slice(TypedDict, total=False):
    apiVersion: Any
    metadata: Metadata
    spec: Any


Item = TypeVar("Item")


class Page(TypedDict, Generic[Item], total=False):
    """A list response: its ``metadata`` (the version, the continue token) whole, its items pruned."""

    metadata: Any
    items: list[Item]


SCHEMAS: dict[str, Any] = {
    "pods": Page[Pod],
    "nodes": Page[Node],
    "resourceclaims": Page[Claim],
    "resourceslices": Page[Slice],
}
DECODERS: dict[str, msgspec.json.Decoder[Any]] = {kind: msgspec.json.Decoder(t) for kind, t in SCHEMAS.items()}
