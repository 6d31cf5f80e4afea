"""The hostile-input corpus through the operators' own parse(): each input is refused, naming its field,
in under a second of CPU and 100 MB, with a message of bounded size.

parse() is pure and runs before the record is created, so a refusal leaves nothing in the
cluster (the integration test `test_hostile_input` checks that on a real API server).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest
from unit.specs.hostile.corpus import Case, Source, all_cases
from unit.specs.hostile.corpus_pass import peak_bytes

from airflow_broadcast.operators.broadcast_job import BroadcastJobOperator
from airflow_broadcast.operators.job_operator import ReconciledJobOperator
from airflow_broadcast.operators.tf_job import TFJobOperator
from airflow_broadcast.specs.field_errors import InvalidSpecError
from airflow_broadcast.specs.manifest_limits import ManifestError

CASES = all_cases()
MAX_CPU_SECONDS = 1.0
MAX_PEAK_BYTES = 100 * 1024 * 1024
MAX_MESSAGE_CHARS = 64 * 1024  # 50 listed errors of at most ~1,200 characters each
CATEGORIES = {"yaml-and-decoding", "not-a-string", "numbers", "quantities", "broadcastjob-rules", "tfjob-rules",
              "pod-template-rules", "bounded-messages"}


def operator(kind: str) -> ReconciledJobOperator:
    if kind == "BroadcastJob":
        return BroadcastJobOperator(task_id="hostile-bcj", manifest={})
    return TFJobOperator(task_id="hostile-tf", manifest={})


OPERATORS = {kind: operator(kind) for kind in ("BroadcastJob", "TFJob")}


def refusal(case: Case, source: Source) -> Exception:
    try:
        OPERATORS[case.kind].parse(source, None, "default")
    except (InvalidSpecError, ManifestError) as exc:
        return exc
    raise AssertionError(f"{case.name}: the input was accepted")


def ids(case: Any) -> str:
    return str(case.name)


def test_the_corpus_covers_every_category_and_both_kinds() -> None:
    assert len(CASES) >= 150
    assert {case.category for case in CASES} == CATEGORIES
    per_kind = Counter(case.kind for case in CASES)
    assert per_kind["BroadcastJob"] >= 60 and per_kind["TFJob"] >= 60


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_each_input_is_refused_naming_its_field_in_a_bounded_message(case: Case) -> None:
    message = str(refusal(case, case.build()))

    assert case.path in message
    assert len(message) <= MAX_MESSAGE_CHARS


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_each_refusal_takes_under_a_second_of_cpu_and_100_mb(case: Case) -> None:
    source = case.build()  # what the DAG hands over exists before parse() runs
    started = time.process_time()
    refusal(case, source)
    cpu = time.process_time() - started
    peak = peak_bytes(lambda: refusal(case, source))

    assert cpu <= MAX_CPU_SECONDS, f"{cpu:.3f} s of CPU"
    assert peak <= MAX_PEAK_BYTES, f"{peak / 1e6:.1f} MB at peak"
