"""The gate benchmark's report: Markdown tables from the figures bench_gate.py measured (no I/O).

The targets (issue 26), judged on the faster gate's figures of one run: the gate adds ≤ 50 ms to the p50 and
≤ 250 ms to the p99 of a claim pod's time to bind; the scheduler binds at ≥ 0.95 × its ungated rate; and no pod
waits on our gate (past its first 250 ms) at any moment the scheduler's active and backoff queues are empty.
"""

from __future__ import annotations

from typing import Any

TARGETS = {"added_p50_ms": 50.0, "added_p99_ms": 250.0, "throughput_ratio": 0.95}
NAMES = {"none": "no dra-ledger", "policy": "MutatingAdmissionPolicy gate", "webhook": "webhook gate"}
DISRUPTIONS = {"restart": "operator restarted (SIGTERM, new process)",
               "failover": "leader killed (SIGKILL), the standby takes over",
               "handover": "leader stopped (SIGTERM), the standby takes over"}


def met(ok: bool) -> str:
    return "**met**" if ok else "**not met**"


def _number(value: float | None, form: str = ",.0f") -> str:
    return "—" if value is None else format(value, form)


def _ms(figures: dict[str, float | None], *keys: str) -> str:
    return " / ".join(_number(figures[key]) for key in keys)


def judged(result: dict[str, Any]) -> dict[str, bool]:
    """Whether each target holds for the faster gate."""
    gate = result["gates"][result["faster_gate"]]
    p50, p99, ratio = gate["added_p50_ms"], gate["added_p99_ms"], gate["throughput_ratio"]
    return {
        "added_p50_ms": p50 is not None and p50 <= TARGETS["added_p50_ms"],
        "added_p99_ms": p99 is not None and p99 <= TARGETS["added_p99_ms"],
        "throughput_ratio": ratio is not None and ratio >= TARGETS["throughput_ratio"],
        "waiting_while_idle": gate["max_waiting_while_idle"] == 0,
    }


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
        "| create answer p50 / p99 (ms) | binding throughput (pods/s) | operator CPU a burst (s) "
        "| kube-apiserver / kube-scheduler CPU a burst (s) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for config, figures in result["configurations"].items():
        cpu = figures["cpu_s_per_burst"]
        release = _ms(figures["time_to_release_ms"], "p50", "p99") if figures["created_gated"] else "—"
        lines.append(
            f"| {NAMES[config]} | {_ms(figures['time_to_bind_ms'], 'p50', 'p90', 'p99', 'max')} | {release} "
            f"| {_ms(figures['create_ms'], 'p50', 'p99')} | {figures['throughput_pods_s']:.1f} "
            f"| {cpu.get('draledger', 0.0):.2f} | {cpu.get('kube-apiserver', 0.0):.2f} / "
            f"{cpu.get('kube-scheduler', 0.0):.2f} |")
    for gate in result["gates"]:
        figures = result["configurations"][gate]
        if figures["created_gated"] < figures["pods"]:  # fail-open: the webhook did not answer in time
            lines.append(f"\n{NAMES[gate]}: {figures['pods'] - figures['created_gated']} of {figures['pods']} "
                         "pods were created without the gate.")
    lines += ["", "| gate | added to p50 (ms) | added to p99 (ms) | throughput, × ungated (pooled; median of rounds) "
              "| pods waiting on the gate while the scheduler is idle (max; samples) |", "|---|---:|---:|---:|---:|"]
    for gate, cost in result["gates"].items():
        idle = result["configurations"][gate]["waiting_while_idle"]
        lines.append(f"| {NAMES[gate]} | {_number(cost['added_p50_ms'], '+,.0f')} "
                     f"| {_number(cost['added_p99_ms'], '+,.0f')} | {_number(cost['throughput_ratio'], '.3f')}; "
                     f"{_number(cost['throughput_ratio_median_of_rounds'], '.3f')} "
                     f"| {cost['max_waiting_while_idle']} ({idle['samples_with_waiting']} of {idle['idle_samples']} "
                     f"idle samples) |")
    verdict = judged(result)
    best = result["faster_gate"]
    lines += ["", f"Targets, on the faster gate ({NAMES[best]}): added p50 ≤ 50 ms {met(verdict['added_p50_ms'])}; "
              f"added p99 ≤ 250 ms {met(verdict['added_p99_ms'])}; throughput ≥ 0.95 × "
              f"{met(verdict['throughput_ratio'])}; no pod waiting on the gate while the scheduler is idle "
              f"{met(verdict['waiting_while_idle'])}."]
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
