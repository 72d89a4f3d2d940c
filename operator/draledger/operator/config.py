"""Operator configuration: one frozen record, from flags with ``DRALEDGER_*`` environment defaults."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field

from draledger.core.accounting.zones import DEFAULT_NUMA_ATTRIBUTES
from draledger.operator.leadership import LeaderElection, add_leader_arguments, election_from_args

POD_STATUS_MODES = ("backfill", "observe")
STATUS_SHAPES = ("auto", "v1.36", "v1.37")


@dataclass(frozen=True, slots=True)
class OperatorConfig:
    coalesce_window: float = 0.2  # seconds: bursts of events on one node become one status patch
    coalesce_window_max: float = 1.0  # seconds: how far the wait may stretch while the operator is saturated
    freshness_window: float = 60.0  # seconds a watch may be broken before its nodes turn Stale
    pod_status: str = "backfill"
    status_shape: str = "auto"
    metrics_host: str = "0.0.0.0"
    metrics_port: int = 8080  # /metrics, /healthz, /readyz
    numa_attributes: tuple[str, ...] = DEFAULT_NUMA_ATTRIBUTES
    node_selector: str = ""  # label selector: only these nodes get ledgers (canary)
    server: str = ""  # explicit API URL (demo, tests); otherwise in-cluster config or a kubeconfig
    kubeconfig: str = ""  # a kubeconfig file ("" : $KUBECONFIG, then ~/.kube/config, or in-cluster)
    context: str = ""  # the kubeconfig context ("" : its current context)
    log_format: str = "json"
    log_level: str = "info"
    watch_timeout: int = 30  # seconds per watch request: a clean reconnect proves the stream is alive
    events: bool = True  # post Kubernetes Events on ledgers for phase changes
    frozen: bool = False  # cluster-wide freeze: new claim pods stay gated, every ledger is Frozen
    webhook: bool = False  # serve the mutating admission webhook that adds the gate
    webhook_host: str = "0.0.0.0"
    webhook_port: int = 9443
    webhook_cert_dir: str = "/etc/draledger/tls"  # tls.crt and tls.key, e.g. from a cert-manager Secret
    gate_exclude_namespaces: tuple[str, ...] = ("kube-system", "draledger-system")
    # Generation-0 threshold of Python's cyclic garbage collector (0: Python's default, 700). Every decoded
    # watch event is hundreds of short-lived containers; at 700 the collector runs every event or two and
    # rescans the young state each time (benchmarks/results/operator.md).
    gc_threshold: int = 10_000
    # Ledger writes in flight at once: one node's slow or failing writes (each retried with its own backoff)
    # never hold the others, nor the gate releases.
    write_concurrency: int = 8
    leader_election: LeaderElection = field(default_factory=LeaderElection)  # off: this replica always writes


def _env(name: str, default: str) -> str:
    return os.environ.get(f"DRALEDGER_{name.upper().replace('-', '_')}", default)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = OperatorConfig()
    parser.add_argument(
        "--coalesce-window",
        type=float,
        default=float(_env("coalesce-window", str(d.coalesce_window))),
        help="seconds to coalesce a node's events into one write (env DRALEDGER_COALESCE_WINDOW)",
    )
    parser.add_argument(
        "--coalesce-window-max",
        type=float,
        default=float(_env("coalesce-window-max", str(d.coalesce_window_max))),
        help="seconds the wait may stretch to while a write batch takes longer than the window "
        "(env DRALEDGER_COALESCE_WINDOW_MAX)",
    )
    parser.add_argument(
        "--freshness-window",
        type=float,
        default=float(_env("freshness-window", str(d.freshness_window))),
        help="seconds a broken watch is tolerated before nodes turn Stale (env DRALEDGER_FRESHNESS_WINDOW)",
    )
    parser.add_argument(
        "--pod-status",
        choices=POD_STATUS_MODES,
        default=_env("pod-status", d.pod_status),
        help="backfill: write missing status.nodeAllocatableResourceClaimStatuses; observe: only report "
        "(env DRALEDGER_POD_STATUS)",
    )
    parser.add_argument(
        "--status-shape",
        choices=STATUS_SHAPES,
        default=_env("status-shape", d.status_shape),
        help="pod status shape to write: v1.36 (resources), v1.37 (mapping/overhead), or auto "
        "(env DRALEDGER_STATUS_SHAPE)",
    )
    parser.add_argument(
        "--metrics-host",
        default=_env("metrics-host", d.metrics_host),
        help="address to serve /metrics, /healthz and /readyz on (env DRALEDGER_METRICS_HOST)",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=int(_env("metrics-port", str(d.metrics_port))),
        help="port of /metrics, /healthz and /readyz (0: pick a free one) (env DRALEDGER_METRICS_PORT)",
    )
    parser.add_argument(
        "--numa-attribute",
        action="append",
        metavar="NAME",
        help="device attribute naming the NUMA zone (repeatable; replaces the default list) (default: "
        f"{','.join(DEFAULT_NUMA_ATTRIBUTES)}; env DRALEDGER_NUMA_ATTRIBUTES, comma-separated)",
    )
    parser.add_argument(
        "--node-selector",
        default=_env("node-selector", d.node_selector),
        help="label selector of the nodes that get ledgers, e.g. draledger.dev/canary=true "
        "(default: every node; env DRALEDGER_NODE_SELECTOR)",
    )
    parser.add_argument(
        "--server",
        default=_env("server", d.server),
        help="API server URL (default: in-cluster config, then KUBECONFIG; env DRALEDGER_SERVER)",
    )
    parser.add_argument(
        "--kubeconfig",
        default=_env("kubeconfig", d.kubeconfig),
        help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the in-cluster ServiceAccount; "
        "env DRALEDGER_KUBECONFIG)",
    )
    parser.add_argument(
        "--context",
        default=_env("context", d.context),
        help="kubeconfig context (default: its current context; env DRALEDGER_CONTEXT)",
    )
    parser.add_argument(
        "--log-format",
        choices=("json", "console"),
        default=_env("log-format", d.log_format),
        help="json: one JSON object a line, for log collectors; console: for people (env DRALEDGER_LOG_FORMAT)",
    )
    parser.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default=_env("log-level", d.log_level),
        help="the least severe level logged (env DRALEDGER_LOG_LEVEL)",
    )
    parser.add_argument(
        "--watch-timeout",
        type=int,
        default=int(_env("watch-timeout", str(d.watch_timeout))),
        help="seconds per watch request (server-side timeout) (env DRALEDGER_WATCH_TIMEOUT)",
    )
    parser.add_argument(
        "--no-events",
        dest="events",
        action="store_false",
        default=_env("events", "true").lower() not in ("0", "false", "no"),
        help="do not post Kubernetes Events on ledgers (default: post them; env DRALEDGER_EVENTS=false)",
    )

    def flag(name: str, default: bool) -> bool:
        return _env(name, str(default)).lower() in ("1", "true", "yes", "on")

    parser.add_argument(
        "--frozen",
        action=argparse.BooleanOptionalAction,
        default=flag("frozen", d.frozen),
        help="freeze admission cluster-wide: new claim pods stay gated (env DRALEDGER_FROZEN)",
    )
    parser.add_argument(
        "--webhook",
        action=argparse.BooleanOptionalAction,
        default=flag("webhook", d.webhook),
        help="serve the mutating admission webhook that adds the scheduling gate (env DRALEDGER_WEBHOOK)",
    )
    parser.add_argument(
        "--webhook-host",
        default=_env("webhook-host", d.webhook_host),
        help="address the admission webhook listens on (env DRALEDGER_WEBHOOK_HOST)",
    )
    parser.add_argument(
        "--webhook-port",
        type=int,
        default=int(_env("webhook-port", str(d.webhook_port))),
        help="HTTPS port of the admission webhook (env DRALEDGER_WEBHOOK_PORT)",
    )
    parser.add_argument(
        "--webhook-cert-dir",
        default=_env("webhook-cert-dir", d.webhook_cert_dir),
        help="directory with tls.crt and tls.key (re-read when they change) (env DRALEDGER_WEBHOOK_CERT_DIR)",
    )
    parser.add_argument(
        "--gate-exclude-namespaces",
        default=_env("gate-exclude-namespaces", ",".join(d.gate_exclude_namespaces)),
        help="comma-separated namespaces never gated (env DRALEDGER_GATE_EXCLUDE_NAMESPACES)",
    )
    parser.add_argument(
        "--gc-threshold",
        type=int,
        default=int(_env("gc-threshold", str(d.gc_threshold))),
        help="generation-0 threshold of Python's garbage collector (0: Python's default) (env DRALEDGER_GC_THRESHOLD)",
    )
    parser.add_argument(
        "--write-concurrency",
        type=int,
        default=int(_env("write-concurrency", str(d.write_concurrency))),
        help="ledger writes in flight at once; a failing node backs off alone (env DRALEDGER_WRITE_CONCURRENCY)",
    )
    add_leader_arguments(parser)


def from_args(args: argparse.Namespace) -> OperatorConfig:
    attributes = args.numa_attribute or [a for a in _env("numa-attributes", "").split(",") if a]
    return OperatorConfig(
        coalesce_window=args.coalesce_window,
        coalesce_window_max=max(args.coalesce_window, args.coalesce_window_max),
        freshness_window=args.freshness_window,
        pod_status=args.pod_status,
        status_shape=args.status_shape,
        metrics_host=args.metrics_host,
        metrics_port=args.metrics_port,
        numa_attributes=tuple(attributes) or DEFAULT_NUMA_ATTRIBUTES,
        node_selector=args.node_selector,
        server=args.server,
        kubeconfig=args.kubeconfig,
        context=args.context,
        log_format=args.log_format,
        log_level=args.log_level,
        watch_timeout=args.watch_timeout,
        events=args.events,
        frozen=args.frozen,
        webhook=args.webhook,
        webhook_host=args.webhook_host,
        webhook_port=args.webhook_port,
        webhook_cert_dir=args.webhook_cert_dir,
        gate_exclude_namespaces=tuple(
            n.strip() for n in args.gate_exclude_namespaces.split(",") if n.strip()
        ),
        gc_threshold=args.gc_threshold,
        write_concurrency=max(1, args.write_concurrency),
        leader_election=election_from_args(args),
    )
