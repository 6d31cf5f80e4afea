"""`spec.waves` (R16): start pods in paced waves, each after the last has finished and soaked.

This provider's extension, for changes a fleet should take step by step (OpenKruise #618): a wave
starts at most `size` pods (an int, or a percent of desired rounded up, at least 1); the next starts
only when every pod of the job has finished (none active or waiting for a retry) and `soakSeconds`
have passed since the pass that saw it so. The failure policy is the health gate: FailFast stops
the waves at the first failure, Pause holds them, and the failure budget sets how many may pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_broadcast.specs.api_types import MAX_INT32
from airflow_broadcast.specs.field_errors import FieldError, invalid, required
from airflow_broadcast.specs.field_schema import KNOWN
from airflow_broadcast.specs.int_or_percent import scaled_value, validate_int_or_percent


@dataclass(frozen=True)
class Waves:
    size: int | str
    soak_seconds: int = 0

    def pods_per_wave(self, desired: int) -> int:
        try:
            return max(1, scaled_value(self.size, desired, round_up=True))
        except ValueError:
            return 1  # a record edited by hand past validation: one pod at a time, the safe pace


def parse_waves(spec: Mapping[str, Any]) -> Waves | None:
    waves = spec.get("waves")
    if waves is None:
        return None
    return Waves(size=waves["size"], soak_seconds=int(waves.get("soakSeconds") or 0))


def waves_manifest(waves: Waves | None) -> dict[str, Any]:
    if waves is None:
        return {}
    body: dict[str, Any] = {"size": waves.size}
    if waves.soak_seconds:
        body["soakSeconds"] = waves.soak_seconds
    return {"waves": body}


def validate_waves(spec: Mapping[str, Any]) -> list[FieldError]:
    waves = spec.get("waves")
    if waves is None:
        return []
    if not isinstance(waves, Mapping):
        return [invalid("spec.waves", waves, "must be an object")]
    errors: list[FieldError] = []
    size = waves.get("size")
    if size is None:
        errors.append(required("spec.waves.size"))
    elif error := validate_int_or_percent(size, "spec.waves.size"):
        errors.append(error)
    elif size in (0, "0%"):
        errors.append(invalid("spec.waves.size", size, "must be at least 1 (or 1%)"))
    soak = waves.get("soakSeconds")
    if soak is not None and (isinstance(soak, bool) or not isinstance(soak, int) or not 0 <= soak <= MAX_INT32):
        errors.append(invalid("spec.waves.soakSeconds", soak, f"must be an integer between 0 and {MAX_INT32}"))
    return errors


WAVES_FIELDS: dict[str, Any] = {"size": KNOWN, "soakSeconds": KNOWN}
