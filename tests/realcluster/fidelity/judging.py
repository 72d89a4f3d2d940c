"""Judging the project against what the real scheduler did with one case: every difference is a disagreement.

Rules (issue 12, "Fidelity, differentially"):
1. Statuses: for every pod the scheduler bound, what the project would write as its
   ``status.nodeAllocatableResourceClaimStatuses`` (``accounting.statuses.planned_statuses``) equals what the
   scheduler wrote: same claims, same containers in the same order, quantities equal as numbers (the API server
   canonicalises quantities, so a backfill lands in the server's notation whatever we send).
2. Charges: every ledger's ``schedulerCharged`` equals the sum of the scheduler's statuses on its node, and its
   ``claims`` equal that (the ledger counts what the scheduler charged: ``SchedulerInSync``).
3. Fit: a pod the scheduler left unschedulable with ``Insufficient <r>`` is one the ledger says does not fit on its
   node: the ledger of the node with that pod bound there, its claims allocated as the scheduler would (any free
   devices of the right class: they all map alike, generating rule 2), has ``free_units[r] < 0``. A node with only
   scheduler-bound pods always fits. Judged in the scheduler's integer units. A pod the scheduler cannot bind
   (its PreBind fails, e.g. kube-scheduler v1.37.2 writes a container twice in the claim statuses of a container
   that names one claim through two requests, which the API server refuses as ``Duplicate value``) is retried
   for ever and charged by the scheduler while each attempt holds it (assumed), never by the ledger (it is not
   bound): a refusal that such pods on the node explain, counted as bound, is no disagreement.
4. Probes: a claim-free pod asking for a node's ``free_units + 1`` is refused as ``Insufficient``; one asking for
   exactly ``free_units`` is bound (rule 4 of ``running``).
5. Rejections: every object the real API refused, fed to ``audit`` as part of its case's dump, is named by a
   problem; and no object the API accepted is refused by the project (only flagged).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Any

from draledger.core.accounting.ledger import Flags, Ledger
from draledger.core.accounting.statuses import planned_statuses
from draledger.core.loading import Loaded, all_problems, load
from draledger.core.quantities import parse_quantity
from tests.realcluster.fidelity.generating import NUMA_ATTRIBUTES, Case
from tests.realcluster.fidelity.running import Outcome

FLAGS = Flags()
PROBE_RESOURCES = ("cpu", "memory")


@dataclass(frozen=True, slots=True)
class Disagreement:
    case: str
    rule: str  # statuses | charges | fit | probe | rejection
    subject: str  # the pod, node or object
    detail: str

    def __str__(self) -> str:
        return f"{self.case}: [{self.rule}] {self.subject}: {self.detail}"


def loaded(items: list[dict[str, Any]], release: Any) -> Loaded:
    """The objects under the release the case ran on (v1.38's objects look like v1.37's: it is never guessed)."""
    return load(copy.deepcopy(items), "dump", release, attributes=NUMA_ATTRIBUTES)


def ledgers(state_items: list[dict[str, Any]], release: Any) -> dict[str, Ledger]:
    state = loaded(state_items, release).state
    out = {}
    for node in state.nodes:
        ledger = state.ledger(node, FLAGS)
        assert ledger is not None
        out[node] = ledger
    return out


def _numbers(entries: Any) -> list[Any]:
    """Statuses with every quantity as a Decimal (entries sorted by claim name, as both sides sort them)."""
    out = []
    for entry in entries or []:
        # an empty list is left out by the API server (omitempty): absent and empty are the same
        normal: dict[str, Any] = {"claim": entry.get("resourceClaimName"), "containers": entry.get("containers") or []}
        if "resources" in entry:
            normal["resources"] = {k: parse_quantity(v).value for k, v in (entry["resources"] or {}).items()}
        if "mapping" in entry:
            normal["mapping"] = {m["name"]: parse_quantity(m["quantity"]).value for m in entry["mapping"] or []}
        if entry.get("overhead"):
            normal["overhead"] = {o["name"]: (parse_quantity(o.get("perPod", "0")).value,
                                              parse_quantity(o.get("perContainer", "0")).value)
                                  for o in entry["overhead"]}
        out.append(normal)
    return sorted(out, key=lambda e: str(e["claim"]))


def judge_statuses(outcome: Outcome) -> list[Disagreement]:
    state = loaded(outcome.dump, outcome.case.release).state
    found = []
    for (ns, name), pod in sorted(state.pods.items()):
        if not pod.node_name or name.startswith("probe-"):
            continue
        raw = next(p for p in outcome.dump if p["kind"] == "Pod" and p["metadata"]["name"] == name)
        actual = raw.get("status", {}).get("nodeAllocatableResourceClaimStatuses")
        planned = planned_statuses(pod, state.uses(pod), state.release)
        if planned is None:
            if actual:
                found.append(Disagreement(ns, "statuses", f"Pod/{name}", f"the project is unsure; scheduler: {actual}"))
            continue
        if _numbers(planned) != _numbers(actual):
            found.append(Disagreement(ns, "statuses", f"Pod/{name}", f"project {planned} != scheduler {actual}"))
    return found


def judge_charges(outcome: Outcome) -> list[Disagreement]:
    found = []
    charged: dict[tuple[str, str], Decimal] = {}
    for pod in outcome.dump:
        if pod["kind"] != "Pod" or not pod["spec"].get("nodeName"):
            continue
        for entry in pod.get("status", {}).get("nodeAllocatableResourceClaimStatuses") or []:
            amounts = {k: parse_quantity(v).value for k, v in (entry.get("resources") or {}).items()}
            for m in entry.get("mapping") or []:
                amounts[m["name"]] = amounts.get(m["name"], Decimal(0)) + parse_quantity(m["quantity"]).value
            for o in entry.get("overhead") or []:
                extra = parse_quantity(o.get("perPod", "0")).value + parse_quantity(
                    o.get("perContainer", "0")).value * len(entry.get("containers") or [])
                amounts[o["name"]] = amounts.get(o["name"], Decimal(0)) + extra
            for resource, value in amounts.items():
                key = (pod["spec"]["nodeName"], resource)
                charged[key] = charged.get(key, Decimal(0)) + value
    for node, ledger in sorted(ledgers(outcome.dump, outcome.case.release).items()):
        for resource, line in ledger.resources.items():
            expected = charged.get((node, resource), Decimal(0))
            if line.scheduler_charged.value != expected:
                found.append(Disagreement(outcome.case.namespace, "charges", f"Node/{node}",
                                          f"{resource}: schedulerCharged {line.scheduler_charged} != {expected}"))
            if line.claims.value != expected:
                found.append(Disagreement(outcome.case.namespace, "charges", f"Node/{node}",
                                          f"{resource}: ledger claims {line.claims} != scheduler {expected}"))
        resized = bool(outcome.case.resizes)
        for resource, line in ledger.resources.items():
            if line.free_units < 0 and not resized:  # a resize is admitted by the kubelet, not the scheduler
                found.append(Disagreement(outcome.case.namespace, "fit", f"Node/{node}",
                                          f"{resource}: the ledger says the scheduler's own bindings do not fit "
                                          f"({line.requested_units} > {line.allocatable_units})"))
    return found


def _unschedulable(pod: dict[str, Any]) -> str:
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return str(condition.get("message") or "")
    return ""


def _consumed(device: dict[str, Any], key: str, requested: str | None) -> str:
    """consumedCapacity as the allocator computes it (structured/internal/*/consumable_capacity.go, roundUpRange
    without DRAFractionalCapacityRange): the default when nothing is asked; else, at least the range's minimum,
    rounded up in whole units (``Value()``, which rounds up) to the next step above the minimum."""
    capacity = device["capacity"][key]
    policy = capacity.get("requestPolicy") or {}
    if requested is None:
        return str(policy.get("default") or capacity["value"])
    want = parse_quantity(requested).value
    valid = policy.get("validRange") or {}
    low = parse_quantity(valid.get("min", "0")).value
    if want < low:
        return str(valid.get("min"))
    if not valid.get("step"):
        return requested

    def whole(value: Decimal) -> int:
        return int(value.to_integral_value(rounding=ROUND_CEILING))

    step, base = whole(parse_quantity(valid["step"]).value), whole(low)
    added = whole(want) - base
    return str(base + -(-added // step) * step)


def would_be(case: Case, outcome: Outcome, pod: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The case's dump with ``pod`` bound to its node and its claims allocated on free devices of their class
    (None when the devices do not suffice: the scheduler could not allocate either)."""
    items = copy.deepcopy(outcome.dump)
    node = pod["spec"]["nodeSelector"]["fidelity.draledger.dev/node"]
    used = {(r["pool"], r["device"]) for c in items if c["kind"] == "ResourceClaim"
            for r in (c.get("status", {}).get("allocation") or {}).get("devices", {}).get("results", [])}
    devices = [(s["spec"]["pool"]["name"], d) for s in items if s["kind"] == "ResourceSlice"
               and s["spec"]["nodeName"] == node for d in s["spec"]["devices"]]
    by_name = {(c["metadata"]["name"]): c for c in items if c["kind"] == "ResourceClaim"}
    for pod_claim in pod["spec"].get("resourceClaims") or []:
        name = pod_claim.get("resourceClaimName") or next(
            (s.get("resourceClaimName") for s in pod.get("status", {}).get("resourceClaimStatuses") or []
             if s["name"] == pod_claim["name"]), None)
        claim = by_name.get(name or "")
        if claim is None or (claim.get("status") or {}).get("allocation"):
            continue
        results = []
        for request in claim["spec"]["devices"]["requests"]:
            exact = request["exactly"]
            kind = exact["deviceClassName"].rsplit("-", 1)[1]  # classes are named <namespace>-<kind>
            for _ in range(exact.get("count", 1)):
                free = [(pool, d) for pool, d in devices if d["attributes"]["kind"]["string"] == kind
                        and (d.get("allowMultipleAllocations") or (pool, d["name"]) not in used)]
                if not free:
                    return None
                pool, device = free[0]
                used.add((pool, device["name"]))
                result: dict[str, Any] = {"request": request["name"], "driver": case.driver, "pool": pool,
                                          "device": device["name"]}
                if device.get("allowMultipleAllocations"):
                    asked = (exact.get("capacity") or {}).get("requests") or {}
                    result["consumedCapacity"] = {key: _consumed(device, key, asked.get(key))
                                                  for key in device["capacity"]}
                results.append(result)
        claim.setdefault("status", {})["allocation"] = {"devices": {"results": results}}
    for item in items:
        if item["kind"] == "Pod" and item["metadata"]["name"] == pod["metadata"]["name"]:
            item["spec"]["nodeName"] = node
            item.setdefault("status", {})["phase"] = "Pending"
    return items


def _stuck_in_prebind(outcome: Outcome, node: str) -> list[str]:
    """The unbound pods for ``node`` whose binding fails at PreBind (the scheduler assumes them, rule 3)."""
    return [pod["metadata"]["name"] for pod in outcome.dump
            if pod["kind"] == "Pod" and not pod["spec"].get("nodeName")
            and (pod["spec"].get("nodeSelector") or {}).get("fidelity.draledger.dev/node") == node
            and "running PreBind plugin" in _unschedulable(pod)]


def _bound(items: list[dict[str, Any]], names: list[str], node: str) -> list[dict[str, Any]]:
    for item in items:
        if item["kind"] == "Pod" and item["metadata"]["name"] in names:
            item["spec"]["nodeName"] = node
    return items


def judge_fit(outcome: Outcome) -> list[Disagreement]:
    found = []
    for pod in outcome.dump:
        if pod["kind"] != "Pod" or pod["spec"].get("nodeName") or pod["metadata"]["name"].startswith("probe-"):
            continue
        message = _unschedulable(pod)
        insufficient = sorted({r for r in ("cpu", "memory", "ephemeral-storage", "hugepages-2Mi", "hugepages-1Gi")
                               if f"Insufficient {r}" in message})
        if not insufficient:
            continue
        items = would_be(outcome.case, outcome, pod)
        if items is None:
            continue
        node = pod["spec"]["nodeSelector"]["fidelity.draledger.dev/node"]
        ledger = ledgers(items, outcome.case.release)[node]
        stuck = _stuck_in_prebind(outcome, node)
        assumed = ledgers(_bound(items, stuck, node), outcome.case.release)[node] if stuck else ledger
        for resource in insufficient:
            line = ledger.resources.get(resource)
            explained = assumed.resources.get(resource)
            if explained is not None and explained.free_units < 0 <= (line.free_units if line else 0):
                continue  # the scheduler charged a pod it keeps failing to bind (rule 3)
            if line is None or line.free_units >= 0:
                found.append(Disagreement(outcome.case.namespace, "fit", f"Pod/{pod['metadata']['name']}",
                                          f"scheduler: Insufficient {resource}; the ledger says it fits "
                                          f"({line.free_units if line else 'no line'} left in scheduler units)"))
    return found


def judge_probes(outcome: Outcome) -> list[Disagreement]:
    found = []
    for probe in outcome.probes:
        name = probe["metadata"]["name"]
        resource = next(iter(probe["spec"]["containers"][0]["resources"]["requests"]))
        bound = bool(probe["spec"].get("nodeName"))
        if name.endswith("-over"):
            if bound or f"Insufficient {resource}" not in _unschedulable(probe):
                found.append(Disagreement(outcome.case.namespace, "probe", f"Pod/{name}",
                                          f"asked one unit more than the ledger's free {resource}: "
                                          f"bound={bound}, {_unschedulable(probe)!r}"))
        elif not bound:
            found.append(Disagreement(outcome.case.namespace, "probe", f"Pod/{name}",
                                      f"asked exactly the ledger's free {resource}: {_unschedulable(probe)!r}"))
    return found


def judge_rejections(outcome: Outcome) -> list[Disagreement]:
    """Every refused object is named by a problem when it comes from a dump (rule 5)."""
    found = []
    case = outcome.case
    for ref, (code, message) in sorted(outcome.rejected.items()):
        kind, name = ref.split("/", 1)
        if "/" in name:  # a refused subresource write (a resize): nothing to feed to audit
            continue
        obj = next((o for o in case.objects if o["kind"] == kind and o["metadata"]["name"] == name), None)
        if obj is None or kind not in ("ResourceSlice", "ResourceClaim", "Pod"):
            continue
        items = [*outcome.dump, {**copy.deepcopy(obj), "metadata": {**obj["metadata"], "uid": f"uid-{name}"}}]
        state_items = loaded(items, case.release)
        problems = list(all_problems(state_items))
        for ledger in ledgers(items, case.release).values():
            problems.extend(ledger.problems)
        if not any(p.obj is not None and p.obj.kind == kind and p.obj.name == name for p in problems):
            found.append(Disagreement(case.namespace, "rejection", ref,
                                      f"the API refused it ({code}: {message[:200]}); audit flags nothing"))
    return found


def judge(outcome: Outcome) -> list[Disagreement]:
    return [*judge_statuses(outcome), *judge_charges(outcome), *judge_fit(outcome),
            *judge_probes(outcome), *judge_rejections(outcome)]
