"""Read fields of manifests as users write them (loosely typed JSON), recording a FieldError for a wrong type.

Validation keeps going after a bad field so that every problem is reported at once;
these readers hand back an empty value of the expected type in that case.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, TypeGuard

from airflow_broadcast.specs.api_types import MAX_INT32
from airflow_broadcast.specs.field_errors import NON_NEGATIVE_MSG, FieldError, invalid, not_supported


def is_int(value: Any) -> TypeGuard[int]:
    """A JSON integer (bool is an int in Python, not in JSON)."""
    return isinstance(value, int) and not isinstance(value, bool)


def json_type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def mapping_or_empty(value: Any) -> Mapping[str, Any]:
    """The value when it is an object, else {} (its type is reported elsewhere)."""
    return value if isinstance(value, Mapping) else {}


def as_map(value: Any, path: str, errors: list[FieldError]) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        errors.append(invalid(path, value, "must be an object"))
        return {}
    return value


def as_list(value: Any, path: str, errors: list[FieldError]) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append(invalid(path, value, "must be a list"))
        return []
    return value


def as_str(value: Any, path: str, errors: list[FieldError]) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        errors.append(invalid(path, value, "must be a string"))
        return ""
    return value


def objects(value: Any, path: str, errors: list[FieldError]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The items of a list of objects with their field paths; a non-object item is an error and skipped."""
    for index, item in enumerate(as_list(value, path, errors)):
        if isinstance(item, Mapping):
            yield f"{path}[{index}]", item
        else:
            errors.append(invalid(f"{path}[{index}]", item, "must be an object"))


def enum_errors(spec: Mapping[str, Any], key: str, allowed: tuple[str, ...], path: str) -> list[FieldError]:
    """NotSupported when `spec[key]` is set (not empty) to a value outside `allowed`."""
    value = spec.get(key)
    if value is None or value == "" or value in allowed:
        return []
    return [not_supported(f"{path}.{key}", value, allowed)]


def check_bool(value: Any, path: str, errors: list[FieldError]) -> None:
    if value is not None and not isinstance(value, bool):
        errors.append(invalid(path, value, "must be a boolean"))


def check_count(value: Any, path: str, errors: list[FieldError], maximum: int = MAX_INT32) -> int | None:
    """An optional non-negative integer field (int32 unless the schema says int64); returns it when usable."""
    if value is None:
        return None
    if not is_int(value):
        errors.append(invalid(path, value, "must be an integer"))
        return None
    if value < 0:
        errors.append(invalid(path, value, NON_NEGATIVE_MSG))
        return None
    if value > maximum:
        errors.append(invalid(path, value, f"must be between 0 and {maximum}, inclusive"))
        return None
    return value


def merge_errors(errors: list[FieldError], more: list[FieldError]) -> list[FieldError]:
    """`errors` plus those of `more` not already reported at the same path with the same message."""
    seen = {(error.path, error.message) for error in errors}
    return errors + [error for error in more if (error.path, error.message) not in seen]
