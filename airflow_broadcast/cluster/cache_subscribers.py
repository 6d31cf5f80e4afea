"""Who a watch cache wakes when an index value's objects change: the subscribers of that value, and of all."""

from __future__ import annotations

from typing import Protocol

ANY_KEY = "*"


class Waker(Protocol):
    """What a subscriber gives: an asyncio.Event, or anything else with `set()`.

    A waker with a `heed(old, new)` method is given the changed object's value before and after
    instead, and decides how soon to wake (see wake.ChildWake).
    """

    def set(self) -> None: ...


class Subscribers(dict[str, "Waker | set[Waker]"]):
    """Index value to its subscribers; a value nobody subscribes to any more is dropped.

    A value with one subscriber (a job's own uid, its record's name) holds it directly: 1,000 idle
    jobs would otherwise hold a one-element set (about 200 bytes) per subscription.
    """

    def subscribe(self, index_value: str, waker: Waker) -> None:
        held = self.get(index_value)
        if held is None:
            self[index_value] = waker
        elif isinstance(held, set):
            held.add(waker)
        elif held is not waker:
            self[index_value] = {held, waker}

    def unsubscribe(self, index_value: str, waker: Waker) -> None:
        held = self.get(index_value)
        if held is waker:
            del self[index_value]
        elif isinstance(held, set):
            held.discard(waker)
            if len(held) == 1:
                self[index_value] = next(iter(held))
            elif not held:
                del self[index_value]

    def notify(self, index_value: str, old: object = None, new: object = None) -> None:
        for value in (index_value, ANY_KEY):
            held = self.get(value)
            if held is None:
                continue
            for waker in held if isinstance(held, set) else (held,):
                heed = getattr(waker, "heed", None)
                if heed is not None:
                    heed(old, new)
                else:
                    waker.set()
