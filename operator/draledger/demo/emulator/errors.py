"""kube-apiserver's ``kind: Status`` failures, as raised inside the emulator.

Rules:
1. Every failure the emulator answers on purpose is an :class:`ApiError`: a kmock ``KubernetesError`` (so
   kmock renders it as a ``Status`` body with its HTTP code) that also knows the ``details`` kube-apiserver
   sends (``name``, ``group``, ``kind``) and, for 429/503, a ``Retry-After`` in seconds.
2. Reasons and messages are kube-apiserver's (``k8s.io/apimachinery/pkg/api/errors``): ``NotFound``,
   ``AlreadyExists``, ``Conflict``, ``Invalid``, ``Expired``/``Gone``, ``BadRequest``, ``TooManyRequests``,
   ``UnsupportedMediaType``, ``InternalError``, ``ServiceUnavailable``.
3. A raised error never leaves a half-applied change behind: callers raise before they store anything.
"""

from __future__ import annotations

from typing import Any

import attrs
from kmock import KubernetesError

__all__ = [
    "ApiError",
    "already_exists",
    "bad_request",
    "conflict",
    "expired",
    "from_status",
    "invalid",
    "not_found",
    "status_body",
    "unknown_resource",
    "unsupported_media_type",
]

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


@attrs.frozen
class ApiError(KubernetesError):
    """A failure with kube-apiserver's Status body; ``retry_after`` becomes the Retry-After header."""

    retry_after: int | None = None


def status_body(error: KubernetesError) -> dict[str, Any]:
    """The ``kind: Status`` dict for an error (what a watch ERROR event carries as its object)."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": error.message or "",
        "reason": error.reason or _REASONS.get(error.status, ""),
        "details": error.details or {},
        "code": error.status,
    }


def _details(plural: str, group: str, name: str | None) -> dict[str, Any]:
    details: dict[str, Any] = {"kind": plural}
    if name is not None:
        details["name"] = name
    if group:
        details["group"] = group
    return details


def _qualified(plural: str, group: str) -> str:
    return f"{plural}.{group}" if group else plural


def unknown_resource() -> ApiError:
    return ApiError(status=404, reason="NotFound", message="the server could not find the requested resource")


def not_found(plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        status=404,
        reason="NotFound",
        message=f'{_qualified(plural, group)} "{name}" not found',
        details=_details(plural, group, name),
    )


def already_exists(plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        status=409,
        reason="AlreadyExists",
        message=f'{_qualified(plural, group)} "{name}" already exists',
        details=_details(plural, group, name),
    )


def conflict(plural: str, group: str, name: str, why: str) -> ApiError:
    return ApiError(
        status=409,
        reason="Conflict",
        message=f'Operation cannot be fulfilled on {_qualified(plural, group)} "{name}": {why}',
        details=_details(plural, group, name),
    )


def invalid(plural: str, group: str, name: str, why: str) -> ApiError:
    return ApiError(
        status=422,
        reason="Invalid",
        message=f'{_qualified(plural, group)} "{name}" is invalid: {why}',
        details=_details(plural, group, name),
    )


def expired(message: str) -> ApiError:
    return ApiError(status=410, reason="Expired", message=message)


def bad_request(message: str) -> ApiError:
    return ApiError(status=400, reason="BadRequest", message=message)


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(
        status=415,
        reason="UnsupportedMediaType",
        message=f"the body of the request was in an unknown format - accepted media types include: "
        f"application/json-patch+json, application/merge-patch+json, "
        f'application/strategic-merge-patch+json (got "{content_type}")',
    )


def from_status(status: int, *, retry_after: int | None = None, message: str | None = None) -> ApiError:
    """An injected failure with the reason kube-apiserver uses for that HTTP code."""
    reason = _REASONS.get(status, "InternalError")
    return ApiError(
        status=status,
        reason=reason,
        message=message or f"injected failure: {status} {reason}",
        details={"retryAfterSeconds": retry_after} if retry_after is not None else {},
        retry_after=retry_after,
    )
