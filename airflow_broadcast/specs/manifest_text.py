"""Turn a manifest given as a mapping or as YAML/JSON text into a private, JSON-shaped dict.

Operators accept either form (templated text or a dict); everything downstream works on a
copy, so validation and defaulting never mutate the caller's object. Both forms are read
within the bounds of `manifest_limits` (size, depth, number of values) without recursion,
and come out as JSON would hold them: string keys, finite numbers, lists for tuples, and
no other types. A problem names the field it is at.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import yaml

from airflow_broadcast.specs.manifest_limits import (
    COLLECTION_SIZE,
    SEPARATOR,
    Budget,
    ManifestError,
    depth_problem,
    field_error,
    item_path,
    json_scalar,
    json_size,
    key_size,
    source_problem,
)
from airflow_broadcast.specs.yaml_documents import load_documents

__all__ = ["ManifestError", "parse_manifest"]


def parse_manifest(source: Mapping[str, Any] | str, *, what: str = "manifest",
                   warnings: list[str] | None = None) -> dict[str, Any]:
    """A JSON-shaped copy of a mapping, or the single YAML/JSON document in a string.

    Raises ManifestError. Duplicate keys in text keep the last value and add a
    `duplicate field "<path>"` line to `warnings`, as the API server's field validation does.
    """
    if isinstance(source, Mapping):
        return copy_document(source, what)
    if not isinstance(source, str):
        raise ManifestError(f"{what} must be a mapping or a YAML/JSON string, got {type(source).__name__}")
    if (problem := source_problem(source)) is not None:
        raise ManifestError(f"{what} {problem}", reason=problem)
    try:
        documents = load_documents(source, what, Budget(), [] if warnings is None else warnings)
    except yaml.MarkedYAMLError as exc:
        detail = _describe(exc)
        raise ManifestError(f"{what} is not valid YAML/JSON: {detail}", reason=f"malformed YAML: {detail}") from None
    except (yaml.YAMLError, UnicodeError) as exc:
        detail = " ".join(str(exc).split())[:300]
        raise ManifestError(f"{what} is not valid YAML/JSON: {detail}", reason=f"malformed YAML: {detail}") from None
    if not documents:
        raise ManifestError(f"{what} is empty", reason="empty document")
    if len(documents) > 1:
        raise ManifestError(f"{what} contains {len(documents)} YAML documents; give exactly one")
    document = documents[0]
    if not isinstance(document, dict):
        problem = f"must be a mapping at the top level, got {_type_name(document)}"
        raise ManifestError(f"{what} {problem}", reason=problem)
    return document


SHARED_VALUE_CHARS = 64  # longer strings (commands, messages) are rarely repeated across jobs


def copy_document(source: Mapping[str, Any], what: str = "manifest") -> dict[str, Any]:
    """A JSON-shaped deep copy, built in a loop within the manifest bounds (shared objects count at each use).

    Keys and short strings are interned: 1,000 jobs keep 1,000 parsed specs that repeat the same
    "containers", "restartPolicy" and "busybox", and one copy of each serves them all. The values of
    the top-level metadata (the job's name, its labels) are left alone: they belong to one job, and
    interning them would only grow the process's intern table.
    """
    budget = Budget()
    root: dict[str, Any] = {}
    pending: list[tuple[Any, Any, str, int]] = [(source, root, "", 1)]
    while pending:
        original, target, path, depth = pending.pop()
        in_object = isinstance(target, dict)
        share_limit = 0 if path == "metadata" or path.startswith(("metadata.", "metadata[")) else SHARED_VALUE_CHARS
        values = size = 0
        values_left, size_left = budget.left()
        for key, value in original.items() if in_object else enumerate(original):
            if in_object:
                if not isinstance(key, str):
                    raise field_error(what, path, f"keys must be strings, not {type(key).__name__}")
                values, size = values + 1, size + key_size(key)
            if type(value) is str:  # the common case, kept fast
                copied: Any = sys.intern(value) if len(value) <= share_limit else value
                size += json_size(value) + SEPARATOR
            elif isinstance(value, Mapping | list | tuple):
                nested = item_path(path, key)
                if (problem := depth_problem(depth + 1)) is not None:
                    raise field_error(what, nested, problem)
                copied = {} if isinstance(value, Mapping) else []
                pending.append((value, copied, nested, depth + 1))
                size += COLLECTION_SIZE
            else:
                converted = json_scalar(value)
                if isinstance(converted, str):
                    raise field_error(what, item_path(path, key), converted)
                copied, scalar_size = converted
                size += scalar_size
            values += 1
            if (values > values_left or size > size_left) and (problem := budget.add(values, size)) is not None:
                raise field_error(what, item_path(path, key), problem)
            if in_object:
                target[sys.intern(str(key))] = copied
            else:
                target.append(copied)
        budget.add(values, size)
    return root


def _describe(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    problem = (exc.problem or exc.context or "syntax error")[:300]
    if mark is None:
        return problem
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"


def _type_name(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__
