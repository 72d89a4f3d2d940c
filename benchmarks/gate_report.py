"""The gate benchmark's report: Markdown tables from the figures bench_gate.py measured (no I/O).

The targets (issue 26), judged on the faster gate's figures of one run: the gate adds ≤ 50 ms to the p50 and
≤ 250 ms to the p99 of a claim pod's time to bind; the scheduler binds at ≥ 0.95 × its ungated rate; and no pod
waits on our gate (past its first 250 ms) at any moment the scheduler's active and backoff queues are empty.
Each is also judged on the floor's figures (the same gate released by a process that does nothing else): a
target the floor misses is stopped by the floor, since no design that gates the pods meets it on that machine,
and the report says so. With the Kopf floor (the same releaser fed by a Kopf operator that watches what dra-ledger
watches), each target is judged on it too: a target it misses is stopped by Kopf's delivery of those events, since
no design built on Kopf meets it on that machine.
"""

from __future__ import annotations

from typing import Any

from gate_figures import operator_process

TARGETS = {"added_p50_ms": 50.0, "added_p99_ms": 250.0, "throughput_ratio": 0.95}
NAMES = {"none": "no dra-ledger", "floor": "gate, no accounting (the floor)",
         "kopf-floor": "gate, no accounting, pods from Kopf (the Kopf floor)", "policy": "MutatingAdmissionPolicy gate",
         "webhook": "webhook gate"}
TARGET_NAMES = {"added_p50_ms": "added to p50 ≤ 50 ms", "added_p99_ms": "added to p99 ≤ 250 ms",
                "throughput_ratio": "throughput ≥ 0.95 × ungated",
                "waiting_while_idle": "no pod waiting on the gate while the scheduler is idle"}
DISRUPTIONS = {"restart": "operator restarted (SIGTERM, new process)",
               "failover": "leader killed (SIGKILL), the standby takes over",
               "handover": "leader stopped (SIGTERM), the standby takes over"}


def met(ok: bool) -> str:
    return "**met**" if ok else "**not met**"


def _number(value: float | None, form: str = ",.0f") -> str:
    return "—" if value is None else format(value, form)


def _ms(figures: dict[str, float | None], *keys: str) -> str:
    return " / ".join(_number(figures[key]) for key in keys)


def judge(cost: dict[str, Any]) -> dict[str, bool]:
    """Whether each target holds for one gate's costs (a figure not measured does not hold)."""
    p50, p99, ratio = cost["added_p50_ms"], cost["added_p99_ms"], cost["throughput_ratio"]
    return {
        "added_p50_ms": p50 is not None and p50 <= TARGETS["added_p50_ms"],
        "added_p99_ms": p99 is not None and p99 <= TARGETS["added_p99_ms"],
        "throughput_ratio": ratio is not None and ratio >= TARGETS["throughput_ratio"],
        "waiting_while_idle": cost["max_waiting_while_idle"] == 0,
    }


def judged(result: dict[str, Any]) -> dict[str, bool]:
    """Whether each target holds for the faster gate."""
    return judge(result["gates"][result["faster_gate"]])


def stopped_by_floor(result: dict[str, Any], floor_key: str = "floor") -> list[str]:
    """The targets the floor (``floor_key``: ``floor`` or ``kopf_floor``) itself misses (all of them when the run
    has no such floor: none is shown reachable)."""
    floor = result.get(floor_key)
    return [target for target, ok in judge(floor).items() if not ok] if floor else list(TARGET_NAMES)


def _figure(cost: dict[str, Any], target: str) -> str:
    if target == "throughput_ratio":
        return _number(cost["throughput_ratio"], ".3f")
    if target == "waiting_while_idle":
        return f"up to {cost['max_waiting_while_idle']}" if cost["max_waiting_while_idle"] else "0"
    return _number(cost[target], "+,.0f") + " ms"


def _beyond(over: dict[str, Any] | None, target: str) -> str:
    if over is None or target == "waiting_while_idle":
        return "—"
    if target == "throughput_ratio":
        return _number(over["throughput_ratio"], ".3f") + " ×"
    return _number(over[target], "+,.0f") + " ms"


def targets(result: dict[str, Any]) -> list[str]:
    """The targets table: each judged on the faster gate, on the floor and on the Kopf floor (when measured), and
    the faster gate's cost over each; then which targets each floor stops."""
    best, floor, kopf_floor = result["faster_gate"], result.get("floor"), result.get("kopf_floor")
    gate = result["gates"][best]
    verdict = judged(result)
    floors = [("floor", floor, "over_floor", "the floor")]
    if kopf_floor:
        floors.append(("kopf-floor", kopf_floor, "over_kopf_floor", "the Kopf floor"))
    header = f"| target | faster gate ({NAMES[best]}) |"
    header += "".join(f" {NAMES[name]} |" for name, *_ in floors)
    header += "".join(f" {NAMES[best]} over {said} |" for *_, said in floors)
    lines = [header, "|---|---:|" + "---:|" * 2 * len(floors)]
    for target, name in TARGET_NAMES.items():
        row = f"| {name} | {_figure(gate, target)}: {met(verdict[target])} |"
        for _, cost, _, _ in floors:
            row += f" {_figure(cost, target)}: {met(judge(cost)[target])} |" if cost else " — |"
        for _, _, over_key, _ in floors:
            row += f" {_beyond(gate.get(over_key), target)} |"
        lines.append(row)
    stopped = stopped_by_floor(result)
    if not floor:
        lines += ["", "No floor was measured: no target is shown reachable on this machine."]
    elif stopped:
        lines += ["", "Stopped by the floor (the floor itself misses them, so no gate-based design meets them on "
                  f"this machine): {'; '.join(TARGET_NAMES[t] for t in stopped)}."]
    else:
        lines += ["", "The floor meets every target: where the faster gate misses one, the cost is dra-ledger's "
                  "own (its column over the floor)."]
    if kopf_floor:
        by_kopf = [t for t in stopped_by_floor(result, "kopf_floor") if t not in stopped]
        lines += ["", "Stopped by the Kopf floor, beyond the floor (a Kopf operator that watches what dra-ledger "
                  "watches and does nothing but remove the gate misses them on this machine): "
                  f"{'; '.join(TARGET_NAMES[t] for t in by_kopf)}." if by_kopf else
                  "The Kopf floor stops no target the floor does not."]
    return lines


def report(result: dict[str, Any], command: str) -> str:
    plan = result["plan"]
    lines = [
        f"Command: `{command}` ({result['seconds'] / 60:.1f} min; load average "
        f"{' '.join(f'{x:.1f}' for x in result['load_average'][:3])} at the start, "
        f"{' '.join(f'{x:.1f}' for x in result['load_average'][3:])} at the end).",
        "",
        f"Kubernetes {result['kubernetes']}; {result['nodes']:,} kubelet-less nodes, {result['pods']:,} claim pods "
        f"a burst ({', '.join(f'{n} {kind}' for kind, n in sorted(plan['kinds'].items()))}; {plan['bound']:,} can "
        f"bind, {plan['waiting']:,} must wait), {result['rounds']} interleaved rounds; kube-scheduler's and "
        f"kube-controller-manager's client QPS "
        f"{result['client_qps'] or 'their defaults'}.",
        "",
        "| configuration | time to bind p50 / p90 / p99 / max (ms) | creation → gate removed p50 / p99 (ms) "
        "| create answer p50 / p99 (ms) | binding throughput (pods/s) | operator (floor: releaser) CPU a burst (s) "
        "| kube-apiserver / kube-scheduler CPU a burst (s) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for config, figures in result["configurations"].items():
        cpu = figures["cpu_s_per_burst"]
        release = _ms(figures["time_to_release_ms"], "p50", "p99") if figures["created_gated"] else "—"
        lines.append(
            f"| {NAMES[config]} | {_ms(figures['time_to_bind_ms'], 'p50', 'p90', 'p99', 'max')} | {release} "
            f"| {_ms(figures['create_ms'], 'p50', 'p99')} | {figures['throughput_pods_s']:.1f} "
            f"| {cpu.get(operator_process(config), 0.0):.2f} | {cpu.get('kube-apiserver', 0.0):.2f} / "
            f"{cpu.get('kube-scheduler', 0.0):.2f} |")
    gated = {**({"floor": result["floor"]} if result.get("floor") else {}),
             **({"kopf-floor": result["kopf_floor"]} if result.get("kopf_floor") else {}), **result["gates"]}
    for gate in gated:
        figures = result["configurations"][gate]
        if figures["created_gated"] < figures["pods"]:  # fail-open: the webhook did not answer in time
            lines.append(f"\n{NAMES[gate]}: {figures['pods'] - figures['created_gated']} of {figures['pods']} "
                         "pods were created without the gate.")
    lines += ["", "| gate | added to p50 (ms) | added to p99 (ms) | throughput, × ungated (pooled; median of rounds) "
              "| pods waiting on the gate while the scheduler is idle (max; samples) | over the floor: p50 / p99 "
              "(ms); throughput × the floor's (pooled; median of rounds) |", "|---|---:|---:|---:|---:|---:|"]
    for gate, cost in gated.items():
        idle = result["configurations"][gate]["waiting_while_idle"]
        over = cost.get("over_floor")
        beyond = "—" if over is None else (
            f"{_number(over['added_p50_ms'], '+,.0f')} / {_number(over['added_p99_ms'], '+,.0f')}; "
            f"{_number(over['throughput_ratio'], '.3f')}; {_number(over['throughput_ratio_median_of_rounds'], '.3f')}")
        lines.append(f"| {NAMES[gate]} | {_number(cost['added_p50_ms'], '+,.0f')} "
                     f"| {_number(cost['added_p99_ms'], '+,.0f')} | {_number(cost['throughput_ratio'], '.3f')}; "
                     f"{_number(cost['throughput_ratio_median_of_rounds'], '.3f')} "
                     f"| {cost['max_waiting_while_idle']} ({idle['samples_with_waiting']} of {idle['idle_samples']} "
                     f"idle samples) | {beyond} |")
    lines += ["", *targets(result)]
    releaser = result.get("floor_releaser")
    if releaser:
        lines += ["", f"The floor's releaser: {releaser.get('released', 0)} gates removed, "
                  f"{releaser.get('conflicts', 0)} patches refused as conflicts and tried again on the newer pod, "
                  f"{releaser.get('failures', 0)} other failures."]
    shown = [name for name in DISRUPTIONS if name in result]
    if shown:
        lines += ["", "| disruption (policy gate) | no operator leading (ms) | time to bind p50 / p99 / max (ms): "
                  "pods created before / during / after | operator CPU (s) |", "|---|---:|---|---:|"]
        for name in shown:
            d = result[name]
            cells = " · ".join(_ms(d[part], "p50", "p99", "max") for part in ("before", "during", "after"))
            cpu = d["cpu_s"].get("draledger", 0.0)
            lines.append(f"| {DISRUPTIONS[name]} | {d['gap_ms']:,.0f} | {cells} | {cpu:.2f} |")
    if not result["complete"]:
        lines += ["", "**Incomplete**: a burst reached its deadline with pods still gated or unbound (see the JSON)."]
    return "\n".join(lines)
