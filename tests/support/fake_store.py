"""The object store behind FakeCluster: what etcd and the API server's registry do for one test.

Objects live per collection (group/version, namespace, plural). Every write takes the next
value of one global resourceVersion and appends a change to the history that watches replay;
`compact()` drops that history, so older versions answer 410 as after an etcd compaction.
"""

from __future__ import annotations

import asyncio
import copy
import secrets
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_broadcast.cluster.job_api import json_merge_patch
from airflow_broadcast.specs.timestamps import to_rfc3339
from support.fake_http import Collection, JsonDict, StatusError
from support.fake_selectors import Selector

_IDENTITY = ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "generateName")


@dataclass(frozen=True)
class Change:
    """One committed write. `after` is the new object, or the object as it was deleted."""

    version: int
    collection: Collection
    type: str
    before: JsonDict | None
    after: JsonDict


@dataclass(eq=False)
class Watcher:
    """One open watch: events for its collection that its selector lets through, queued for the stream."""

    path: str
    collection: Collection
    selects: Selector
    bookmarks: bool
    queue: asyncio.Queue[JsonDict | None] = field(default_factory=asyncio.Queue)
    held: bool = False
    missed: list[JsonDict] = field(default_factory=list)

    def offer(self, change: Change) -> None:
        was = change.before is not None and self.selects(change.before)
        now = self.selects(change.after)
        if change.type == "DELETED":
            kind = "DELETED" if now else ""
        else:
            kind = {(True, True): "MODIFIED", (False, True): "ADDED", (True, False): "DELETED"}.get((was, now), "")
        if kind:
            self.send({"type": kind, "object": change.after})

    def send(self, event: JsonDict) -> None:
        if self.held:
            self.missed.append(event)
        else:
            self.queue.put_nowait(event)


def _not_found(collection: Collection, name: str) -> StatusError:
    return StatusError(404, "NotFound", f'{collection[2]} "{name}" not found', {"name": name, "kind": collection[2]})


def _conflict(collection: Collection, name: str, message: str) -> StatusError:
    return StatusError(409, "Conflict", f'Operation cannot be fulfilled on {collection[2]} "{name}": {message}',
                       {"name": name, "kind": collection[2]})


class Store:
    """Objects, versions, history and open watches; every method is synchronous and atomic."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.objects: dict[Collection, dict[str, JsonDict]] = {}
        self.version = 0
        self.compacted = 0
        self.history: list[Change] = []
        self.watchers: list[Watcher] = []
        self._snapshots: dict[str, tuple[int, list[JsonDict]]] = {}
        self._listeners: list[Callable[[], None]] = []

    # ---- reading -------------------------------------------------------------------------
    def get(self, collection: Collection, name: str) -> JsonDict:
        found = self.objects.get(collection, {}).get(name)
        if found is None:
            raise _not_found(collection, name)
        return copy.deepcopy(found)

    def all_objects(self) -> Iterator[tuple[Collection, JsonDict]]:
        for collection, items in self.objects.items():
            for obj in items.values():
                yield collection, obj

    def list(self, collection: Collection, selects: Selector, *, limit: int = 0, token: str = "") -> JsonDict:
        """One page of a LIST; a `continue` token reads the same snapshot until compaction expires it."""
        if token:
            if token not in self._snapshots:
                raise StatusError(400, "BadRequest", "continue key is not valid")
            version, rest = self._snapshots.pop(token)
            if version < self.compacted:
                raise StatusError(410, "Expired", "The provided continue parameter is too old to display a "
                                  "consistent list result. You can start a new list without the continue parameter.")
        else:
            items = self.objects.get(collection, {})
            version, rest = self.version, [copy.deepcopy(items[n]) for n in sorted(items) if selects(items[n])]
        page, rest = (rest[:limit], rest[limit:]) if limit > 0 else (rest, [])
        meta: JsonDict = {"resourceVersion": str(version)}
        if rest:
            meta["continue"] = secrets.token_urlsafe(12)
            meta["remainingItemCount"] = len(rest)
            self._snapshots[meta["continue"]] = (version, rest)
        return {"kind": "List", "apiVersion": "v1", "metadata": meta, "items": page}

    # ---- writing -------------------------------------------------------------------------
    def create(self, collection: Collection, body: Mapping[str, Any]) -> JsonDict:
        obj: JsonDict = copy.deepcopy(dict(body))
        meta = obj.setdefault("metadata", {})
        name = meta.get("name") or (meta["generateName"] + secrets.token_hex(3) if meta.get("generateName") else "")
        if not name:
            raise StatusError(422, "Invalid", "name or generateName is required",
                              {"causes": [{"field": "metadata.name", "message": "Required value"}]})
        items = self.objects.setdefault(collection, {})
        if name in items:
            raise StatusError(409, "AlreadyExists", f'{collection[2]} "{name}" already exists',
                              {"name": name, "kind": collection[2]})
        meta.update(name=name, uid=str(uuid.uuid4()), creationTimestamp=to_rfc3339(self.clock()))
        meta.pop("deletionTimestamp", None)
        if collection[1]:
            meta["namespace"] = collection[1]
        if collection[2] == "pods":
            obj["status"] = {"phase": "Pending"}  # the API server ignores a posted status
        meta["resourceVersion"] = self._next_version()
        items[name] = obj
        self._commit(collection, "ADDED", None, obj)
        return copy.deepcopy(obj)

    def replace(self, collection: Collection, name: str, body: Mapping[str, Any]) -> JsonDict:
        current = self.get(collection, name)
        obj: JsonDict = copy.deepcopy(dict(body))
        meta = obj.setdefault("metadata", {})
        if meta.get("name", name) != name:
            raise StatusError(400, "BadRequest", f"the name of the object ({meta['name']}) does not match the "
                              f"name on the URL ({name})")
        self._check_preconditions(collection, current, meta.get("resourceVersion"), meta.get("uid"))
        return self._update(collection, current, obj)

    def patch(self, collection: Collection, name: str, patch: Mapping[str, Any]) -> JsonDict:
        current = self.get(collection, name)
        meta = patch.get("metadata") or {}
        self._check_preconditions(collection, current, meta.get("resourceVersion"), meta.get("uid"))
        return self._update(collection, current, json_merge_patch(current, patch))

    def delete(self, collection: Collection, name: str, options: Mapping[str, Any]) -> JsonDict:
        """Remove the object (or mark it, while finalizers remain); dependents follow unless orphaned."""
        current = self.get(collection, name)
        wanted = options.get("preconditions") or {}
        self._check_preconditions(collection, current, wanted.get("resourceVersion"), wanted.get("uid"))
        return self._delete(collection, current, str(options.get("propagationPolicy") or "Background"))

    def _check_preconditions(self, collection: Collection, current: JsonDict, version: Any, uid: Any) -> None:
        meta = current["metadata"]
        if uid and uid != meta["uid"]:
            raise _conflict(collection, meta["name"],
                            f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta['uid']}")
        if version and str(version) != meta["resourceVersion"]:
            raise _conflict(collection, meta["name"], "the object has been modified; please apply your changes "
                            "to the latest version and try again")

    def _update(self, collection: Collection, current: JsonDict, obj: JsonDict) -> JsonDict:
        meta = obj.setdefault("metadata", {})
        for key in _IDENTITY:
            if key in current["metadata"]:
                meta[key] = current["metadata"][key]
            else:
                meta.pop(key, None)
        meta["resourceVersion"] = current["metadata"]["resourceVersion"]
        if obj == current:
            return current  # a no-op write changes nothing, not even the resourceVersion
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            return self._remove(collection, obj, "Background")
        return self._store(collection, current, obj)

    def _store(self, collection: Collection, current: JsonDict, obj: JsonDict) -> JsonDict:
        obj["metadata"]["resourceVersion"] = self._next_version()
        self.objects[collection][obj["metadata"]["name"]] = obj
        self._commit(collection, "MODIFIED", current, obj)
        return copy.deepcopy(obj)

    def _delete(self, collection: Collection, current: JsonDict, propagation: str) -> JsonDict:
        meta = current["metadata"]
        if not meta.get("finalizers"):
            return self._remove(collection, current, propagation)
        if meta.get("deletionTimestamp"):
            return current
        marked = copy.deepcopy(current)
        marked["metadata"]["deletionTimestamp"] = to_rfc3339(self.clock())
        return self._store(collection, current, marked)

    def _remove(self, collection: Collection, obj: JsonDict, propagation: str) -> JsonDict:
        before = self.objects[collection].pop(obj["metadata"]["name"])
        gone = copy.deepcopy(obj)
        gone["metadata"]["resourceVersion"] = self._next_version()
        self._commit(collection, "DELETED", before, gone)
        self._collect_garbage(str(gone["metadata"]["uid"]), orphan=propagation == "Orphan")
        return copy.deepcopy(gone)

    def _collect_garbage(self, owner_uid: str, *, orphan: bool) -> None:
        """Dependents of a deleted owner: deleted once no owner of theirs is left, or freed when orphaned."""
        for collection, obj in list(self.all_objects()):
            refs = obj["metadata"].get("ownerReferences") or []
            if not any(r.get("uid") == owner_uid for r in refs):
                continue
            current = self.objects.get(collection, {}).get(obj["metadata"]["name"])
            if current is not obj:
                continue  # removed or rewritten by an earlier step of this collection
            others = {r.get("uid") for r in refs} - {owner_uid}
            if orphan:
                freed = copy.deepcopy(obj)
                freed["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != owner_uid]
                self._update(collection, obj, freed)
            elif not any(o["metadata"].get("uid") in others for _, o in self.all_objects()):
                self._delete(collection, obj, "Background")

    def _next_version(self) -> str:
        self.version += 1
        return str(self.version)

    def _commit(self, collection: Collection, kind: str, before: JsonDict | None, after: JsonDict) -> None:
        change = Change(self.version, collection, kind, copy.deepcopy(before), copy.deepcopy(after))
        self.history.append(change)
        for watcher in self.watchers:
            if watcher.collection == collection:
                watcher.offer(change)
        for listener in list(self._listeners):
            listener()

    # ---- watches ----------------------------------------------------------------------------
    def watch(self, path: str, collection: Collection, selects: Selector, version: str, bookmarks: bool) -> Watcher:
        """A watch from `version` ("" or "0": the current objects as ADDED first); too old a version gets 410."""
        watcher = Watcher(path, collection, selects, bookmarks)
        version = version or "0"
        if not version.isdigit():
            raise StatusError(400, "BadRequest", f"invalid resource version: {version!r}")
        if version == "0":
            items = self.objects.get(collection, {})
            for name in sorted(items):
                if selects(items[name]):
                    watcher.send({"type": "ADDED", "object": copy.deepcopy(items[name])})
        elif int(version) < self.compacted:
            expired = StatusError(410, "Expired", f"too old resource version: {version} ({self.compacted})")
            watcher.send({"type": "ERROR", "object": expired.body()})
            watcher.queue.put_nowait(None)
            return watcher
        else:
            for change in self.history:
                if change.collection == collection and change.version > int(version):
                    watcher.offer(change)
        self.watchers.append(watcher)
        return watcher

    def unwatch(self, watcher: Watcher) -> None:
        if watcher in self.watchers:
            self.watchers.remove(watcher)

    def compact(self) -> int:
        """Forget the history up to now, as etcd compaction does; returns the compacted version."""
        self.compacted = self.version
        self.history.clear()
        return self.compacted

    def subscribe(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: Callable[[], None]) -> None:
        self._listeners.remove(listener)
