"""Shared watch caches: one LIST+WATCH per resource and scope per process, shared by every trigger.

An informer keeps the typed view of each object (built once per change), an
index by one label, and wakes the subscribers of an index value when one of its
objects changes. Reconcile passes read from it instead of listing the API.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Generic, TypeVar

from airflow_broadcast.cluster import heap_release
from airflow_broadcast.cluster.api_errors import ClusterApiError, Gone, TransportError
from airflow_broadcast.cluster.cache_journals import JOURNAL_ABOVE, CacheJournals
from airflow_broadcast.cluster.cache_subscribers import Subscribers, Waker
from airflow_broadcast.cluster.kube_client import Backoff, JsonDict, KubeClient
from airflow_broadcast.cluster.list_items import metadata_of, object_of, version_number

log = logging.getLogger(__name__)

T = TypeVar("T")
RELIST_SECONDS = 300.0
HEALTHY_WATCH_SECONDS = 5.0
STEP_SECONDS = 0.01


@dataclass(eq=False)
class Informer(Generic[T]):
    """LIST then WATCH one collection; `transform` turns raw objects into typed values.

    `index_label` indexes objects by a label's value; `index_by` instead computes the index (e.g. an
    Event's involvedObject.uid). `significant` says what an update must change to wake subscribers.
    """

    client: KubeClient
    path: str
    transform: Callable[[JsonDict], T]
    _: KW_ONLY
    label_selector: str = ""
    index_label: str = ""
    significant: Callable[[T], Hashable] | None = None
    field_selector: str = ""
    index_by: Callable[[JsonDict], str] | None = None
    values: dict[str, T] = field(default_factory=dict, init=False)
    synced: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    error: ClusterApiError | None = field(default=None, init=False)
    events_seen: int = field(default=0, init=False)
    _versions: dict[str, int] = field(default_factory=dict, init=False)
    _index: dict[str, dict[str, T]] = field(default_factory=dict, init=False)
    _views: dict[str | None, tuple[T, ...]] = field(default_factory=dict, init=False)
    _keys_index: dict[str, str] = field(default_factory=dict, init=False)
    _journals: CacheJournals[T] = field(default_factory=CacheJournals, init=False)
    _subscribers: Subscribers = field(default_factory=Subscribers, init=False)
    listed: bool = field(default=False, init=False)
    _task: asyncio.Task[None] | None = field(default=None, init=False)
    _all_namespaces: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self._all_namespaces = "/namespaces/" not in self.path

    # ---- reading -------------------------------------------------------------------------
    def items(self, index_value: str | None = None) -> tuple[T, ...]:
        """The objects (of one index value), as the same tuple until one of them changes: a pass that finds
        the very tuple of its last pass knows, at no cost, that nothing in it changed."""
        view = self._views.get(index_value)
        if view is None:
            bucket = self.values if index_value is None else self._index.get(index_value)
            view = tuple(bucket.values()) if bucket else ()
            if bucket:
                self._views[index_value] = view
        return view

    def snapshot(self, index_value: str | None = None) -> Sequence[T]:
        """The objects (of one index value) with a journal of their changes, once there are many of them:
        a pass that read the same journal before reads only what changed since (reconcilers/journal.py)."""
        bucket = self.values if index_value is None else self._index.get(index_value)
        if bucket is None or len(bucket) < JOURNAL_ABOVE:
            return self.items(index_value)
        return self._journals.snapshot(index_value, bucket)

    def count(self, index_value: str) -> int:
        """How many cached objects an index value has, without listing them."""
        return len(self._index.get(index_value, ()))

    def subscribe(self, index_value: str, event: Waker) -> None:
        self._subscribers.subscribe(index_value, event)

    def unsubscribe(self, index_value: str, event: Waker) -> None:
        self._subscribers.unsubscribe(index_value, event)

    async def wait_synced(self, timeout: float = 120.0) -> None:
        """Until the first LIST worked (or failed: then raise). A later watch error leaves the cache usable,
        even an empty one: an empty collection is a fine answer."""
        try:
            await asyncio.wait_for(self.synced.wait(), timeout)
        except TimeoutError:
            why = f"no complete LIST within {timeout:.0f} s; the API server is slow or unreachable"
            raise TransportError(0, "Timeout", f"{why} (last error: {self.error or 'none'})",
                                 verb="LIST", target=self.path) from None
        if self.error is not None and not self.listed:
            raise self.error

    # ---- writing -------------------------------------------------------------------------
    def upsert(self, obj: JsonDict, notify: bool = True) -> None:
        """Apply one object (from a watch, or our own write) unless we already hold a newer version."""
        meta = obj.get("metadata") or {}
        key = self.key_of(meta)
        version = version_number(meta.get("resourceVersion"))
        if version and self._versions.get(key, 0) >= version:
            return  # already applied (our own write, or a replayed event)
        value = self.transform(obj)
        old = self.values.get(key)
        self.values[key] = value
        self._journals.record(None, key, value, self.values)
        self._versions[key] = version
        index = self._index_value(obj)
        self._move_index(key, index, value)
        if notify and (old is None or self.significant is None or self.significant(old) != self.significant(value)):
            self._subscribers.notify(index, old, value)

    def key_of(self, meta: Mapping[str, Any]) -> str:
        """The name; `namespace/name` in a cache of a namespaced kind across all namespaces, where names repeat."""
        name = str(meta.get("name", ""))
        namespace = meta.get("namespace")
        return f"{namespace}/{name}" if namespace and self._all_namespaces else name

    def _index_value(self, obj: JsonDict) -> str:
        if self.index_by is not None:
            return self.index_by(obj)
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return str(labels.get(self.index_label, "")) if self.index_label else ""

    def remove(self, name: str) -> None:
        if self.values.pop(name, None) is None:
            return
        self._journals.record(None, name, None, self.values)
        self._versions.pop(name, None)
        index = self._keys_index.pop(name, "")
        self._unindex(name, index)
        self._subscribers.notify(index)

    def _move_index(self, key: str, index: str, value: T) -> None:
        """Each index value holds its objects themselves, so a pass lists its job's objects in C; a changed
        object keeps its old one's place, which lets the ledger find the changed places by position."""
        previous = self._keys_index.get(key)
        self._stale(index)
        if previous is not None and previous != index:
            self._unindex(key, previous)
        self._keys_index[key] = index
        bucket = self._index.setdefault(index, {})
        bucket[key] = value
        self._journals.record(index, key, value, bucket)

    def _unindex(self, key: str, index: str) -> None:
        """Take `key` out of an index value's objects (dropping the value once empty) and out of its views."""
        bucket = self._index.get(index)
        if bucket is not None:
            bucket.pop(key, None)
            self._journals.record(index, key, None, bucket)
            if not bucket:
                del self._index[index]
        self._stale(index)

    def _stale(self, index: str) -> None:
        self._views.pop(index, None)
        self._views.pop(None, None)

    # ---- the loop ------------------------------------------------------------------------
    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"informer {self.path}")

    def _query(self) -> dict[str, Any]:
        selectors = {"labelSelector": self.label_selector, "fieldSelector": self.field_selector}
        return {k: v for k, v in selectors.items() if v}

    async def _relist(self) -> str:
        """List the collection page by page, applying each page as it comes, then drop what the list lacks.

        Items stay raw unless newer than the cache (`list_items`): a periodic relist mostly finds nothing
        new, and parsing every page kept a triggerer of 1,000 idle jobs 21 MiB larger. The heap is released.
        """
        query = self._query()
        listed: set[str] = set()
        version = ""
        async for page in self.client.list_pages(self.path, lazy_items=True, **query):
            for item in page.get("items") or []:
                meta = metadata_of(item)
                key = self.key_of(meta)
                listed.add(key)
                item_version = version_number(meta["resourceVersion"])
                if not item_version or self._versions.get(key, 0) < item_version:
                    self.upsert(object_of(item))
            version = page.get("metadata", {}).get("resourceVersion", version)
            await asyncio.sleep(0)  # yield between pages: a huge list never blocks the loop
        # An object the list lacks but that is newer than its snapshot was written since (our own
        # create, remembered at once): the watch from the snapshot brings its events, so it stays.
        snapshot = version_number(version)
        for name in [k for k in self.values if k not in listed and not self._versions.get(k, 0) > snapshot > 0]:
            self.remove(name)
        heap_release.request()
        return version

    async def _run(self) -> None:
        """Relist, then watch until the next periodic relist; back off while the API keeps failing. The backoff
        resets only after a healthy watch (events, or open a while); a 410 relists at once the first time."""
        backoff = Backoff(0.5, 30.0)
        loop = asyncio.get_running_loop()
        while True:
            watched_from = self.events_seen
            try:
                version = await self._relist()
                self.listed = True
                self.error = None
                self.synced.set()
                deadline = loop.time() + RELIST_SECONDS
                while loop.time() < deadline:
                    started, watched_from = loop.time(), self.events_seen
                    version = await self._watch_once(version)
                    if self.events_seen == watched_from and loop.time() - started < HEALTHY_WATCH_SECONDS:
                        await asyncio.sleep(backoff.next())  # it ended at once, without an event: no tight loop
                    else:
                        backoff.reset()
            except ClusterApiError as exc:
                if self.events_seen > watched_from:
                    backoff.reset()  # the watch worked for a while before it failed
                if isinstance(exc, Gone):
                    delay = backoff.next(first=0.0)
                    log.info("watch of %s expired (410); relisting in %.1f s", self.path, delay)
                else:
                    self.error = exc
                    self.synced.set()
                    delay = backoff.next(exc.retry_after)
                    log.warning("watch of %s failed (%s); relisting in %.1f s", self.path, exc, delay)
                await asyncio.sleep(delay)
            except Exception:  # a defect must not end, unseen, the watch every job of this process reads
                log.exception("watch of %s broke; relisting", self.path)
                await asyncio.sleep(backoff.next())

    async def _watch_once(self, version: str) -> str:
        """Apply watch events until the server ends the watch.

        A burst (fifty jobs starting) arrives as one chunk of hundreds of events, which would be
        applied in one loop step: the loop is handed back every STEP_SECONDS of work instead.
        """
        query = self._query()
        step_began = time.perf_counter()
        async for kind, obj in self.client.watch(self.path, resource_version=version, timeout_seconds=240,
                                                 **query):
            if time.perf_counter() - step_began > STEP_SECONDS:
                await asyncio.sleep(0)
                step_began = time.perf_counter()
            self.events_seen += 1
            meta = obj.get("metadata") or {}
            version = str(meta.get("resourceVersion") or version)
            if kind == "BOOKMARK":
                continue
            if kind == "DELETED":
                self.remove(self.key_of(meta))
            else:
                self.upsert(obj)
        return version


_registry: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[int, str, str, str], Informer[Any]]] = (
    weakref.WeakKeyDictionary()
)


def shared_informer(client: KubeClient, path: str, transform: Callable[[JsonDict], T], *,
                    label_selector: str = "", index_label: str = "",
                    significant: Callable[[T], Hashable] | None = None, field_selector: str = "",
                    index_by: Callable[[JsonDict], str] | None = None) -> Informer[T]:
    """The running loop's informer for (client, path, selectors), started on first use."""
    loop = asyncio.get_running_loop()
    informers = _registry.setdefault(loop, {})
    key = (id(client), path, label_selector, field_selector)
    informer = informers.get(key)
    if informer is None:
        informer = Informer(client, path, transform, label_selector=label_selector, index_label=index_label,
                            significant=significant, field_selector=field_selector, index_by=index_by)
        informers[key] = informer
        informer.start()
    return informer


async def stop_informers() -> None:
    """Cancel the running loop's informers (before its client closes, e.g. at the end of asyncio.run)."""
    informers = _registry.pop(asyncio.get_running_loop(), {})
    tasks = [i._task for i in informers.values() if i._task is not None]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
