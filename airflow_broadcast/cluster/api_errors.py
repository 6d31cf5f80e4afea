"""Kubernetes API failures as specific exceptions with messages a DAG author can act on."""

from __future__ import annotations

import json
from typing import Any


class ClusterApiError(RuntimeError):
    """A Kubernetes API call failed. `status` is the HTTP status (0 for a transport failure).

    A RuntimeError, as the Kubeflow SDK raises for a failed API call (N9).
    """

    retryable = False

    def __init__(self, status: int, reason: str, message: str, *, verb: str = "", target: str = "",
                 details: dict[str, Any] | None = None, retry_after: float | None = None) -> None:
        self.status = status
        self.reason = reason
        self.api_message = message
        self.verb = verb
        self.target = target
        self.details = details or {}
        self.retry_after = retry_after
        super().__init__(self.describe())

    def describe(self) -> str:
        what = f"{self.verb} {self.target}".strip() or "request"
        return f"Kubernetes API {self.status} {self.reason} on {what}: {self.api_message}"


class NotFound(ClusterApiError):
    """404: the object (or its namespace) does not exist."""


class AlreadyExists(ClusterApiError):
    """409 AlreadyExists on create: with deterministic names this usually means "created before"."""


class Conflict(ClusterApiError):
    """409 Conflict: a write raced with another writer (stale resourceVersion)."""


class Forbidden(ClusterApiError):
    """403: RBAC denies the verb; the message says which permission is missing."""

    @property
    def quota_exceeded(self) -> bool:
        return "exceeded quota" in self.api_message

    @property
    def admission_refused(self) -> bool:
        """Refused by an admission check (Pod Security, a LimitRange, a webhook), not by RBAC, whose wording
        is `User "<name>" cannot <verb> resource ...`."""
        return bool(self.api_message) and " cannot " not in self.api_message and not self.quota_exceeded

    def describe(self) -> str:
        base = f"Kubernetes API 403 Forbidden on {self.verb} {self.target}: {self.api_message}"
        if self.quota_exceeded:
            return f"{base}. A ResourceQuota of the namespace refused it; creation is retried as pods finish."
        if self.admission_refused:
            return (f"{base}. An admission check of the cluster (Pod Security, a LimitRange or a webhook) refused "
                    "it, not RBAC: change the pod template as the message says; the create is retried meanwhile.")
        return (f"{base}. The identity behind the Airflow connection lacks this permission; "
                "see docs/rbac.md for the Role and ClusterRole the provider needs.")


class Unauthorized(ClusterApiError):
    """401: the credentials were rejected or expired."""


class Invalid(ClusterApiError):
    """422: the API server refused the object; `causes` lists field paths and problems."""

    @property
    def causes(self) -> list[dict[str, str]]:
        return list(self.details.get("causes", []))

    def describe(self) -> str:
        causes = "; ".join(
            f"{c.get('field', '<object>')}: {c.get('message', '')}" for c in self.causes
        )
        base = f"Kubernetes API 422 Invalid on {self.verb} {self.target}: {self.api_message}"
        return f"{base} ({causes})" if causes else base


class TooManyRequests(ClusterApiError):
    """429: API priority and fairness throttled us; wait `retry_after` seconds."""

    retryable = True


class ServerError(ClusterApiError):
    """5xx: the API server or etcd failed; usually transient."""

    retryable = True


class Gone(ClusterApiError):
    """410: a watch's resourceVersion is too old; relist."""


class TransportError(ClusterApiError):
    """The API server could not be reached (connection refused, reset, timeout)."""

    retryable = True

    @property
    def timed_out(self) -> bool:
        return self.reason == "Timeout" or isinstance(self.__cause__, TimeoutError)


class ApiTimeout(TransportError, TimeoutError):
    """A TransportError that timed out, raised as a TimeoutError where the SDK raises one (JobClient).

    Only the sync facade raises it: inside the engine a TimeoutError means an asyncio deadline.
    """

    @classmethod
    def of(cls, exc: TransportError) -> ApiTimeout:
        return cls(exc.status, exc.reason, exc.api_message, verb=exc.verb, target=exc.target,
                   details=exc.details, retry_after=exc.retry_after)


def error_from_response(status: int, body: bytes | str | None, *, verb: str, target: str,
                        retry_after: str | None = None) -> ClusterApiError:
    """Build the specific error for an HTTP status and a Kubernetes `Status` body."""
    reason, message = "", ""
    details: dict[str, Any] = {}
    text = body.decode(errors="replace") if isinstance(body, bytes) else (body or "")
    try:
        payload = json.loads(text) if text else {}
    except ValueError:
        payload = {}
    if isinstance(payload, dict) and payload.get("kind") == "Status":
        reason = str(payload.get("reason", ""))
        message = str(payload.get("message", ""))
        details = payload.get("details") or {}
    else:
        message = text[:500]
    delay: float | None = None
    if retry_after:
        try:
            delay = float(retry_after)
        except ValueError:
            delay = None
    kwargs: dict[str, Any] = {"verb": verb, "target": target, "details": details, "retry_after": delay}
    cls: type[ClusterApiError]
    if status == 404:
        cls = NotFound
    elif status == 409:
        cls = AlreadyExists if reason == "AlreadyExists" else Conflict
    elif status == 403:
        cls = Forbidden
    elif status == 401:
        cls = Unauthorized
    elif status == 422:
        cls = Invalid
    elif status == 410:
        cls = Gone
    elif status == 429:
        cls = TooManyRequests
    elif status >= 500:
        cls = ServerError
    else:
        cls = ClusterApiError
    return cls(status, reason or _default_reason(status), message, **kwargs)


def _default_reason(status: int) -> str:
    return {
        400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict",
        410: "Gone", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
        503: "ServiceUnavailable", 504: "Timeout",
    }.get(status, "Error")
