"""Server-side printing: ``kind: Table`` answers for clients that ask for them, as ``kubectl get`` does.

Rules (kube-apiserver's, ``k8s.io/apiserver/pkg/endpoints/handlers`` and the table convertors):
1. A GET, LIST or WATCH whose ``Accept`` header prefers ``application/json;as=Table;v=v1;g=meta.k8s.io``
   (or ``v1beta1``) is answered with a ``Table`` of that ``meta.k8s.io`` version; the first acceptable
   entry of the header wins, so ``application/json`` first means a plain object or list.
2. Columns: ``Name`` (``format: name``) first, then the resource's declared :class:`PrinterColumn` s (the
   CRD's ``additionalPrinterColumns`` for ledgers; a subset of kube-apiserver's built-in printers for pods,
   nodes, events, resourceslices and resourceclaims), or ``Age`` for resources that declare none, like a
   CRD without printer columns.
3. Cells: a simple JSONPath (``.a.b``, ``.a[0].b``) per column; a missing value is ``null`` (kubectl shows
   ``<none>``). ``string`` columns print scalars as text and others as compact JSON, ``integer`` columns
   give integers, ``date`` columns are rendered server-side as a human age (``"5m"``,
   ``apimachinery/pkg/util/duration.HumanDuration``), as the apiserver does for CRDs.
4. ``rows[].object`` follows ``includeObject``: ``Metadata`` (the default) gives a ``PartialObjectMetadata``
   (kubectl reads the namespace for ``-A`` and the labels for ``--show-labels`` from it), ``Object`` the
   whole object, ``None`` nothing. ``metadata`` carries the list's ``resourceVersion``, ``continue`` and
   ``remainingItemCount`` (or the object's RV for a single GET).
5. Watches: each ADDED/MODIFIED/DELETED event carries a one-row Table (column definitions included);
   ERROR and BOOKMARK events are left as they are.

Pure: no I/O; the clock is passed in.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "BUILTIN_COLUMNS",
    "DEFAULT_COLUMNS",
    "NAME",
    "PrinterColumn",
    "columns_from_crd",
    "human_duration",
    "object_table",
    "requested_table",
    "table_definitions",
    "table_of",
]

Cell = Callable[[Mapping[str, Any], datetime.datetime], Any]

NAME_DESCRIPTION: Final = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources "
    "may allow a client to request the generation of an appropriate name automatically. Name is primarily "
    "intended for creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
AGE_DESCRIPTION: Final = (
    "CreationTimestamp is a timestamp representing the server time when this object was created."
)
_TABLE_VERSIONS: Final = frozenset({"v1", "v1beta1"})


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """One column of a resource's Table: a JSONPath (like a CRD's printer column) or a computed cell."""

    name: str
    type: str = "string"  # string | integer | number | boolean | date
    json_path: str = ""
    description: str = ""
    priority: int = 0
    format: str = ""
    cell: Cell | None = None  # computes the cell instead of json_path (the built-in printers)

    def definition(self) -> dict[str, Any]:
        description = self.description or (
            f"Custom resource definition column (in JSONPath format): {self.json_path}"
            if self.json_path
            else self.name
        )
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": description,
            "priority": self.priority,
        }

    def value(self, obj: Mapping[str, Any], now: datetime.datetime) -> Any:
        if self.cell is not None:
            return self.cell(obj, now)
        found, raw = _lookup(obj, self.json_path)
        if not found or raw is None:
            return None
        return _typed(self.type, raw, now)


def columns_from_crd(columns: Iterable[Mapping[str, Any]]) -> tuple[PrinterColumn, ...]:
    """PrinterColumns from a CRD version's ``additionalPrinterColumns``."""
    return tuple(
        PrinterColumn(
            name=str(column["name"]),
            type=str(column.get("type") or "string"),
            json_path=str(column["jsonPath"]),
            description=str(column.get("description") or ""),
            priority=int(column.get("priority") or 0),
            format=str(column.get("format") or ""),
        )
        for column in columns
    )


NAME: Final = PrinterColumn("Name", "string", ".metadata.name", NAME_DESCRIPTION, format="name")
DEFAULT_COLUMNS: Final = (
    PrinterColumn("Age", "date", ".metadata.creationTimestamp", AGE_DESCRIPTION),
)


# --- requests ---------------------------------------------------------------------------------------


def requested_table(accept: str) -> str | None:
    """The ``meta.k8s.io`` Table version the ``Accept`` header prefers (rule 1), or None for plain JSON."""
    for entry in accept.split(","):
        media, *raw_params = (part.strip() for part in entry.split(";"))
        params = dict(param.partition("=")[::2] for param in raw_params)
        if media not in ("application/json", "application/*", "*/*", ""):
            continue  # e.g. protobuf or yaml: not something we serve; look further
        if params.get("as") == "Table":
            if params.get("g") == "meta.k8s.io" and params.get("v") in _TABLE_VERSIONS:
                return params["v"]
            continue
        if media or params:
            return None
    return None


# --- tables -----------------------------------------------------------------------------------------


def _all_columns(columns: Sequence[PrinterColumn]) -> tuple[PrinterColumn, ...]:
    """Name first, unless the resource places it itself (events show it only with ``-o wide``)."""
    declared = tuple(columns) or DEFAULT_COLUMNS
    return declared if any(column.name == "Name" for column in declared) else (NAME, *declared)


def table_definitions(columns: Sequence[PrinterColumn]) -> list[dict[str, Any]]:
    return [column.definition() for column in _all_columns(columns)]


def _row(
    obj: Mapping[str, Any],
    columns: Sequence[PrinterColumn],
    include: str,
    now: datetime.datetime,
    version: str,
) -> dict[str, Any]:
    metadata = obj.get("metadata") or {}
    cells = [column.value(obj, now) for column in _all_columns(columns)]
    row: dict[str, Any] = {"cells": cells}
    if include == "Object":
        row["object"] = dict(obj)
    elif include != "None":
        row["object"] = {
            "kind": "PartialObjectMetadata",
            "apiVersion": f"meta.k8s.io/{version}",
            "metadata": dict(metadata),
        }
    return row


def table_of(
    objects: Iterable[Mapping[str, Any]],
    columns: Sequence[PrinterColumn],
    *,
    version: str,
    metadata: Mapping[str, Any],
    params: Mapping[str, str],
    now: datetime.datetime,
) -> dict[str, Any]:
    """A Table of these objects (rules 2-4); ``metadata`` is the list's (RV, continue, remaining count)."""
    include = params.get("includeObject") or "Metadata"
    table: dict[str, Any] = {
        "kind": "Table",
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": dict(metadata),
        "columnDefinitions": table_definitions(columns),
        "rows": [_row(obj, columns, include, now, version) for obj in objects],
    }
    return table


def object_table(
    obj: Mapping[str, Any],
    columns: Sequence[PrinterColumn],
    *,
    version: str,
    params: Mapping[str, str],
    now: datetime.datetime,
) -> dict[str, Any]:
    """A one-row Table for one object (a GET, or a watch event's object)."""
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    metadata = {"resourceVersion": rv} if rv else {}
    return table_of([obj], columns, version=version, metadata=metadata, params=params, now=now)


# --- cells ------------------------------------------------------------------------------------------

_STEP: Final = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _lookup(obj: Any, path: str) -> tuple[bool, Any]:
    """Evaluate a simple JSONPath (``.a.b``, ``.a[0].b``, optionally in braces); (found, value)."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    value = obj
    for match in _STEP.finditer(text):
        key, index = match.group(1), match.group(2)
        if key is not None:
            if not isinstance(value, Mapping) or key not in value:
                return False, None
            value = value[key]
        else:
            position = int(index)
            if not isinstance(value, list) or position >= len(value):
                return False, None
            value = value[position]
    return True, value


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _typed(kind: str, value: Any, now: datetime.datetime) -> Any:
    if kind == "string":
        return _text(value)
    if kind == "integer":
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        return int(value) if isinstance(value, float) else None
    if kind == "number":
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    if kind == "date":
        return age(value, now) if isinstance(value, str) else None
    return None


def _parse_time(value: str) -> datetime.datetime | None:
    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.UTC)


def age(timestamp: Any, now: datetime.datetime) -> str:
    """A timestamp as kubectl's AGE column shows it ("<unknown>" when absent, "<invalid>" when bad)."""
    if not timestamp:
        return "<unknown>"
    parsed = _parse_time(str(timestamp))
    if parsed is None:
        return "<invalid>"
    return human_duration((now - parsed).total_seconds())


def human_duration(seconds: float) -> str:
    """``k8s.io/apimachinery/pkg/util/duration.HumanDuration``."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 60 * 2:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        years, days = hours // 24 // 365, (hours // 24) % 365
        return f"{years}y" if days == 0 else f"{years}y{days}d"
    return f"{hours // 24 // 365}y"


# --- built-in printers (a subset of k8s.io/kubernetes/pkg/printers/internalversion) ----------------


def _get(obj: Mapping[str, Any], *path: str) -> Any:
    value: Any = obj
    for step in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(step)
    return value


def _created(obj: Mapping[str, Any], now: datetime.datetime) -> str:
    return age(_get(obj, "metadata", "creationTimestamp"), now)


def _pod_ready(obj: Mapping[str, Any], now: datetime.datetime) -> str:
    containers = _get(obj, "spec", "containers") or []
    statuses = _get(obj, "status", "containerStatuses") or []
    ready = sum(1 for status in statuses if isinstance(status, Mapping) and status.get("ready"))
    return f"{ready}/{len(containers)}"


def _pod_status(obj: Mapping[str, Any], now: datetime.datetime) -> str:
    reason = str(_get(obj, "status", "reason") or _get(obj, "status", "phase") or "")
    gated = bool(_get(obj, "spec", "schedulingGates")) and not _get(obj, "spec", "nodeName")
    conditions = _get(obj, "status", "conditions") or []
    if gated or any(
        isinstance(c, Mapping) and c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated"
        for c in conditions
    ):
        reason = "SchedulingGated"
    for status in _get(obj, "status", "containerStatuses") or []:
        waiting = _get(status, "state", "waiting", "reason") if isinstance(status, Mapping) else None
        if waiting:
            reason = str(waiting)
    if _get(obj, "metadata", "deletionTimestamp"):
        reason = "Terminating"
    return reason


def _pod_restarts(obj: Mapping[str, Any], now: datetime.datetime) -> int:
    statuses = _get(obj, "status", "containerStatuses") or []
    return sum(int(s.get("restartCount") or 0) for s in statuses if isinstance(s, Mapping))


def _node_status(obj: Mapping[str, Any], now: datetime.datetime) -> str:
    conditions = _get(obj, "status", "conditions") or []
    ready = next((c for c in conditions if isinstance(c, Mapping) and c.get("type") == "Ready"), None)
    status = "Unknown"
    if ready is not None:
        status = {"True": "Ready", "False": "NotReady"}.get(str(ready.get("status")), "Unknown")
    return f"{status},SchedulingDisabled" if _get(obj, "spec", "unschedulable") else status


def _node_roles(obj: Mapping[str, Any], now: datetime.datetime) -> str:
    labels = _get(obj, "metadata", "labels") or {}
    roles = sorted(
        key.split("/", 1)[1] for key in labels if key.startswith("node-role.kubernetes.io/") and "/" in key
    )
    return ",".join(role for role in roles if role) or "<none>"


def _node_address(kind: str) -> Cell:
    def cell(obj: Mapping[str, Any], now: datetime.datetime) -> str:
        addresses = _get(obj, "status", "addresses") or []
        found = [a.get("address") for a in addresses if isinstance(a, Mapping) and a.get("type") == kind]
        return str(found[0]) if found else "<none>"

    return cell


def _claim_state(obj: Mapping[str, Any], now: datetime.datetime) -> str:
    states = []
    if _get(obj, "metadata", "deletionTimestamp"):
        states.append("deleted")
    states.append("allocated" if _get(obj, "status", "allocation") else "pending")
    if _get(obj, "status", "reservedFor"):
        states.append("reserved")
    return ",".join(states)


def _event_last_seen(obj: Mapping[str, Any], now: datetime.datetime) -> str:
    stamp = _get(obj, "series", "lastObservedTime") or obj.get("lastTimestamp") or obj.get("eventTime")
    return age(stamp or _get(obj, "metadata", "creationTimestamp"), now)


def _event_object(obj: Mapping[str, Any], now: datetime.datetime) -> str:
    involved = obj.get("involvedObject") or obj.get("regarding") or {}
    return f"{str(involved.get('kind') or '').lower()}/{involved.get('name') or ''}"


AGE: Final = PrinterColumn("Age", "string", description=AGE_DESCRIPTION, cell=_created)

BUILTIN_COLUMNS: Final[Mapping[tuple[str, str], tuple[PrinterColumn, ...]]] = {
    ("", "pods"): (
        PrinterColumn("Ready", cell=_pod_ready, description="The aggregate readiness state of this pod"),
        PrinterColumn("Status", cell=_pod_status, description="The aggregate status of the containers"),
        PrinterColumn("Restarts", "integer", cell=_pod_restarts, description="The number of restarts"),
        AGE,
        PrinterColumn("IP", json_path=".status.podIP", priority=1, description="The IP address of the pod"),
        PrinterColumn("Node", json_path=".spec.nodeName", priority=1, description="The node of the pod"),
    ),
    ("", "nodes"): (
        PrinterColumn("Status", cell=_node_status, description="The status of the node"),
        PrinterColumn("Roles", cell=_node_roles, description="The roles of the node"),
        AGE,
        PrinterColumn("Version", json_path=".status.nodeInfo.kubeletVersion", description="Kubelet Version"),
        PrinterColumn("Internal-IP", cell=_node_address("InternalIP"), priority=1, description="Internal IP"),
        PrinterColumn("OS-Image", json_path=".status.nodeInfo.osImage", priority=1, description="OS image"),
    ),
    ("", "events"): (
        PrinterColumn("Last Seen", cell=_event_last_seen, description="Time since the last occurrence"),
        PrinterColumn("Type", json_path=".type", description="Type of this event"),
        PrinterColumn("Reason", json_path=".reason", description="Why the event was posted"),
        PrinterColumn("Object", cell=_event_object, description="The object this event is about"),
        PrinterColumn("Message", json_path=".message", description="A human-readable description"),
        PrinterColumn("Name", json_path=".metadata.name", priority=1, format="name", description=NAME_DESCRIPTION),
    ),
    ("resource.k8s.io", "resourceslices"): (
        PrinterColumn("Node", json_path=".spec.nodeName", description="The node of the slice"),
        PrinterColumn("Driver", json_path=".spec.driver", description="The driver that publishes it"),
        PrinterColumn("Pool", json_path=".spec.pool.name", description="The pool of the slice"),
        AGE,
    ),
    ("resource.k8s.io", "resourceclaims"): (
        PrinterColumn("State", cell=_claim_state, description="Allocation and reservation state"),
        AGE,
    ),
}
