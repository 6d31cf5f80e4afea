"""Validation errors that name the field path and the problem, all reported at once.

Messages stay small whatever the input: a quoted value, a path and a name are clipped to a
few hundred characters (with the full length stated), and an error lists at most
`MAX_LISTED_ERRORS` problems (all of them stay in `errors`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

NON_NEGATIVE_MSG = "must be greater than or equal to 0"
MAX_QUOTED_CHARS = 200
MAX_PATH_CHARS = 300
MAX_MESSAGE_CHARS = 600
MAX_LISTED_ERRORS = 50
_MAX_PRINTED_INT_BITS = 256


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
        return self._render(clip(self.path, MAX_PATH_CHARS), clip(self.message, MAX_MESSAGE_CHARS))

    def _render(self, path: str, message: str) -> str:
        if self.kind == "Required":
            return f"{path}: Required value: {message}" if message else f"{path}: Required value"
        if self.kind == "Forbidden":
            return f"{path}: Forbidden: {message}"
        if self.kind == "NotSupported":
            return f"{path}: Unsupported value: {_quote(self.value)}: {message}"
        if self.kind == "TooLong":
            return f"{path}: Too long: {message}"
        if self.kind == "NotFound":
            return f"{path}: Not found: {_quote(self.value)}"
        if self.kind == "Duplicate":
            return f"{path}: Duplicate value: {_quote(self.value)}"
        if self.has_value:
            return f"{path}: Invalid value: {_quote(self.value)}: {message}"
        return f"{path}: Invalid value: {message}"


def clip(text: str, limit: int = MAX_QUOTED_CHARS) -> str:
    """`text` itself when short, else its first `limit` characters, an ellipsis and the full length."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


def _quote(value: Any) -> str:
    if isinstance(value, str):
        if len(value) > MAX_QUOTED_CHARS:
            return '"' + value[:MAX_QUOTED_CHARS].replace('"', '\\"') + f'…" ({len(value)} characters)'
        return '"' + value.replace('"', '\\"') + '"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and value.bit_length() > _MAX_PRINTED_INT_BITS:
        return f"<a {value.bit_length()}-bit integer>"
    return clip(str(value))


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
        lines = "\n".join(f"  - {e}" for e in self.errors[:MAX_LISTED_ERRORS])
        if len(self.errors) > MAX_LISTED_ERRORS:
            lines += f"\n  - … and {len(self.errors) - MAX_LISTED_ERRORS} more"
        title = clip(name, MAX_QUOTED_CHARS) if name else "<unnamed>"
        super().__init__(f"{kind} {title} is invalid ({len(self.errors)} error(s)):\n{lines}")
