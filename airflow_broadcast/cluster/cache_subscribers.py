"""Who a watch cache wakes when an index value's objects change: the subscribers of that value, and of all."""

from __future__ import annotations

from typing import Protocol

ANY_KEY = "*"


class Waker(Protocol):
    """What a subscriber gives: an asyncio.Event, or anything else with `set()`."""

    def set(self) -> None: ...


class Subscribers(dict[str, set[Waker]]):
    """Index value to its subscribers; a value nobody subscribes to any more is dropped."""

    def subscribe(self, index_value: str, waker: Waker) -> None:
        self.setdefault(index_value, set()).add(waker)

    def unsubscribe(self, index_value: str, waker: Waker) -> None:
        subscribers = self.get(index_value)
        if subscribers is not None:
            subscribers.discard(waker)
            if not subscribers:
                del self[index_value]

    def notify(self, index_value: str) -> None:
        for value in (index_value, ANY_KEY):
            for waker in self.get(value, ()):
                waker.set()
