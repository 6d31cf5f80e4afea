"""Kubernetes API failures map to specific errors with actionable messages."""

from __future__ import annotations

import json

import pytest

from airflow_broadcast.cluster import api_errors as e


def _status(code: int, reason: str, message: str, **details: object) -> str:
    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
                       "reason": reason, "message": message, "details": details})


@pytest.mark.parametrize(
    ("code", "reason", "cls", "retryable"),
    [
        (404, "NotFound", e.NotFound, False),
        (409, "AlreadyExists", e.AlreadyExists, False),
        (409, "Conflict", e.Conflict, False),
        (403, "Forbidden", e.Forbidden, False),
        (401, "Unauthorized", e.Unauthorized, False),
        (422, "Invalid", e.Invalid, False),
        (410, "Expired", e.Gone, False),
        (429, "TooManyRequests", e.TooManyRequests, True),
        (500, "InternalError", e.ServerError, True),
        (503, "ServiceUnavailable", e.ServerError, True),
    ],
)
def test_status_codes_map_to_specific_errors(code: int, reason: str, cls: type, retryable: bool) -> None:
    err = e.error_from_response(code, _status(code, reason, "boom"), verb="POST", target="/api/v1/x")
    assert type(err) is cls
    assert err.retryable is retryable
    assert err.status == code
    assert "POST /api/v1/x" in str(err)


def test_422_lists_every_field_cause() -> None:
    body = _status(422, "Invalid", 'Pod "p" is invalid', causes=[
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers"},
        {"reason": "FieldValueInvalid", "message": "bad", "field": "metadata.name"},
    ])
    err = e.error_from_response(422, body, verb="POST", target="/api/v1/namespaces/n/pods")
    assert isinstance(err, e.Invalid)
    assert [c["field"] for c in err.causes] == ["spec.containers", "metadata.name"]
    assert "spec.containers: Required value" in str(err)
    assert "metadata.name: bad" in str(err)


def test_403_names_the_missing_permission_and_the_rbac_doc() -> None:
    message = 'pods is forbidden: User "bob" cannot create resource "pods" in API group "" in the namespace "ops"'
    err = e.error_from_response(403, _status(403, "Forbidden", message), verb="POST", target="/api/v1/pods")
    assert message in str(err)
    assert "docs/rbac.md" in str(err)


def test_429_carries_retry_after_seconds() -> None:
    err = e.error_from_response(429, _status(429, "TooManyRequests", "slow down"), verb="GET", target="/x",
                                retry_after="3")
    assert err.retry_after == 3.0


def test_non_status_body_is_kept_as_the_message() -> None:
    err = e.error_from_response(502, b"<html>bad gateway</html>", verb="GET", target="/x")
    assert isinstance(err, e.ServerError)
    assert "bad gateway" in err.api_message


def test_a_quota_refusal_is_not_blamed_on_rbac() -> None:
    message = 'pods "p" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=3, limited: pods=3'
    err = e.error_from_response(403, _status(403, "Forbidden", message), verb="POST", target="/api/v1/pods")
    assert isinstance(err, e.Forbidden) and err.quota_exceeded
    assert "ResourceQuota" in str(err) and "docs/rbac.md" not in str(err)


@pytest.mark.parametrize("message", [
    'pods "p" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false',
    'pods "p" is forbidden: maximum cpu usage per Container is 1, but limit is 2',
    'admission webhook "policy.example.com" denied the request: images must come from the internal registry',
])
def test_an_admission_refusal_is_not_blamed_on_rbac(message: str) -> None:
    err = e.error_from_response(403, _status(403, "Forbidden", message), verb="POST", target="/api/v1/pods")
    assert isinstance(err, e.Forbidden) and err.admission_refused
    assert "admission check" in str(err) and "docs/rbac.md" not in str(err) and message in str(err)


def test_an_empty_403_still_points_at_rbac() -> None:
    err = e.error_from_response(403, b"", verb="GET", target="/api/v1/nodes")
    assert not err.admission_refused and "docs/rbac.md" in str(err)  # type: ignore[attr-defined]
