"""The per-node writer: dirty nodes -> one coalesced status patch of each changed ledger.

Rules:
1. A burst of events on a node becomes one write: the writer waits ``coalesce_window`` after the first
   dirty mark, then writes every dirty node once. Under load the wait stretches: after a batch that took
   longer than the window (its writes and the events handled between them), the next batch waits as long
   as that one took, up to ``coalesce_window_max``. A saturated operator then spends about half its time
   taking in events instead of rewriting ledgers that the next events change again; an idle one keeps
   the short window.
2. Write only on a semantic change: the content (everything but versions and timestamps) is serialized
   deterministically and compared with what the API holds; equal content means no request at all.
3. ``ledgerVersion`` +1 per content change, ``mappingVersion`` +1 per mapping-fingerprint change; both
   continue from the stored object across restarts and never decrease.
4. Until the rebuild is complete nothing is computed or written, except marking stored ledgers Rebuilding.
5. A failed write is retried on the next cycle; the writer never dies of an API error.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from draledger import events
from draledger.accounting.ledger import Ledger
from draledger.accounting.release import NodeStanding
from draledger.audit import now_rfc3339
from draledger.backfill import Backfill
from draledger.gating import Releaser
from draledger.kubeapi import ApiError, Conflict, KubeApi
from draledger.ledgers import PLURAL, NodeAllocatableLedgerStatus, ledger_object, status_body
from draledger.runtime import Runtime, Stored

log = structlog.get_logger("draledger")
LEDGERS = f"/apis/draledger.dev/v1alpha1/{PLURAL}"
VOLATILE = ("observedTime", "ledgerVersion", "mappingVersion")


def semantic_content(status: dict[str, Any]) -> str:
    """The status without versions and timestamps, serialized deterministically."""
    content = {k: v for k, v in status.items() if k not in VOLATILE}
    content["conditions"] = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in status.get("conditions", [])
    ]
    return json.dumps(content, sort_keys=True, separators=(",", ":"))


def stored_from(obj: dict[str, Any], now: float) -> Stored:
    status = obj.get("status") or {}
    return Stored(
        exists=True,
        ledger_version=int(status.get("ledgerVersion") or 0),
        mapping_version=int(status.get("mappingVersion") or 0),
        fingerprint=str(status.get("mappingFingerprint") or ""),
        content=semantic_content(status) if status else "",
        phase=str(status.get("phase") or ""),
        conditions=list(status.get("conditions") or []),
        frozen=bool((obj.get("spec") or {}).get("frozen")),
        mapping_changed_at=now,
        uid=str((obj.get("metadata") or {}).get("uid") or ""),
    )


def next_pause(window: float, window_max: float, batch_seconds: float) -> float:
    """How long the next batch waits: the window, or as long as the last batch took (at most ``window_max``)."""
    return max(window, min(batch_seconds, window_max))


class Writer:
    def __init__(
        self, runtime: Runtime, api: KubeApi, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    ) -> None:
        self.runtime = runtime
        self.api = api
        self.sleep = sleep
        self.backfill = Backfill(runtime, api)
        self.releaser = Releaser(runtime, api)

    async def load_stored(self) -> None:
        """Read every stored ledger before the first write, so versions continue from them."""
        now = self.runtime.clock()
        for obj in await self.api.list_all(LEDGERS):
            name = obj["metadata"]["name"]
            self.runtime.stored[name] = stored_from(obj, now)
        log.info("stored ledgers read", count=len(self.runtime.stored))

    async def mark_rebuilding(self) -> None:
        for name, stored in sorted(self.runtime.stored.items()):
            if stored.phase == "Rebuilding" or not stored.exists:
                continue
            version = stored.ledger_version + 1
            patch = {
                "status": {"phase": "Rebuilding", "ledgerVersion": version, "observedTime": now_rfc3339()}
            }
            if await self._send(name, "rebuilding", self.api.merge_patch(f"{LEDGERS}/{name}/status", patch)):
                old = stored.phase
                stored.ledger_version, stored.phase, stored.content = version, "Rebuilding", ""
                await self._phase_event(
                    name, stored, old, "the operator (re)started; recounting every object"
                )

    async def run(self) -> None:
        runtime = self.runtime
        config = runtime.config
        pause = config.coalesce_window
        while True:
            await runtime.wakeup.wait()
            runtime.wakeup.clear()
            await self.sleep(pause)
            if runtime.rebuilt.is_set():  # until then keep the dirty set: it is written once rebuilt
                batch, runtime.dirty = runtime.dirty, {}
                started = runtime.clock()
                for node in sorted(batch):
                    try:
                        await self.write_node(node, batch[node])
                    except Exception:
                        log.exception("ledger write failed; will retry", node=node)
                        runtime.mark({node})
                runtime.metrics.count_phases(s.phase for s in runtime.stored.values() if s.exists)
                pause = next_pause(config.coalesce_window, config.coalesce_window_max, runtime.clock() - started)
            if runtime.gated:
                try:
                    await self.releaser.release_pass()
                except Exception:
                    log.exception("gate release pass failed; will retry")

    async def write_node(self, node: str, dirty_since: float) -> None:
        runtime = self.runtime
        ledger = runtime.state.ledger(node, runtime.flags(node))
        if ledger is None:
            self.releaser.standing.pop(node, None)
            return  # the Node is gone (its ledger goes with it, by ownerReference) or not selected
        runtime.metrics.observe_ledger(ledger)
        self.releaser.standing[node] = NodeStanding(
            ledger.phase, {r: line.free for r, line in ledger.resources.items()}
        )
        stored = runtime.stored.setdefault(node, Stored())
        # Build the status once, with the versions a write would carry; its semantic content (the same
        # without versions and timestamps) decides whether to write at all.
        mapping_version = stored.mapping_version
        if ledger.mapping_fingerprint != stored.fingerprint or mapping_version == 0:
            mapping_version += 1
        body = status_body(
            ledger,
            ledger_version=stored.ledger_version + 1,
            mapping_version=mapping_version,
            now=now_rfc3339(),
            previous_conditions=stored.conditions,
        )
        content = semantic_content(body)
        if not (stored.exists and stored.content == content):
            await self._write(node, ledger, stored, content, body)
            runtime.metrics.write_latency.observe(max(0.0, runtime.clock() - dirty_since))
        if runtime.config.pod_status == "backfill":
            await self.backfill.node(node)

    async def _write(self, node: str, ledger: Ledger, stored: Stored, content: str, body: dict[str, Any]) -> None:
        runtime = self.runtime
        mapping_version = body["mappingVersion"]
        if not stored.exists:
            obj = ledger_object(NodeAllocatableLedgerStatus.model_validate(body), ledger.node_uid)
            obj.pop("status")
            try:
                created = await self.api.create(LEDGERS, obj)
                stored.uid = created.get("metadata", {}).get("uid", "")
            except Conflict:
                pass  # created meanwhile (e.g. by a previous run whose list we missed): patch it
            except ApiError as error:
                runtime.metrics.write_failures.labels("ledger", str(error.status)).inc()
                raise
            stored.exists = True
        if not await self._send(
            node, "ledger", self.api.merge_patch(f"{LEDGERS}/{node}/status", {"status": body}, reply=False)
        ):
            runtime.mark({node})
            return
        old_phase = stored.phase
        if mapping_version != stored.mapping_version:
            stored.mapping_changed_at = runtime.clock()
        stored.ledger_version, stored.mapping_version = body["ledgerVersion"], mapping_version
        stored.fingerprint, stored.content, stored.phase = ledger.mapping_fingerprint, content, body["phase"]
        stored.conditions = body["conditions"]
        runtime.metrics.set_phase(node, stored.phase)
        if old_phase != stored.phase:
            reasons = [
                c.message for c in ledger.conditions if c.status == "False" and c.type != "PodStatusBackfill"
            ]
            await self._phase_event(node, stored, old_phase, "; ".join(reasons) or "all conditions hold")

    async def _send(self, node: str, target: str, call: Awaitable[Any]) -> bool:
        try:
            await call
        except ApiError as error:
            self.runtime.metrics.write_failures.labels(target, str(error.status)).inc()
            log.warning("write failed", node=node, target=target, error=str(error))
            return False
        self.runtime.metrics.writes.labels(target).inc()
        return True

    async def _phase_event(self, node: str, stored: Stored, old: str, message: str) -> None:
        if not self.runtime.config.events:
            return
        await events.post(self.api, node, stored.uid, old, stored.phase, message, self.runtime.metrics)
