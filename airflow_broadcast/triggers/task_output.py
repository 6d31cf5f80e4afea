"""What a job shows in the task log and the XCom: capped in size, and passed through Airflow's secrets masker.

Pod logs and termination messages are written by the job's containers, and a job record's
status by whoever can edit the record; either may hold a credential (a connection's password,
a token printed by a script) or be arbitrarily long. The pure layers never see Airflow, so
masking happens here, on the way out. Text is masked before it is cut, so that a secret cut
in half by the cap cannot slip past the masker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

try:
    from airflow.sdk.log import redact
except ImportError:  # pragma: no cover - Airflow 3.1
    from airflow.sdk.execution_time.secrets_masker import redact  # type: ignore[no-redef]

from airflow_broadcast.cluster.pod_logs import cap_tail

# Kubernetes caps one container's termination message at 4096 bytes; no message we show is longer.
MESSAGE_MAX_BYTES = 4096
TRUNCATED = " [truncated]"
T = TypeVar("T")


def masked(text: str) -> str:
    """`text` with every secret Airflow's masker knows (connection passwords, masked values) as `***`."""
    return str(redact(text))


def cap_message(text: str, max_bytes: int = MESSAGE_MAX_BYTES) -> str:
    """The start of `text`, at most `max_bytes` UTF-8 bytes including a `[truncated]` marker when cut."""
    raw = text.encode()
    if len(raw) <= max_bytes:
        return text
    return raw[: max(max_bytes - len(TRUNCATED), 0)].decode(errors="ignore") + TRUNCATED


def shown_message(text: str) -> str:
    """A failure or termination message as the task log and the exception show it."""
    return cap_message(masked(text))


def shown_log_tail(text: str, lines: int, max_bytes: int) -> str:
    """A pod's log tail as the task log shows it: masked, then the last `lines` lines within `max_bytes`."""
    return cap_tail(masked(text), lines, max_bytes)


def _shown(value: Any) -> Any:
    if isinstance(value, str):
        return shown_message(value)
    if isinstance(value, Mapping):
        return {key: _shown(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_shown(item) for item in value]
    return value


def shown_result(summary: T) -> T:
    """The XCom: every string in it (node messages, conditions, the failure cause) masked and capped.

    Only string values are masked, never by key: a node named `token-pool-1` keeps its result.
    """
    result: T = _shown(summary)
    return result
