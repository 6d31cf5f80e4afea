"""The plan executor's error branches, against a scripted fake API (a unit test of one component).

The same behaviour is exercised against the real API server by the integration tests;
here each error branch (timeouts, failed batches, AlreadyExists) can be forced exactly.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.fake_api import UID, FakeApi, apply

from airflow_broadcast.cluster import api_errors as e
from airflow_broadcast.cluster import job_events
from airflow_broadcast.reconcilers.plan import ActiveCount, DeleteChild, Plan


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns",
                                                           "ownerReferences": [{"uid": UID, "controller": True}]}}


@pytest.fixture(autouse=True)
def fresh_spam_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_events, "_spam", job_events._SpamFilter())


def status_plan(pods: list[dict[str, Any]], active_counts: ActiveCount = "created", **kwargs: Any) -> Plan:
    return Plan(create_pods=tuple(pods), status={"active": 0}, active_counts=active_counts, **kwargs)


async def test_R6_creates_run_in_slow_start_batches_of_1_2_4_then_the_rest() -> None:
    api = FakeApi()
    result = await apply(api, status_plan([pod(f"p{i}") for i in range(10)]))
    assert [len(b) for b in api.batches] == [1, 2, 4, 3]
    assert result.created == 10


async def test_R7_a_batch_with_an_error_stops_the_later_batches() -> None:
    api = FakeApi(fail={"p2": e.ServerError(500, "InternalError", "etcd down")})
    result = await apply(api, status_plan([pod(f"p{i}") for i in range(10)]))
    assert [len(b) for b in api.batches] == [1, 2]
    assert result.created == 2 and len(result.create_errors) == 1


async def test_R8_a_timed_out_create_is_neither_counted_nor_an_error() -> None:
    api = FakeApi(fail={"p0": e.TransportError(0, "Unreachable", "TimeoutError: Timeout on reading data")})
    result = await apply(api, status_plan([pod("p0"), pod("p1"), pod("p2")]))
    assert result.create_errors == []
    assert result.created == 2
    assert api.written[-1]["data"]["status"] == '{"active": 2}'


@pytest.mark.parametrize(("active_counts", "active"), [("created", 2), ("attempted", 3), ("none", 0)])
async def test_R9_failed_creates_inflate_active_only_when_the_plan_says_so(active_counts: ActiveCount,
                                                                            active: int) -> None:
    """p0 is created, p1 fails and stops the slow start after its batch, which p2 is in; the plan's
    rule alone decides what `active` gains (the reconciler asks for "attempted" in compat mode)."""
    api = FakeApi(fail={"p1": e.Forbidden(403, "Forbidden", 'exceeded quota: pods')})
    result = await apply(api, status_plan([pod("p0"), pod("p1"), pod("p2"), pod("p3")], active_counts))
    assert (result.created, result.attempted) == (2, 3)
    assert api.written[-1]["data"]["status"] == f'{{"active": {active}}}'


async def test_P12_a_create_that_failed_or_was_never_sent_puts_its_nodes_entry_back() -> None:
    """p1 fails, which stops p3's batch from going out: neither made a pod, so neither was an attempt."""
    before = {"pod": "p1", "phase": "Failed", "attempt": 1}
    table = {f"n{i}": {"pod": f"p{i}", "phase": "Pending", "attempt": 2 if i == 1 else 1} for i in range(4)}
    fallbacks = {"p0": ("n0", None), "p1": ("n1", before), "p2": ("n2", None), "p3": ("n3", None)}
    api = FakeApi(fail={"p1": e.ServerError(500, "InternalError", "etcd down")})
    plan = Plan(create_pods=tuple(pod(f"p{i}") for i in range(4)), status={"active": 0, "nodes": table},
                active_counts="created", create_fallbacks=fallbacks)
    result = await apply(api, plan)
    assert sorted(result.not_created) == ["p1", "p3"]
    written = json.loads(api.written[-1]["data"]["status"])["nodes"]
    assert written == {"n0": table["n0"], "n1": before, "n2": table["n2"]}


async def test_E1_E2_E3_R10_events_for_created_failed_and_deleted_pods() -> None:
    api = FakeApi(fail={"p1": e.Invalid(422, "Invalid", "bad pod")})
    plan = Plan(create_pods=(pod("p0"), pod("p1")), deletes=(DeleteChild("Pod", "old", "uid-old"),))
    await apply(api, plan)
    assert ("SuccessfulCreate", "Created pod: p0") in api.events
    assert ("SuccessfulDelete", "Delete pod: old") in api.events
    failed = [m for r, m in api.events if r == "FailedCreate"]
    assert len(failed) == 1 and failed[0].startswith("Error creating: Kubernetes API 422 Invalid")
    assert api.event_types == {"SuccessfulCreate": {"Normal"}, "SuccessfulDelete": {"Normal"},
                               "FailedCreate": {"Warning"}}


async def test_X6_already_exists_for_our_own_pod_counts_as_created_but_is_not_reported_again() -> None:
    api = FakeApi(fail={"p0": e.AlreadyExists(409, "AlreadyExists", "exists")}, existing={"p0": pod("p0")})
    result = await apply(api, status_plan([pod("p0")]))
    assert result.created == 1 and result.create_errors == []
    assert [r for r, _ in api.events] == [], "the pod was reported when it was really created"


async def test_X6_already_exists_for_a_foreign_pod_is_an_error() -> None:
    foreign = pod("p0")
    foreign["metadata"]["ownerReferences"] = [{"uid": "someone-else", "controller": True}]
    api = FakeApi(fail={"p0": e.AlreadyExists(409, "AlreadyExists", "exists")}, existing={"p0": foreign})
    result = await apply(api, status_plan([pod("p0")]))
    assert result.created == 0
    assert result.create_errors == ['pods "p0" already exists and is not owned by this job']
    assert api.events == [("FailedCreate", 'Error creating: pods "p0" already exists and is not owned by this job')]


async def test_deleting_a_pod_that_is_already_gone_is_done_and_not_reported() -> None:
    api = FakeApi(gone={"already-gone"})
    result = await apply(api, Plan(deletes=(DeleteChild("Pod", "already-gone"), DeleteChild("Pod", "p9"))))
    assert api.deleted == ["p9"] and result.deleted == 1
    assert api.events == [("SuccessfulDelete", "Delete pod: p9")]


async def test_a_deleted_pod_group_is_reported_once_it_is_gone() -> None:
    api = FakeApi(gone={"old"})
    groups = [DeleteChild("PodGroup", name, f"uid-{name}", api_version="scheduling.volcano.sh/v1beta1")
              for name in ("mnist", "old")]
    await apply(api, Plan(deletes=tuple(groups)))
    assert api.events == [("SuccessfulDeletePodGroup", "Deleted PodGroup: mnist")]


async def test_annotations_are_written_without_a_status() -> None:
    api = FakeApi()
    await apply(api, Plan(record_annotations={"airflow-broadcast.io/expires-at": "2027-01-01T00:00:00Z"}))
    (written,) = api.written
    assert written["metadata"]["annotations"] == {"airflow-broadcast.io/expires-at": "2027-01-01T00:00:00Z"}
    assert "status" not in written["data"]


async def test_a_conflicting_record_write_is_reported_not_raised() -> None:
    class Conflicting(FakeApi):
        async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
            raise e.Conflict(409, "Conflict", "the object has been modified")

    result = await apply(Conflicting(), Plan(status={"phase": "running"}))
    assert result.conflict is True


class PathRecordingApi(FakeApi):
    """Records the API paths; PodGroup writes fail with the given error."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error
        self.paths: list[tuple[str, str]] = []

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.paths.append(("create", path))
        if body["kind"] == "PodGroup":
            raise self.error
        return await super().create(path, body)

    async def delete(self, path: str, **kwargs: Any) -> dict[str, Any]:
        self.paths.append(("delete", path))
        raise self.error


async def test_a_pod_group_that_cannot_be_written_is_a_warning_and_the_pass_goes_on() -> None:
    api = PathRecordingApi(e.Forbidden(403, "Forbidden", "podgroups is forbidden", verb="POST", target="podgroups"))
    group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"name": "mnist", "namespace": "ns", "ownerReferences": [{"uid": UID, "controller": True}]}}
    plan = Plan(create_objects=(group,), create_pods=(pod("p0"),),
                deletes=(DeleteChild("PodGroup", "old", "uid-old", api_version="scheduling.volcano.sh/v1beta1"),))
    result = await apply(api, plan)

    assert api.paths == [("delete", "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/old"),
                         ("create", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/podgroups"),
                         ("create", "/api/v1/namespaces/ns/pods")]
    assert result.created == 1, "the pods are still created"
    reasons = [reason for reason, _ in api.events]
    assert "FailedCreatePodGroup" in reasons and "FailedDeletePodGroup" in reasons


async def test_R6_a_large_batch_streams_through_a_bounded_window_of_creates(monkeypatch: pytest.MonkeyPatch) -> None:
    """The doubling is not capped, yet no more than CREATE_CONCURRENCY creates are ever in flight."""
    from airflow_broadcast.cluster import plan_executor

    monkeypatch.setattr(plan_executor, "CREATE_CONCURRENCY", 4)
    api = FakeApi()
    in_flight = peak = 0
    create = api.create

    async def counted(path: str, body: dict[str, Any]) -> dict[str, Any]:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            return await create(path, body)
        finally:
            in_flight -= 1

    monkeypatch.setattr(api, "create", counted)
    result = await apply(api, status_plan([pod(f"p{i}") for i in range(40)]))
    assert result.created == 40
    assert peak == 4


async def test_a_long_ramp_opens_its_connections_while_the_first_batch_is_out() -> None:
    """40 creates: one warm-up GET per connection the ramp will use beyond the first, sent with batch one."""
    from airflow_broadcast.cluster import plan_executor

    api = FakeApi()
    order: list[str] = []
    create = api.create

    async def noted(path: str, body: dict[str, Any]) -> dict[str, Any]:
        order.append(f"create {len(api.warm_gets)}")
        return await create(path, body)

    api.create = noted  # type: ignore[method-assign]
    result = await apply(api, status_plan([pod(f"p{i}") for i in range(40)]))
    assert result.created == 40
    assert [len(b) for b in api.batches] == [1, 2, 4, 8, 16, 9], "the slow start is unchanged"
    assert api.warm_gets == ["/version"] * (min(40, plan_executor.CREATE_CONCURRENCY, api.max_inflight) - 1)
    assert order[1] == f"create {len(api.warm_gets)}", "batch two goes out after the warm-up was sent"


async def test_a_short_ramp_sends_no_warm_up() -> None:
    from airflow_broadcast.cluster import plan_executor

    api = FakeApi()
    await apply(api, status_plan([pod(f"p{i}") for i in range(plan_executor.WARM_FROM_CREATES - 1)]))
    assert api.warm_gets == []


async def test_a_failed_warm_up_changes_nothing_about_the_creates() -> None:
    api = FakeApi()
    api.warm_error = e.Forbidden(403, "Forbidden", 'cannot get path "/version"')
    result = await apply(api, status_plan([pod(f"p{i}") for i in range(20)]))
    assert result.created == 20 and result.create_errors == []
    assert [reason for reason, _ in api.events].count("FailedCreate") == 0


async def test_the_warm_up_never_opens_more_connections_than_the_client_may_use() -> None:
    from airflow_broadcast.cluster.connection_warmup import warm_connections

    api = FakeApi()
    api.max_inflight = 5
    assert await warm_connections(api, 63) == 5  # type: ignore[arg-type]
    assert len(api.warm_gets) == 5
    api.warm_error = e.ServerError(503, "ServiceUnavailable", "")
    assert await warm_connections(api, 3) == 0  # type: ignore[arg-type]


async def test_X4_a_plan_that_creates_for_a_record_gone_or_recreated_raises_not_found_and_sends_nothing() -> None:
    api = FakeApi(existing={"bcj-x": {"metadata": {"name": "bcj-x", "namespace": "ns", "uid": "a-new-uid"}}})
    with pytest.raises(e.NotFound, match="record-uid"):
        await apply(api, status_plan([pod("p0"), pod("p1")]))
    assert api.batches == [] and api.written == [] and api.events == []


async def test_X4_a_plan_that_creates_nothing_does_not_look_the_record_up() -> None:
    api = FakeApi(existing={"bcj-x": {"metadata": {"name": "bcj-x", "namespace": "ns", "uid": "a-new-uid"}}})
    await apply(api, Plan(status={"active": 0}))
    assert len(api.written) == 1  # its resourceVersion meets a re-created record with a 409
