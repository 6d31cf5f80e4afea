"""Figures a test measured while asserting, kept for the docs when `AIRFLOW_BROADCAST_FIGURES` names a file.

The reliability page (`make reliability`) runs some end-to-end tests with it set, so the figures it prints are
the ones those tests asserted on, not a second measurement taken some other way.
"""

from __future__ import annotations

import json
import os
from typing import Any

FIGURES_ENV = "AIRFLOW_BROADCAST_FIGURES"


def record_figure(name: str, **values: Any) -> None:
    """Append one JSON line `{"name": ..., **values}`; nothing happens when no file is named."""
    path = os.environ.get(FIGURES_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"name": name, **values}, sort_keys=True) + "\n")


def read_figures(path: str) -> list[dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as source:
            return [json.loads(line) for line in source if line.strip()]
    except FileNotFoundError:
        return []
