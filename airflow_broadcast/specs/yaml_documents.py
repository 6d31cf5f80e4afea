"""YAML or JSON text → JSON-shaped documents, built from the parser's events within the manifest bounds.

PyYAML's own loaders compose and construct recursively (deep nesting overflows the stack)
and expand aliases without limit. Here the C parser (libyaml, when installed) only emits
events; this module builds the values in a loop, checks depth, size and the number of
values at every event, and stops at the first bound passed, naming the field. Anchors,
aliases and merge keys (`<<`) work as in Kubernetes' YAML decoder; an alias costs what it
expands to. Duplicate keys keep the last value and are reported as warnings, as the API
server does. Keys must be strings, timestamps stay strings, and tags beyond the JSON types
are refused.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import yaml

from airflow_broadcast.specs.field_errors import clip
from airflow_broadcast.specs.manifest_limits import (
    COLLECTION_SIZE,
    Budget,
    ManifestError,
    child_path,
    depth_problem,
    field_error,
    json_scalar,
    key_size,
)

try:
    from yaml import CSafeLoader as EventLoader
except ImportError:  # pragma: no cover - libyaml is installed with PyYAML's wheels
    from yaml import SafeLoader as EventLoader  # type: ignore[assignment]

_TAG = "tag:yaml.org,2002:"
_STRING_TAGS = frozenset({f"{_TAG}str", f"{_TAG}timestamp", f"{_TAG}value"})
_RESOLVER = yaml.resolver.Resolver()
_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_JSON_TYPES: dict[type, str] = {type(None): "null", bool: "a boolean", int: "an integer", float: "a number"}
_CONSTRUCT = {f"{_TAG}int": _CONSTRUCTOR.construct_yaml_int, f"{_TAG}float": _CONSTRUCTOR.construct_yaml_float,
              f"{_TAG}bool": _CONSTRUCTOR.construct_yaml_bool}


@dataclass
class _Frame:
    """A list or object being built; `key` is the key whose value comes next (None: a key comes next)."""

    container: Any
    path: str
    anchor: str | None
    start: tuple[int, int]
    height: int = 0
    key: str | None = None
    merging: bool = False
    merges: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class _Anchored:
    value: Any
    values: int
    size: int
    height: int


class _Builder:
    def __init__(self, what: str, budget: Budget, warnings: list[str]) -> None:
        self.what = what
        self.budget = budget
        self.warnings = warnings
        self.stack: list[_Frame] = []
        self.anchors: dict[str, _Anchored] = {}
        self.documents: list[Any] = []

    def run(self, loader: Any) -> list[Any]:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, yaml.ScalarEvent):
                self._scalar(event)
            elif isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                self._start(event, {} if isinstance(event, yaml.MappingStartEvent) else [])
            elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                self._end()
            elif isinstance(event, yaml.AliasEvent):
                self._alias(event)
            elif isinstance(event, yaml.DocumentStartEvent):
                self.anchors = {}
        return self.documents

    # ---- events ----------------------------------------------------------------------------
    def _scalar(self, event: yaml.ScalarEvent) -> None:
        tag = event.tag
        if tag is None or tag == "!":
            tag = _RESOLVER.resolve(yaml.ScalarNode, event.value, event.implicit)  # type: ignore[no-untyped-call]
        frame = self.stack[-1] if self.stack else None
        if frame is not None and isinstance(frame.container, dict) and frame.key is None:
            if tag == f"{_TAG}merge":
                frame.key, frame.merging = "<<", True
                return
            if tag not in _STRING_TAGS:
                kind = _JSON_TYPES.get(type(self._construct(tag, event.value)), "a number")
                raise self._error(f"the key {clip(event.value, 64)!r} is read as {kind}, not a string: quote it")
            self._charge(1, key_size(event.value))
            if event.anchor is not None:
                self.anchors[event.anchor] = _Anchored(event.value, 1, key_size(event.value), 0)
            frame.key = event.value
            return
        value = self._construct(tag, event.value)
        converted = json_scalar(value)
        if isinstance(converted, str):
            raise self._error(converted)
        self._charge(1, converted[1])
        if event.anchor is not None:
            self.anchors[event.anchor] = _Anchored(converted[0], 1, converted[1], 0)
        self._add(converted[0], 0)

    def _start(self, event: yaml.CollectionStartEvent, container: Any) -> None:
        if event.tag not in (None, "!", f"{_TAG}map", f"{_TAG}seq"):
            raise self._error(f"the YAML tag {event.tag} is not supported (only JSON types are)")
        parent = self.stack[-1] if self.stack else None
        if parent is not None and isinstance(parent.container, dict) and parent.key is None:
            raise self._error("keys must be strings, not lists or objects")
        if (problem := depth_problem(len(self.stack) + 1)) is not None:
            raise self._error(problem)
        self._charge(1, COLLECTION_SIZE)
        start = (self.budget.values, self.budget.size)
        self.stack.append(_Frame(container, self._here(), event.anchor, start))

    def _end(self) -> None:
        frame = self.stack.pop()
        value = frame.container
        if frame.merges:
            merged: dict[str, Any] = {}
            for source in reversed(frame.merges):
                merged.update(source)
            value = {**merged, **value}
        if frame.anchor is not None:
            values = self.budget.values - frame.start[0] + 1
            size = self.budget.size - frame.start[1] + COLLECTION_SIZE
            self.anchors[frame.anchor] = _Anchored(value, values, size, frame.height + 1)
        self._add(value, frame.height + 1)

    def _alias(self, event: yaml.AliasEvent) -> None:
        anchored = self.anchors.get(event.anchor or "")
        if anchored is None:
            raise self._error(f"the alias *{event.anchor} refers to no anchor before it (or to its own parent)")
        frame = self.stack[-1] if self.stack else None
        if frame is not None and isinstance(frame.container, dict) and frame.key is None:
            if not isinstance(anchored.value, str):
                raise self._error(f"the key *{event.anchor} must be a string")
            self._charge(1, anchored.size)
            frame.key = anchored.value
            return
        if (problem := depth_problem(len(self.stack) + anchored.height)) is not None:
            raise self._error(problem)
        self._charge(anchored.values, anchored.size)
        self._add(copy.deepcopy(anchored.value), anchored.height)

    # ---- building --------------------------------------------------------------------------
    def _add(self, value: Any, height: int) -> None:
        if not self.stack:
            if value is not None:
                self.documents.append(value)
            return
        frame = self.stack[-1]
        frame.height = max(frame.height, height)
        if isinstance(frame.container, list):
            frame.container.append(value)
            return
        key, frame.key = frame.key, None
        if frame.merging:
            frame.merging = False
            sources = value if isinstance(value, list) else [value]
            if not all(isinstance(source, dict) for source in sources):
                raise self._error("a merge key (<<) takes an object or a list of objects", frame.path)
            frame.merges.extend(sources)
            return
        assert key is not None
        if key in frame.container:
            self.warnings.append(f'duplicate field "{child_path(frame.path, key)}"')
        frame.container[key] = value

    def _construct(self, tag: str, text: str) -> Any:
        if tag in _STRING_TAGS:
            return text
        if tag == f"{_TAG}null":
            return None
        construct = _CONSTRUCT.get(tag)
        if construct is None:
            raise self._error(f"the YAML tag {tag} is not supported (only JSON types are)")
        try:
            return construct(yaml.ScalarNode(tag, text))
        except ValueError as exc:  # e.g. an integer of more than 4300 digits, or `!!int abc`
            reason = str(exc).split(":")[0][:100]
            raise self._error(f"is not a valid {tag.removeprefix(_TAG)} ({reason})") from None

    def _charge(self, values: int, size: int) -> None:
        if (problem := self.budget.add(values, size)) is not None:
            raise self._error(problem)

    def _here(self) -> str:
        """The path of the value the next event gives."""
        if not self.stack:
            return ""
        frame = self.stack[-1]
        if isinstance(frame.container, list):
            return f"{frame.path}[{len(frame.container)}]"
        return frame.path if frame.key is None else child_path(frame.path, frame.key)

    def _error(self, problem: str, path: str | None = None) -> ManifestError:
        return field_error(self.what, self._here() if path is None else path, problem)


def load_documents(text: str, what: str, budget: Budget, warnings: list[str]) -> list[Any]:
    """The non-empty documents of a YAML stream. Raises ManifestError; yaml.YAMLError for bad syntax."""
    loader = EventLoader(text)
    try:
        return _Builder(what, budget, warnings).run(loader)
    finally:
        loader.dispose()
