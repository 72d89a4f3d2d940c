"""Leader election on a ``coordination.k8s.io/v1`` Lease, as kube-scheduler and kube-controller-manager do it
(client-go's ``tools/leaderelection``), so that a warm standby can take over from a leader that is gone. This
module holds the settings and the Lease record (their flags are declared in ``config``); ``electing`` runs the
election (kept apart because it imports the API client, which every command's parser would otherwise pay for).

Rules:
1. Every replica watches, keeps its state and serves the webhook; only the leader writes (ledgers, gate
   releases, backfill, Events). A replica leads while it holds the Lease and its last successful renewal
   began less than ``renew_deadline`` ago: ``electing.Elector.write_window`` is how long it may still write.
2. Each attempt is client-go's ``tryAcquireOrRenew``: read the Lease (create it when there is none); take it
   over only when its holder is empty, or is this replica, or has not changed the Lease for
   ``leaseDurationSeconds`` *as observed on this replica's clock* (the record's own timestamps are written
   for people; comparing them with a local clock would trust the clocks to agree); then one update guarded
   by the ``resourceVersion`` just read, so two candidates can never both win. Attempts come once per retry
   period, and a standby makes one more the moment the Lease it read expires on its clock
   (``electing.Elector.next_attempt``): a dead leader's Lease is taken within the lease duration plus one
   retry period of its last renewal (client-go's loop may take one retry period more).
3. ``renew_deadline < lease_duration``: a leader whose renewals fail stops writing at its renew deadline,
   counted from the start of its last successful renewal, i.e. before any other replica can count the Lease
   as expired; a leader that reads the Lease in another's hands stops at once. Writes are fenced in the
   client (``electing.FencedApi``): none starts outside the window, and one still in flight when the window
   closes is cancelled. Like client-go's, this is no fencing token: a request already on the wire may still
   land; the ``ledgerVersion`` test of every ledger write keeps versions safe.
4. The identity is the pod's name (``POD_NAME``, else the host name) plus a random suffix: a restarted
   process never takes itself for the holder of its predecessor's Lease, and waits the lease duration out.
5. A replica that stops (SIGTERM: a rolling update, an eviction) gives the Lease up (empty holder, a one-second
   duration), so that the standby takes over at once rather than after the lease duration.
6. Disabled (the default in code, so that ``draledger run`` on a laptop, the demo and a single replica behave
   as before and need no Lease RBAC), the replica always leads and never calls the API for a Lease. The
   manifests turn it on.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any

JITTER = 1.2  # client-go's JitterFactor: the renew deadline must exceed the retry period by this factor


@dataclass(frozen=True, slots=True)
class LeaderElection:
    """The ``--leader-election*`` flags (kube-scheduler's defaults: 15 s, 10 s, 2 s)."""

    enabled: bool = False
    lease_duration: float = 15.0  # seconds a standby waits, from the last change it saw, before taking over
    renew_deadline: float = 10.0  # seconds a leader keeps writing after its last successful renewal began
    retry_period: float = 2.0  # seconds between attempts to acquire or renew
    namespace: str = "draledger-system"
    name: str = "draledger"  # the Lease's name (--leader-election-id)
    identity: str = ""  # "": the pod's name or the host name, plus a random suffix (rule 4)

    def problem(self) -> str:
        """Why these settings cannot work ("" when they can), naming the flags."""
        if min(self.lease_duration, self.renew_deadline, self.retry_period) <= 0:
            return "--leader-election-lease-duration, -renew-deadline and -retry-period must be positive"
        if self.renew_deadline >= self.lease_duration:
            return (f"--leader-election-renew-deadline ({self.renew_deadline:g}s) must be shorter than "
                    f"--leader-election-lease-duration ({self.lease_duration:g}s)")
        if self.renew_deadline <= JITTER * self.retry_period:
            return (f"--leader-election-renew-deadline ({self.renew_deadline:g}s) must exceed {JITTER:g} x "
                    f"--leader-election-retry-period ({self.retry_period:g}s)")
        if not self.namespace or not self.name:
            return "--leader-election-namespace and --leader-election-id must not be empty"
        return ""


def default_identity() -> str:
    """The pod's name (downward API) or the host name, and a random suffix (rule 4)."""
    return f"{os.environ.get('POD_NAME') or os.uname().nodename}_{os.urandom(6).hex()}"


def micro_time(moment: datetime) -> str:
    """A ``MicroTime`` as the API server writes it."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_spec(identity: str, duration: float, previous: dict[str, Any] | None, now: datetime) -> dict[str, Any]:
    """The record this replica writes (client-go's ``LeaderElectionRecord``): a renewal keeps ``acquireTime``
    and ``leaseTransitions``; any takeover (of a released Lease too) sets the one and counts one more."""
    creating, previous = previous is None, previous or {}
    transitions = previous.get("leaseTransitions")
    transitions = transitions if type(transitions) is int else 0
    renewing = previous.get("holderIdentity") == identity
    return {
        "holderIdentity": identity,
        "leaseDurationSeconds": max(1, math.ceil(duration)),
        "acquireTime": previous.get("acquireTime") if renewing else micro_time(now),
        "renewTime": micro_time(now),
        "leaseTransitions": transitions if renewing or creating else transitions + 1,
    }
