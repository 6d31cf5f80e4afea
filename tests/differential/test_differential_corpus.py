"""Every corpus case through the real controller and through our engine: each difference must be explained.

With DIFFERENTIAL_REPORT set (as `make differential` does), the session writes that page from the results.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from differential_corpus import CASES, Case
from differential_harness import compare, create_upstream, hold_upstream, run_ours, snapshot, wait_upstream
from differential_report import Result, write
from kubernetes import client

pytestmark = [pytest.mark.cluster, pytest.mark.differential]


@pytest.fixture(scope="session")
def results() -> Iterator[list[Result]]:
    collected: list[Result] = []
    yield collected
    target = os.environ.get("DIFFERENTIAL_REPORT")
    if target and collected:
        write(Path(target), collected)


def explain(case: Case, differences: list[str]) -> Result:
    result = Result(case.id, case.kind, case.source)
    for line in differences:
        why = next((reason for pattern, reason in case.explained.items() if re.search(pattern, line)), None)
        if why is None:
            result.unexplained.append(line)
        else:
            result.explained[line] = why
    return result


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_D_corpus_case_differs_only_where_explained(
        case: Case, api_client: client.ApiClient, core_api: client.CoreV1Api, node_factory: Any,
        upstream_namespace: str, namespace: str, engine: Any, results: list[Result]) -> None:
    pool = upstream_namespace
    nodes = node_factory(case.nodes, labels={"pool": pool}) if case.nodes else []
    for count, extra in case.extra_nodes:
        node_factory(count, labels={"pool": pool}, **extra)
    manifest = case.build(pool, nodes)

    # Both run at once, so that scripted times (fail-until) mean the same to each.
    name = create_upstream(api_client, case.kind, upstream_namespace, manifest)
    held_until = time.monotonic() + (case.hold or 0.0)
    ours = run_ours(engine, case.kind, manifest, hold=case.hold)
    if case.hold is None:
        theirs = wait_upstream(api_client, case.kind, upstream_namespace, name, timeout=case.upstream_timeout)
    else:
        theirs = hold_upstream(api_client, case.kind, upstream_namespace, name, held_until)

    mine = snapshot(core_api, case.kind, namespace, name, ours)
    result = explain(case, compare(mine, snapshot(core_api, case.kind, upstream_namespace, name, theirs)))
    result.final = json.dumps(mine.status, separators=(",", ":"))
    results.append(result)
    for line in [*result.explained, *result.unexplained]:
        print(f"{case.id}: {line}")
    assert result.unexplained == []
