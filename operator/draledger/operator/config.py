"""The operator's configuration: one frozen record, and the one declaration of each of its options.

Rules:
1. Every field of ``OperatorConfig`` (and of its ``LeaderElection``, the identity aside) is set by exactly one
   option of ``OPTIONS`` (options.py: a flag, a ``DRALEDGER_*`` variable, a kind, a default, a help); the
   commands that share an option (``--server`` of ``freeze``, ``--release`` of ``audit``) share its declaration.
2. The record's defaults are the declarations' defaults: code that builds an ``OperatorConfig()`` (the demo,
   tests) runs what ``draledger run`` runs without flags.
3. Settings that cannot work together are refused by name at start (``ConfigError``), never corrected in
   silence; the one exception is stated in its help (``--coalesce-window-max`` is never below the window).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from draledger.core.accounting.zones import DEFAULT_NUMA_ATTRIBUTES
from draledger.core.releases import RELEASES
from draledger.operator.leadership import LeaderElection
from draledger.operator.options import (
    BOOLEAN,
    DECLARED,
    NAME,
    NAMES,
    TEXT,
    URL,
    ConfigError,
    Option,
    add_options,
    choice,
    duration,
    integer,
    resolve,
)

POD_STATUS_MODES = ("backfill", "observe")
RELEASE_CHOICES = ("auto", *RELEASES)
CONNECTING = ("run", "freeze", "resume", "export", "report")  # the commands that talk to a cluster
PORT = integer(0, 65535, "PORT")


@dataclass(frozen=True, slots=True)
class OperatorConfig:
    coalesce_window: float = 0.2  # seconds: bursts of events on one node become one status patch
    coalesce_window_max: float = 1.0  # seconds: how far the wait may stretch while the operator is saturated
    freshness_window: float = 60.0  # seconds a watch may be broken before its nodes turn Stale
    pod_status: str = "backfill"
    # The Kubernetes release whose accounting rules (and pod status shape) apply; auto: the API server's /version.
    release: str = "auto"
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


_D, _E = OperatorConfig(), LeaderElection()

OPTIONS: tuple[Option, ...] = (
    Option("--coalesce-window", duration(zero=True), _D.coalesce_window,
           "how long the writer waits after a node turns dirty, so that a burst of events becomes one status patch "
           "of that node's ledger"),
    Option("--coalesce-window-max", duration(zero=True), _D.coalesce_window_max,
           "how far that wait stretches under load (never below --coalesce-window)",
           details="After a write batch that took longer than the window (its writes and the events handled between "
           "them), the next batch waits as long as that one took, up to this: an idle operator keeps the short "
           "window, a saturated one spends its time taking in events instead of rewriting ledgers the next events "
           "change again"),
    Option("--freshness-window", duration(), _D.freshness_window,
           "how long a watch stream may be broken (or silent past its server-side timeout) before every ledger "
           "turns Stale (Fresh=False, reason WatchStale)"),
    Option("--watch-timeout", duration(whole=True), _D.watch_timeout,
           "server-side timeout of each watch request",
           details="A clean reconnect proves the stream is alive, so keep it well below the freshness window"),
    Option("--pod-status", choice(*POD_STATUS_MODES), _D.pod_status,
           "backfill: write status.nodeAllocatableResourceClaimStatuses for bound pods that lack it (pods bound "
           "before the gate was on); observe: only report the divergence"),
    Option("--release", choice(*RELEASE_CHOICES), _D.release,
           "the Kubernetes release whose accounting rules apply (and whose pod status shape the backfill writes)",
           commands=("run", "audit"),
           per_command=(("run", "auto: the API server's /version, read at start and after every reconnect"),
                        ("audit", "auto: the highest kubeletVersion among the dump's Nodes, raised to v1.37 when "
                         "v1.37 shapes are seen; said on standard error"))),
    Option("--numa-attribute", NAME, DEFAULT_NUMA_ATTRIBUTES,
           "device attribute naming the NUMA zone, in order of preference (repeatable; replaces the default list)",
           commands=("run", "audit"), field="numa_attributes", env="DRALEDGER_NUMA_ATTRIBUTES", repeat=True,
           details="The first attribute a device carries wins; an unqualified name belongs to the driver's domain"),
    Option("--node-selector", TEXT, _D.node_selector,
           "label selector of the nodes that get ledgers and gating, e.g. draledger.dev/canary=true",
           default_text="every node", metavar="SELECTOR",
           details="Applied server-side to the Node watch. A restart marks Rebuilding only the stored ledgers of the "
           "Nodes it selects: a ledger written under a wider selector is left as it is"),
    Option("--metrics-host", TEXT, _D.metrics_host, "address to serve /metrics, /healthz and /readyz on",
           metavar="ADDRESS"),
    Option("--metrics-port", PORT, _D.metrics_port,
           "port of /metrics, /healthz (liveness: the writer runs) and /readyz (ready once the ledgers are "
           "rebuilt); 0 picks a free one"),
    Option("--webhook", BOOLEAN, _D.webhook,
           "serve the mutating admission webhook (HTTPS, path /gate-pods) that adds the scheduling gate "
           "draledger.dev/ledger-ready to new pods with spec.resourceClaims"),
    Option("--webhook-host", TEXT, _D.webhook_host, "address the admission webhook listens on",
           metavar="ADDRESS"),
    Option("--webhook-port", integer(1, 65535, "PORT"), _D.webhook_port, "HTTPS port of the admission webhook"),
    Option("--webhook-cert-dir", TEXT, _D.webhook_cert_dir,
           "directory with tls.crt and tls.key (e.g. a cert-manager Secret mounted as a volume)",
           metavar="DIR", details="Re-read every 30 s; the server restarts when they change"),
    Option("--gate-exclude-namespaces", NAMES, _D.gate_exclude_namespaces,
           "comma-separated namespaces the webhook never gates",
           details="The webhook configuration's namespaceSelector is the first line; this is the second"),
    Option("--frozen", BOOLEAN, _D.frozen,
           "freeze admission cluster-wide: every ledger is Frozen and no gate is released; bound pods are untouched",
           details="Per node: spec.frozen of a ledger, or `draledger freeze --node N`"),
    Option("--events", BOOLEAN, _D.events,
           "post Kubernetes Events (ledger phase changes, pods held by the gate)"),
    Option("--log-format", choice("json", "console"), _D.log_format,
           "json: one JSON object a line (Kopf's lines too), for log collectors; console: for people"),
    Option("--log-level", choice("debug", "info", "warning", "error"), _D.log_level,
           "the least severe level logged (Kopf's per-event lines stay at warning)"),
    Option("--gc-threshold", integer(0), _D.gc_threshold,
           "generation-0 threshold of Python's garbage collector, set process-wide at start (0: Python's own, 700)",
           details="Each decoded watch event is hundreds of short-lived objects; at 700 the collector ran every event "
           "or two and rescanned the young state each time, about 45 µs per event ([performance.md](performance.md)). "
           "The ledger state holds no reference cycles, so a larger young generation only lets more of each event die "
           "by reference counting first"),
    Option("--write-concurrency", integer(1), _D.write_concurrency,
           "ledger writes in flight at once",
           details="Writes never block each other nor the gate releases; a node whose writes fail waits its own "
           "backoff (0.5 s doubling to 30 s) while the others go on. The API client opens a connection for each "
           "of them besides those of the gate releases, the Events (posted in the background, best effort) and the "
           "reads, so that no request waits for another's connection"),
    Option("--leader-election", BOOLEAN, _E.enabled,
           "only the holder of a coordination.k8s.io/v1 Lease writes (ledgers, gate releases, backfill, Events); "
           "the other replicas watch, keep their state warm and serve the webhook", field="leader_election.enabled",
           details="Off, the replica always writes and never touches a Lease "
           "([operations.md](operations.md#failover)). The manifests turn it on"),
    Option("--leader-election-lease-duration", duration(), _E.lease_duration,
           "how long a standby waits, from the last change of the Lease it saw (on its own clock), before it takes "
           "the Lease over", field="leader_election.lease_duration"),
    Option("--leader-election-renew-deadline", duration(), _E.renew_deadline,
           "how long a leader keeps writing after its last successful renewal began; shorter than the lease "
           "duration", field="leader_election.renew_deadline"),
    Option("--leader-election-retry-period", duration(), _E.retry_period,
           "time between attempts to acquire or renew the Lease; the renew deadline must exceed 1.2 times it",
           field="leader_election.retry_period"),
    Option("--leader-election-namespace", TEXT, _E.namespace, "namespace of the Lease",
           field="leader_election.namespace", metavar="NAMESPACE", details="The manifests set it to the pod's own"),
    Option("--leader-election-id", TEXT, _E.name, "name of the Lease", field="leader_election.name",
           metavar="NAME"),
    Option("--server", URL, _D.server, "API server URL, spoken to without credentials (the demo, tests)",
           commands=CONNECTING, default_text="the in-cluster ServiceAccount, then the kubeconfig"),
    Option("--kubeconfig", TEXT, _D.kubeconfig, "kubeconfig file", commands=CONNECTING, metavar="FILE",
           default_text="$KUBECONFIG, then ~/.kube/config, or the in-cluster ServiceAccount when neither is named",
           details="Loaded as kubectl loads it (client certificates, tokens, token files, exec credential plugins); "
           "loaded again after a 401, and 30 s before credentials expire when they say when"),
    Option("--context", TEXT, _D.context, "kubeconfig context", commands=CONNECTING, metavar="NAME",
           default_text="the kubeconfig's current context"),
)


def add_arguments(parser: argparse.ArgumentParser, command: str = "run") -> None:
    """The flags of ``command``'s options (``run``: every one)."""
    add_options(parser, command, OPTIONS)


def values(args: argparse.Namespace, command: str = "run") -> dict[str, Any]:
    """Each option of ``command`` by its target field, the environment read for what no flag gave."""
    if not hasattr(args, DECLARED):
        raise ValueError("the parser was not built by add_arguments")
    resolve(args)
    return {o.target: getattr(args, o.dest) for o in OPTIONS if command in o.commands}


def from_args(args: argparse.Namespace) -> OperatorConfig:
    """``draledger run``'s record; ``ConfigError`` for a variable or settings that cannot work (rule 3)."""
    given = values(args)
    election = LeaderElection(**{k.removeprefix("leader_election."): v for k, v in given.items()
                                 if k.startswith("leader_election.")})
    problem = election.problem() if election.enabled else ""
    if problem:
        raise ConfigError(problem)
    flat = {k: v for k, v in given.items() if not k.startswith("leader_election.")}
    flat["coalesce_window_max"] = max(flat["coalesce_window"], flat["coalesce_window_max"])
    return OperatorConfig(**flat, leader_election=election)
