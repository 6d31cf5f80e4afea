"""What a full garbage collection of the trigger runner has to scan: the tracked objects outside the frozen heap.

With BENCH_GC_CENSUS_DIR set, the lag probe answers each `<dir>/<step>.request` that the triggerer benchmark
leaves with `<dir>/<step>.census.json`: the count of tracked objects, the frozen count, the objects by type,
and a finer split (dicts by their first keys, coroutines and methods by code, tuples by length and content).
The difference of two steps, divided by the jobs added between them, is what one idle job adds. Counting
stalls the loop, so a census run's blocked warnings are not the benchmark's.
"""

from __future__ import annotations

import gc
import json
from collections import Counter
from pathlib import Path
from typing import Any


def write_censuses(folder: str) -> None:
    """Answer each request in `folder` with a census of the tracked objects outside the frozen heap."""
    for request in Path(folder).glob("*.request"):
        tracked = gc.get_objects()
        kinds = Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in tracked)
        census = {"tracked": len(tracked), "frozen": gc.get_freeze_count(), "by_type": kinds.most_common(40),
                  "detail": _detail(tracked).most_common(150)}
        del tracked
        request.with_suffix(".census.json").write_text(json.dumps(census))
        request.unlink()


def _detail(tracked: list[Any]) -> Counter[str]:
    """Dicts by their first keys, coroutines and methods by code, tuples by length: where the counts come from."""
    found: Counter[str] = Counter()
    for o in tracked:
        if type(o) is dict:
            found["dict " + ",".join(sorted(map(str, o))[:5])] += 1
        elif type(o).__name__ == "coroutine":
            found["coroutine " + o.cr_code.co_qualname] += 1
        elif type(o).__name__ == "method":
            found["method " + getattr(o.__func__, "__qualname__", "?")] += 1
        elif type(o).__name__ == "function":
            found["function " + o.__qualname__] += 1
        elif type(o).__name__ == "cell":
            found["cell"] += 1
        elif type(o) is tuple:
            found[f"tuple {len(o)} " + ",".join(type(x).__name__ for x in o[:3])] += 1
        elif type(o) is list:
            found[f"list {min(len(o), 5)}"] += 1
    return found
