"""Nodes: name, UID, allocatable, readiness, labels and kubelet version. Everything else on a Node is ignored."""

from __future__ import annotations

from collections.abc import Mapping as AbstractMapping
from dataclasses import dataclass
from typing import Any, Final

from draledger.core.keys import NodeName
from draledger.core.quantities import Quantity
from draledger.core.views.fields import IDENTITY, LEAF, Fields
from draledger.core.views.problems import Problem, Reader, ref_of


@dataclass(frozen=True, slots=True)
class NodeView:
    name: NodeName
    uid: str
    allocatable: dict[str, Quantity]
    ready: bool
    ready_reason: str
    labels: dict[str, str]
    problems: tuple[Problem, ...] = ()
    kubelet_version: str = ""  # status.nodeInfo.kubeletVersion: a lower bound of the release (core.releases)


def read_node(raw: AbstractMapping[str, Any]) -> NodeView:
    reader = Reader(ref_of(raw, "Node"))
    meta = reader.identity(raw)
    status = reader.mapping(raw.get("status"), "status")
    allocatable = reader.quantities(status.get("allocatable"), "status.allocatable")
    ready, reason = False, "NoReadyCondition"
    for index, cond in enumerate(reader.items(status.get("conditions"), "status.conditions")):
        cond = reader.mapping(cond, f"status.conditions[{index}]")
        if cond.get("type") == "Ready":
            ready = cond.get("status") == "True"
            reason = reader.string(cond.get("reason"), f"status.conditions[{index}].reason") or (
                "Ready" if ready else "NotReady"
            )
    labels = {
        k: v for k, v in reader.mapping(meta.get("labels"), "metadata.labels").items() if isinstance(v, str)
    }
    info = reader.mapping(status.get("nodeInfo"), "status.nodeInfo")
    return NodeView(
        name=NodeName(reader.ref.name),
        uid=reader.string(meta.get("uid"), "metadata.uid"),
        allocatable=allocatable,
        ready=ready,
        ready_reason=reason,
        labels=labels,
        problems=tuple(reader.problems),
        kubelet_version=reader.string(info.get("kubeletVersion"), "status.nodeInfo.kubeletVersion"),
    )


FIELDS: Final[Fields] = {  # views.fields: what ``read_node`` reads
    "metadata": {**IDENTITY, "labels": LEAF},
    "status": {"allocatable": LEAF, "conditions": LEAF, "nodeInfo": {"kubeletVersion": LEAF}},
}
