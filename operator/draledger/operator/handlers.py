"""Kopf handlers: short translators from watch events to runtime calls.

Only silent ``@kopf.on.event`` handlers, never change-detection handlers, daemons, timers or finalizers
on Pods, Claims or Slices: nothing is ever written onto those objects by Kopf (no annotations, no
finalizers, no per-object tasks).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import kopf

from draledger.core.bodies import GROUP, PLURAL, VERSION
from draledger.operator.admitting import GatingWebhookServer, register_webhook
from draledger.operator.config import OperatorConfig
from draledger.operator.runtime import Runtime
from draledger.operator.stored import StoredLedgers

PAGE = 500  # items per LIST page, ours (operator.priming) and Kopf's, as client-go's informers ask
WATCHED = (
    ("nodes", ("v1", "nodes")),
    ("pods", ("v1", "pods")),
    ("resourceslices", ("resource.k8s.io", "v1", "resourceslices")),
    ("resourceclaims", ("resource.k8s.io", "v1", "resourceclaims")),
)
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"  # terminal pods hold nothing


def list_params(config: OperatorConfig) -> dict[str, dict[str, str]]:
    """Each watched kind's selectors as LIST parameters: Kopf's streams and the priming LIST see the same objects."""
    params: dict[str, dict[str, str]] = {kind: {} for kind, _ in WATCHED}
    params["pods"]["fieldSelector"] = POD_FIELD_SELECTOR
    if config.node_selector:
        params["nodes"]["labelSelector"] = config.node_selector
    return params


def collection_path(selector: tuple[str, ...]) -> str:
    """The API path of a watched kind's collection: ``("v1", "pods")`` -> ``/api/v1/pods``."""
    *group_version, plural = selector
    root = "/api" if len(group_version) == 1 else "/apis"
    return "/".join((root, *group_version, plural))


def register(
    registry: kopf.OperatorRegistry,
    runtime: Runtime,
    stored: StoredLedgers,
    login: Callable[[], kopf.ConnectionInfo],
) -> None:
    """``login`` gives fresh credentials; Kopf calls it at start and again whenever the API answers 401.
    The ledgers' events go to ``stored`` (the writer's mirror); the stream wrapper hands them over before
    Kopf's processing (``watching``), so this handler sees only what no observer took."""

    @kopf.on.login(registry=registry)
    async def login_handler(**_: Any) -> kopf.ConnectionInfo:
        return login()

    for kind, selector in WATCHED:

        def translate(kind: str = kind) -> Any:
            async def handler(event: Any, **_: Any) -> None:
                runtime.event(kind, event.get("type"), event.get("object") or {})
                runtime.applied(kind)

            handler.__name__ = f"{kind}_event"
            return handler

        kopf.on.event(*selector, registry=registry, id=f"{kind}-event")(translate())

    if runtime.config.webhook:
        register_webhook(registry, frozenset(runtime.config.gate_exclude_namespaces), runtime.metrics)

    @kopf.on.event(GROUP, VERSION, PLURAL, registry=registry, id="ledger-event")
    async def ledger_event(event: Any, **_: Any) -> None:
        stored.ledger_event(event.get("type"), event.get("object") or {})


class InfiniteBackoffs:
    """Retry API errors forever (capped exponential): a watch must never die of a flaky API server."""

    def __iter__(self) -> Any:
        delay = 0.5
        while True:
            yield delay
            delay = min(delay * 2, 15.0)


class NoDiffBase(kopf.DiffBaseStorage):
    """No diff base: Kopf builds one for every event (two deep copies of the body) to detect changes for
    change-detection handlers. This operator has none, so the copies were pure cost (the largest single one
    with realistic pod bodies, see benchmarks/results/operator.md). Nothing is stored on any object."""

    def build(self, *, body: kopf.Body, extra_fields: Any = None) -> kopf.BodyEssence:
        return cast(kopf.BodyEssence, {})

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        return None


def settings_for(runtime: Runtime) -> kopf.OperatorSettings:
    config = runtime.config
    settings = kopf.OperatorSettings()
    settings.scanning.disabled = True
    settings.posting.enabled = False  # we post our own Events, on ledgers only
    settings.peering.standalone = True
    settings.persistence.finalizer = "draledger.dev/unused"
    settings.persistence.diffbase_storage = NoDiffBase()
    settings.watching.server_timeout = config.watch_timeout
    settings.watching.client_timeout = config.watch_timeout + 15
    settings.watching.connect_timeout = 10
    settings.watching.reconnect_backoff = 0.5
    # Kopf's own listings (a relist after 410 Gone) go in pages as ours do: a relist of 150,000 pods in one
    # response would hold them all decoded at once (about 10 GB at 5,000 nodes, benchmarks/results/scale.md).
    settings.watching.chunk_size = PAGE
    settings.networking.error_backoffs = InfiniteBackoffs()
    params = list_params(config)
    for kind, selector in WATCHED:
        if "fieldSelector" in params[kind]:
            settings.watching.field_selectors[selector] = params[kind]["fieldSelector"]
        if "labelSelector" in params[kind]:
            settings.watching.label_selectors[selector] = params[kind]["labelSelector"]
    if config.webhook:
        cert_dir = config.webhook_cert_dir.rstrip("/")
        settings.admission.server = GatingWebhookServer(
            addr=config.webhook_host,
            port=config.webhook_port,
            path=None,
            certfile=f"{cert_dir}/tls.crt",
            pkeyfile=f"{cert_dir}/tls.key",
            file_check_interval=30.0,  # cert-manager rotates the Secret; the server restarts on change
        )
    return settings
