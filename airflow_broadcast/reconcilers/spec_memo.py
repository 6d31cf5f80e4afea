"""The parsed spec of the manifest a job's passes keep reading, parsed once instead of once per pass."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

S = TypeVar("S")


class SpecMemo(Generic[S]):
    """One slot: the last manifest and its spec. A kind instance drives one job, so one slot is enough.

    Parsing and validating a manifest costs milliseconds; an idle job re-reads the same one on every
    pass, and 1,000 of them share one event loop. The slot is one tuple, replaced whole, so a pass in
    a worker thread reads either the old slot or the new one.
    """

    def __init__(self) -> None:
        self._slot: tuple[Mapping[str, Any], str, S] | None = None

    def get(self, manifest: Mapping[str, Any], namespace: str, parse: Callable[[], S]) -> S:
        slot = self._slot
        if slot is not None and slot[1] == namespace and (slot[0] is manifest or slot[0] == manifest):
            return slot[2]
        spec = parse()
        self._slot = (manifest, namespace, spec)
        return spec

    def forget(self) -> None:
        """Empty the slot; the next pass parses again."""
        self._slot = None
