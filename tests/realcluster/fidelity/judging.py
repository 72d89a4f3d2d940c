"""Judging the project against what the real scheduler did with one case: every difference is a disagreement.

Rules (issue 12, "Fidelity, differentially"; issue 23):
1. Statuses: for every pod the scheduler bound with its gate on, what the project would write as its
   ``status.nodeAllocatableResourceClaimStatuses`` (``accounting.statuses.planned_statuses``) equals what the
   scheduler wrote: same claims, same containers in the same order, quantities equal as numbers (the API server
   canonicalises quantities, so a backfill lands in the server's notation whatever we send). Pods bound by
   ``nodeName``, while the scheduler's gate was off, or by v1.36.3 with claims allocated in an earlier attempt got
   no status from it (they are "uncharged").
2. Charges: every ledger's ``schedulerCharged`` equals the sum of the scheduler's statuses on its node; its
   ``claims`` equal that plus what the project plans for the node's uncharged pods; where there are none, the
   ledger's own account and the scheduler's agree (``free_units == scheduler_free_units``); the scheduler's own
   bindings fit in its own account (``scheduler_free_units >= 0``) unless a kubelet admitted a resize or pods
   were bound while the gate was off.
3. Fit: a pod the scheduler left unschedulable with ``Insufficient <r>`` needs more than the scheduler's account
   leaves (``scheduler_free_units``) by the ledger: its footprint, with its claims allocated as the scheduler would
   (fidelity/allocating.py), in the scheduler's integer units. A pod the scheduler cannot bind (its PreBind fails
   for ever, e.g. v1.37.2 writes a container twice in the claim statuses, which the API refuses as ``Duplicate
   value``) is charged by the scheduler while each attempt holds it (assumed), never by the ledger (it is not
   bound): a refusal that such pods on the node explain, counted as bound, is no disagreement.
4. Probes: a claim-free pod asking for one unit more than ``scheduler_free_units`` is refused as ``Insufficient``;
   one asking for exactly that is bound, unless a pod the scheduler keeps failing to bind is assumed on the node.
5. Rejections, zones, pools and the incomplete-pool window: fidelity/shaping.py; ``judge`` applies them all.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from draledger.core.accounting.ledger import Flags, Ledger
from draledger.core.accounting.statuses import planned_statuses
from draledger.core.loading import Loaded, load
from draledger.core.quantities import parse_quantity
from tests.realcluster.fidelity.allocating import would_be
from tests.realcluster.fidelity.devices import NUMA_ATTRIBUTES
from tests.realcluster.fidelity.running import PROBE_LABEL, Outcome, unscheduled_message

FLAGS = Flags()
NODE_LABEL = "fidelity.draledger.dev/node"
FIT_RESOURCES = ("cpu", "memory", "ephemeral-storage", "hugepages-2Mi", "hugepages-1Gi")


@dataclass(frozen=True, slots=True)
class Disagreement:
    case: str
    rule: str  # statuses | charges | fit | probe | rejection | zones | pools | window
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


def _retried_v136(outcome: Outcome) -> set[str]:
    """v1.36.3's pods bound on a later attempt than the one that allocated their claims: two ``spec.resourceClaims``
    entries naming one claim fail the first PreBind (the second reservation is a ``Duplicate value``) after the
    first reservation was written, and the next attempt binds the pod with its claim allocated before: v1.36.3
    writes status entries only for claims allocated in the pod's own cycle (docs/accounting.md lists both)."""
    if outcome.case.release != "v1.36":
        return set()
    out = set()
    for pod in outcome.dump:
        if pod["kind"] != "Pod" or not pod["spec"].get("nodeName") or (pod.get("status") or {}).get(
                "nodeAllocatableResourceClaimStatuses"):
            continue
        named = [c.get("resourceClaimName") for c in pod["spec"].get("resourceClaims") or () if c.get(
            "resourceClaimName")]
        if len(named) != len(set(named)):
            out.add(pod["metadata"]["name"])
    return out


def uncharged(outcome: Outcome) -> set[str]:
    """Rule 1: the bound pods the scheduler never charged for their claims."""
    outside = {o["metadata"]["name"] for o in outcome.case.later.get("outside", ())}
    return outside | outcome.gate_off | _retried_v136(outcome)


def _shares_with(pod: Any, state: Any, skipped: set[str]) -> bool:
    """Whether the pod shares a claim with an uncharged pod: a mapped claim shared across pods has no single right
    status (``planned_statuses`` rule 5), and the scheduler, which never saw the other pod, wrote one."""
    return any(other[1] in skipped for claim in pod.claims if claim.claim_name
               for other in state.objects.consumers((pod.namespace, claim.claim_name)) if other != pod.key)


def judge_statuses(outcome: Outcome) -> list[Disagreement]:
    state = loaded(outcome.dump, outcome.case.release).state
    skipped = uncharged(outcome)
    found = []
    for (ns, name), pod in sorted(state.pods.items()):
        if not pod.node_name or name.startswith("probe-") or name in skipped:
            continue
        raw = next(p for p in outcome.dump if p["kind"] == "Pod" and p["metadata"]["name"] == name)
        actual = raw.get("status", {}).get("nodeAllocatableResourceClaimStatuses")
        planned = planned_statuses(pod, state.uses(pod), state.release)
        if planned is None:
            if actual and not _shares_with(pod, state, skipped):
                found.append(Disagreement(ns, "statuses", f"Pod/{name}", f"the project is unsure; scheduler: {actual}"))
            continue
        if _numbers(planned) != _numbers(actual):
            found.append(Disagreement(ns, "statuses", f"Pod/{name}", f"project {planned} != scheduler {actual}"))
    return found


def _entry_charge(entry: dict[str, Any]) -> dict[str, Decimal]:
    amounts = {k: parse_quantity(v).value for k, v in (entry.get("resources") or {}).items()}
    for m in entry.get("mapping") or []:
        amounts[m["name"]] = amounts.get(m["name"], Decimal(0)) + parse_quantity(m["quantity"]).value
    for o in entry.get("overhead") or []:
        extra = parse_quantity(o.get("perPod", "0")).value + parse_quantity(
            o.get("perContainer", "0")).value * len(entry.get("containers") or [])
        amounts[o["name"]] = amounts.get(o["name"], Decimal(0)) + extra
    return amounts


def judge_charges(outcome: Outcome) -> list[Disagreement]:
    """Rule 2."""
    found, case = [], outcome.case
    state = loaded(outcome.dump, case.release).state
    skipped = uncharged(outcome)
    charged: dict[tuple[str, str], Decimal] = {}
    planned: dict[tuple[str, str], Decimal] = {}
    unsure: set[str] = set()
    for pod in outcome.dump:
        node = pod["spec"].get("nodeName") if pod["kind"] == "Pod" else None
        if not node:
            continue
        entries = pod.get("status", {}).get("nodeAllocatableResourceClaimStatuses") or []
        name = pod["metadata"]["name"]
        if name in skipped:
            view = state.pods[(case.namespace, name)]
            plan = planned_statuses(view, state.uses(view), state.release)
            if plan is None:
                unsure.add(node)
            entries = plan or []
        for entry in entries:
            into = planned if name in skipped else charged
            for resource, value in _entry_charge(entry).items():
                into[(node, resource)] = into.get((node, resource), Decimal(0)) + value
    resized = {p["spec"].get("nodeName") for p in outcome.dump if p["kind"] == "Pod"
               and p["metadata"]["name"] in case.resizes}
    off = {p["spec"].get("nodeName") for p in outcome.dump if p["kind"] == "Pod" and p["metadata"]["name"] in skipped}
    for node, ledger in sorted(ledgers(outcome.dump, case.release).items()):
        for resource, line in ledger.resources.items():
            scheduler = charged.get((node, resource), Decimal(0))
            expected = scheduler + planned.get((node, resource), Decimal(0))
            if line.scheduler_charged.value != scheduler:
                found.append(Disagreement(case.namespace, "charges", f"Node/{node}",
                                          f"{resource}: schedulerCharged {line.scheduler_charged} != {scheduler}"))
            if node not in unsure and line.claims.value != expected:
                found.append(Disagreement(case.namespace, "charges", f"Node/{node}",
                                          f"{resource}: ledger claims {line.claims} != scheduler {scheduler}"
                                          f" + planned for uncharged pods {expected - scheduler}"))
            if node not in off and line.free_units != line.scheduler_free_units:
                found.append(Disagreement(case.namespace, "charges", f"Node/{node}",
                                          f"{resource}: free {line.free_units} != what the scheduler leaves "
                                          f"{line.scheduler_free_units}, with no pod it did not charge"))
            if line.scheduler_free_units < 0 and node not in resized | off:
                found.append(Disagreement(case.namespace, "fit", f"Node/{node}",
                                          f"{resource}: the ledger says the scheduler's own bindings do not fit "
                                          f"({line.scheduler_requested_units} > {line.allocatable_units})"))
    return found


def stuck_in_prebind(dump: list[dict[str, Any]], node: str) -> list[str]:
    """The unbound pods for ``node`` whose binding fails at PreBind (the scheduler assumes them, rule 3)."""
    return [pod["metadata"]["name"] for pod in dump
            if pod["kind"] == "Pod" and not pod["spec"].get("nodeName")
            and (pod["spec"].get("nodeSelector") or {}).get(NODE_LABEL) == node
            and "running PreBind plugin" in unscheduled_message(pod)]


def _bound(items: list[dict[str, Any]], names: list[str], node: str) -> list[dict[str, Any]]:
    items = copy.deepcopy(items)
    for item in items:
        if item["kind"] == "Pod" and item["metadata"]["name"] in names:
            item["spec"]["nodeName"] = node
    return items


def extended_classes(outcome: Outcome) -> dict[str, str]:
    """The case's extended resource name -> the DeviceClass of the kind it selects (``<ns>-<kind>``)."""
    return {o["spec"]["extendedResourceName"]: o["metadata"]["name"].removesuffix("-ext")
            for o in outcome.case.objects if o["kind"] == "DeviceClass" and o["spec"].get("extendedResourceName")}


def judge_fit(outcome: Outcome) -> list[Disagreement]:
    """Rule 3."""
    found, release = [], outcome.case.release
    before = ledgers(outcome.dump, release)
    for pod in outcome.dump:
        if pod["kind"] != "Pod" or pod["spec"].get("nodeName") or pod["metadata"]["name"].startswith("probe-"):
            continue
        message = unscheduled_message(pod)
        insufficient = sorted({r for r in FIT_RESOURCES if f"Insufficient {r}" in message})
        if not insufficient:
            continue
        items = would_be(outcome.dump, pod, extended_classes(outcome))
        if items is None:
            continue
        node = pod["spec"]["nodeSelector"][NODE_LABEL]
        after = ledgers(items, release)[node]
        stuck = stuck_in_prebind(outcome.dump, node)
        assumed = ledgers(_bound(outcome.dump, stuck, node), release)[node] if stuck else before[node]
        for resource in insufficient:
            line, was = after.resources.get(resource), before[node].resources.get(resource)
            need = (line.requested_units if line else 0) - (was.requested_units if was else 0)
            left = was.scheduler_free_units if was else (line.allocatable_units if line else 0)
            held = assumed.resources.get(resource)
            if stuck and held is not None and need > held.free_units:
                continue  # the scheduler charged a pod it keeps failing to bind, with its claims (rule 3)
            if need <= left:
                found.append(Disagreement(outcome.case.namespace, "fit", f"Pod/{pod['metadata']['name']}",
                                          f"scheduler: Insufficient {resource}; the ledger says it fits "
                                          f"(needs {need}, {left} left in scheduler units)"))
    return found


def judge_probes(outcome: Outcome) -> list[Disagreement]:
    """Rule 4."""
    found = []
    for probe in outcome.probes:
        name = probe["metadata"]["name"]
        resource = probe["metadata"]["labels"][PROBE_LABEL]
        bound = bool(probe["spec"].get("nodeName"))
        node = probe["spec"]["nodeSelector"][NODE_LABEL]
        if name.endswith("-over"):
            if bound or f"Insufficient {resource}" not in unscheduled_message(probe):
                found.append(Disagreement(outcome.case.namespace, "probe", f"Pod/{name}",
                                          f"asked one unit more than the scheduler's free {resource} by the "
                                          f"ledger: bound={bound}, {unscheduled_message(probe)!r}"))
        elif not bound and not stuck_in_prebind(outcome.dump, node):
            found.append(Disagreement(outcome.case.namespace, "probe", f"Pod/{name}",
                                      f"asked exactly the scheduler's free {resource} by the ledger: "
                                      f"{unscheduled_message(probe)!r}"))
    return found
