"""An in-memory Kubernetes API server behind the real `KubeClient`, for reconcile-loop unit tests.

`FakeCluster` stands where kubernetes_asyncio's ApiClient stands (`call_api`, `close`), so
everything above the HTTP transport runs for real: KubeClient's retries, Retry-After and
error mapping, paging, watch-stream parsing, the informers, the executor and the loop.

What it fakes: objects per path with uids, creationTimestamps and one global, monotonically
increasing resourceVersion; create (409 AlreadyExists, generateName), get, replace (409 on a
stale resourceVersion), JSON merge patch, delete (uid and resourceVersion preconditions,
finalizers, ownerReference garbage collection or orphaning); label and field selectors;
LIST pages with `continue`; watches from a resourceVersion with ADDED/MODIFIED/DELETED
(selector-aware), BOOKMARK on demand and 410 after `compact()`; and faults injected per
method and path (any status with Retry-After, a connection reset, a lost response).
Pods start Pending; the test drives them (`set_pod_phase`) the way kwok does on the real cluster.

What it does not fake: authentication and RBAC (403s are injected), admission, defaulting
beyond a pod's Pending status, schema validation, discovery (any plural of a served API
group exists, any other group is a 404), namespaces (all exist), subresources, scheduling,
graceful pod termination (a pod without finalizers is gone at once) and watch timeouts
shorter than requested. Integration tests on the real cluster cover all of that; this fake
only makes the loop's outcomes and error paths fast and exact to reach.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import fnmatch
import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

from support.bcj_builders import ROOMY
from support.fake_http import (
    CORE,
    Collection,
    Content,
    Fault,
    JsonDict,
    Request,
    Response,
    Route,
    StatusError,
    fault_response,
    route,
)
from support.fake_selectors import SelectorError, selector
from support.fake_store import Store, Watcher

SERVED = (CORE, "scheduling.k8s.io/v1")


class FakeCluster:
    """The transport a KubeClient talks to, plus the controls a test drives the cluster with."""

    def __init__(self, *, apis: Iterable[str] = (), latency: float = 0.0) -> None:
        self.store = Store()
        self.served = {*SERVED, *apis}
        self.latency = latency
        self.faults: list[Fault] = []
        self.requests: list[Request] = []

    # ---- the transport (what KubeClient calls) ------------------------------------------------
    async def call_api(self, path: str, method: str, *, query_params: Iterable[tuple[str, Any]] = (),
                       body: Any = None, **_: Any) -> Response:
        query = {str(k): str(v) for k, v in query_params}
        verb = "WATCH" if method == "GET" and query.get("watch") == "true" else method
        sent = json.loads(json.dumps(body)) if body is not None else None  # the wire carries JSON only
        fault = next((f for f in self.faults if f.matches(verb, path)), None)
        if fault is not None:
            fault.hits += 1
        if self.latency and verb != "WATCH":
            await asyncio.sleep(self.latency)
        if fault is None or fault.after:
            try:
                response = self._serve(verb, path, query, sent)
            except StatusError as exc:
                response = Response(exc.code, json.dumps(exc.body()).encode())
        if fault is not None:
            response = fault_response(fault)
        self._log(verb, path, query, response.status, sent)
        if response.status == 0:
            raise ConnectionResetError(104, "Connection reset by peer")
        return response

    async def close(self) -> None:
        return None

    def _log(self, verb: str, path: str, query: Mapping[str, str], status: int, body: Any) -> None:
        self.requests.append(Request(asyncio.get_running_loop().time(), verb, path, status, query, body))

    def _serve(self, verb: str, path: str, query: Mapping[str, str], body: Any) -> Response:
        where = route(path, self.served)
        try:
            selects = selector(query.get("labelSelector", ""), query.get("fieldSelector", ""))
        except SelectorError as exc:
            raise StatusError(400, "BadRequest", str(exc)) from exc
        store, collection, name = self.store, where.collection, where.name
        if verb == "WATCH" and not name:
            return self._watch(path, collection, selects, query)
        result: JsonDict
        if verb == "GET":
            result = store.get(collection, name) if name else store.list(
                collection, selects, limit=int(query.get("limit", 0)), token=query.get("continue", ""))
        elif verb == "POST" and not name:
            result = store.create(collection, body or {})
        elif verb == "PUT" and name:
            result = store.replace(collection, name, body or {})
        elif verb == "PATCH" and name:
            result = store.patch(collection, name, body or {})
        elif verb == "DELETE" and name:
            result = store.delete(collection, name, body or {})
        else:
            raise StatusError(405, "MethodNotAllowed", f"{verb} is not supported on {path}")
        return Response(201 if verb == "POST" else 200, json.dumps(result).encode())

    def _watch(self, path: str, collection: Collection, selects: Any, query: Mapping[str, str]) -> Response:
        watcher = self.store.watch(path, collection, selects, query.get("resourceVersion", ""),
                                   query.get("allowWatchBookmarks") == "true")
        timeout = float(query.get("timeoutSeconds", 1800))
        store = self.store

        async def stream() -> AsyncIterator[bytes]:
            deadline = asyncio.get_running_loop().time() + timeout
            try:
                while True:
                    left = deadline - asyncio.get_running_loop().time()
                    try:
                        event = await asyncio.wait_for(watcher.queue.get(), max(left, 0.0))
                    except TimeoutError:
                        return
                    if event is None:
                        return
                    line = json.dumps(event).encode() + b"\n"
                    half = len(line) // 2  # two chunks per line: the client must join them
                    yield line[:half]
                    yield line[half:]
            finally:
                store.unwatch(watcher)

        return Response(200, content=Content(stream()))

    # ---- faults ---------------------------------------------------------------------------------
    def fail(self, verb: str, path: str, status: int, *, times: int | None = 1, retry_after: float | None = None,
             message: str = "") -> Fault:
        """Inject `status` for the next `times` matching requests (see Fault)."""
        fault = Fault(verb, path, status, times, retry_after, message)
        self.faults.append(fault)
        return fault

    def reset(self, verb: str, path: str, *, times: int | None = 1, after: bool = False) -> Fault:
        """Reset the connection of the next `times` matching requests (after serving them, with `after`)."""
        if after and verb in ("WATCH", "*"):
            raise ValueError("a watch has no single answer to lose: reset it before it is served")
        fault = Fault(verb, path, 0, times, after=after)
        self.faults.append(fault)
        return fault

    def served_requests(self, verb: str, path: str = "*", status: int | None = None) -> list[Request]:
        return [r for r in self.requests if r.verb == verb and fnmatch.fnmatchcase(r.path, path)
                and (status is None or r.status == status)]

    # ---- watches ----------------------------------------------------------------------------
    def watches(self, path: str = "*") -> list[Watcher]:
        """The open watches of the paths matching `path`."""
        return [w for w in self.store.watchers if fnmatch.fnmatchcase(w.path, path)]

    def hold_watches(self, path: str = "*") -> None:
        """Stop delivering to the open watches of `path` (a slow or partitioned connection)."""
        for watcher in self.watches(path):
            watcher.held = True

    def release_watches(self, path: str = "*") -> None:
        for watcher in self.watches(path):
            watcher.held = False
            for event in watcher.missed:
                watcher.queue.put_nowait(event)
            watcher.missed.clear()

    def end_watches(self, path: str = "*") -> int:
        """Close the open watch streams of `path` (what they held is lost); clients reconnect."""
        ended = self.watches(path)
        for watcher in ended:
            self.store.unwatch(watcher)
            watcher.queue.put_nowait(None)
        return len(ended)

    def bookmark(self) -> None:
        """Send every open watch that asked for bookmarks the current resourceVersion."""
        for watcher in self.store.watchers:
            if watcher.bookmarks:
                watcher.send({"type": "BOOKMARK",
                              "object": {"metadata": {"resourceVersion": str(self.store.version)}}})

    def compact(self) -> int:
        return self.store.compact()

    # ---- driving the cluster, as kubectl, kwok or the kubelet would ----------------------------------
    def _at(self, path: str) -> Route:
        return route(path, self.served)

    def object(self, path: str) -> JsonDict | None:
        where = self._at(path)
        found = self.store.objects.get(where.collection, {}).get(where.name)
        return copy.deepcopy(found) if found is not None else None

    def objects(self, path: str, label_selector: str = "") -> list[JsonDict]:
        """The items of a collection path, as a LIST would return them (without logging a request)."""
        page = self.store.list(self._at(path).collection, selector(label_selector))
        items: list[JsonDict] = page["items"]
        return items

    def create(self, path: str, body: Mapping[str, Any]) -> JsonDict:
        return self.store.create(self._at(path).collection, body)

    def patch(self, path: str, patch: Mapping[str, Any]) -> JsonDict:
        where = self._at(path)
        return self.store.patch(where.collection, where.name, patch)

    def delete(self, path: str, propagation: str = "Background") -> JsonDict:
        where = self._at(path)
        return self.store.delete(where.collection, where.name, {"propagationPolicy": propagation})

    def add_node(self, name: str, labels: Mapping[str, str] | None = None, *, taints: Iterable[Mapping[str, str]] = (),
                 unschedulable: bool = False, allocatable: Mapping[str, str] | None = None) -> JsonDict:
        spec: JsonDict = {"taints": [dict(t) for t in taints], "unschedulable": unschedulable}
        return self.create(f"/api/{CORE}/nodes", {
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": spec, "status": {"allocatable": dict(allocatable or ROOMY),
                                     "conditions": [{"type": "Ready", "status": "True"}]}})

    def set_pod_phase(self, namespace: str, name: str, phase: str, *, exit_code: int | None = None,
                      reason: str = "") -> JsonDict:
        """Move a pod to Running, Succeeded or Failed with container states to match, as the kubelet reports."""
        path = f"/api/{CORE}/namespaces/{namespace}/pods/{name}"
        pod = self.object(path)
        assert pod is not None, f"no pod {namespace}/{name}"
        code = exit_code if exit_code is not None else {"Succeeded": 0, "Failed": 1}.get(phase)
        if code is None:
            state: JsonDict = {"running": {"startedAt": pod["metadata"]["creationTimestamp"]}}
        else:
            state = {"terminated": {"exitCode": code, "reason": reason or ("Completed" if code == 0 else "Error")}}
        statuses = [{"name": c.get("name", ""), "restartCount": 0, "ready": code is None, "state": state}
                    for c in (pod.get("spec") or {}).get("containers") or []]
        return self.patch(path, {"status": {"phase": phase, "containerStatuses": statuses}})

    async def wait_for(self, check: Callable[[], Any], timeout: float = 5.0, what: str = "cluster state") -> Any:
        """Wait (bounded) until `check()` is truthy, re-checking after every write; return its value."""
        changed = asyncio.Event()
        self.store.subscribe(changed.set)
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        try:
            while not (found := check()):
                if loop.time() > end:
                    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
                changed.clear()
                with contextlib.suppress(TimeoutError):  # checks may also read state outside the store
                    await asyncio.wait_for(changed.wait(), 0.02)
            return found
        finally:
            self.store.unsubscribe(changed.set)
