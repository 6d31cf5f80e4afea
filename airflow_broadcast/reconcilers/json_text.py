"""A JSON object kept as its text and parsed on each read."""

from __future__ import annotations

import json
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any


class JsonText(Mapping[str, Any]):
    """A read-only mapping over JSON text: what a job record's manifest is while the job runs.

    The manifest never changes under a running job and a pass reads only a few of its fields (the
    parsed spec is kept elsewhere), so one triggerer with 1,000 idle jobs would otherwise hold 1,000
    parsed copies of about 7 KiB each. Two instances with the same text are equal without a parse.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def document(self) -> dict[str, Any]:
        """A fresh parsed copy ({} for empty text or a non-object)."""
        parsed = json.loads(self.text) if self.text else {}
        return parsed if isinstance(parsed, dict) else {}

    def __getitem__(self, key: str) -> Any:
        return self.document()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.document().get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self.document())

    def __len__(self) -> int:
        return len(self.document())

    def keys(self) -> KeysView[str]:
        return self.document().keys()

    def items(self) -> ItemsView[str, Any]:
        return self.document().items()

    def values(self) -> ValuesView[Any]:
        return self.document().values()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JsonText):
            return self.text == other.text or self.document() == other.document()
        if isinstance(other, Mapping):
            return self.document() == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"JsonText({self.text[:80]!r}{'...' if len(self.text) > 80 else ''})"
