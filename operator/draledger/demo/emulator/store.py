"""The emulated etcd+registry: create, update, delete and garbage-collect objects, with resourceVersions.

Rules (each one is kube-apiserver's behaviour, simplified where it says so):
1. Every stored change takes the next cluster-wide RV (:class:`~draledger.demo.emulator.journals.Clock`) and is
   journalled for watches: creation → ADDED; update, status update, deletion mark → MODIFIED; removal →
   DELETED carrying the final state with a *new* RV.
2. Create: 409 AlreadyExists for a live name; ``generateName`` gets a 5-letter suffix; the server sets
   ``uid`` (uuid4), ``creationTimestamp`` (RFC 3339, injectable clock), ``generation: 1``, ``kind`` and
   ``apiVersion``. For resources with a ``status`` subresource the status in the body is dropped (pods get
   ``status.phase: Pending``), like the registry strategies do. Preloading (``preload=True``) keeps the
   given status, uid and creationTimestamp: it stands for "was created and reconciled earlier".
3. Update (PATCH or PUT): 404 for a missing object; a resourceVersion in the resulting object that differs
   from the stored one is a 409 Conflict (this covers merge patches and PUTs that carry an RV). With a
   status subresource, the main endpoint ignores changes under ``status`` and ``/status`` changes only
   ``status``. Server-owned metadata (name, namespace, uid, creationTimestamp, generation,
   deletionTimestamp, resourceVersion) cannot be changed. An update that changes nothing is a no-op: no new
   RV, no event. ``generation`` is bumped when anything outside ``metadata`` and ``status`` changes.
4. Delete: preconditions (uid, resourceVersion) are checked (409). With finalizers the object only gets
   ``deletionTimestamp`` (MODIFIED); it is removed by the update that empties ``finalizers`` (DELETED only).
   Pods are removed at once, as if their kubelet had confirmed (no grace period).
5. Owner GC, simplified and synchronous: removing an object removes (or, with finalizers, marks) every object
   whose ``ownerReferences`` name its uid and that has no other live owner; recursively. ``Orphan`` skips it.
6. The objects live in kmock's ``ObjectsArray`` (so ``emulator.objects[...]`` and ``.history`` keep working
   in tests); each object's history is trimmed to ``history_limit`` versions. Stored dicts are never mutated.
7. Listeners (:meth:`Store.listen`) are called synchronously with every change, after it is journalled, in
   RV order, whatever the journal limit: a test can keep the whole history of the cluster. A listener must
   be cheap and must not change the store.

Deliberately not emulated: admission, validation, defaulting beyond the pod phase, namespace existence and
namespace-deletion cascades, foreground deletion, pod graceful termination, strategic-merge list merging.
"""

from __future__ import annotations

import datetime
import random
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import kmock

from draledger.demo.emulator import errors, patches
from draledger.demo.emulator.journals import Change, ChangeType, Clock, Journal

__all__ = ["Listener", "ResourceSpec", "Store", "rfc3339"]

Key = tuple[kmock.resource, str | None, str]
Listener = Callable[[kmock.resource, Change], None]
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand
_SERVER_OWNED = (
    "name",
    "namespace",
    "uid",
    "creationTimestamp",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "resourceVersion",
)


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """What the store must know about a (storage) resource."""

    resource: kmock.resource
    kind: str
    namespaced: bool
    status: bool  # has a status subresource

    @property
    def group(self) -> str:
        return str(self.resource.group or "")

    @property
    def plural(self) -> str:
        return str(self.resource.plural)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.resource.version}" if self.group else str(self.resource.version)


def rfc3339(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(tz=datetime.UTC)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


class Store:
    """All objects of the emulated cluster and the journals of their changes (synchronous, never awaits)."""

    def __init__(
        self,
        objects: kmock.ObjectsArray,
        *,
        journal_limit: int = 1000,
        history_limit: int = 10,
        now: Callable[[], datetime.datetime] = _utcnow,
    ) -> None:
        self.objects = objects
        self.clock = Clock()
        self.now = now
        self._journal_limit = journal_limit
        self._history_limit = history_limit
        self._journals: dict[kmock.resource, Journal] = {}
        self._listeners: list[Listener] = []

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(resource, change)`` for every later change (rule 7); returns the way to stop."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def journal(self, resource: kmock.resource) -> Journal:
        if resource not in self._journals:
            self._journals[resource] = Journal(self._journal_limit)
        return self._journals[resource]

    # --- reading -------------------------------------------------------------------------------------

    def get(self, resource: kmock.resource, namespace: str | None, name: str) -> dict[str, Any] | None:
        key = (resource, namespace, name)
        if key not in self.objects:
            return None
        obj = self.objects[key]
        return None if obj.deleted else dict(obj.raw)

    def live(self, resource: kmock.resource, namespace: str | None = None) -> Iterator[dict[str, Any]]:
        """Live objects of a resource (of one namespace, or of all when ``namespace`` is None)."""
        for (res, ns, _), obj in self.objects.items():
            if res == resource and (namespace is None or ns == namespace) and not obj.deleted:
                yield obj.raw

    # --- writing -------------------------------------------------------------------------------------

    def create(
        self, spec: ResourceSpec, body: Any, namespace: str | None, *, preload: bool = False
    ) -> dict[str, Any]:
        if not isinstance(body, Mapping):
            raise errors.bad_request("the body of the request must be a JSON object")
        meta = dict(_meta(body))
        name = meta.get("name") or ""
        if not name and meta.get("generateName"):
            name = str(meta["generateName"]) + "".join(random.choices(_SUFFIX_ALPHABET, k=5))
        if not name:
            raise errors.invalid(
                spec.plural, spec.group, "", "metadata.name: Required value: name or generateName is required"
            )
        if spec.namespaced:
            given = meta.get("namespace")
            if namespace and given and given != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            namespace = namespace or given or "default"
        else:
            namespace = None
        key: Key = (spec.resource, namespace, name)
        if self.get(*key) is not None:
            raise errors.already_exists(spec.plural, spec.group, name)

        rv = self.clock.tick()
        for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "namespace"):
            meta.pop(field, None)
        meta["name"] = name
        if namespace is not None:
            meta["namespace"] = namespace
        if not preload or not meta.get("uid"):
            meta["uid"] = str(uuid.uuid4())
        if not preload or not meta.get("creationTimestamp"):
            meta["creationTimestamp"] = rfc3339(self.now())
        if not preload or not meta.get("generation"):
            meta["generation"] = 1
        meta["resourceVersion"] = str(rv)
        obj: dict[str, Any] = {"apiVersion": spec.api_version, "kind": spec.kind, "metadata": meta}
        obj.update((k, v) for k, v in body.items() if k not in ("apiVersion", "kind", "metadata"))
        if spec.status and not preload and not (spec.group == "" and spec.plural == "nodes"):
            # A Node keeps the status it is created with (a kubelet registers its capacity that way).
            obj.pop("status", None)
            if spec.plural == "pods" and spec.group == "":
                obj["status"] = {"phase": "Pending"}

        if key in self.objects:
            self.objects[key].create(obj)
            self._trim(key)
        else:
            self.objects[key] = obj
        self._record(spec.resource, rv, "ADDED", obj, None)
        return obj

    def update(
        self,
        spec: ResourceSpec,
        namespace: str | None,
        name: str,
        compute: Callable[[dict[str, Any]], dict[str, Any]],
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Apply ``compute`` (a patch or a replacement) to the live object, with all of rule 3."""
        key: Key = (spec.resource, namespace, name)
        current = self.get(*key)
        if current is None or subresource not in (None, "status") or (subresource and not spec.status):
            raise errors.not_found(spec.plural, spec.group, name)
        candidate = compute(current)
        current_rv = _meta(current).get("resourceVersion")
        candidate_rv = _meta(candidate).get("resourceVersion")
        if candidate_rv not in (None, "") and str(candidate_rv) != current_rv:
            raise errors.conflict(
                spec.plural,
                spec.group,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            )

        new = self._isolate(spec, current, candidate, subresource)
        meta = dict(_meta(new))
        for field in _SERVER_OWNED:
            if field in _meta(current):
                meta[field] = _meta(current)[field]
            else:
                meta.pop(field, None)
        new["metadata"] = meta
        new["apiVersion"] = current.get("apiVersion") or spec.api_version
        new["kind"] = current.get("kind") or spec.kind
        if new == current:
            return current  # a no-op update: no new RV, no event

        if subresource is None and _spec_of(new) != _spec_of(current):
            meta["generation"] = int(meta.get("generation") or 0) + 1
        rv = self.clock.tick()
        meta["resourceVersion"] = str(rv)
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            return self._remove(key, current, new, rv, orphan=False)
        self.objects[key].history.append(new)
        self._trim(key)
        self._record(spec.resource, rv, "MODIFIED", new, current)
        return new

    def patch(
        self,
        spec: ResourceSpec,
        namespace: str | None,
        name: str,
        body: Any,
        content_type: str,
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        def compute(current: dict[str, Any]) -> dict[str, Any]:
            return patches.apply_patch(
                current, body, content_type, plural=spec.plural, group=spec.group, name=name
            )

        return self.update(spec, namespace, name, compute, subresource=subresource)

    def replace(
        self,
        spec: ResourceSpec,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        if not isinstance(body, Mapping):
            raise errors.bad_request("the body of the request must be a JSON object")
        if _meta(body).get("name") not in (None, name):
            raise errors.bad_request("the name of the object does not match the name on the URL")
        return self.update(spec, namespace, name, lambda _: dict(body), subresource=subresource)

    def delete(
        self, spec: ResourceSpec, namespace: str | None, name: str, options: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        key: Key = (spec.resource, namespace, name)
        current = self.get(*key)
        if current is None:
            raise errors.not_found(spec.plural, spec.group, name)
        options = options or {}
        preconditions = options.get("preconditions") or {}
        for field in ("uid", "resourceVersion"):
            wanted = preconditions.get(field)
            if wanted is not None and wanted != _meta(current).get(field):
                raise errors.conflict(
                    spec.plural,
                    spec.group,
                    name,
                    f"Precondition failed: {field} in "
                    f"precondition: {wanted}, {field} in object meta: "
                    f"{_meta(current).get(field)}",
                )
        orphan = options.get("propagationPolicy") == "Orphan" or options.get("orphanDependents") is True
        return self._delete_or_mark(key, current, orphan=orphan)

    # --- internals -----------------------------------------------------------------------------------

    def _delete_or_mark(self, key: Key, current: dict[str, Any], *, orphan: bool) -> dict[str, Any]:
        meta = _meta(current)
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return current
            rv = self.clock.tick()
            marked = dict(current)
            marked["metadata"] = dict(
                meta,
                deletionTimestamp=rfc3339(self.now()),
                deletionGracePeriodSeconds=0,
                resourceVersion=str(rv),
            )
            self.objects[key].history.append(marked)
            self._trim(key)
            self._record(key[0], rv, "MODIFIED", marked, current)
            return marked
        rv = self.clock.tick()
        final = dict(current)
        final["metadata"] = dict(meta, resourceVersion=str(rv))
        return self._remove(key, current, final, rv, orphan=orphan)

    def _remove(
        self, key: Key, current: dict[str, Any], final: dict[str, Any], rv: int, *, orphan: bool
    ) -> dict[str, Any]:
        self.objects[key].history.append(final)
        self.objects[key].delete()
        self._trim(key)
        self._record(key[0], rv, "DELETED", final, current)
        uid = _meta(current).get("uid")
        if uid and not orphan:
            self._collect_dependents(str(uid))
        return final

    def _collect_dependents(self, owner_uid: str) -> None:
        dependents: list[tuple[Key, dict[str, Any]]] = []
        for key, obj in self.objects.items():
            if obj.deleted:
                continue
            refs = _meta(obj.raw).get("ownerReferences") or []
            if any(isinstance(ref, Mapping) and ref.get("uid") == owner_uid for ref in refs):
                dependents.append((key, obj.raw))
        if not dependents:
            return
        live_uids = {_meta(obj.raw).get("uid") for obj in self.objects.values() if not obj.deleted}
        for key, raw in dependents:
            refs = _meta(raw).get("ownerReferences") or []
            if any(isinstance(ref, Mapping) and ref.get("uid") in live_uids for ref in refs):
                continue  # another owner is alive: the real GC keeps the dependent too
            current = self.get(*key)  # re-read: an earlier cascade may have changed it
            if current is not None:
                self._delete_or_mark(key, current, orphan=False)

    def _isolate(
        self, spec: ResourceSpec, current: dict[str, Any], candidate: dict[str, Any], subresource: str | None
    ) -> dict[str, Any]:
        if not spec.status:
            return dict(candidate)
        base, source = (current, candidate) if subresource == "status" else (candidate, current)
        new = dict(base)
        if "status" in source:
            new["status"] = source["status"]
        else:
            new.pop("status", None)
        return new

    def _record(
        self,
        resource: kmock.resource,
        rv: int,
        kind: ChangeType,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
    ) -> None:
        change = Change(rv=rv, type=kind, obj=obj, old=old)
        self.journal(resource).append(change)
        for listener in self._listeners:
            listener(resource, change)

    def _trim(self, key: Key) -> None:
        history = self.objects[key].history
        if len(history) > self._history_limit:
            del history[: len(history) - self._history_limit]


def _spec_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}
