"""Priming: the operator lists the four kinds itself before Kopf starts, and Kopf's watches resume from there.

Kopf hands every object of its initial listing to the handlers through its whole per-event machinery
(causes, memories, loggers, handler invocation), which on a large cluster costs several times reading the
objects (benchmarks/results/scale.md). So a start reads each kind with one paginated LIST, decodes it with msgspec
while the cyclic collector is off, and gives every object to the runtime as Kopf's listing would
(``Runtime.event(kind, None, body)``), each page decoded against its kind's schema (``pages``): only the fields the
views read are built. Kopf's first listing of a primed kind is then answered with no
objects and this list's resourceVersion (``watching.Hooks``), so its watch starts where this LIST ended and
the handlers keep watching the four kinds as before.

Rules:
1. The same objects as Kopf's own listing: the same paths and selectors (``handlers.list_params``).
2. A kind counts as primed only after a complete LIST. A failed attempt (an error after the client's own
   retries, a continue token expired by compaction) starts that kind again in the next round, after the
   other kinds have had theirs; the complete LIST then forgets
   what the state holds that it lacks, as a relist does (``Runtime.forget_unlisted``). There is no giving up
   half way: without a complete list nothing can be rebuilt, as Kopf, which retries for ever, would not either.
3. Kopf starts at once (its webhook gates the pods created meanwhile); its watches of the four kinds wait
   for the priming to end (``Runtime.resume_from``). Nothing about the rebuild changes: ``rebuilt`` is still
   set by Kopf's (now empty) listings of all four kinds, so the gate and every ledger stay Rebuilding until
   the state is complete. A watch that cannot resume from the primed version (410 Gone) makes Kopf list the
   kind again, a relist like any other.
4. The kinds are listed with pods last (when none fails): Kopf's watches start after the last LIST, and the
   pods' version, the busiest stream's, is then the youngest (the least likely to be compacted away meanwhile).
5. The objects read here live as long as the state; they are moved out of the collector's generations
   (``gc.freeze``) so that no later collection walks them.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import json
from typing import Any

import msgspec
import structlog

from draledger.operator.config import OperatorConfig
from draledger.operator.handlers import PAGE, WATCHED, collection_path, list_params
from draledger.operator.kubeapi import KubeApi
from draledger.operator.pages import DECODERS
from draledger.operator.runtime import Runtime

log = structlog.get_logger("draledger")
ORDER = ("nodes", "resourceslices", "resourceclaims", "pods")
ATTEMPTS = 2  # the client's own retries per page: a refused kind soon yields its turn to the others (rule 2)
RETRY_CAP = 15.0
_DECODER = msgspec.json.Decoder()


def decode(data: bytes, kind: str | None = None) -> Any:
    """A LIST page of ``kind``: msgspec, against the kind's schema (``pages``: only what the views read), several
    times faster than ``json.loads``. A page the schema refuses is decoded whole (``pages`` rule 3), and what
    msgspec refuses (an integer beyond 64 bits, a lone surrogate) goes to ``json.loads``, which reads the same
    JSON as Kopf's own client does."""
    typed = DECODERS.get(kind) if kind is not None else None
    if typed is not None:
        try:
            return typed.decode(data)
        except msgspec.MsgspecError:
            pass
    try:
        return _DECODER.decode(data)
    except msgspec.MsgspecError:
        return json.loads(data)


async def prime_kind(runtime: Runtime, api: KubeApi, kind: str, path: str, params: dict[str, str]) -> int:
    """One complete LIST of ``kind`` into the runtime; the number of objects. Raises what stopped it."""
    listed: set[str] = set()
    version = ""
    async for items, rv in api.list_pages(path, functools.partial(decode, kind=kind), limit=PAGE, attempts=ATTEMPTS,
                                          **params):
        version = version or rv
        for body in items:
            uid = (body.get("metadata") or {}).get("uid")
            listed.add(uid if isinstance(uid, str) else str(uid))
            runtime.event(kind, None, body)
        del items  # one page at a time
    if not version:  # no version to resume from: Kopf lists the kind itself, and nothing primed may linger
        log.warning("priming LIST has no resourceVersion; Kopf lists the kind", kind=kind)
        runtime.forget_unlisted(kind, set())
        return 0
    runtime.forget_unlisted(kind, listed)  # what an earlier, failed attempt read and this list lacks
    runtime.primed[kind] = version
    return len(listed)


async def prime_all(runtime: Runtime, api: KubeApi, paths: dict[str, str], params: dict[str, dict[str, str]],
                    counts: dict[str, int]) -> None:
    """Every kind, in ``ORDER``, each until one complete LIST (rule 2). A kind that fails waits for the next
    round while the others go on, so one refused kind never keeps the others (and the gated pods the
    releaser must see) unlisted."""
    pending = [kind for kind in ORDER if kind in paths]
    delay = 0.5
    while pending:
        for kind in list(pending):
            try:
                counts[kind] = await prime_kind(runtime, api, kind, paths[kind], params[kind])
            except Exception as error:  # the API may be down or the continue token expired: list again
                log.warning("priming LIST failed; listing again", kind=kind, error=str(error), retry_in=delay)
            else:
                pending.remove(kind)
        if pending:
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_CAP)


async def prime(runtime: Runtime, api: KubeApi, config: OperatorConfig) -> None:
    """Every watched kind into the runtime, the collector off meanwhile; what was read is frozen out of it."""
    paths = {kind: collection_path(selector) for kind, selector in WATCHED}
    params = list_params(config)
    started = runtime.clock()
    counts: dict[str, int] = {}
    enabled = gc.isenabled()
    gc.disable()  # decoded pages die by reference counting; the state holds no cycles (core.state)
    try:
        await prime_all(runtime, api, paths, params, counts)
    finally:
        if enabled:
            gc.enable()
    gc.freeze()
    runtime.priming_done.set()
    log.info("state primed", seconds=round(runtime.clock() - started, 3), **counts)
