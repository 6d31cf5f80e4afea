"""What reaches the task log and the XCom: no forged path is read, text is capped, secrets show as ***."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from airflow.sdk import BaseHook
from airflow.sdk.log import mask_secret

from airflow_broadcast.cluster.job_records import new_record
from airflow_broadcast.operators.job_runtime import JobFailedError, conclude
from airflow_broadcast.triggers.job_reconcile import JobTriggerArgs
from airflow_broadcast.triggers.task_output import MESSAGE_MAX_BYTES, cap_message, shown_result

FORGED = "../../../namespaces/kube-system/secrets/x?"
MANIFEST = {"kind": "BroadcastJob", "spec": {"template": {"spec": {"containers": [{"name": "main"}]}}}}
LOG_NAME = "test.task_output"


def failed_status(pod: str, message: str = "") -> dict[str, Any]:
    node = {"pod": pod, "phase": "Failed", "exitCode": 1, "reason": "Error", "message": message}
    return {"phase": "failed", "desired": 1, "failed": 1, "nodes": {"node-1": node},
            "conditions": [{"type": "Failed", "status": "True", "message": message or "a pod failed"}]}


class FinishedJobApi:
    """A finished BroadcastJob's record and its pod logs; records every log request."""

    def __init__(self, status: dict[str, Any], log_text: str = "") -> None:
        self.record = new_record("BroadcastJob", "job", "ns", MANIFEST, status, {})
        self.record["metadata"]["uid"] = "u"
        self.log_text = log_text
        self.log_requests: list[str] = []

    async def kube_client(self) -> FinishedJobApi:
        return self

    async def get(self, path: str, **query: Any) -> dict[str, Any]:
        assert path == "/api/v1/namespaces/ns/configmaps/bcj-job", path
        return self.record

    async def request_text(self, method: str, path: str, *, query: dict[str, Any]) -> str:
        self.log_requests.append(path)
        return self.log_text


def finish(monkeypatch: pytest.MonkeyPatch, api: FinishedJobApi, **options: int) -> Any:
    monkeypatch.setattr(JobTriggerArgs, "hook", lambda self: api)
    args = JobTriggerArgs.from_kwargs({"kind": "BroadcastJob", "namespace": "ns", "record_name": "bcj-job",
                                       "uid": "u"})
    return conclude(args, "finished", "", logging.getLogger(LOG_NAME), **options)


def test_a_forged_pod_name_in_the_status_fails_the_task_without_any_request(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    api = FinishedJobApi(failed_status(FORGED), log_text="apiVersion: v1\nkind: Secret\ndata: {token: c2VjcmV0}")

    with caplog.at_level(logging.DEBUG), pytest.raises(JobFailedError) as failed:
        finish(monkeypatch, api)

    assert api.log_requests == []
    message = str(failed.value)
    assert "BroadcastJob ns/job: its record's status names a failed pod that cannot exist" in message
    assert "no log was read" in message and repr(FORGED) in message
    assert "kind: Secret" not in caplog.text and "log lines of failed pod" not in caplog.text


def test_a_registered_secret_in_a_log_tail_is_masked(monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    mask_secret("tail-secret-4f2a9c")
    api = FinishedJobApi(failed_status("job-node-1"), log_text="connecting\nusing token tail-secret-4f2a9c\nfailed")

    with caplog.at_level(logging.ERROR, logger=LOG_NAME), pytest.raises(JobFailedError):
        finish(monkeypatch, api)

    assert api.log_requests == ["/api/v1/namespaces/ns/pods/job-node-1/log"]
    assert "using token ***" in caplog.text
    assert "tail-secret-4f2a9c" not in caplog.text


def test_a_connection_password_in_a_log_tail_is_masked(monkeypatch: pytest.MonkeyPatch,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_BROADCAST_MASK_TEST", '{"conn_type": "kubernetes", "password": "c0nn-pw-7e1d"}')
    assert BaseHook.get_connection("broadcast_mask_test").password == "c0nn-pw-7e1d"  # Airflow registers it
    api = FinishedJobApi(failed_status("job-node-1"), log_text="login with c0nn-pw-7e1d refused")

    with caplog.at_level(logging.ERROR, logger=LOG_NAME), pytest.raises(JobFailedError):
        finish(monkeypatch, api)

    assert "login with *** refused" in caplog.text
    assert "c0nn-pw-7e1d" not in caplog.text


def test_a_log_tail_longer_than_asked_is_cut_to_the_asked_lines(monkeypatch: pytest.MonkeyPatch,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    api = FinishedJobApi(failed_status("job-node-1"), log_text="\n".join(f"line {i}" for i in range(1000)))

    with caplog.at_level(logging.ERROR, logger=LOG_NAME), pytest.raises(JobFailedError):
        finish(monkeypatch, api, log_tail_lines=3)

    assert "line 996" not in caplog.text
    assert caplog.text.count("line 99") == 3  # 997, 998, 999


def test_the_failure_message_is_masked_and_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    mask_secret("status-secret-81bc")
    api = FinishedJobApi(failed_status("job-node-1", message="status-secret-81bc " + "x" * 20_000))

    with pytest.raises(JobFailedError) as failed:
        finish(monkeypatch, api)

    message = str(failed.value)
    assert "status-secret-81bc" not in message and "***" in message
    assert len(message.encode()) <= MESSAGE_MAX_BYTES and message.endswith("[truncated]")


def test_the_xcom_result_is_masked_and_capped_string_by_string() -> None:
    mask_secret("xcom-secret-5d3e")
    summary = {"name": "job", "succeeded": 2,
               "nodes": {"token-pool-1": {"pod": "job-a", "message": "xcom-secret-5d3e", "exitCode": 0},
                         "node-2": {"pod": "job-b", "message": "é" * 10_000}},
               "conditions": [{"type": "Complete", "message": "xcom-secret-5d3e done"}]}

    shown = shown_result(summary)

    assert shown["nodes"]["token-pool-1"] == {"pod": "job-a", "message": "***", "exitCode": 0}
    assert shown["conditions"] == [{"type": "Complete", "message": "*** done"}]
    assert len(shown["nodes"]["node-2"]["message"].encode()) <= MESSAGE_MAX_BYTES
    assert shown["succeeded"] == 2 and shown["name"] == "job"


def test_cap_message_keeps_short_text_and_never_splits_a_character() -> None:
    assert cap_message("short") == "short"
    cut = cap_message("é" * 100, max_bytes=31)
    assert cut == "é" * 9 + " [truncated]" and len(cut.encode()) <= 31
