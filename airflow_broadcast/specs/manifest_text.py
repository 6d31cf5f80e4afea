"""Turn a manifest given as a mapping or as YAML/JSON text into a private dict.

Operators accept either form (templated text or a dict); everything downstream
works on a deep copy so that validation and defaulting never mutate the caller's object.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import yaml


class ManifestError(ValueError):
    """The manifest could not be decoded into exactly one mapping."""


def parse_manifest(source: Mapping[str, Any] | str, *, what: str = "manifest") -> dict[str, Any]:
    """A deep-copied dict from a mapping (nested mappings become dicts, tuples lists),
    or the single YAML/JSON document in a string."""
    if isinstance(source, Mapping):
        return {key: _plain(value) for key, value in source.items()}
    if not isinstance(source, str):
        raise ManifestError(f"{what} must be a mapping or a YAML/JSON string, got {type(source).__name__}")
    try:
        documents = [doc for doc in yaml.safe_load_all(source) if doc is not None]
    except yaml.MarkedYAMLError as exc:
        raise ManifestError(f"{what} is not valid YAML/JSON: {_describe(exc)}") from None
    except yaml.YAMLError as exc:
        raise ManifestError(f"{what} is not valid YAML/JSON: {exc}") from None
    if not documents:
        raise ManifestError(f"{what} is empty")
    if len(documents) > 1:
        raise ManifestError(f"{what} contains {len(documents)} YAML documents; give exactly one")
    document = documents[0]
    if not isinstance(document, dict):
        raise ManifestError(f"{what} must be a mapping at the top level, got {_type_name(document)}")
    bad_keys = [key for key in document if not isinstance(key, str)]
    if bad_keys:
        raise ManifestError(f"{what} has non-string top-level keys: {bad_keys!r}")
    return document


def _plain(value: Any) -> Any:
    """A deep copy where every mapping is a dict and every tuple a list, as JSON would have it."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return copy.deepcopy(value)


def _describe(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "syntax error"
    if mark is None:
        return problem
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"


def _type_name(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__
