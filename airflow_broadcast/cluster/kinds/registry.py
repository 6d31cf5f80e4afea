"""Job kinds known to the engine, by kind name: the kind, its options and its driver."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeAlias, TypeVar

from airflow_broadcast.cluster.kinds.broadcast_job import BroadcastJobDriver
from airflow_broadcast.cluster.kinds.tf_job import TFJobDriver
from airflow_broadcast.cluster.reconcile_loop import JobDriver
from airflow_broadcast.reconcilers.broadcast_job.kind import BroadcastJobKind
from airflow_broadcast.reconcilers.broadcast_job.options import BroadcastOptions
from airflow_broadcast.reconcilers.kind import JobKind, KindName
from airflow_broadcast.reconcilers.tf_job.kind import TFJobKind
from airflow_broadcast.reconcilers.tf_job.options import TFJobOptions

KINDS: tuple[KindName, ...] = ("BroadcastJob", "TFJob")
JobOptions: TypeAlias = BroadcastOptions | TFJobOptions
OptionsT = TypeVar("OptionsT", BroadcastOptions, TFJobOptions)


def check_kind(kind: str) -> KindName:
    """`kind` as a known kind name; ValueError naming the known kinds otherwise."""
    for known in KINDS:
        if kind == known:
            return known
    raise ValueError(f"unknown job kind {kind!r}; known kinds: {', '.join(KINDS)}")


def options_from(options_type: type[OptionsT], value: Mapping[str, Any] | JobOptions | None) -> OptionsT:
    """`options_type` from itself, a mapping of its fields (unknown ones: ValueError), or None (its defaults)."""
    if isinstance(value, options_type):
        return value
    if value is None:
        return options_type()
    if not isinstance(value, Mapping):
        raise TypeError(f"expected {options_type.__name__} or a mapping of its fields, not {type(value).__name__}")
    known = {f.name for f in dataclasses.fields(options_type)}
    unknown = sorted(set(value) - known)
    if unknown:
        raise ValueError(f"unknown {options_type.__name__} switch(es) {', '.join(unknown)}; "
                         f"known: {', '.join(sorted(known))}")
    return options_type(**value)


def options_for(kind: str, value: Mapping[str, Any] | JobOptions | None = None) -> JobOptions:
    """The kind's options from the dataclass, its `asdict()` (as trigger kwargs store it), or None (defaults)."""
    if check_kind(kind) == "BroadcastJob":
        return options_from(BroadcastOptions, value)
    return options_from(TFJobOptions, value)


def kind_for(kind: str, options: Mapping[str, Any] | JobOptions | None = None) -> JobKind[Any, Any]:
    if check_kind(kind) == "BroadcastJob":
        return BroadcastJobKind(options_from(BroadcastOptions, options))
    return TFJobKind(options_from(TFJobOptions, options))


def driver_for(kind: str, options: Mapping[str, Any] | JobOptions | None = None) -> JobDriver[Any]:
    """The driver for `kind`, with the kind's options (the dataclass, or a mapping of its fields)."""
    if check_kind(kind) == "BroadcastJob":
        return BroadcastJobDriver(BroadcastJobKind(options_from(BroadcastOptions, options)))
    return TFJobDriver(TFJobKind(options_from(TFJobOptions, options)))
