"""LIST responses: ``<Kind>List`` documents, key order, ``limit``/``continue`` pagination.

Rules:
1. A list is ``{"kind": "<Kind>List", "apiVersion": ..., "metadata": {"resourceVersion": <current RV>},
   "items": [...]}``; every item carries ``kind`` and ``apiVersion`` (the real kubectl decodes items as
   unstructured objects and needs them).
2. Items are in the apiserver's key order: by namespace, then name.
3. ``limit=N`` returns at most N items plus ``metadata.continue`` (an opaque token) and
   ``remainingItemCount`` while more remain; ``continue=<token>`` resumes after the last returned key and
   keeps the first page's RV. ``metadata.continue`` is absent on the last page.
4. Simplified: later pages are cut from the *current* state, not from a snapshot at the first page's RV
   (kube-apiserver serves a consistent snapshot, or 410 once it is compacted). A malformed token is 400.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from typing import Any

from draledger.demo.emulator import errors

__all__ = ["list_document", "sort_key"]


def sort_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def _encode(rv: str, start: tuple[str, str]) -> str:
    raw = json.dumps({"rv": rv, "start": list(start)}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode(token: str) -> tuple[str, tuple[str, str]]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return str(data["rv"]), (str(data["start"][0]), str(data["start"][1]))
    except (binascii.Error, ValueError, KeyError, IndexError, TypeError):
        raise errors.bad_request(f"continue key is not valid: {token!r}") from None


def list_document(
    items: Iterable[dict[str, Any]],
    *,
    kind: str,
    api_version: str,
    resource_version: int,
    params: Mapping[str, str],
) -> dict[str, Any]:
    """Build the list response (rules 1-3) from the already filtered, rendered items."""
    ordered = sorted(items, key=sort_key)
    rv = str(resource_version)
    token = params.get("continue") or ""
    if token:
        rv, start = _decode(token)
        ordered = [item for item in ordered if sort_key(item) > start]
    raw_limit = params.get("limit") or ""
    try:
        limit = int(raw_limit) if raw_limit else 0
    except ValueError:
        raise errors.bad_request(f"invalid limit: {raw_limit!r}") from None

    metadata: dict[str, Any] = {"resourceVersion": rv}
    if 0 < limit < len(ordered):
        page, rest = ordered[:limit], ordered[limit:]
        metadata["continue"] = _encode(rv, sort_key(page[-1]))
        metadata["remainingItemCount"] = len(rest)
    else:
        page = ordered
    return {"kind": f"{kind}List", "apiVersion": api_version, "metadata": metadata, "items": page}
