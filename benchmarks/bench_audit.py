"""``draledger audit -o json`` on synthetic cluster dumps, against a bare ``json.load`` of the same file.

Rules:
1. Dumps are generated from a seed: the same seed and size always give the same bytes. They are shaped like
   ``kubectl get nodes,pods,resourceslices,resourceclaims -A -o json`` (4-space indent, that kind order).
2. Every figure is a ratio against a floor measured in the same run on the same file (a bare ``json.load``),
   so figures from different machines compare. Absolute seconds are printed for context only.
3. Times are the best of ``--repeat`` runs (``time.perf_counter``); peak memory is measured in separate runs
   (tracemalloc slows what it watches), and for the real command by the child's ``ru_maxrss``.
4. Nothing here asserts a time: the targets (ratio ≤ 3, near-linear scaling) are printed, not enforced.

Run from the repository root with the project's virtualenv::

    .venv/bin/python benchmarks/bench_audit.py            # ½×, 1×, 2× of 1k nodes / 30k pods / 10k claims
    .venv/bin/python benchmarks/bench_audit.py --quick    # a tiny run, seconds
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import itertools
import json
import os
import platform
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from draledger.commands.audit import emit, ledgers_of, now_rfc3339
from draledger.commands.dumps import load_paths, parse_text, read_source
from draledger.core.accounting.ledger import Flags
from draledger.core.loading import all_problems

GiB, MiB = 1 << 30, 1 << 20
BASE = {"nodes": 1000, "pods_per_node": 30, "claims_per_node": 10}
T0 = 1_767_225_600  # 2026-01-01T00:00:00Z: every timestamp is an offset from it


# ----------------------------------------------------------------------------------------------------------
# Quantities and small helpers
# ----------------------------------------------------------------------------------------------------------
def cpu_q(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def mem_q(n: int) -> str:
    for suffix, shift in (("Gi", 30), ("Mi", 20), ("Ki", 10)):
        if n % (1 << shift) == 0:
            return f"{n >> shift}{suffix}"
    return str(n)


def stamp(offset: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(T0 + offset))


def fields_v1(value: Any, depth: int = 3, top: bool = True) -> Any:
    """A server-side-apply ``fieldsV1`` set mirroring ``value`` down to ``depth``: managedFields noise."""
    if depth == 0:
        return {}
    if isinstance(value, dict):
        out: dict[str, Any] = {} if top else {".": {}}
        for key, item in value.items():
            out[f"f:{key}"] = fields_v1(item, depth - 1, False)
        return out
    if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
        keyed: dict[str, Any] = {}
        for item in value:
            key = next((k for k in ("name", "type", "containerPort", "mountPath", "ip", "uid") if k in item), None)
            if key is not None:
                keyed["k:" + json.dumps({key: item[key]}, separators=(",", ":"))] = fields_v1(item, depth - 1, False)
        return keyed
    return {}


IMAGES = [f"registry.example.com/{team}/{app}:v{major}.{minor}.{patch}" for team, app, major, minor, patch in (
    ("payments", "api", 3, 14, 2), ("payments", "worker", 3, 14, 2), ("search", "indexer", 1, 9, 0),
    ("search", "query", 1, 9, 4), ("ml", "trainer", 0, 31, 7), ("ml", "inference", 2, 2, 1),
    ("platform", "gateway", 5, 0, 3), ("data", "etl", 4, 7, 11), ("web", "frontend", 12, 3, 0),
    ("obs", "collector", 0, 98, 0))]
SIDECARS = {"istio-proxy": "docker.io/istio/proxyv2:1.24.2", "log-shipper": "cr.fluentbit.io/fluent/fluent-bit:3.2.4",
            "otel-agent": "otel/opentelemetry-collector-contrib:0.115.1"}
CPU_CHOICES = [50, 100, 100, 200, 250, 250, 500, 500, 1000, 2000]
MEM_CHOICES = [64 * MiB, 128 * MiB, 128 * MiB, 256 * MiB, 512 * MiB, 512 * MiB, GiB, 2 * GiB]


# ----------------------------------------------------------------------------------------------------------
# The synthetic cluster
# ----------------------------------------------------------------------------------------------------------
@dataclass
class Counts:
    nodes: int = 0
    pods: int = 0
    claims: int = 0
    slices: int = 0
    counted_pods: int = 0
    claim_pods: int = 0
    terminal_pods: int = 0
    unbound_pods: int = 0
    v137_nodes: int = 0
    pods_without_scheduler_status: int = 0
    pod_samples: list[str] = field(default_factory=list)  # JSON texts of a few pods, to size them


# One claim's allocation: (device requests, allocation results, mapping part, v1.37 perPod overhead).
Allocation = tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, int], dict[str, int]]


@dataclass
class NodePlan:
    name: str
    zones: int
    gpus: int
    v137: bool
    free_cores: list[list[int]]  # per zone
    hp_free: list[int]  # bytes of 2Mi hugepages per zone
    gpu_free: list[list[int]]  # per zone


class Synth:
    """Seeded generator of one dump: per node its Node, ResourceSlices, pods and their claims."""

    CORES = 32  # per node, published by the CPU driver (of 64 physical cores; the rest stay shared)
    HP_PER_NODE = 8 * GiB

    def __init__(self, seed: int, nodes: int) -> None:
        self.rng = random.Random(seed * 1_000_003 + nodes)
        self.nodes = nodes
        self.counts = Counts()
        self.namespaces = [f"team-{i:02d}" for i in range(max(4, min(60, nodes // 15)))]

    # --- small random things ---
    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def suffix(self, n: int = 5) -> str:
        return "".join(self.rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(n))

    def rv(self) -> str:
        return str(self.rng.randrange(10_000_000, 99_999_999))

    # --- Node ---
    def node(self, plan: NodePlan, ready: bool) -> dict[str, Any]:
        r = self.rng
        labels = {
            "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": plan.name, "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": "gpu.8xlarge" if plan.gpus else "c.32xlarge",
            "topology.kubernetes.io/region": "eu-west-1",
            "topology.kubernetes.io/zone": f"eu-west-1{'abc'[r.randrange(3)]}",
            "node-role.kubernetes.io/worker": "", "feature.node.kubernetes.io/cpu-model.family": "6",
        }
        if plan.gpus:
            labels["nvidia.com/gpu.present"] = "true"
        annotations = {
            "node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            "csi.volume.kubernetes.io/nodeid": json.dumps({"ebs.csi.aws.com": f"i-{r.getrandbits(64):016x}"}),
        }
        conditions = [
            {"type": t, "status": "False", "reason": f"KubeletHas{s}", "message": f"kubelet has {m}",
             "lastHeartbeatTime": stamp(86_000), "lastTransitionTime": stamp(1_000)}
            for t, s, m in (("MemoryPressure", "SufficientMemory", "sufficient memory available"),
                            ("DiskPressure", "NoDiskPressure", "no disk pressure"),
                            ("PIDPressure", "SufficientPID", "sufficient PID available"))
        ]
        conditions.append({"type": "Ready", "status": "True" if ready else "Unknown",
                           "reason": "KubeletReady" if ready else "NodeStatusUnknown",
                           "message": "kubelet is posting ready status" if ready
                           else "Kubelet stopped posting node status.",
                           "lastHeartbeatTime": stamp(86_000), "lastTransitionTime": stamp(2_000)})
        capacity = {"cpu": "128", "memory": "528280376Ki", "ephemeral-storage": "487168Mi",
                    "hugepages-1Gi": "0", "hugepages-2Mi": mem_q(self.HP_PER_NODE), "pods": "250"}
        allocatable = dict(capacity, cpu="127500m", memory="517794616Ki", **{"ephemeral-storage": "448762426368"})
        ip = f"10.{r.randrange(256)}.{r.randrange(256)}.{r.randrange(1, 255)}"
        status = {
            "addresses": [{"address": ip, "type": "InternalIP"}, {"address": plan.name, "type": "Hostname"}],
            "allocatable": allocatable, "capacity": capacity, "conditions": conditions,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": [{"names": [f"{img}@sha256:{r.getrandbits(256):064x}", img],
                        "sizeBytes": r.randrange(10**7, 10**9)}
                       for img in r.sample(IMAGES + list(SIDECARS.values()), 12)],
            "nodeInfo": {"architecture": "amd64", "bootID": self.uid(), "containerRuntimeVersion": "containerd://2.0.2",
                         "kernelVersion": "6.8.0-1021-aws", "kubeProxyVersion": "", "kubeletVersion": "v1.36.1",
                         "machineID": f"{r.getrandbits(128):032x}", "operatingSystem": "linux",
                         "osImage": "Ubuntu 24.04.1 LTS", "systemUUID": self.uid()},
        }
        spec: dict[str, Any] = {"podCIDR": f"100.{r.randrange(64, 128)}.{r.randrange(256)}.0/24",
                                "providerID": f"aws:///eu-west-1a/i-{r.getrandbits(64):016x}"}
        if plan.gpus:
            spec["taints"] = [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "present"}]
        metadata: dict[str, Any] = {"annotations": annotations, "creationTimestamp": stamp(0), "labels": labels,
                                    "name": plan.name,
                                    "resourceVersion": self.rv(), "uid": self.uid()}
        metadata["managedFields"] = [
            {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields_v1({"metadata": {"labels": labels}}),
             "manager": "kubelet", "operation": "Update", "time": stamp(0)},
            {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields_v1({"status": status}),
             "manager": "kubelet", "operation": "Update", "subresource": "status", "time": stamp(86_000)},
        ]
        return {"apiVersion": "v1", "kind": "Node", "metadata": metadata, "spec": spec, "status": status}

    # --- ResourceSlices ---
    def slice(self, plan: NodePlan, driver: str, devices: list[dict[str, Any]], generation: int,
              count: int) -> dict[str, Any]:
        name = f"{plan.name}-{driver}-{self.suffix()}"
        return {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"creationTimestamp": stamp(500), "generateName": f"{plan.name}-{driver}-", "generation": 1,
                         "name": name, "resourceVersion": self.rv(), "uid": self.uid(),
                         "ownerReferences": [{"apiVersion": "v1", "controller": True, "kind": "Node",
                                              "name": plan.name, "uid": self.uid()}]},
            "spec": {"driver": driver, "nodeName": plan.name, "devices": devices,
                     "pool": {"generation": generation, "name": plan.name, "resourceSliceCount": count}},
        }

    def slices(self, plan: NodePlan) -> Iterator[dict[str, Any]]:
        per_zone = self.CORES // plan.zones
        core_devices = []
        for core in range(self.CORES):
            zone = core // per_zone
            device: dict[str, Any] = {"name": f"cpu-core-{core}", "attributes": {
                "dra.cpu/numaNodeID": {"int": zone}, "dra.cpu/socketID": {"int": zone * 2 // max(plan.zones, 2)},
                "dra.cpu/coreID": {"int": core}, "dra.cpu/cpuIDs": {"string": f"{core},{core + 64}"},
                "dra.cpu/coreType": {"string": "standard"}}}
            if plan.v137:
                device["nodeAllocatableResources"] = {"cpu": {"mapping": {"deviceMultiplier": "2"}}}
            else:
                device["nodeAllocatableResourceMappings"] = {"cpu": {"allocationMultiplier": "2"}}
            core_devices.append(device)
        # The CPU pool spans two slices. On some nodes the driver restarted: generation 3, and one slice of
        # generation 2 is still around (the ledger must ignore it).
        generation = 3 if self.rng.random() < 0.05 else 1
        half = self.CORES // 2
        yield self.slice(plan, "dra.cpu", core_devices[:half], generation, 2)
        yield self.slice(plan, "dra.cpu", core_devices[half:], generation, 2)
        if generation > 1:
            yield self.slice(plan, "dra.cpu", core_devices[:half], generation - 1, 2)
        if plan.gpus:
            gpus = []
            for index in range(plan.gpus):
                zone = index * plan.zones // plan.gpus
                device = {"name": f"gpu-{index}", "attributes": {
                    "numaNode": {"int": zone}, "resource.kubernetes.io/numaNode": {"int": zone},
                    "productName": {"string": "NVIDIA H100 80GB HBM3"}, "architecture": {"string": "Hopper"},
                    "uuid": {"string": f"GPU-{self.uid()}"}, "driverVersion": {"version": "570.86.15"},
                    "cudaComputeCapability": {"version": "9.0.0"}, "brand": {"string": "Nvidia"},
                    "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{zone * 64:02x}"}},
                    "capacity": {"memory": {"value": "80Gi"}, "multiprocessors": {"value": "132"}}}
                if plan.v137:  # host memory is per-pod overhead: the GPU claim may be shared
                    device["nodeAllocatableResources"] = {"memory": {"overhead": {"perPod": "16Gi"}},
                                                          "cpu": {"mapping": {"deviceMultiplier": "1"}}}
                else:
                    device["nodeAllocatableResourceMappings"] = {"memory": {"allocationMultiplier": "16Gi"},
                                                                 "cpu": {"allocationMultiplier": "1"}}
                gpus.append(device)
            yield self.slice(plan, "gpu.example.com", gpus, 1, 1)
        pages = []
        for zone in range(plan.zones):
            size = mem_q(self.HP_PER_NODE // plan.zones)
            device = {"name": f"hugepages-2mi-numa{zone}", "allowMultipleAllocations": True,
                      "attributes": {"resource.kubernetes.io/numaNode": {"int": zone}, "pageSize": {"string": "2Mi"}},
                      "capacity": {"size": {"value": size, "requestPolicy": {
                          "default": "2Mi", "validRange": {"min": "2Mi", "step": "2Mi", "max": size}}}}}
            if plan.v137:
                device["nodeAllocatableResources"] = {
                    "hugepages-2Mi": {"mapping": {"capacityKey": "size", "capacityMultiplier": "1"}}}
            else:
                device["nodeAllocatableResourceMappings"] = {"hugepages-2Mi": {"capacityKey": "size"}}
            pages.append(device)
        yield self.slice(plan, "hugepages.example.com", pages, 1, 1)

    # --- claims: allocate on the node, return (requests, results, charge) ---
    def allocate(self, plan: NodePlan, kind: str) -> Allocation | None:
        """Pick devices for one claim; returns (requests, results, mapping part, perPod overhead) or None."""
        r = self.rng
        if kind == "gpu":
            zone = next((z for z in range(plan.zones) if plan.gpu_free[z]), None)
            if zone is None:
                return None
            gpu = plan.gpu_free[zone].pop(0)
            size = min(r.choice([256, 512, 512, 1024]) * MiB, plan.hp_free[zone])
            plan.hp_free[zone] -= size
            requests = [{"name": "gpu", "exactly": {"allocationMode": "ExactCount", "count": 1,
                                                    "deviceClassName": "gpu.example.com"}},
                        {"name": "hugepages", "exactly": {"allocationMode": "ExactCount", "count": 1,
                                                          "deviceClassName": "hugepages-2mi.example.com",
                                                          "capacity": {"requests": {"size": mem_q(size)}}}}]
            results: list[dict[str, Any]] = [{"request": "gpu", "driver": "gpu.example.com", "pool": plan.name,
                                              "device": f"gpu-{gpu}"}]
            mapping = {"cpu": 1000}
            per_pod = {"memory": 16 * GiB} if plan.v137 else {}
            if not plan.v137:
                mapping["memory"] = 16 * GiB
            if size:
                results.append({"request": "hugepages", "driver": "hugepages.example.com", "pool": plan.name,
                                "device": f"hugepages-2mi-numa{zone}", "consumedCapacity": {"size": mem_q(size)},
                                "shareID": self.uid()})
                mapping["hugepages-2Mi"] = size
            return requests, results, mapping, per_pod
        if kind == "cpu":
            want = r.choice([1, 1, 2, 2, 2, 4])
            zone = max(range(plan.zones), key=lambda z: len(plan.free_cores[z]))
            take = min(want, len(plan.free_cores[zone]))
            if not take:
                return None
            cores, plan.free_cores[zone] = plan.free_cores[zone][:take], plan.free_cores[zone][take:]
            requests = [{"name": "cpus", "exactly": {"allocationMode": "ExactCount", "count": take,
                                                     "deviceClassName": "dra.cpu"}}]
            results = [{"request": "cpus", "driver": "dra.cpu", "pool": plan.name, "device": f"cpu-core-{c}"}
                       for c in cores]
            return requests, results, {"cpu": 2000 * take}, {}
        zone = max(range(plan.zones), key=lambda z: plan.hp_free[z])
        size = min(r.choice([512, 1024, 2048]) * MiB, plan.hp_free[zone])
        if not size:
            return None
        plan.hp_free[zone] -= size
        requests = [{"name": "pages", "exactly": {"allocationMode": "ExactCount", "count": 1,
                                                  "deviceClassName": "hugepages-2mi.example.com",
                                                  "capacity": {"requests": {"size": mem_q(size)}}}}]
        results = [{"request": "pages", "driver": "hugepages.example.com", "pool": plan.name,
                    "device": f"hugepages-2mi-numa{zone}", "consumedCapacity": {"size": mem_q(size)},
                    "shareID": self.uid()}]
        return requests, results, {"hugepages-2Mi": size}, {}

    def claim(self, ns: str, name: str, pod: tuple[str, str], template: str | None, requests: list[dict[str, Any]],
              results: list[dict[str, Any]] | None, node: str) -> dict[str, Any]:
        metadata: dict[str, Any] = {"creationTimestamp": stamp(3_000), "name": name, "namespace": ns,
                                    "resourceVersion": self.rv(), "uid": self.uid(),
                                    "finalizers": ["resource.kubernetes.io/delete-protection"]}
        if template:
            metadata["annotations"] = {"resource.kubernetes.io/pod-claim-name": template}
            metadata["generateName"] = name[:-5]
            metadata["ownerReferences"] = [{"apiVersion": "v1", "blockOwnerDeletion": True, "controller": True,
                                            "kind": "Pod", "name": pod[0], "uid": pod[1]}]
        spec: dict[str, Any] = {"devices": {"requests": requests}}
        if len(requests) > 1:
            spec["devices"]["constraints"] = [{"matchAttribute": "resource.kubernetes.io/numaNode",
                                               "requests": [q["name"] for q in requests]}]
        body: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": metadata,
                                "spec": spec}
        if results is not None:
            body["status"] = {
                "allocation": {"allocationTimestamp": stamp(3_001), "devices": {"results": results},
                               "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                                   {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
                "reservedFor": [{"name": pod[0], "resource": "pods", "uid": pod[1]}],
            }
        metadata["managedFields"] = [
            {"apiVersion": "resource.k8s.io/v1", "fieldsType": "FieldsV1", "manager": "kube-controller-manager",
             "operation": "Update", "time": stamp(3_000), "fieldsV1": fields_v1({"spec": spec})},
        ]
        if "status" in body:
            metadata["managedFields"].append(
                {"apiVersion": "resource.k8s.io/v1", "fieldsType": "FieldsV1", "manager": "kube-scheduler",
                 "operation": "Update", "subresource": "status", "time": stamp(3_001),
                 "fieldsV1": fields_v1({"status": body["status"]})})
        return body

    # --- Pods ---
    def container(self, name: str, image: str, claims: list[str],
                  main: bool = False) -> tuple[dict[str, Any], int, int]:
        r = self.rng
        cpu, mem = r.choice(CPU_CHOICES), r.choice(MEM_CHOICES)
        requests = {"cpu": cpu_q(cpu), "memory": mem_q(mem)}
        limits = {"memory": mem_q(mem * r.choice([1, 2]))}
        if r.random() < 0.5:
            limits["cpu"] = cpu_q(cpu * 2)
        if r.random() < 0.2:
            requests["ephemeral-storage"] = "1Gi"
        resources: dict[str, Any] = {"limits": limits, "requests": requests}
        if claims:
            resources["claims"] = [{"name": c} for c in claims]
        env: list[dict[str, Any]] = [{"name": f"{name.upper().replace('-', '_')}_SETTING_{i}",
                                      "value": r.choice(["true", "false", "info", "8080", "https://api.internal:8443",
                                                         f"{r.getrandbits(64):016x}"])}
                                     for i in range(r.randrange(0, 4))]
        if main:
            env += [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"key": "password", "name": "db"}}}]
        body: dict[str, Any] = {
            "name": name, "image": image, "imagePullPolicy": "IfNotPresent", "env": env, "resources": resources,
            "volumeMounts": [{"mountPath": "/etc/config", "name": "config", "readOnly": True},
                             {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                              "name": f"kube-api-access-{self.suffix()}", "readOnly": True},
                             {"mountPath": "/tmp", "name": "scratch"}],
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        }
        if main:
            body["securityContext"] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                       "readOnlyRootFilesystem": True, "runAsNonRoot": True}
            body["ports"] = [{"containerPort": 8080, "name": "http", "protocol": "TCP"}]
            body["readinessProbe"] = {"failureThreshold": 3, "httpGet": {"path": "/ready", "port": 8080,
                                                                         "scheme": "HTTP"},
                                      "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1}
        return body, cpu, mem

    def pod(self, ns: str, name: str, uid: str, node: str | None, phase: str,
            pod_claims: list[tuple[str, str, bool]], dra_cpu: int, statuses: list[dict[str, Any]] | None
            ) -> dict[str, Any]:
        """``pod_claims``: (pod claim name, ResourceClaim name, from template)."""
        r = self.rng
        workload = name.rsplit("-", 2)[0]
        claim_names = [c[0] for c in pod_claims]
        containers, total_cpu, total_mem = [], 0, 0
        main, cpu, mem = self.container("app", r.choice(IMAGES), claim_names, main=True)
        containers.append(main)
        total_cpu, total_mem = cpu, mem
        shares = r.random() < 0.3  # the second container references the claims too
        for extra in r.sample(["metrics-exporter", "config-reloader"], r.choice([0, 0, 0, 0, 1, 1, 2])):
            body, cpu, mem = self.container(extra, r.choice(IMAGES), claim_names if shares else [])
            containers.append(body)
            total_cpu, total_mem = total_cpu + cpu, total_mem + mem
        inits = []
        if r.random() < 0.15:
            body, cpu, mem = self.container("init-config", r.choice(IMAGES), [])
            inits.append(body)
            total_cpu, total_mem = max(total_cpu, cpu), max(total_mem, mem)
        if r.random() < 0.2:  # a native sidecar
            sidecar = r.choice(list(SIDECARS))
            body, cpu, mem = self.container(sidecar, SIDECARS[sidecar], [])
            body["restartPolicy"] = "Always"
            inits.append(body)
            total_cpu, total_mem = total_cpu + cpu, total_mem + mem
        volumes = [{"configMap": {"defaultMode": 420, "name": f"{workload}-config"}, "name": "config"},
                   {"emptyDir": {}, "name": "scratch"},
                   {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                       {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                       {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                       {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                                   "path": "namespace"}]}}]}}]
        spec: dict[str, Any] = {
            "containers": containers, "dnsPolicy": "ClusterFirst", "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority", "priority": 0, "restartPolicy": "Always",
            "schedulerName": "default-scheduler", "securityContext": {"fsGroup": 2000, "runAsUser": 1000},
            "serviceAccount": workload, "serviceAccountName": workload, "terminationGracePeriodSeconds": 30,
            "tolerations": [{"effect": "NoExecute", "key": f"node.kubernetes.io/{t}", "operator": "Exists",
                             "tolerationSeconds": 300} for t in ("not-ready", "unreachable")],
            "volumes": volumes,
        }
        if r.random() < 0.3:
            spec["topologySpreadConstraints"] = [{"labelSelector": {"matchLabels": {"app": workload}}, "maxSkew": 1,
                                                  "topologyKey": "topology.kubernetes.io/zone",
                                                  "whenUnsatisfiable": "ScheduleAnyway"}]
        if inits:
            spec["initContainers"] = inits
        if node:
            spec["nodeName"] = node
        if pod_claims:
            spec["resourceClaims"] = [{"name": n, "resourceClaimTemplateName": f"{workload}-{n}"} if tpl
                                      else {"name": n, "resourceClaimName": c} for n, c, tpl in pod_claims]
        if r.random() < 0.03:  # pod-level resources: they must cover the containers and the DRA claims
            spec["resources"] = {"requests": {"cpu": cpu_q((total_cpu + dra_cpu) // 1000 * 1000 + 1000),
                                              "memory": mem_q((total_mem // GiB + 2) * GiB)}}
        if r.random() < 0.02:
            spec["runtimeClassName"] = "kata"
            spec["overhead"] = {"cpu": "250m", "memory": "160Mi"}
        labels = {"app": workload, "app.kubernetes.io/name": workload, "app.kubernetes.io/part-of": ns,
                  "pod-template-hash": name.rsplit("-", 2)[1], "security.istio.io/tlsMode": "istio"}
        annotations = {"kubectl.kubernetes.io/restartedAt": stamp(2_500),
                       "checksum/config": f"{r.getrandbits(256):064x}"}
        metadata = {"annotations": annotations, "creationTimestamp": stamp(3_000), "generateName": name[:-5],
                    "labels": labels, "name": name, "namespace": ns, "resourceVersion": self.rv(), "uid": uid,
                    "ownerReferences": [{"apiVersion": "apps/v1", "blockOwnerDeletion": True, "controller": True,
                                         "kind": "ReplicaSet", "name": name[:-6], "uid": self.uid()}]}
        status = self.pod_status(spec, phase, pod_claims, statuses)
        metadata["managedFields"] = [
            {"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "kube-controller-manager", "operation": "Update",
             "time": stamp(3_000), "fieldsV1": fields_v1({"metadata": {k: metadata[k] for k in
                                                                       ("generateName", "labels", "ownerReferences")},
                                                          "spec": spec}, depth=2)},
            {"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "kubelet", "operation": "Update",
             "subresource": "status", "time": stamp(3_200), "fieldsV1": fields_v1({"status": status}, depth=2)},
        ]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}

    def pod_status(self, spec: dict[str, Any], phase: str, pod_claims: list[tuple[str, str, bool]],
                   statuses: list[dict[str, Any]] | None) -> dict[str, Any]:
        r = self.rng
        if "nodeName" not in spec:
            return {"phase": "Pending", "qosClass": "Burstable", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastProbeTime": None,
                 "lastTransitionTime": stamp(3_000), "message": "0/1000 nodes are available: 1000 Insufficient cpu."}]}
        running = phase == "Running"
        ip = f"100.{r.randrange(64, 128)}.{r.randrange(256)}.{r.randrange(1, 255)}"

        def container_status(c: dict[str, Any]) -> dict[str, Any]:
            state = ({"running": {"startedAt": stamp(3_100)}} if running else
                     {"terminated": {"containerID": f"containerd://{r.getrandbits(256):064x}",
                                     "exitCode": 0 if phase == "Succeeded" else 137, "finishedAt": stamp(9_000),
                                     "reason": "Completed" if phase == "Succeeded" else "Error",
                                     "startedAt": stamp(3_100)}})
            return {"containerID": f"containerd://{r.getrandbits(256):064x}", "image": c["image"],
                    "imageID": f"{c['image'].split(':')[0]}@sha256:{r.getrandbits(256):064x}", "lastState": {},
                    "name": c["name"], "ready": running, "restartCount": r.choice([0, 0, 0, 1, 3]),
                    "started": running, "state": state}

        status: dict[str, Any] = {
            "conditions": [{"type": t, "status": "True" if running or t == "PodScheduled" else "False",
                            "lastProbeTime": None, "lastTransitionTime": stamp(3_100)}
                           for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                     "PodScheduled")],
            "containerStatuses": [container_status(c) for c in spec["containers"]],
            "hostIP": ip.replace("100.", "10.", 1), "hostIPs": [{"ip": ip.replace("100.", "10.", 1)}],
            "phase": phase, "podIP": ip, "podIPs": [{"ip": ip}], "qosClass": "Burstable", "startTime": stamp(3_050),
        }
        if phase == "Failed":
            status["reason"], status["message"] = "Evicted", "The node was low on resource: memory."
        if spec.get("initContainers"):
            status["initContainerStatuses"] = [container_status(c) for c in spec["initContainers"]]
        templated = [{"name": n, "resourceClaimName": c} for n, c, tpl in pod_claims if tpl]
        if templated:
            status["resourceClaimStatuses"] = templated
        if statuses is not None:
            status["nodeAllocatableResourceClaimStatuses"] = statuses
        return status

    # --- one node and everything on it ---
    def node_objects(self, index: int) -> dict[str, list[dict[str, Any]]]:
        r = self.rng
        zones = r.choices([1, 2, 4], weights=[5, 85, 10])[0]
        gpus = 4 if r.random() < 0.5 else 0
        plan = NodePlan(name=f"worker-{index:05d}", zones=zones, gpus=gpus, v137=r.random() < 0.2,
                        free_cores=[list(range(z * self.CORES // zones, (z + 1) * self.CORES // zones))
                                    for z in range(zones)],
                        hp_free=[self.HP_PER_NODE // zones] * zones,
                        gpu_free=[[g for g in range(gpus) if g * zones // gpus == z] for z in range(zones)])
        out: dict[str, list[dict[str, Any]]] = {"nodes": [], "pods": [], "slices": [], "claims": []}
        out["nodes"].append(self.node(plan, ready=r.random() >= 0.01))
        out["slices"].extend(self.slices(plan))
        kinds = (["gpu"] * 4 + ["cpu"] * 5 + ["pages"]) if gpus else (["cpu"] * 8 + ["pages"] * 2)
        kinds = kinds[: BASE["claims_per_node"]]
        for slot in range(BASE["pods_per_node"]):
            ns = self.namespaces[r.randrange(len(self.namespaces))]
            workload = f"{r.choice(['api', 'worker', 'indexer', 'trainer', 'gateway', 'etl', 'web'])}-{r.randrange(40)}"
            name = f"{workload}-{self.suffix(9)}-{self.suffix()}"
            uid = self.uid()
            node: str | None = plan.name
            phase = "Running"
            if slot < len(kinds):
                phase = r.choices(["Running", "Succeeded", "Failed"], weights=[97, 2, 1])[0]
            elif r.random() < 0.06:
                phase = r.choice(["Succeeded", "Failed"])
            elif r.random() < 0.005:
                node, phase = None, "Pending"
            pod_claims: list[tuple[str, str, bool]] = []
            statuses: list[dict[str, Any]] | None = None
            dra_cpu = 0
            if slot < len(kinds):
                allocated = self.allocate(plan, kinds[slot]) if phase == "Running" else None
                requests = allocated[0] if allocated else [{"name": "cpus", "exactly": {
                    "allocationMode": "ExactCount", "count": 1, "deviceClassName": "dra.cpu"}}]
                claim_ref = {"gpu": "accel", "cpu": "cpus", "pages": "hugepages"}[kinds[slot]]
                template = r.random() < 0.6
                claim_name = f"{name}-{claim_ref}-{self.suffix()}" if template else f"{workload}-{claim_ref}-{slot}"
                pod_claims.append((claim_ref, claim_name, template))
                out["claims"].append(self.claim(ns, claim_name, (name, uid), claim_ref if template else None, requests,
                                                allocated[1] if allocated else None, plan.name))
                if allocated:
                    mapping, per_pod = allocated[2], allocated[3]
                    dra_cpu = mapping.get("cpu", 0)
                    if r.random() < 0.95:  # the rest were bound before the feature gate was on
                        statuses = [self.claim_status(claim_name, mapping, per_pod, plan.v137)]
                    else:
                        self.counts.pods_without_scheduler_status += 1
            body = self.pod(ns, name, uid, node, phase, pod_claims, dra_cpu, statuses)
            if statuses is not None:  # the containers that reference the claim, in spec order
                statuses[0]["containers"] = [c["name"] for c in body["spec"]["containers"]
                                             if c["resources"].get("claims")]
            out["pods"].append(body)
            c = self.counts
            c.pods += 1
            c.claim_pods += bool(pod_claims)
            c.terminal_pods += phase in ("Succeeded", "Failed")
            c.unbound_pods += node is None
            c.counted_pods += node is not None and phase == "Running"
        self.counts.nodes += 1
        self.counts.v137_nodes += plan.v137
        self.counts.slices += len(out["slices"])
        self.counts.claims += len(out["claims"])
        return out

    @staticmethod
    def claim_status(claim: str, mapping: dict[str, int], per_pod: dict[str, int], v137: bool) -> dict[str, Any]:
        """What kube-scheduler writes into the pod status for the claim (containers filled in later)."""
        def q(resource: str, amount: int) -> str:
            return cpu_q(amount) if resource == "cpu" else mem_q(amount)

        entry: dict[str, Any] = {"resourceClaimName": claim, "containers": []}
        if not v137:
            entry["resources"] = {k: q(k, v) for k, v in sorted(mapping.items())}
            return entry
        entry["mapping"] = [{"name": k, "quantity": q(k, v)} for k, v in sorted(mapping.items())]
        if per_pod:
            entry["overhead"] = [{"name": k, "perPod": q(k, v)} for k, v in sorted(per_pod.items())]
        return entry


def write_dump(path: Path, seed: int, nodes: int) -> Counts:
    """Stream the dump to ``path``: kind order nodes, pods, resourceslices, resourceclaims, as kubectl does."""
    synth = Synth(seed, nodes)
    parts = {kind: path.with_suffix(f".{kind}.part") for kind in ("nodes", "pods", "slices", "claims")}
    streams = {kind: part.open("w", encoding="utf-8") for kind, part in parts.items()}
    first = dict.fromkeys(parts, True)
    try:
        for index in range(nodes):
            for kind, items in synth.node_objects(index).items():
                for item in items:
                    text = json.dumps(item, indent=4)
                    if kind == "pods" and len(synth.counts.pod_samples) < 200:
                        synth.counts.pod_samples.append(text)
                    streams[kind].write(("" if first[kind] else ",\n") + "        " + text.replace("\n", "\n        "))
                    first[kind] = False
    finally:
        for stream in streams.values():
            stream.close()
    with path.open("w", encoding="utf-8") as out:
        out.write('{\n    "apiVersion": "v1",\n    "items": [\n')
        wrote = False
        for part in parts.values():
            if part.stat().st_size:
                if wrote:
                    out.write(",\n")
                with part.open(encoding="utf-8") as stream:
                    while chunk := stream.read(1 << 24):
                        out.write(chunk)
                wrote = True
            part.unlink()
        out.write('\n    ],\n    "kind": "List",\n    "metadata": {\n        "resourceVersion": ""\n    }\n}\n')
    return synth.counts


# ----------------------------------------------------------------------------------------------------------
# Measuring
# ----------------------------------------------------------------------------------------------------------
def interleaved(repeat: int, runs: dict[str, Callable[[], dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Best of ``repeat`` rounds for each run; the runs alternate within a round, so that a floor and the
    audit it is compared with see the same machine load. The best wall total keeps its phases; ``cpu``
    (process time) is the best on its own."""
    best: dict[str, dict[str, float]] = {}
    for _ in range(repeat):
        for name, run in runs.items():
            gc.collect()
            phases = run()
            old = best.get(name)
            if old is None:
                best[name] = phases
            else:
                cpu = min(old["cpu"], phases["cpu"])
                if phases["total"] < old["total"]:
                    best[name] = phases
                best[name]["cpu"] = cpu
    return best


def floor_once(path: str) -> dict[str, float]:
    cpu, start = time.process_time(), time.perf_counter()
    with open(path, encoding="utf-8") as stream:
        document = json.load(stream)
    total, cpu = time.perf_counter() - start, time.process_time() - cpu
    del document
    return {"total": total, "cpu": cpu}


def parse_once(path: str) -> dict[str, float]:
    """What ``load_paths`` spends before the views: read the text, json.loads with exact decimals."""
    cpu, start = time.process_time(), time.perf_counter()
    document = parse_text(read_source(path), path)
    total, cpu = time.perf_counter() - start, time.process_time() - cpu
    del document
    return {"total": total, "cpu": cpu}


def audit_once(path: str, summary: dict[str, Any] | None = None) -> dict[str, float]:
    """``draledger audit -o json -f path``, in process, phase by phase (as ``audit.run`` does it)."""
    with open(os.devnull, "w", encoding="utf-8") as devnull:
        cpu, t0 = time.process_time(), time.perf_counter()
        loaded = load_paths([path])
        t1 = time.perf_counter()
        warnings = 0
        for problem in all_problems(loaded):
            devnull.write(f"warning: {problem}\n")
            warnings += 1
        t2 = time.perf_counter()
        items = ledgers_of(loaded, Flags(), now_rfc3339())
        t3 = time.perf_counter()
        emit(items, "json", False, devnull)
        t4 = time.perf_counter()
        cpu = time.process_time() - cpu
    if summary is not None:
        phases: dict[str, int] = {}
        for item in items:
            phase = item["status"]["phase"]
            phases[phase] = phases.get(phase, 0) + 1
        diverged = sum(1 for item in items for c in item["status"]["conditions"]
                       if c["type"] == "SchedulerInSync" and c["status"] == "False")
        summary.update(ledgers=len(items), warnings=warnings, phases=phases, diverged=diverged,
                       ledger_claims=sum(item["status"]["claimCount"] for item in items))
    del loaded, items
    return {"load": t1 - t0, "problems": t2 - t1, "ledgers": t3 - t2, "emit": t4 - t3, "total": t4 - t0, "cpu": cpu}


def traced_peak(run: Callable[[], object]) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / MiB


# Linux charges a child the RSS its address space had before exec: a child forked from this (large) process
# would report our RSS. A tiny launcher process runs the command and reports its rusage instead.
LAUNCHER = """
import os, sys, time
null = os.open(os.devnull, os.O_WRONLY)
start = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, null, 1)])
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


def child(argv: list[str]) -> tuple[float, float, float, int, int]:
    """Run a command, stdout to /dev/null: (wall s, CPU s, ru_maxrss MiB, exit code, stderr lines)."""
    with tempfile.TemporaryFile() as err:
        done = subprocess.run([sys.executable, "-c", LAUNCHER, *argv], stdout=subprocess.PIPE, stderr=err,
                              check=True, text=True)
        err.seek(0)
        lines = err.read().count(b"\n")
    wall, cpu, rss, code = done.stdout.split()
    return float(wall), float(cpu), int(rss) / 1024, int(code), lines


def draledger_command() -> list[str]:
    script = Path(sys.executable).parent / "draledger"
    return [str(script)] if script.exists() else [sys.executable, "-m", "draledger"]


def decoded_kib(texts: list[str]) -> float:
    """Mean memory of one decoded pod (tracemalloc, json.loads as draledger calls it)."""
    if not texts:
        return 0.0
    from decimal import Decimal

    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        decoded = [json.loads(t, parse_float=Decimal) for t in texts]
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del decoded
    return (after - before) / len(texts) / 1024


@dataclass
class Result:
    factor: float
    counts: Counts
    file_mb: float
    generate_s: float
    pod_json_kib: tuple[float, float, float]
    pod_decoded_kib: float
    floor: dict[str, float]
    parse: dict[str, float]
    audit: dict[str, float]
    summary: dict[str, Any]
    peak_floor_mib: float | None = None
    peak_audit_mib: float | None = None
    sub_audit: tuple[float, float, float, int, int] | None = None
    sub_floor: tuple[float, float, float, int, int] | None = None

    @property
    def ratio(self) -> float:
        return self.audit["total"] / self.floor["total"]

    @property
    def cpu_ratio(self) -> float:
        return self.audit["cpu"] / self.floor["cpu"]


def measure(factor: float, args: argparse.Namespace, workdir: Path) -> Result:
    nodes = max(1, round(BASE["nodes"] * factor))
    path = workdir / f"dump-seed{args.seed}-{nodes}nodes.json"
    start = time.perf_counter()
    counts = write_dump(path, args.seed, nodes)
    generate_s = time.perf_counter() - start
    sizes = sorted(len(t.encode()) / 1024 for t in counts.pod_samples)
    pod_json = (sizes[0], statistics.median(sizes), sizes[-1]) if sizes else (0.0, 0.0, 0.0)
    decoded = decoded_kib(counts.pod_samples)
    counts.pod_samples = []
    file_mb = path.stat().st_size / 1e6
    print(f"\n== {factor:g}× : {counts.nodes} nodes, {counts.pods} pods, {counts.claims} claims, {counts.slices} "
          f"ResourceSlices  ({file_mb:.1f} MB, generated in {generate_s:.1f} s)", flush=True)
    print(f"   pods: JSON {pod_json[0]:.1f}/{pod_json[1]:.1f}/{pod_json[2]:.1f} KiB (min/median/max), decoded "
          f"{decoded:.1f} KiB each; {counts.claim_pods} use a claim, {counts.terminal_pods} terminal, "
          f"{counts.unbound_pods} unbound, {counts.pods_without_scheduler_status} claim pods without scheduler "
          f"status; {counts.v137_nodes} nodes publish the v1.37 shape", flush=True)
    p = str(path)
    summary: dict[str, Any] = {}
    best = interleaved(args.repeat, {"floor": lambda: floor_once(p), "parse": lambda: parse_once(p),
                                     "audit": lambda: audit_once(p, summary)})
    floor, parse, audit = best["floor"], best["parse"], best["audit"]
    result = Result(factor, counts, file_mb, generate_s, pod_json, decoded, floor, parse, audit, summary)
    print(f"   json.load {floor['total']:.2f} s | audit {audit['total']:.2f} s = load {audit['load']:.2f} "
          f"(of which read + json.loads {parse['total']:.2f}) + problems {audit['problems']:.2f} + ledgers "
          f"{audit['ledgers']:.2f} + emit {audit['emit']:.2f} | ratio {result.ratio:.2f} "
          f"(CPU time: {audit['cpu']:.2f} / {floor['cpu']:.2f} = {result.cpu_ratio:.2f})", flush=True)
    print(f"   {summary['ledgers']} ledgers, {summary['ledger_claims']} claims in them, phases {summary['phases']}, "
          f"{summary['diverged']} SchedulerInSync=False, {summary['warnings']} warnings", flush=True)
    if not args.no_memory:
        result.peak_floor_mib = traced_peak(lambda: floor_once(p))
        result.peak_audit_mib = traced_peak(lambda: audit_once(p))
        print(f"   tracemalloc peak: json.load {result.peak_floor_mib:.0f} MiB, audit {result.peak_audit_mib:.0f} MiB",
              flush=True)
    if not args.no_subprocess:
        result.sub_floor = child([sys.executable, "-c", "import json, sys; json.load(open(sys.argv[1]))", p])
        result.sub_audit = child([*draledger_command(), "audit", "-o", "json", "-f", p])
        wall, cpu, rss, code, lines = result.sub_audit
        print(f"   subprocess: draledger audit -o json {wall:.2f} s (CPU {cpu:.2f} s), maxrss {rss:.0f} MiB, exit "
              f"{code}, {lines} stderr lines | python -c json.load {result.sub_floor[0]:.2f} s "
              f"(CPU {result.sub_floor[1]:.2f} s), maxrss {result.sub_floor[2]:.0f} MiB", flush=True)
    if not args.keep:
        path.unlink()
    return result


def _ratio(a: float | None, b: float | None) -> str:
    return f"{b / a:.2f}" if a and b else "-"


def report(results: list[Result]) -> str:
    """The figures as Markdown tables (pasted as they are into benchmarks/results/audit.md)."""
    out = io.StringIO()
    out.write("| size | nodes / pods / claims / slices | file MB | json.load s | audit s | **ratio** | ratio, CPU "
              "time | audit subprocess s (ratio) | peak MiB audit / json.load | maxrss MiB audit / json.load |\n")
    out.write("|---|---|---|---|---|---|---|---|---|---|\n")
    for r in results:
        c = r.counts
        peak = f"{r.peak_audit_mib:.0f} / {r.peak_floor_mib:.0f}" if r.peak_audit_mib is not None else "-"
        sub = f"{r.sub_audit[0]:.2f} ({r.sub_audit[0] / r.floor['total']:.2f})" if r.sub_audit else "-"
        rss = f"{r.sub_audit[2]:.0f} / {r.sub_floor[2]:.0f}" if r.sub_audit and r.sub_floor else "-"
        out.write(f"| {r.factor:g}× | {c.nodes} / {c.pods} / {c.claims} / {c.slices} | {r.file_mb:.0f} "
                  f"| {r.floor['total']:.2f} | {r.audit['total']:.2f} | **{r.ratio:.2f}** | {r.cpu_ratio:.2f} "
                  f"| {sub} | {peak} | {rss} |\n")
    out.write("\n| in-process phase (s, and × json.load) | " + " | ".join(f"{r.factor:g}×" for r in results) + " |\n")
    out.write("|---|" + "---|" * len(results) + "\n")
    for phase, label in (("load", "`load_paths`: read + json.loads + views"), ("problems", "`all_problems`"),
                         ("ledgers", "`ledgers_of`: compute + pydantic status"),
                         ("emit", "`emit`: json.dump(indent=2)"), ("total", "total")):
        out.write(f"| {label} | " + " | ".join(f"{r.audit[phase]:.2f} ({r.audit[phase] / r.floor['total']:.2f}×)"
                                               for r in results) + " |\n")
    out.write("| (part of `load_paths`: read + json.loads(parse_float=Decimal)) | "
              + " | ".join(f"{r.parse['total']:.2f} ({r.parse['total'] / r.floor['total']:.2f}×)" for r in results)
              + " |\n")
    ordered = sorted(results, key=lambda r: r.counts.nodes)
    if len(ordered) > 1:
        out.write("\n| scaling (time ratio) | size ratio (linear) | json.load | audit | audit, CPU time "
                  "| audit subprocess | peak MiB |\n")
        out.write("|---|---|---|---|---|---|---|\n")
        for small, big in itertools.pairwise(ordered):
            out.write(f"| {big.factor:g}× / {small.factor:g}× | {big.counts.nodes / small.counts.nodes:.2f} "
                      f"| {_ratio(small.floor['total'], big.floor['total'])} "
                      f"| {_ratio(small.audit['total'], big.audit['total'])} "
                      f"| {_ratio(small.audit['cpu'], big.audit['cpu'])} "
                      f"| {_ratio(small.sub_audit and small.sub_audit[0], big.sub_audit and big.sub_audit[0])} "
                      f"| {_ratio(small.peak_audit_mib, big.peak_audit_mib)} |\n")
    return out.getvalue()


def profile(factor: float, args: argparse.Namespace, workdir: Path) -> None:
    nodes = max(1, round(BASE["nodes"] * factor))
    path = workdir / f"dump-seed{args.seed}-{nodes}nodes.json"
    if not path.exists():
        write_dump(path, args.seed, nodes)
    profiler = cProfile.Profile()
    gc.collect()
    profiler.enable()
    audit_once(str(path))
    profiler.disable()
    stats = pstats.Stats(profiler)
    total = stats.total_tt  # type: ignore[attr-defined]
    print(f"\n== cProfile of one in-process audit, {factor:g}× ({nodes} nodes): {total:.2f} s profiled")
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)  # type: ignore[attr-defined]
    print(f"   {'own s':>7} {'own %':>6} {'cum s':>7} {'cum %':>6} {'calls':>10}  function")
    for (filename, line, name), (_cc, calls, tt, ct, _callers) in rows[: args.profile_top]:
        where = filename.split("/draledger/")[-1] if "/draledger/" in filename else Path(filename).name
        print(f"   {tt:7.2f} {100 * tt / total:5.1f}% {ct:7.2f} {100 * ct / total:5.1f}% {calls:10d}  "
              f"{where}:{line}({name})")
    if args.profile_out:
        stats.dump_stats(args.profile_out)
        print(f"   (pstats written to {args.profile_out})")
    if not args.keep:
        path.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="0.5,1,2",
                        help="comma-separated multiples of 1k nodes / 30k pods / 10k claims (default 0.5,1,2)")
    parser.add_argument("--repeat", type=int, default=3, help="best of N for every time (default 3)")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (0.02,0.04), one repeat: a smoke run")
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc runs (they are slow)")
    parser.add_argument("--no-subprocess", action="store_true", help="skip the real `draledger audit` runs")
    parser.add_argument("--no-gc", action="store_true",
                        help="experiment: run the in-process floor and audit with the garbage collector disabled")
    parser.add_argument("--keep", metavar="DIR", help="write the dumps to DIR and keep them (default: a temp dir)")
    parser.add_argument("--profile", metavar="SIZE", type=float,
                        help="after measuring, cProfile one in-process audit at this size")
    parser.add_argument("--profile-only", action="store_true", help="with --profile: skip the measurements")
    parser.add_argument("--profile-top", type=int, default=30)
    parser.add_argument("--profile-out", metavar="FILE", help="also write the pstats file")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.repeat = "0.02,0.04", 1
    factors = [float(s) for s in args.sizes.split(",") if s.strip()]
    print(f"bench_audit: Python {platform.python_version()} ({platform.python_implementation()}), "
          f"{os.cpu_count()} CPUs, {platform.machine()}, {platform.system()} {platform.release()}; "
          f"seed {args.seed}, best of {args.repeat}; load average {os.getloadavg()[0]:.2f}"
          + ("; GC DISABLED in process" if args.no_gc else ""))
    if args.no_gc:
        gc.disable()
    with tempfile.TemporaryDirectory(prefix="bench-audit-") as tmp:
        workdir = Path(args.keep) if args.keep else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        results = [] if args.profile_only else [measure(f, args, workdir) for f in factors]
        if results:
            print("\n" + report(results))
            print("Targets: ratio ≤ 3 (audit vs json.load of the same file); scaling near the size ratio (2.00). "
                  f"Load average at the end: {os.getloadavg()[0]:.2f}.")
        if args.profile is not None:
            profile(args.profile, args, workdir)


if __name__ == "__main__":
    main()
