"""Label and field selectors for the in-memory cluster, parsed the way the API server reads them.

Label selectors: `key`, `!key`, `key=value`, `key==value`, `key!=value`, `key in (a,b)`,
`key notin (a,b)`, joined by commas. Field selectors: `metadata.name`, `metadata.namespace`
and, for Events, `type`, `reason`, `involvedObject.kind` and `involvedObject.uid`, with `=`, `==`
or `!=`. Anything else is a 400, as on a real server.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Selector = Callable[[Mapping[str, Any]], bool]
_SET = re.compile(r"^([^\s!=()]+)\s+(in|notin)\s+\(([^)]*)\)$")
_EQUALITY = re.compile(r"^([^\s!=()]+)\s*(==|=|!=)\s*([^\s!=()]*)$")
_FIELDS = ("metadata.name", "metadata.namespace", "type", "reason", "involvedObject.kind", "involvedObject.uid")


class SelectorError(ValueError):
    """The selector text is not one the fake understands (the API server answers 400)."""


def _terms(text: str) -> list[str]:
    """Split at the commas outside parentheses."""
    terms, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(current.strip())
            current = ""
        else:
            current += char
    terms.append(current.strip())
    return [t for t in terms if t]


def _label_term(term: str) -> Callable[[Mapping[str, str]], bool]:
    if found := _SET.match(term):
        key, op, values = found.group(1), found.group(2), {v.strip() for v in found.group(3).split(",")}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if found := _EQUALITY.match(term):
        key, op, value = found.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if term.startswith("!") and re.fullmatch(r"[^\s!=()]+", term[1:]):
        return lambda labels: term[1:] not in labels
    if re.fullmatch(r"[^\s!=()]+", term):
        return lambda labels: term in labels
    raise SelectorError(f"unable to parse requirement: {term!r}")


def _field_term(term: str) -> Callable[[Mapping[str, Any]], bool]:
    found = _EQUALITY.match(term)
    if found is None or found.group(1) not in _FIELDS:
        raise SelectorError(f'field label not supported: "{term}"')
    field, op, value = found.groups()

    def matches(obj: Mapping[str, Any]) -> bool:
        found: Any = obj
        for part in field.split("."):
            found = (found or {}).get(part, "")
        return (found == value) == (op != "!=")

    return matches


def selector(label_selector: str = "", field_selector: str = "") -> Selector:
    """One predicate over whole objects for both selectors; raises SelectorError on bad text."""
    labels = [_label_term(t) for t in _terms(label_selector)]
    fields = [_field_term(t) for t in _terms(field_selector)]

    def selects(obj: Mapping[str, Any]) -> bool:
        obj_labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(t(obj_labels) for t in labels) and all(t(obj) for t in fields)

    return selects
