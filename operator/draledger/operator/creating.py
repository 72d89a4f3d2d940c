"""Creating a node's ledger (operator.writing, rule 6): only for a Node that exists now, with that Node's uid as its
owner; a create answered 409 reads the ledger back, and if there is none, the create failed and is tried again."""

from __future__ import annotations

from typing import Any

import structlog

from draledger.core.accounting.ledger import Ledger
from draledger.core.bodies import PLURAL, ledger_object
from draledger.core.models import NodeAllocatableLedgerStatus, status_json
from draledger.operator.kubeapi import ApiError, Conflict, KubeApi, NotFound
from draledger.operator.runtime import Runtime
from draledger.operator.stored import Stored

log = structlog.get_logger("draledger")
LEDGERS = f"/apis/draledger.dev/v1alpha1/{PLURAL}"


async def create(api: KubeApi, runtime: Runtime, ledger: Ledger, stored: Stored, body: dict[str, Any]) -> bool:
    """Create the ledger of a Node that exists now; False when there is nothing to write to."""
    node = ledger.node_name
    try:
        live = await api.get(f"/api/v1/nodes/{node}", attempts=1)
    except NotFound:
        log.info("node is gone; no ledger is created for it", node=node)
        runtime.forget_node(node)
        return False
    live_uid = ((live or {}).get("metadata") or {}).get("uid", "")
    if ledger.node_uid and live_uid != ledger.node_uid:
        # The Node was deleted and created again while its watch was away: the state's picture is of
        # the old one. The nodes watch brings the new one; until then nothing is written for it.
        log.info("node was replaced; waiting for the nodes watch", node=node, known=ledger.node_uid, live=live_uid)
        raise ApiError(409, {"message": "node replaced"}, f"create ledger {node}")
    obj = ledger_object(status_json(NodeAllocatableLedgerStatus.model_validate(body)), live_uid or ledger.node_uid)
    obj.pop("status")
    try:
        created = await api.create(LEDGERS, obj, attempts=1)
    except Conflict as error:  # it exists after all (created by an earlier run whose list we missed): read it
        await stored.reread(api, f"{LEDGERS}/{node}")
        if not stored.exists:  # gone again, or refused for another reason: a failed write, tried again
            runtime.metrics.write_failures.labels("ledger", str(error.status)).inc()
            log.warning("ledger create refused, yet no ledger is stored; will retry", node=node, error=str(error))
            raise
        return True
    except ApiError as error:
        runtime.metrics.write_failures.labels("ledger", str(error.status)).inc()
        raise
    runtime.metrics.writes.labels("ledger-create").inc()
    stored.take(created)
    return True
