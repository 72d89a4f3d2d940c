"""Applying a PATCH body to a stored object, chosen by Content-Type like kube-apiserver.

Rules:
1. ``application/json-patch+json`` is RFC 6902 (via ``jsonpatch``): the body must be a list. A failed
   ``test`` op, a missing path or any other apply error is 422 Invalid and applies nothing, like
   kube-apiserver (kopf relies on this 422 to re-apply its ``patch.fns`` on fresh state).
2. ``application/merge-patch+json`` is RFC 7386: dicts merge recursively, ``null`` deletes, anything else
   (lists included) replaces.
3. ``application/strategic-merge-patch+json`` is treated as a merge patch with ``$``-directives dropped.
   That is the one deliberate difference: strategic merge would merge lists by their merge keys, here they
   are replaced whole.
4. ``application/apply-patch+yaml`` (server-side apply) is 415: not emulated.
5. Without a known Content-Type the body's type decides (a list is a JSON patch, a dict a merge patch), as
   kmock does, so that hand-written test requests keep working.
6. Pure: the stored object is never mutated; the result shares unchanged sub-trees with it, so callers
   treat every stored dict as immutable.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import jsonpatch
import jsonpointer

from draledger.demo.emulator import errors

__all__ = ["JSON_PATCH", "MERGE_PATCH", "STRATEGIC_MERGE_PATCH", "apply_patch", "merge_patch"]

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


def apply_patch(
    current: Mapping[str, Any],
    body: Any,
    content_type: str,
    *,
    plural: str,
    group: str,
    name: str,
) -> dict[str, Any]:
    """Return a new object: ``current`` with the PATCH ``body`` applied per ``content_type``."""
    media = content_type.split(";")[0].strip().lower()
    if media == APPLY_PATCH:
        raise errors.unsupported_media_type(media)
    if media == JSON_PATCH or (media not in (MERGE_PATCH, STRATEGIC_MERGE_PATCH) and isinstance(body, list)):
        if not isinstance(body, list):
            raise errors.bad_request("json patch must be a JSON array of operations")
        return _json_patch(current, body, plural=plural, group=group, name=name)
    if not isinstance(body, Mapping):
        raise errors.bad_request(f"a {media or 'merge'} patch must be a JSON object")
    if media == STRATEGIC_MERGE_PATCH:
        body = _drop_directives(body)
    patched = merge_patch(current, body)
    assert isinstance(patched, dict)  # a dict patch on a dict always yields a dict
    return patched


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch; returns new containers on the changed paths only."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result: dict[str, Any] = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _json_patch(
    current: Mapping[str, Any], ops: list[Any], *, plural: str, group: str, name: str
) -> dict[str, Any]:
    try:
        patch = jsonpatch.JsonPatch(ops)
        patched = patch.apply(dict(current), in_place=False)
    except jsonpatch.InvalidJsonPatch as exc:
        raise errors.bad_request(f"invalid json patch: {exc}") from None
    except jsonpatch.JsonPatchTestFailed as exc:
        raise errors.invalid(
            plural,
            group,
            name,
            f"the server rejected our request due to an error in our request: test operation failed: {exc}",
        ) from None
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError, KeyError) as exc:
        raise errors.invalid(plural, group, name, f"json patch could not be applied: {exc}") from None
    if not isinstance(patched, dict):
        raise errors.invalid(plural, group, name, "json patch replaced the whole object with a non-object")
    return patched


def _drop_directives(patch: Mapping[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        result[key] = _drop_directives(value) if isinstance(value, Mapping) else value
    return result
