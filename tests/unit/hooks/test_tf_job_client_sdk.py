"""JobClient's argument checks and error mapping, the parts of N5 and N9 that need no cluster."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_broadcast.cluster import api_errors, job_wait
from airflow_broadcast.cluster.api_errors import ApiTimeout, ClusterApiError, TransportError
from airflow_broadcast.hooks import job_client
from airflow_broadcast.hooks.job_client import JobClient


def test_N5_expected_conditions_default_to_the_kinds_success_and_must_be_its_own() -> None:
    assert job_wait.expected_conditions("TFJob", None) == {"Succeeded"}
    assert job_wait.expected_conditions("BroadcastJob", None) == {"Complete"}
    assert job_wait.expected_conditions("TFJob", "Suspended") == {"Suspended"}
    assert job_wait.expected_conditions("TFJob", ["Running", "Failed"]) == {"Running", "Failed"}
    with pytest.raises(ValueError, match="BroadcastJob has no condition 'Succeeded'"):
        job_wait.expected_conditions("BroadcastJob", {"Succeeded"})
    with pytest.raises(ValueError, match="non-empty subset"):
        job_wait.expected_conditions("TFJob", set())


def test_N5_bad_arguments_are_refused_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_request(main: Any) -> Any:
        raise AssertionError("no request may be made")

    monkeypatch.setattr(job_client, "run_on_worker", no_request)
    jobs = JobClient("TFJob", namespace="ns")
    with pytest.raises(ValueError, match="TFJob has no condition 'Done'"):
        jobs.wait_for_job_conditions("j", expected_conditions={"Done"})
    with pytest.raises(ValueError, match="replica_type must be one of"):
        jobs.get_job_pods("j", replica_type="launcher")
    with pytest.raises(ValueError, match="no master, replica type or replica index"):
        JobClient("BroadcastJob", namespace="ns").get_job_logs("b", replica_index=0)


def test_N9_api_failures_are_runtime_errors() -> None:
    for name in ("NotFound", "AlreadyExists", "Conflict", "Forbidden", "Unauthorized", "Invalid", "TooManyRequests",
                 "ServerError", "Gone", "TransportError"):
        error = getattr(api_errors, name)(500, "Reason", "message", verb="GET", target="/x")
        assert isinstance(error, RuntimeError) and isinstance(error, ClusterApiError), name
        assert not isinstance(error, TimeoutError), f"{name}: inside the engine TimeoutError is an asyncio deadline"


@pytest.mark.parametrize(("error", "is_timeout"), [
    (TransportError(0, "Timeout", "no complete LIST within 120 s", verb="LIST", target="/api/v1/pods"), True),
    (TransportError(0, "Unreachable", "ConnectionRefusedError: refused", verb="GET", target="/x"), False),
])
def test_N9_an_api_timeout_is_a_timeout_error_from_the_client(monkeypatch: pytest.MonkeyPatch,
                                                              error: TransportError, is_timeout: bool) -> None:
    def fail(main: Any) -> Any:
        main().close()
        raise error

    monkeypatch.setattr(job_client, "run_on_worker", fail)
    with pytest.raises(TransportError) as raised:
        JobClient("TFJob", namespace="ns").get_job("j")
    assert isinstance(raised.value, TimeoutError) is is_timeout
    assert isinstance(raised.value, RuntimeError)
    assert str(raised.value) == str(error), "the same message, naming the request"


def test_N9_a_request_that_timed_out_is_a_timeout_error_from_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """As KubeClient raises it: a TransportError whose cause is the socket's TimeoutError."""

    def timed_out(main: Any) -> Any:
        main().close()
        try:
            raise TimeoutError()
        except TimeoutError as cause:
            raise TransportError(0, "Unreachable", "TimeoutError: ", verb="GET", target="/x") from cause

    monkeypatch.setattr(job_client, "run_on_worker", timed_out)
    with pytest.raises(ApiTimeout) as raised:
        JobClient("TFJob", namespace="ns").list_jobs()
    assert isinstance(raised.value, TimeoutError) and isinstance(raised.value, RuntimeError)
    assert raised.value.target == "/x" and isinstance(raised.value.__cause__, TransportError)
