"""`intstr.IntOrString` as BroadcastJob's `parallelism` uses it: an int, or a string "N%".

`scaled_value` reproduces Kubernetes' `GetScaledValueFromIntOrPercent` (including its
acceptance of percentages above 100), and `validate_int_or_percent` is the stricter
admission check upstream lacks (V13).
"""

from __future__ import annotations

import re
from typing import Any

from airflow_broadcast.specs.api_types import MAX_INT32
from airflow_broadcast.specs.field_errors import FieldError, invalid

IntOrPercent = int | str

_PERCENT_RE = re.compile(r"^[0-9]+%$")
_ATOI_RE = re.compile(r"^[+-]?[0-9]+$")


def parse_int_or_percent(value: IntOrPercent) -> tuple[int, bool]:
    """(number, is_percent). Raises ValueError with Kubernetes' wording for what it rejects."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError("invalid type: neither int nor percentage")
    if isinstance(value, int):
        return value, False
    if not value.endswith("%"):
        raise ValueError("invalid type: string is not a percentage")
    digits = value[:-1]
    if not _ATOI_RE.match(digits):
        raise ValueError(f'invalid value "{value}": strconv.Atoi: parsing "{digits}": invalid syntax')
    return int(digits), True


def scaled_value(value: IntOrPercent, total: int, round_up: bool = True) -> int:
    """An int as is, or that percentage of `total`, rounded up (or down).

    40% of 5 → 2, 150% of 10 → 15. Raises ValueError("invalid value for IntOrString: …")
    for a string without "%", as upstream's reconcile does.
    """
    try:
        number, is_percent = parse_int_or_percent(value)
    except ValueError as exc:
        raise ValueError(f"invalid value for IntOrString: {exc}") from None
    if not is_percent:
        return number
    scaled = number * total
    return -(-scaled // 100) if round_up else scaled // 100


def validate_int_or_percent(value: Any, path: str) -> FieldError | None:
    """None when `value` is an int in [0, 2^31-1] or a whole non-negative percentage like "50%"."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return invalid(path, value, 'must be an integer or a percentage string such as "50%"')
    if isinstance(value, int):
        if value < 0:
            return invalid(path, value, "must be greater than or equal to 0")
        if value > MAX_INT32:
            return invalid(path, value, f"must be between 0 and {MAX_INT32}, inclusive")
        return None
    if not value.endswith("%"):
        return invalid(
            path, value,
            'a string must be a percentage such as "50%"; write a plain number without quotes for a pod count',
        )
    if not _PERCENT_RE.match(value):
        return invalid(path, value, 'a percentage must be a whole non-negative number followed by "%", e.g. "50%"')
    return None
