"""JobWarnings: a job's Warning events (its pods' and its record's) and warning pod statuses, each new one once."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from support.hand_caches import job_pod, pod_object, pods_informer, version
from support.tf_builders import UID, make_pod

from airflow_broadcast.cluster.informers import Informer
from airflow_broadcast.cluster.job_warnings import JobWarning, JobWarnings, status_warnings, warning_event
from airflow_broadcast.reconcilers.observed import ContainerExit, PodInfo
from airflow_broadcast.reconcilers.startup import StartupStall


def event(name: str, involved_uid: str, reason: str, message: str, count: int = 1, *, kind: str = "Pod",
          involved: str = "p", at: str = "2026-12-01T10:00:00Z", **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": version()}, "type": "Warning",
            "involvedObject": {"kind": kind, "name": involved, "uid": involved_uid}, "reason": reason,
            "message": message, "count": count, "lastTimestamp": at, **extra}


class Caches:
    """The two informers a JobWarnings reads, filled by hand (no client, no watch)."""

    def __init__(self) -> None:
        self.pods = pods_informer()
        self.events: Informer[Any] = Informer(None, "/events", warning_event,  # type: ignore[arg-type]
                                              index_by=lambda o: str(o["involvedObject"]["uid"]))
        self.warnings = JobWarnings(self.pods, self.events, UID, "TFJob ns/mnist")

    def add_pod(self, name: str, uid: str, owner: str = UID, phase: str = "Pending") -> PodInfo:
        pod = job_pod(name, uid, phase, owner=owner)
        self.pods.upsert(pod_object(pod))
        return pod


def test_events_of_the_jobs_pods_and_record_are_reported_and_other_pods_are_not() -> None:
    caches = Caches()
    caches.add_pod("mnist-worker-0", "u-w0")
    caches.add_pod("other-0", "u-x", owner="another-job")
    caches.events.upsert(event("e1", "u-w0", "FailedScheduling", "0/3 nodes are available", involved="mnist-worker-0"))
    caches.events.upsert(event("e2", "u-x", "FailedScheduling", "not ours", involved="other-0"))
    caches.events.upsert(event("e3", UID, "FailedCreate", "Error creating: quota", kind="ConfigMap"))

    found = caches.warnings.collect()

    assert found == [
        JobWarning("FailedCreate", "TFJob ns/mnist", "Error creating: quota"),
        JobWarning("FailedScheduling", "pod mnist-worker-0", "0/3 nodes are available", "node-1"),
    ]


def test_an_event_is_reported_again_only_when_its_count_grows() -> None:
    caches = Caches()
    caches.add_pod("mnist-worker-0", "u-w0")
    caches.events.upsert(event("e1", "u-w0", "BackOff", "Back-off pulling image", count=1))
    assert len(caches.warnings.collect()) == 1
    assert caches.warnings.collect() == []
    caches.events.upsert(event("e1", "u-w0", "BackOff", "Back-off pulling image", count=4))
    assert [w.reason for w in caches.warnings.collect()] == ["BackOff"]


def test_events_in_the_new_series_form_are_read() -> None:
    parsed = warning_event({"metadata": {"name": "s"}, "involvedObject": {"uid": "u"}, "reason": "FailedScheduling",
                            "message": "m", "eventTime": "2026-12-01T10:00:00.000000Z",
                            "series": {"count": 7, "lastObservedTime": "2026-12-01T10:05:00.000000Z"}})
    assert (parsed.count, parsed.last_seen) == (7, 1796119500.0)


def test_oom_killed_and_stuck_waiting_reasons_come_from_the_pod_status() -> None:
    oom = make_pod("mnist", "Worker", 1, "Failed", exits=(ContainerExit("tensorflow", 137, "OOMKilled"),))
    pulling = make_pod("mnist", "Worker", 2, "Pending", waiting_reason="ImagePullBackOff")
    creating = make_pod("mnist", "Worker", 3, "Pending", waiting_reason="ContainerCreating")
    failed = make_pod("mnist", "Worker", 4, "Failed", exits=(ContainerExit("tensorflow", 1, "Error"),))
    assert status_warnings(oom) == [("OOMKilled", "container tensorflow terminated with exit code 137")]
    assert status_warnings(pulling) == [("ImagePullBackOff", "a container is waiting: ImagePullBackOff")]
    assert status_warnings(creating) == [] and status_warnings(failed) == []


def test_a_status_warning_is_reported_once_per_pod_reason_and_restart() -> None:
    caches = Caches()
    raw = pod_object(caches.add_pod("mnist-worker-0", "u-w0", phase="Running"))
    crashing = {**raw, "status": {"phase": "Running", "containerStatuses": [
        {"name": "tensorflow", "restartCount": 1, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}}
    caches.pods.upsert({**crashing, "metadata": {**raw["metadata"], "resourceVersion": version()}})
    assert [(w.reason, w.subject) for w in caches.warnings.collect()] == [("CrashLoopBackOff", "pod mnist-worker-0")]
    assert caches.warnings.collect() == []
    crashing["status"]["containerStatuses"][0]["restartCount"] = 2
    caches.pods.upsert({**crashing, "metadata": {**raw["metadata"], "resourceVersion": version()}})
    assert [w.message for w in caches.warnings.collect()] == ["a container is waiting: CrashLoopBackOff (2 restart(s))"]


def test_the_start_up_message_adds_the_pods_latest_warning_event() -> None:
    caches = Caches()
    caches.add_pod("mnist-worker-0", "u-w0")
    caches.events.upsert(event("e1", "u-w0", "Failed", "Failed to pull image", at="2026-12-01T10:00:00Z"))
    caches.events.upsert(event("e2", "u-w0", "BackOff", "Back-off pulling image", at="2026-12-01T10:00:05Z"))
    stall = StartupStall("mnist-worker-0", "node-1", 130.0, "ImagePullBackOff")
    assert caches.warnings.explain(stall, 120) == (
        "pod mnist-worker-0 on node node-1 has been starting for 130 s, longer than startup_timeout_seconds=120: "
        "ImagePullBackOff (latest Warning event: BackOff: Back-off pulling image)")
    same = StartupStall("mnist-worker-0", "node-1", 130.0, "ImagePullBackOff: Back-off pulling image")
    assert "latest Warning event" not in caches.warnings.explain(same, 120)  # its message is the cause already
    assert "latest Warning event" not in caches.warnings.explain(replace(stall, pod="mnist-worker-9"), 120)


async def test_a_feed_wakes_for_its_own_pods_events_only_and_reports_each_once() -> None:
    caches = Caches()
    caches.add_pod("mnist-worker-0", "u-w0")
    caches.add_pod("other-0", "u-x", owner="another-job")
    seen: list[JobWarning] = []
    caches.events.synced.set()
    feed = asyncio.ensure_future(caches.warnings.feed(seen.append, interval=0.0))
    try:
        await asyncio.sleep(0.01)
        assert set(caches.events._subscribers) == {UID, "u-w0"}, "it listens to its record and its pod, not to all"
        caches.events.upsert(event("e2", "u-x", "FailedScheduling", "not ours", involved="other-0"))
        await asyncio.sleep(0.01)
        assert seen == []
        caches.events.upsert(event("e1", "u-w0", "BackOff", "Back-off pulling image", involved="mnist-worker-0"))
        await asyncio.sleep(0.01)
        assert [(w.reason, w.subject) for w in seen] == [("BackOff", "pod mnist-worker-0")]
        caches.add_pod("mnist-worker-1", "u-w1")
        await asyncio.sleep(0.01)
        assert "u-w1" in caches.events._subscribers, "a new pod is listened to as it appears"
        caches.pods.remove("mnist-worker-0")
        await asyncio.sleep(0.01)
        assert "u-w0" not in caches.events._subscribers, "a pod that is gone is no longer listened to"
    finally:
        feed.cancel()
        await asyncio.gather(feed, return_exceptions=True)
    assert not caches.events._subscribers, "a feed that ends leaves no subscription behind"
