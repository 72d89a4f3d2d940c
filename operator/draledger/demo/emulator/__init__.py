"""An in-memory kube-apiserver for tests and ``draledger demo``: KMock's emulator, made faithful.

It emulates faithfully, because kopf, kubectl or dra-ledger depend on it: a cluster-wide resourceVersion
on every change; 409 AlreadyExists / Conflict, 422 on failed JSON-patch ``test`` ops, 404 NotFound as
``kind: Status``; ``<Kind>List`` documents with pagination; watches that resume from an RV, expire with 410,
bookmark, time out and honour label/field selectors (DELETED when an object stops matching); ``status``
subresource isolation; finalizers; owner-reference garbage collection; discovery for the resources we use.

It deliberately does not emulate: admission, schema validation and defaulting (beyond a pod's
``status.phase``), strategic-merge list merging, server-side apply, TLS, authn/authz, namespace lifecycle,
pod graceful termination, consistent snapshots across list pages. See docs/emulator.md.

Usage::

    async with serve_emulator() as (emulator, url):
        emulator.load_objects([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}])
        emulator.inject_patch_error("v1/pods", 503)
        ...  # run kopf with ConnectionInfo(server=url), or kubectl with write_kubeconfig(path, url)
"""

from draledger.demo.emulator.cluster import ClusterEmulator
from draledger.demo.emulator.discovery import CLUSTER_RESOURCES, Declaration, register_cluster_resources
from draledger.demo.emulator.errors import ApiError
from draledger.demo.emulator.faults import Shuffle
from draledger.demo.emulator.journals import Change
from draledger.demo.emulator.printing import PrinterColumn
from draledger.demo.emulator.selectors import Selector, parse_selector
from draledger.demo.emulator.serving import EmulatorServer, serve_emulator, write_kubeconfig
from draledger.demo.emulator.store import ResourceSpec, Store

__all__ = [
    "CLUSTER_RESOURCES",
    "ApiError",
    "Change",
    "ClusterEmulator",
    "Declaration",
    "EmulatorServer",
    "PrinterColumn",
    "ResourceSpec",
    "Selector",
    "Shuffle",
    "Store",
    "parse_selector",
    "register_cluster_resources",
    "serve_emulator",
    "write_kubeconfig",
]
