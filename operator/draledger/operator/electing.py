"""The election itself (rules in draledger.operator.leadership): one replica's loop of attempts to acquire
or renew the Lease, and the client that fences the operator's writes to the time it leads.

Apart from the settings (leadership), because these import the API client, and with it Kopf and aiohttp:
``draledger audit`` builds the ``run`` flags too, and must not pay for those imports.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

import kopf
import structlog

from draledger.operator import clocks
from draledger.operator.kubeapi import ApiError, Conflict, KubeApi, NotFound
from draledger.operator.leadership import LeaderElection, default_identity, lease_spec, micro_time

log = structlog.get_logger("draledger")


class NotLeading(ApiError):
    """A write refused in the client: this replica does not lead, or its renew deadline has passed."""

    def __init__(self, what: str) -> None:
        super().__init__(0, {"message": "this replica does not hold the leader Lease"}, what)


class Elector:
    """One replica's side of the election (rules 1 to 5). ``run()`` loops until cancelled."""

    def __init__(
        self,
        election: LeaderElection,
        api: KubeApi | None,
        clock: Callable[[], float],
        on_change: Callable[[bool], None] = lambda leading: None,
    ) -> None:
        self.election = election
        self.api = api
        self.clock = clock
        self.on_change = on_change
        self.identity = election.identity or default_identity()
        self.path = f"/apis/coordination.k8s.io/v1/namespaces/{election.namespace}/leases/{election.name}"
        self.holder = ""  # the holder this replica saw last ("" : none, or not read yet)
        self._leading = False
        self._renewed_at = -math.inf  # when the last successful acquisition or renewal began
        self._observed: tuple[str, Any] | None = None  # (resourceVersion, spec) last read
        self._observed_at = -math.inf  # when this replica saw the record change (rule 2)
        self._expires_at = math.inf  # when another's Lease, read in the last attempt, may be taken (rule 2)
        self.decided = asyncio.Event()  # the first attempt is over (at once without leader election)
        if not election.enabled:
            self.decided.set()

    # ----- what the writers ask -----
    def write_window(self) -> float:
        """Seconds this replica may still write (0: none; infinite without leader election)."""
        if not self.election.enabled:
            return math.inf
        if not self._leading:
            return 0.0
        return max(0.0, self._renewed_at + self.election.renew_deadline - self.clock())

    def leads(self) -> bool:
        return self.write_window() > 0

    @property
    def role(self) -> str:
        return "leader" if self.leads() else "standby"

    # ----- the loop -----
    async def run(self) -> None:
        if not self.election.enabled:
            return
        log.info("leader election: candidate", identity=self.identity, lease=self.path)
        while True:
            started = self.clock()
            try:
                won = await self.try_acquire_or_renew(started)
            except Exception as error:  # the API may be away: the deadline decides, not one failure
                log.warning("leader election: lease not read or written", lease=self.path,
                            error=str(error) or type(error).__name__)
                won = False
            self._settle(won, started)
            self.decided.set()
            await asyncio.sleep(max(0.0, self.next_attempt(started) - self.clock()))

    def next_attempt(self, started: float) -> float:
        """When to try again after an attempt begun at ``started``: one retry period on, or sooner, at the
        moment another's Lease expires on this replica's clock, so that a standby takes over a dead leader's
        Lease the moment the rules allow rather than up to a retry period later."""
        return min(started + self.election.retry_period, self._expires_at)

    def _settle(self, won: bool, started: float) -> None:
        if won:
            self._renewed_at = started
            if not self._leading:
                self._leading = True
                log.info("leader election: leading", identity=self.identity, lease=self.path)
                self.on_change(True)
        elif self._leading and (not self.leads() or self.holder not in ("", self.identity)):
            self._leading = False  # past the renew deadline, or the Lease is seen in another's hands
            log.warning("leader election: lost the lease; not writing until it is acquired again",
                        identity=self.identity, holder=self.holder or "<none>")
            self.on_change(False)

    async def try_acquire_or_renew(self, now: float) -> bool:
        """One attempt (rule 2); True when this replica holds the Lease from ``now`` on."""
        assert self.api is not None
        election = self.election
        self._expires_at = math.inf  # known again only once the Lease is read
        try:
            lease = await self.api.get(self.path, attempts=0)
        except NotFound:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": election.name, "namespace": election.namespace},
                "spec": lease_spec(self.identity, election.lease_duration, None, clocks.now()),
            }
            try:
                await self.api.create(self.path.rsplit("/", 1)[0], body, attempts=0)
            except Conflict:
                return False  # another candidate created it first
            self.holder = self.identity
            return True
        meta, spec = lease.get("metadata") or {}, lease.get("spec") or {}
        record = (str(meta.get("resourceVersion") or ""), spec)
        if record != self._observed:
            self._observed, self._observed_at = record, now
        holder = str(spec.get("holderIdentity") or "")
        if holder != self.holder:
            log.info("leader election: holder", holder=holder or "<none>", lease=self.path)
            self.holder = holder
        duration = spec.get("leaseDurationSeconds")
        duration = duration if type(duration) is int else election.lease_duration
        if holder and holder != self.identity and now < self._observed_at + duration:
            self._expires_at = self._observed_at + duration
            return False
        update = {**lease, "spec": lease_spec(self.identity, election.lease_duration, spec, clocks.now())}
        try:
            await self.api.request("PUT", self.path, body=update, attempts=0)
        except Conflict:
            return False  # changed since it was read: somebody else renewed or took it
        self.holder = self.identity
        return True

    async def stop(self) -> None:
        """On the way out: give the Lease up if held (rule 5), close the client."""
        if self.api is None:
            return
        if self._leading or self.holder == self.identity:
            await self.release()
        await self.api.close()

    async def release(self) -> None:
        """Give the Lease up; best effort: a failure leaves it to expire."""
        assert self.api is not None
        self._leading = False
        self.on_change(False)
        try:
            lease = await self.api.get(self.path, attempts=0)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            now = micro_time(clocks.now())
            released = {**spec, "holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": now, "acquireTime": now}
            await self.api.request("PUT", self.path, body={**lease, "spec": released}, attempts=0)
            log.info("leader election: lease released", identity=self.identity, lease=self.path)
        except Exception as error:  # best effort: the process is stopping
            log.warning("leader election: lease not released; it expires by itself",
                        error=str(error) or type(error).__name__)


def elector_for(
    election: LeaderElection,
    info: kopf.ConnectionInfo,
    login: Callable[[], kopf.ConnectionInfo],
    clock: Callable[[], float],
    on_change: Callable[[bool], None],
) -> Elector:
    """The replica's elector, with a client of its own: no retries inside an attempt (the loop is the
    retry), and no request outliving the renew deadline."""
    api = KubeApi(info, attempts=0, timeout=election.renew_deadline, login=login) if election.enabled else None
    return Elector(election, api, clock, on_change)


class FencedApi(KubeApi):
    """The operator's client for its own writes, held to the election's write window (rule 3): a write
    outside it raises :class:`NotLeading` without a request; one still running when it closes is cancelled."""

    def __init__(self, info: kopf.ConnectionInfo, window: Callable[[], float], **kwargs: Any) -> None:
        super().__init__(info, **kwargs)
        self.window = window

    async def request(self, method: str, path: str, **options: Any) -> Any:
        def send() -> Any:
            return super(FencedApi, self).request(method, path, **options)

        if method == "GET":
            return await send()
        left = self.window()
        if left == math.inf:
            return await send()
        if left <= 0:
            raise NotLeading(options.get("what") or f"{method} {path}")
        task = asyncio.ensure_future(send())
        try:
            while left > 0:  # renewals meanwhile move the window on
                done, _ = await asyncio.wait({task}, timeout=left)
                if done:
                    return task.result()
                left = self.window()
            raise NotLeading(options.get("what") or f"{method} {path}")
        finally:
            if not task.done():
                task.cancel()
