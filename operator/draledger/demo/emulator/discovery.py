"""The resources this cluster serves, and kube-apiserver-shaped discovery documents for them.

Rules:
1. :func:`register_cluster_resources` declares what dra-ledger, kopf and kubectl touch: core namespaces
   (kopf waits for them even with scanning disabled), nodes, pods (status subresource), events,
   ``events.k8s.io/v1`` events, ``resource.k8s.io`` v1 and v1beta2 resourceslices, resourceclaims (status
   subresource) and deviceclasses, ``coordination.k8s.io/v1`` leases and ``draledger.dev/v1alpha1``
   nodeallocatableledgers (cluster-scoped, status subresource, short name ``nal``, category ``draledger``).
   Each declaration may carry printer columns for server-side Tables (:mod:`draledger.demo.emulator.printing`):
   the ledgers' are the CRD's ``additionalPrinterColumns`` (:data:`draledger.core.crds.PRINTER_COLUMNS`); pods,
   nodes, events, resourceslices and resourceclaims get a subset of kube-apiserver's built-in printers.
2. Several versions of one group/plural share storage, like the apiserver: the preferred (storage) version
   is the highest by Kubernetes' version order (GA > beta > alpha, then by number), see
   :func:`version_priority`. Discovery also lists the preferred version first.
3. Discovery documents fix two kmock 0.8 quirks: the core ``groupVersion`` is ``v1`` (not ``/v1``) and the
   preferred version is chosen by priority, not by set order. Subresources are listed as ``plural/sub``
   with the verbs kube-apiserver gives them.

Deliberately not emulated: aggregated discovery (``apidiscovery.k8s.io/v2``; clients fall back to these
legacy documents), OpenAPI.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

import kmock

from draledger.core.crds import PRINTER_COLUMNS
from draledger.demo.emulator.printing import BUILTIN_COLUMNS, PrinterColumn, columns_from_crd

__all__ = [
    "CLUSTER_RESOURCES",
    "DEFAULT_VERBS",
    "Declaration",
    "api_group",
    "api_resource_list",
    "register_cluster_resources",
    "version_priority",
]

DEFAULT_VERBS: Final = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
SUBRESOURCE_VERBS: Final = ("get", "patch", "update")


@dataclass(frozen=True, slots=True)
class Declaration:
    """One resource to declare in the emulator's discovery."""

    key: str  # group/version/plural or v1/plural
    kind: str
    namespaced: bool
    subresources: tuple[str, ...] = ()
    shortnames: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    columns: tuple[PrinterColumn, ...] = ()  # server-side Table columns after Name (none: Age)


_DRA_VERSIONS: Final = ("v1", "v1beta2")

CLUSTER_RESOURCES: Final[tuple[Declaration, ...]] = (
    Declaration("v1/namespaces", "Namespace", False, ("status",), ("ns",)),
    Declaration("v1/nodes", "Node", False, ("status",), ("no",), (), BUILTIN_COLUMNS["", "nodes"]),
    Declaration("v1/pods", "Pod", True, ("status",), ("po",), ("all",), BUILTIN_COLUMNS["", "pods"]),
    Declaration("v1/events", "Event", True, (), ("ev",), (), BUILTIN_COLUMNS["", "events"]),
    Declaration("events.k8s.io/v1/events", "Event", True, (), ("ev",)),
    Declaration("coordination.k8s.io/v1/leases", "Lease", True),
    *(
        declaration
        for version in _DRA_VERSIONS
        for declaration in (
            Declaration(
                f"resource.k8s.io/{version}/resourceslices",
                "ResourceSlice",
                False,
                columns=BUILTIN_COLUMNS["resource.k8s.io", "resourceslices"],
            ),
            Declaration(
                f"resource.k8s.io/{version}/resourceclaims",
                "ResourceClaim",
                True,
                ("status",),
                columns=BUILTIN_COLUMNS["resource.k8s.io", "resourceclaims"],
            ),
            Declaration(f"resource.k8s.io/{version}/deviceclasses", "DeviceClass", False),
        )
    ),
    Declaration(
        "draledger.dev/v1alpha1/nodeallocatableledgers",
        "NodeAllocatableLedger",
        False,
        ("status",),
        ("nal",),
        ("draledger",),
        columns_from_crd(PRINTER_COLUMNS),
    ),
)


def register_cluster_resources(
    emulator: kmock.KubernetesScaffold, declarations: Iterable[Declaration] = CLUSTER_RESOURCES
) -> None:
    """Declare the resources (rule 1) in the emulator's discovery, and their printer columns if it prints."""
    printer_columns = getattr(emulator, "printer_columns", None)
    for declaration in declarations:
        if isinstance(printer_columns, dict):
            resource = kmock.resource(declaration.key)
            printer_columns[str(resource.group or ""), str(resource.plural)] = declaration.columns
        emulator.resources[declaration.key] = kmock.ResourceInfo(
            kind=declaration.kind,
            singular=declaration.kind.lower(),
            namespaced=declaration.namespaced,
            verbs=set(DEFAULT_VERBS),
            shortnames=set(declaration.shortnames),
            categories=set(declaration.categories),
            subresources=set(declaration.subresources),
        )


_VERSION_RE: Final = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """A sort key: smaller is preferred (v1 < v1beta2 < v1beta1 < v1alpha1 < v2alpha1 < foo)."""
    match = _VERSION_RE.match(version)
    if match is None:
        return (3, 0, 0, version)  # non-Kubernetes versions sort last, alphabetically
    major, stability, minor = int(match[1]), match[2], int(match[3] or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[stability]
    return (rank, -major, -minor, "")


def api_group(group: str, versions: Iterable[str]) -> dict[str, Any]:
    """An ``APIGroup`` document (also an item of ``APIGroupList``)."""
    ordered = sorted(set(versions), key=version_priority)
    entries = [{"groupVersion": f"{group}/{version}", "version": version} for version in ordered]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": entries,
        "preferredVersion": entries[0] if entries else {},
    }


def api_resource_list(
    group: str, version: str, resources: Iterable[tuple[kmock.resource, kmock.ResourceInfo]]
) -> dict[str, Any]:
    """An ``APIResourceList`` for one group/version."""
    items: list[dict[str, Any]] = []
    for resource, info in sorted(resources, key=lambda pair: str(pair[0].plural)):
        plural = str(resource.plural)
        kind = info.kind or plural.capitalize()
        base = {
            "name": plural,
            "singularName": info.singular or kind.lower(),
            "namespaced": bool(info.namespaced),
            "kind": kind,
            "verbs": sorted(info.verbs or DEFAULT_VERBS),
        }
        if info.shortnames:
            base["shortNames"] = sorted(info.shortnames)
        if info.categories:
            base["categories"] = sorted(info.categories)
        items.append(base)
        for subresource in sorted(info.subresources):
            items.append(
                {
                    "name": f"{plural}/{subresource}",
                    "singularName": "",
                    "namespaced": bool(info.namespaced),
                    "kind": kind,
                    "verbs": list(SUBRESOURCE_VERBS),
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": items,
    }
