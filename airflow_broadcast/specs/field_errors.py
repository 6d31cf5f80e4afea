"""Validation errors that name the field path and the problem, all reported at once."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

NON_NEGATIVE_MSG = "must be greater than or equal to 0"


@dataclass(frozen=True)
class FieldError:
    """One problem at one field path, worded like Kubernetes' field.Error.

    `kind` is the Kubernetes error type: Invalid, Required, Forbidden, NotSupported,
    TooLong, Duplicate. `message` is the detail, e.g. "must be no more than 63 characters".
    """

    path: str
    kind: str
    message: str
    value: Any = None
    has_value: bool = False

    def __str__(self) -> str:
        if self.kind == "Required":
            return f"{self.path}: Required value: {self.message}" if self.message else f"{self.path}: Required value"
        if self.kind == "Forbidden":
            return f"{self.path}: Forbidden: {self.message}"
        if self.kind == "NotSupported":
            return f"{self.path}: Unsupported value: {_quote(self.value)}: {self.message}"
        if self.kind == "TooLong":
            return f"{self.path}: Too long: {self.message}"
        if self.kind == "NotFound":
            return f"{self.path}: Not found: {_quote(self.value)}"
        if self.kind == "Duplicate":
            return f"{self.path}: Duplicate value: {_quote(self.value)}"
        if self.has_value:
            return f"{self.path}: Invalid value: {_quote(self.value)}: {self.message}"
        return f"{self.path}: Invalid value: {self.message}"


def _quote(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def invalid(path: str, value: Any, message: str) -> FieldError:
    return FieldError(path, "Invalid", message, value, True)


def required(path: str, message: str = "") -> FieldError:
    return FieldError(path, "Required", message)


def forbidden(path: str, message: str) -> FieldError:
    return FieldError(path, "Forbidden", message)


def not_supported(path: str, value: Any, supported: Iterable[str]) -> FieldError:
    values = ", ".join(f'"{v}"' for v in supported)
    return FieldError(path, "NotSupported", f"supported values: {values}", value, True)


def not_found(path: str, value: Any) -> FieldError:
    """Kubernetes' field.NotFound, e.g. a volumeMount naming no declared volume."""
    return FieldError(path, "NotFound", "not found", value, True)


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError(path, "Duplicate", "", value, True)


def too_long(path: str, value: Any, limit: int) -> FieldError:
    return FieldError(path, "TooLong", f"must have at most {limit} bytes", value, True)


class InvalidSpecError(ValueError):
    """A manifest failed validation. `errors` lists every problem; nothing was created."""

    def __init__(self, kind: str, name: str, errors: Iterable[FieldError]) -> None:
        self.kind = kind
        self.name = name
        self.errors = tuple(errors)
        lines = "\n".join(f"  - {e}" for e in self.errors)
        super().__init__(f"{kind} {name or '<unnamed>'} is invalid ({len(self.errors)} error(s)):\n{lines}")
