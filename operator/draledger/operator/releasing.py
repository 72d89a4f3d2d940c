"""The release in force: read from the API server's ``/version`` at start and after every reconnect.

Rules (core.releases):
1. ``--release`` (``DRALEDGER_RELEASE``) other than ``auto`` fixes the release: ``/version`` is not read.
2. Otherwise the first reading happens before the first ledger is computed (the rebuild waits for it, and it is
   retried while the API server is away); later readings follow every reconnection of a watch stream (a control
   plane upgrade restarts the API servers, so the streams reconnect).
3. A change of release marks every node dirty (the ledgers are written again under the new rules), is logged, and
   is posted as one Event, on the NodeAllocatableLedger CRD (``kubectl get events -A`` shows it), by the leader.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import structlog

from draledger.core import releases
from draledger.core.bodies import GROUP, PLURAL
from draledger.operator import events
from draledger.operator.clocks import now_rfc3339
from draledger.operator.kubeapi import ApiError, KubeApi

if TYPE_CHECKING:
    from draledger.operator.runtime import Runtime

log = structlog.get_logger("draledger")
RETRY = 2.0  # seconds between readings of /version while the API server is away (rule 2)
CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "name": f"{PLURAL}.{GROUP}"}


def configured(text: str) -> tuple[releases.Release, str] | None:
    """Rule 1: the release ``--release`` names, or None for ``auto``."""
    if text in ("", "auto"):
        return None
    return releases.parse_release(text), f"--release {text}"


async def read(api: KubeApi) -> tuple[releases.Release, str]:
    """The release of the server's ``/version`` (a ValueError when it says nothing usable)."""
    answer: Any = await api.get("/version", attempts=1)
    if not isinstance(answer, dict):
        raise ValueError(f"/version answered {answer!r}")
    return releases.from_server(str(answer.get("major") or ""), str(answer.get("minor") or ""),
                                str(answer.get("gitVersion") or ""))


class Releasing:
    """Keeps the runtime's release current (rules 2 and 3); ``leads`` says whether to post the Event."""

    def __init__(self, runtime: Runtime, api: KubeApi, leads: Callable[[], bool],
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.runtime = runtime
        self.api = api
        self.leads = leads
        self.sleep = sleep

    async def first(self) -> None:
        """Rule 2's first reading: retried until the server answers."""
        fixed = configured(self.runtime.config.release)
        if fixed is not None:
            self.runtime.set_release(*fixed)
            return
        while True:
            try:
                self.runtime.set_release(*await read(self.api))
                return
            except (ApiError, OSError, TimeoutError, ValueError) as error:
                log.warning("cannot read the API server's release yet; retrying", server=self.api.server,
                            error=str(error) or type(error).__name__)
                await self.sleep(RETRY)

    async def follow(self) -> None:
        """Rule 2's later readings, one after each reconnection; rule 3 on a change."""
        if configured(self.runtime.config.release) is not None:
            return
        reconnected = self.runtime.reconnected
        while True:
            await reconnected.wait()
            reconnected.clear()
            try:
                release, why = await read(self.api)
            except (ApiError, OSError, TimeoutError, ValueError) as error:
                log.warning("cannot read the API server's release after a reconnection", error=str(error))
                reconnected.set()  # try again at the next pass
                await self.sleep(RETRY)
                continue
            before = self.runtime.release
            if self.runtime.set_release(release, why) and self.leads():
                await events.send(self.api, events.event_body(
                    CRD, "ReleaseChanged", f"the ledgers now follow {release}'s rules (were {before}'s): {why}",
                    "Normal", now_rfc3339()), self.runtime.metrics)
