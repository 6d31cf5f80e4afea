"""Hostile-input figures for docs/reliability.md: `python -m benchmarks.hostile`.

Every input of the corpus (`tests/unit/specs/hostile/`) goes through the operators' own `parse()`:
CPU (least of 3 runs), peak memory (tracemalloc) and message size of its refusal; the inputs that
decode are then stored as a record stores them and refused by a loop pass (CPU, least of 3); the
largest valid manifests the bounds allow are reconciled. No cluster is needed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from devcluster.control_plane import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "tests"))

from unit.specs.hostile.corpus import Case, all_cases
from unit.specs.hostile.corpus_pass import (
    cpu_seconds,
    largest_broadcast_job,
    largest_tf_job,
    one_pass,
    peak_bytes,
    stored_records,
)

from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.job_operator import ReconciledJobOperator
from airflow_broadcast.operators.tf_job import TFJobOperator
from airflow_broadcast.specs.field_errors import InvalidSpecError
from airflow_broadcast.specs.manifest_limits import ManifestError

RESULTS = REPO_ROOT / "benchmarks" / "results" / "reliability" / "hostile.json"
OPERATORS: dict[str, ReconciledJobOperator] = {
    "BroadcastJob": BroadcastJobOperator(task_id="hostile-bcj", manifest={}),
    "TFJob": TFJobOperator(task_id="hostile-tf", manifest={}),
}


def _refusal(case: Case, source: Any) -> str | None:
    """The refusal's message, or None when the input was accepted (which the figures then show)."""
    try:
        OPERATORS[case.kind].parse(source, None, "default")
    except (InvalidSpecError, ManifestError) as exc:
        return str(exc)
    return None


def _refused_by_pass(kind: Any, text: str) -> bool:
    try:
        one_pass(kind, text)
    except (ValueError, RecursionError):
        return True
    return False


def measure_case(case: Case) -> dict[str, Any]:
    source = case.build()
    message = _refusal(case, source)
    peak = peak_bytes(lambda: _refusal(case, source))
    return {"name": case.name, "kind": case.kind, "category": case.category, "refused": message is not None,
            "names_its_path": message is not None and case.path in message,
            "cpu_seconds": round(cpu_seconds(lambda: _refusal(case, source)), 4), "peak_bytes": peak,
            "message_chars": len(message or "")}


def measure_pass(name: str, kind: Any, text: str) -> dict[str, Any]:
    return {"name": name, "kind": kind, "refused": _refused_by_pass(kind, text),
            "cpu_seconds": round(cpu_seconds(lambda: _refused_by_pass(kind, text)), 4)}


def measure_valid(manifest: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps(manifest)
    return {"name": f"largest {manifest['kind']}",
            "cpu_seconds": round(cpu_seconds(lambda: one_pass(manifest["kind"], text)), 4)}


def measure() -> dict[str, Any]:
    cases = [measure_case(case) for case in all_cases()]
    passes = [measure_pass(name, kind, text) for name, kind, text in stored_records()]
    valid = [measure_valid(build()) for build in (largest_broadcast_job, largest_tf_job)]
    return {"generated": time.strftime("%Y-%m-%d"), "cases": cases, "passes": passes, "valid_passes": valid}


def _worst(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    return max(rows, key=lambda row: row[key])


def render(figures: dict[str, Any]) -> str:
    cases, passes, valid = figures["cases"], figures["passes"], figures["valid_passes"]
    kinds = Counter(c["kind"] for c in cases)
    categories = Counter(c["category"] for c in cases)
    cpu, mem, msg = _worst(cases, "cpu_seconds"), _worst(cases, "peak_bytes"), _worst(cases, "message_chars")
    slow_pass, slow_valid = _worst(passes, "cpu_seconds"), _worst(valid, "cpu_seconds")
    out = [
        f"Measured by `python -m benchmarks.hostile` on {figures['generated']} (least CPU of 3 runs per input;",
        "peak memory by tracemalloc). The corpus holds "
        f"**{len(cases)} bad inputs** ({kinds['BroadcastJob']} BroadcastJob, {kinds['TFJob']} TFJob): "
        + ", ".join(f"{name} ({count})" for name, count in sorted(categories.items())) + ".", "",
        "| figure | value | input |", "| --- | --- | --- |",
        f"| refused by `parse()` | {sum(c['refused'] for c in cases)} of {len(cases)} | |",
        f"| refusal names the field path | {sum(c['names_its_path'] for c in cases)} of {len(cases)} | |",
        f"| CPU per refusal, worst | {cpu['cpu_seconds']:.3f} s (bound 1 s) | {cpu['name']} |",
        f"| peak memory per refusal, worst | {mem['peak_bytes'] / 1e6:.1f} MB (bound 100 MB) | {mem['name']} |",
        f"| message size, worst | {msg['message_chars'] / 1000:.1f} K characters (bound 64 K) | {msg['name']} |",
        f"| stored inputs refused by a loop pass | {sum(p['refused'] for p in passes)} of {len(passes)} | |",
        f"| CPU per loop pass on a refused record, worst | {slow_pass['cpu_seconds']:.3f} s (bound 0.2 s) | "
        f"{slow_pass['name']} |",
        f"| CPU per loop pass on the largest valid record, worst | {slow_valid['cpu_seconds']:.3f} s (bound 0.2 s) | "
        f"{slow_valid['name']} (20,000 keys and values) |", "",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hostile")
    parser.add_argument("--render-only", action="store_true", help=f"print the table from {RESULTS.name}")
    args = parser.parse_args(argv)
    if not args.render_only:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(measure(), indent=1) + "\n")
    print(render(json.loads(Path(RESULTS).read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
