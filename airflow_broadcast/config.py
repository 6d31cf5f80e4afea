"""The provider's `[airflow_broadcast]` configuration section: what a platform team tunes per Airflow component.

Declared once here: `get_provider_info` publishes it (so `airflow config list` shows every option with its
description), and the Airflow adapters read it with `current_settings()` and pass the values down; the
cluster layer never reads configuration itself. Importing this module imports no Airflow.
"""

from __future__ import annotations

import dataclasses
import os
import textwrap
import time
from dataclasses import dataclass
from typing import Any, Protocol

SECTION = "airflow_broadcast"


@dataclass(frozen=True)
class Settings:
    """One process's settings; the defaults are the values used when the section is absent."""

    client_qps: float = 500.0
    client_burst: int = 1000
    client_request_timeout: float = 60.0
    client_max_retries: int = 5
    client_max_inflight: int = 32
    credential_refresh_seconds: float = 60.0
    resync_seconds: float = 30.0
    thread_threshold: int = 200
    ttl_sweep_seconds: float = 60.0
    unread_result_grace_seconds: float = 600.0
    freeze_startup_heap: bool = True
    release_freed_heap: bool = True
    log_socket_buffer_kib: int = 2048
    measure_loop_lag: bool = False


DESCRIPTIONS: dict[str, str] = {
    "client_qps": (
        "Requests per second, on average, that the shared Kubernetes client of one process (triggerer or "
        "worker) sends for one connection and cluster context. 0 turns the rate limit off."
    ),
    "client_burst": "Requests the shared Kubernetes client may send at once before ``client_qps`` applies.",
    "client_request_timeout": "Seconds before one Kubernetes API request (not a watch) times out.",
    "client_max_retries": (
        "Retries of a Kubernetes API request that failed with a retryable error (429, 5xx, unreachable), "
        "with exponential backoff or the server's Retry-After."
    ),
    "client_max_inflight": (
        "Requests (not watches) the shared Kubernetes client has in flight at once; each needs its own "
        "connection, and an open TLS connection holds about 256 KiB of buffers, so this bounds the "
        "connections a triggerer keeps open however many jobs it runs."
    ),
    "credential_refresh_seconds": (
        "Kubeconfig credentials (exec plugins such as ``aws eks get-token``, OIDC) are reloaded at most this "
        "often, in seconds, so that short-lived tokens keep working in a long-running triggerer."
    ),
    "resync_seconds": (
        "Default ``resync_seconds`` of the operators and sensors: a job is reconciled at least this often, in "
        "seconds, even when no watch event arrives. Read when the DAG file is parsed."
    ),
    "thread_threshold": (
        "A reconcile pass over more children and nodes than this runs in a worker thread, so that the "
        "triggerer's event loop keeps ticking."
    ),
    "ttl_sweep_seconds": (
        "Each triggerer process sweeps a namespace for expired job records (ttlSecondsAfterFinished) at most "
        "this often, in seconds."
    ),
    "unread_result_grace_seconds": (
        "Seconds after its TTL expired that a job record whose result no task has read yet is kept before "
        "the sweeper deletes it."
    ),
    "freeze_startup_heap": (
        "Freeze the objects alive when the first Kubernetes client of a process is built (``gc.freeze()``), so "
        "that full garbage collections of a triggerer's large heap do not stall its event loop."
    ),
    "release_freed_heap": (
        "When a job goes quiet or ends, hand the memory its passes freed back to the operating system "
        "(glibc's ``malloc_trim``, in a worker thread, at most every 30 s per process), so that a triggerer "
        "that started many jobs does not keep their start-up memory. Does nothing without glibc."
    ),
    "log_socket_buffer_kib": (
        "Grow the send buffer of the socket that carries a triggerer's (or task's) log lines to Airflow's "
        "supervisor to this many KiB, within the kernel's ``net.core.wmem_max``; never shrinks it, and 0 leaves "
        "it as Airflow made it. A burst of new triggers writes hundreds of lines at once, and with the default "
        "buffer (about 160 lines) Airflow's own writes blocked the event loop while the supervisor was busy."
    ),
    "measure_loop_lag": (
        "Log the event loop's wake-up delay (p50, p99, max, stalls over 0.2 s), the longest garbage-collection "
        "pause and the API request count when each job's trigger finishes. For measurements, not production."
    ),
}

_TYPES: dict[type, str] = {bool: "boolean", int: "integer", float: "float"}


def _option_type(field: dataclasses.Field[Any]) -> type:
    return type(field.default)


def provider_config() -> dict[str, Any]:
    """The section as `get_provider_info()["config"]` declares it."""
    options = {
        field.name: {
            "description": textwrap.fill(DESCRIPTIONS[field.name], width=100, break_on_hyphens=False) + "\n",
            "version_added": None,
            "type": _TYPES[_option_type(field)],
            "example": None,
            "default": str(field.default),
        }
        for field in dataclasses.fields(Settings)
    }
    return {SECTION: {"description": "Operators, sensors and triggers of airflow-provider-broadcast.",
                      "options": options}}


class ConfigReader(Protocol):
    """The part of Airflow's `conf` that settings are read with."""

    def getboolean(self, section: str, key: str, **kwargs: Any) -> bool: ...

    def getint(self, section: str, key: str, **kwargs: Any) -> int: ...

    def getfloat(self, section: str, key: str, **kwargs: Any) -> float: ...


def _read_option(conf: ConfigReader, field: dataclasses.Field[Any]) -> Any:
    kind = _option_type(field)
    getter = {bool: conf.getboolean, int: conf.getint, float: conf.getfloat}[kind]
    value = getter(SECTION, field.name, fallback=field.default)
    if kind is not bool and value < 0:
        raise ValueError(f"[{SECTION}] {field.name} must not be negative, got {value}")
    return value


def read_settings(conf: ConfigReader) -> Settings:
    """Settings from `conf`; a missing option keeps its default, a negative number is refused."""
    return Settings(**{field.name: _read_option(conf, field) for field in dataclasses.fields(Settings)})


def parse_time_setting(name: str) -> Any:
    """One option, read now: a default taken while a DAG file is parsed, which another option's bad value
    must not turn into an import error of every DAG that uses the provider."""
    from airflow_broadcast.version_compat import conf

    field = next(f for f in dataclasses.fields(Settings) if f.name == name)
    return _read_option(conf, field)


ENV_PREFIX = f"AIRFLOW__{SECTION.upper()}__"
SETTINGS_TTL_SECONDS = 10.0
_ENV_NAMES = tuple(f"{ENV_PREFIX}{f.name.upper()}" for f in dataclasses.fields(Settings))
_cached: tuple[tuple[str, ...], float, Settings] | None = None


def current_settings() -> Settings:
    """This process's settings, from airflow.cfg or `AIRFLOW__AIRFLOW_BROADCAST__<OPTION>` variables.

    Read at most every SETTINGS_TTL_SECONDS (and at once when one of those variables changes): reading
    Airflow's configuration costs milliseconds, and a triggerer with 1,000 jobs asks for it per trigger.
    """
    global _cached  # noqa: PLW0603
    from airflow_broadcast.version_compat import conf

    env = tuple(os.environ.get(name, "") for name in _ENV_NAMES)
    now = time.monotonic()
    if _cached is not None and _cached[0] == env and now - _cached[1] < SETTINGS_TTL_SECONDS:
        return _cached[2]
    settings = read_settings(conf)
    _cached = (env, now, settings)
    return settings
