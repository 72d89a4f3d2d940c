"""The demo cluster as the story starts, and what it adds later: a pure builder (no I/O, no clock, no randomness).

Pods: ordinary ones (kube-proxy, node-exporter, a web frontend), bound claim pods whose claims are allocated
and reserved (with ``status.nodeAllocatableResourceClaimStatuses``, as the v1.36 scheduler writes it),
``batch/legacy-etl``, bound *before the gate was on* (no such status: the operator backfills it), and new,
unbound claim pods that already carry the ``draledger.dev/ledger-ready`` scheduling gate (as the webhook
adds it). :func:`later_pods` are the pods the story adds, and :func:`previous_ledgers` are the ledgers a previous
run of the operator left behind. The objects are :mod:`draledger.demo.objects`'; the scheduler's part is
:mod:`draledger.demo.scheduler`'s.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from draledger.commands.audit import ledgers_of
from draledger.core.accounting.ledger import Flags
from draledger.core.loading import load
from draledger.demo.objects import (
    NODES,
    Box,
    Want,
    claim,
    cores,
    device_classes,
    gated,
    gpus,
    hugepages,
    node,
    pod,
    resource_slices,
    stamp,
    uid,
)
from draledger.demo.scheduler import allocate, bind

__all__ = ["build_cluster", "later_pods", "previous_ledgers"]


def _bound(
    obj: dict[str, Any],
    node_name: str,
    claims: dict[str, dict[str, Any]],
    slices: list[dict[str, Any]],
    now: datetime.datetime,
    *,
    scheduler_status: bool = True,
    zones: Sequence[int] = (0, 1),
    pods: Iterable[Mapping[str, Any]] = (),
) -> list[dict[str, Any]]:
    """The pod bound to ``node_name``, with its claims allocated and reserved; returns the changed claims."""
    started = obj["metadata"]["creationTimestamp"]
    binding = bind(obj, node_name, claims, slices, started, zones, pods=pods)
    assert binding is not None, f"the demo cluster does not fit {obj['metadata']['name']} on {node_name}"
    obj["spec"]["nodeName"] = node_name
    if not scheduler_status:
        binding.pod_status.pop("nodeAllocatableResourceClaimStatuses", None)
    generated = (obj.get("status") or {}).get("resourceClaimStatuses")
    obj["status"] = binding.pod_status
    if generated:
        obj["status"]["resourceClaimStatuses"] = generated
    changed = []
    for name, status in binding.claims.items():
        claims[name]["status"] = status
        changed.append(claims[name])
    return changed


_SYSTEM: Final = (
    ("kube-system", "kube-proxy", Box("kube-proxy", "100m", "128Mi", image="registry.k8s.io/kube-proxy:v1.36.0")),
    ("monitoring", "node-exporter", Box("node-exporter", "50m", "64Mi", image="quay.io/prometheus/node-exporter:v1.9")),
)


def build_cluster(now: datetime.datetime) -> list[dict[str, Any]]:
    """Every object of the demo cluster at the start of the story, in creation order."""
    slices = [s for name in NODES for s in resource_slices(name, now)]
    objects: list[dict[str, Any]] = [*(node(name, now) for name in NODES), *device_classes(now), *slices]
    claims: dict[str, dict[str, Any]] = {}
    pods: list[dict[str, Any]] = []
    days = datetime.timedelta(days=2)

    def add_claim(namespace: str, name: str, wants: Sequence[Want], **kwargs: Any) -> str:
        claims[name] = claim(namespace, name, wants, now, **kwargs)
        return name

    for name in NODES:
        for namespace, app, box in _SYSTEM:
            system_pod = pod(namespace, f"{app}-{name}", [box], now, labels={"k8s-app": app}, ago=days * 5)
            pods.append(system_pod)
            _bound(system_pod, name, claims, slices, now)

    # worker-1: a training job, GPU + cores + hugepages on NUMA zone 0, from a claim template
    trainer = pod("ml", "trainer-0", [Box("trainer", "1", "8Gi", ("accel",)), Box("log-shipper", "100m", "128Mi")],
                  now, templates={"accel": "gpu-with-cores"}, ago=days)
    generated = add_claim("ml", "trainer-0-accel-x7k2p", [gpus(), cores(4), hugepages("512Mi")], ago=days,
                          owner={"pod": "trainer-0", "uid": trainer["metadata"]["uid"], "claim": "accel"})
    trainer["status"] = {"resourceClaimStatuses": [{"name": "accel", "resourceClaimName": generated}]}
    frontend_1 = pod("web", "frontend-7d9f5-abcde", [Box("nginx", "2", "4Gi")], now, ago=days)
    # worker-2: inference on GPU 1 (zone 1) and a database with hugepages and cores
    inference = pod("ml", "inference-0", [Box("server", "500m", "2Gi", ("gpu",))], now,
                    claims={"gpu": add_claim("ml", "inference-0-gpu", [gpus(), cores(2)], ago=days)}, ago=days)
    database = pod("db", "postgres-0", [Box("postgres", "2", "8Gi", ("memory",))], now,
                   claims={"memory": add_claim("db", "postgres-0-memory", [cores(2), hugepages("1Gi")], ago=days)},
                   ago=days)
    # worker-3: an ETL job bound before the gate was on (no node-allocatable status), and a frontend
    legacy = pod("batch", "legacy-etl", [Box("etl", "500m", "2Gi", ("cores",))], now,
                 claims={"cores": add_claim("batch", "legacy-etl-cores", [cores(4)], ago=days * 3)}, ago=days * 3)
    frontend_3 = pod("web", "frontend-7d9f5-fghij", [Box("nginx", "2", "4Gi")], now, ago=days)

    placed = [(trainer, "worker-1", (0, 1)), (frontend_1, "worker-1", (0, 1)), (inference, "worker-2", (1, 0)),
              (database, "worker-2", (0, 1)), (frontend_3, "worker-3", (0, 1))]
    for obj, name, zones in placed:
        _bound(obj, name, claims, slices, now, zones=zones, pods=pods)
        pods.append(obj)
    _bound(legacy, "worker-3", claims, slices, now, scheduler_status=False, zones=(1, 0), pods=pods)
    pods.append(legacy)

    # new claim pods, admitted with the gate while the operator was down
    notebook = pod("ml", "notebook-a", [Box("jupyter", "1", "4Gi", ("gpu",))], now,
                   claims={"gpu": add_claim("ml", "notebook-a-gpu", [gpus(), cores(2)], ago=datetime.timedelta(
                       seconds=40))}, ago=datetime.timedelta(seconds=40))
    etl = pod("batch", "nightly-etl", [Box("etl", "500m", "1Gi", ("cores",))], now,
              claims={"cores": add_claim("batch", "nightly-etl-cores", [cores(4)], ago=datetime.timedelta(
                  seconds=25))}, ago=datetime.timedelta(seconds=25))
    pods += [gated(notebook), gated(etl)]
    return [*objects, *claims.values(), *pods]


def later_pods(
    step: str, now: datetime.datetime, slices: Sequence[Mapping[str, Any]], claims: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The objects the story adds at a step: new gated pods (and their claims, some allocated ahead).

    ``stale``: ``ml/inference-1`` joins a claim already allocated on worker-2 (held while worker-2 is Stale)
    and ``web/report-1`` asks for cores anywhere (released, kept away from worker-2).
    ``frozen``: ``ml/trainer-1`` has a claim allocated on worker-3 (held while worker-3 is Frozen).
    """
    existing = list(claims)
    if step == "stale":
        reserved = claim("ml", "inference-1-gpu", [gpus(), cores(2)], now)
        picked = allocate(reserved, "worker-2", slices, existing)
        assert picked is not None
        reserved["status"] = {"allocation": picked}
        report_claim = claim("web", "report-1-cores", [cores(2)], now)
        inference = pod("ml", "inference-1", [Box("server", "500m", "2Gi", ("gpu",))], now,
                        claims={"gpu": "inference-1-gpu"}, ago=datetime.timedelta(0))
        report = pod("web", "report-1", [Box("report", "250m", "512Mi", ("cores",))], now,
                     claims={"cores": "report-1-cores"}, ago=datetime.timedelta(0))
        return [reserved, report_claim, gated(inference), gated(report)]
    if step == "frozen":
        reserved = claim("ml", "trainer-1-accel", [gpus(), cores(4), hugepages("256Mi")], now)
        picked = allocate(reserved, "worker-3", slices, existing)
        assert picked is not None
        reserved["status"] = {"allocation": picked}
        trainer = pod("ml", "trainer-1", [Box("trainer", "1", "8Gi", ("accel",))], now,
                      claims={"accel": "trainer-1-accel"}, ago=datetime.timedelta(0))
        return [reserved, gated(trainer)]
    raise ValueError(f"no pods for step {step!r}")


def previous_ledgers(objects: Iterable[Mapping[str, Any]], now: datetime.datetime) -> list[dict[str, Any]]:
    """The ledgers the operator's previous run left behind (they turn Rebuilding when it starts again)."""
    loaded = load([dict(obj) for obj in objects], "demo")
    written = stamp(now, datetime.timedelta(minutes=7))
    out = []
    for ledger in ledgers_of(loaded, Flags(), written):
        ledger["metadata"]["creationTimestamp"] = stamp(now, datetime.timedelta(days=12))
        ledger["metadata"]["uid"] = uid("NodeAllocatableLedger", "", ledger["metadata"]["name"])
        ledger["status"]["ledgerVersion"] = 41
        ledger["status"]["mappingVersion"] = 3
        out.append(ledger)
    return out
