"""Follow one pod's log into the task log while the job runs (TFJob `get_logs`: the chief, else worker 0).

One streaming GET (`follow=true&timestamps=true`) on the shared client. Each line's timestamp
is the position: a dropped stream resumes with `sinceTime` and skips what was already shown,
and the position is stamped on the job record (at most every 30 s), so a restarted trigger or
a retried task resumes there instead of printing the log again. Lines are capped in length and
rate; the lines over the cap are counted, never buffered.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from contextlib import aclosing
from datetime import UTC, datetime

from airflow_broadcast.cluster.api_errors import ClusterApiError, Conflict, TransportError
from airflow_broadcast.cluster.api_paths import InvalidApiPath
from airflow_broadcast.cluster.informers import Informer
from airflow_broadcast.cluster.job_records import get_record, write_record
from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.pod_logs import log_path
from airflow_broadcast.reconcilers.observed import PodInfo

LOGGED_UNTIL = "airflow-broadcast.io/logged-until"  # record annotation: timestamp of the last line shown
LINES_PER_SECOND = 20.0
LINE_BURST = 500
MAX_LINE_CHARS = 2000
MAX_LINE_BYTES = 64 * 1024
READ_TIMEOUT_SECONDS = 300.0
CHECKPOINT_SECONDS = 30.0
RETRY_SECONDS = (1.0, 30.0)
PodChooser = Callable[[Sequence[PodInfo]], PodInfo | None]


def log_time(stamp: str) -> int | None:
    """An RFC 3339 timestamp with up to nanoseconds (`2026-01-01T10:00:00.123456789Z`) → epoch nanoseconds."""
    if not stamp.endswith("Z") or len(stamp) < 20:
        return None
    whole, _, fraction = stamp[:-1].partition(".")
    try:
        seconds = datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()
        nanos = int((fraction + "000000000")[:9]) if fraction else 0
    except ValueError:
        return None
    return int(seconds) * 1_000_000_000 + nanos


def split_line(raw: bytes) -> tuple[int | None, str, str]:
    """(position, timestamp, text) of one `timestamps=true` log line; of a carriage-return line, its last part."""
    text = raw.decode(errors="replace").rstrip("\r")
    stamp, _, rest = text.partition(" ")
    position = log_time(stamp)
    if position is None:
        stamp, rest = "", text
    return position, stamp, rest.rsplit("\r", 1)[-1]


class LineBudget:
    """A token bucket of lines: `rate` a second on average, bursts of `burst`."""

    def __init__(self, rate: float = LINES_PER_SECOND, burst: int = LINE_BURST,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self.clock = rate, burst, clock
        self._tokens, self._at = float(burst), clock()
        self.dropped = 0

    def allow(self) -> bool:
        now = self.clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        self.dropped += 1
        return False


class LogFollower:
    """Streams the log of the pod `choose` picks among the job's pods into `sink`, until `finish()`."""

    def __init__(self, client: KubeClient, namespace: str, record_name: str, uid: str, pods: Informer[PodInfo],
                 choose: PodChooser, container: str | None, sink: Callable[[str], object], *,
                 mask: Callable[[str], str] = str) -> None:
        self.client, self.namespace, self.record_name, self.uid = client, namespace, record_name, uid
        self.pods, self.choose, self.container, self.sink = pods, choose, container, sink
        self.mask = mask  # the caller's secrets masker, applied before a line is cut
        self.budget = LineBudget()
        self.position: int | None = None  # nanoseconds of the last line shown
        self._stamp = ""
        self._at_position: set[str] | None = set()  # lines shown with exactly that timestamp (None: all)
        self._saved = ""
        self._saved_at = 0.0
        self._done: set[str] = set()  # uids of pods whose log ended with the pod
        self._told: set[str] = set()
        self._stopping = False
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        self.pods.subscribe(self.uid, self._wake)
        try:
            await self._resume_position()
            delay = RETRY_SECONDS[0]
            while not self._stopping:
                pod = self._target()
                if pod is None:
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                shown = 0
                try:
                    shown = await self._stream(pod)
                except TransportError:
                    pass  # a dropped or long-silent connection: reconnect from the position
                except (ClusterApiError, InvalidApiPath) as exc:
                    why = exc.describe() if isinstance(exc, ClusterApiError) else str(exc)
                    self._tell(f"{pod.uid}:{getattr(exc, 'status', 'path')}", f"[{pod.name}] log not available "
                                                                             f"({why}); retrying every "
                                                                             f"{RETRY_SECONDS[1]:.0f} s at most")
                if shown:
                    delay = RETRY_SECONDS[0]
                elif pod.uid not in self._done:  # nothing new: wait (or for a change of the pods) before asking again
                    await self._sleep(delay)
                    delay = min(RETRY_SECONDS[1], delay * 2)
        finally:
            self.pods.unsubscribe(self.uid, self._wake)
            try:
                await asyncio.wait_for(self._checkpoint(force=True), CHECKPOINT_SECONDS / 3)
            except TimeoutError:
                pass

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self.run(), name=f"log of {self.record_name}")

    async def finish(self, grace: float = 5.0) -> None:
        """Stop: a log still streaming gets `grace` seconds to end (its container has exited), then is cut."""
        self._stopping = True
        self._wake.set()
        if self._task is None:
            return
        _, pending = await asyncio.wait([self._task], timeout=grace)
        for task in pending:
            task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    def _target(self) -> PodInfo | None:
        pod = self.choose(self.pods.items(self.uid))
        if pod is None or pod.uid in self._done or pod.phase in ("Pending", ""):
            return None
        return pod

    async def _stream(self, pod: PodInfo) -> int:
        """Show the pod's log from the position on, until the stream ends; how many new lines came."""
        query: dict[str, str | int] = {"follow": "true", "timestamps": "true"}
        if self.container:
            query["container"] = self.container
        if self._stamp:
            query["sinceTime"] = self._stamp.split(".")[0].rstrip("Z") + "Z"
        lines = self.client.stream_lines(log_path(self.namespace, pod.name), query=query,
                                         read_timeout=READ_TIMEOUT_SECONDS, max_line_bytes=MAX_LINE_BYTES)
        shown = 0
        async with aclosing(lines):
            async for raw in lines:
                shown += self._show(pod.name, *split_line(raw))
                await self._checkpoint()
        current = next((p for p in self.pods.items(self.uid) if p.uid == pod.uid), None)
        if current is None or current.terminal:
            self._done.add(pod.uid)  # the container exited: its log is complete
        return shown

    def _show(self, pod: str, position: int | None, stamp: str, text: str) -> bool:
        """Show one line unless it was shown before; False for a line seen already."""
        if self._seen(position, text):
            return False  # shown before the stream was resumed
        if position is not None:
            if position != self.position or self._at_position is None:
                self._at_position = set()
            self.position, self._stamp = position, stamp
            self._at_position.add(text)
        dropped = self.budget.dropped
        if not self.budget.allow():
            return True
        if dropped:
            self.sink(f"[{pod}] ... {dropped} line(s) not shown (more than {LINES_PER_SECOND:g} lines a second)")
            self.budget.dropped = 0
        shown = self.mask(text)
        self.sink(f"[{pod}] {shown if len(shown) <= MAX_LINE_CHARS else shown[:MAX_LINE_CHARS] + ' [...]'}")
        return True

    def _seen(self, position: int | None, text: str) -> bool:
        if position is None or self.position is None:
            return False
        return position < self.position or (position == self.position and (
            self._at_position is None or text in self._at_position))

    def _tell(self, key: str, message: str) -> None:
        if key not in self._told:
            self._told.add(key)
            self.sink(message)

    async def _sleep(self, seconds: float) -> None:
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), seconds)
        except TimeoutError:
            pass

    async def _resume_position(self) -> None:
        """Where an earlier follower of this job stopped (the record's annotation), if any."""
        try:
            raw = await get_record(self.client, self.namespace, self.record_name)
        except ClusterApiError:
            return
        stamp = ((raw or {}).get("metadata", {}).get("annotations") or {}).get(LOGGED_UNTIL, "")
        position = log_time(stamp)
        if position is not None:
            self.position, self._stamp, self._at_position = position, stamp, None
            self._saved = stamp
            self.sink(f"log resumes after {stamp} (the lines before were shown in an earlier log of this task)")

    async def _checkpoint(self, force: bool = False) -> None:
        now = time.monotonic()
        if not self._stamp or self._stamp == self._saved or (not force and now - self._saved_at < CHECKPOINT_SECONDS):
            return
        self._saved, self._saved_at = self._stamp, now
        try:  # an update (PUT with the resourceVersion), like every write of the record
            raw = await get_record(self.client, self.namespace, self.record_name)
            if raw is not None:
                await write_record(self.client, raw, None, {LOGGED_UNTIL: self._stamp})
        except Conflict:
            self._saved = ""  # another writer came first: the next checkpoint tries again
        except ClusterApiError as exc:
            self._tell("checkpoint", f"cannot record how far the log was shown ({exc.describe()}); a restarted "
                                     "trigger may show some lines again")
