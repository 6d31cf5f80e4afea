"""Every corpus case through the real controller and through our engine: each difference must be explained.

With DIFFERENTIAL_REPORT set (as `make differential` does), the session writes that page from the results.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from corpus_common import Case, Stage
from differential_corpus import CASES
from differential_harness import create_upstream, hold_upstream, run_actions, run_ours, wait_upstream
from differential_report import Result, write
from differential_snapshot import Snapshot, compare, snapshot
from kubernetes import client
from status_history import StatusHistory, sequence

pytestmark = [pytest.mark.cluster, pytest.mark.differential]


@pytest.fixture(scope="session")
def results() -> Iterator[list[Result]]:
    collected: list[Result] = []
    yield collected
    target = os.environ.get("DIFFERENTIAL_REPORT")
    if target and collected:
        write(Path(target), collected)


# client-go's event correlator lets 25 events about one object through, then one per 5 minutes.
SPAM_FILTER_BURST = 25
SPAM_FILTER = ("upstream's event recorder (client-go's spam filter) passed its first 25 events about the job and "
               "dropped the rest; ours records every event")


def explain(case: Case, differences: list[str], upstream: Snapshot) -> Result:
    """Each difference with the case's explanation, or unexplained. An event only ours recorded is explained
    when upstream's events about the job reached the spam filter's burst (so upstream dropped the later ones)."""
    result = Result(case.id, case.kind, case.source)
    filtered = upstream.event_counts.get("<job>", 0) >= SPAM_FILTER_BURST
    for line in differences:
        why = next((reason for pattern, reason in case.explained.items() if re.search(pattern, line)), None)
        if why is None and filtered and line.startswith("events.<job>: only ours: "):
            why = SPAM_FILTER
        if why is None:
            result.unexplained.append(line)
        else:
            result.explained[line] = why
    return result


def make_pool(case: Case, pool: str, node_factory: Any) -> tuple[list[str], list[str]]:
    """The case's nodes, labelled with its pool, and its extra nodes (tainted, cordoned, small, ...)."""
    nodes = node_factory(case.nodes, labels={"pool": pool, **case.node_labels}) if case.nodes else []
    extra: list[str] = []
    for count, options in case.extra_nodes:
        opts = dict(options)
        extra += node_factory(count, labels={"pool": pool, **opts.pop("labels", {})}, **opts)
    return nodes, extra


def final(status: dict[str, Any], history: StatusHistory) -> dict[str, Any]:
    """The status to compare: the last one written before a TTL deletion, flagged as deleted."""
    return {**history.last, "_deleted": True} if status.get("_deleted") else status


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_D_corpus_case_differs_only_where_explained(
        case: Case, api_client: client.ApiClient, core_api: client.CoreV1Api, node_factory: Any,
        upstream_namespace: str, namespace: str, engine: Any, results: list[Result]) -> None:
    pool = upstream_namespace
    nodes, extra = make_pool(case, pool, node_factory)
    manifest = case.build(pool, nodes)
    name = manifest["metadata"]["name"]
    stage = Stage(core_api, client.CustomObjectsApi(api_client), engine, case.kind, name, upstream_namespace, pool,
                  nodes, extra, node_factory)
    errors: list[BaseException] = []

    with (StatusHistory(api_client, case.kind, upstream_namespace, name, ours=False) as their_history,
          StatusHistory(api_client, case.kind, namespace, name, ours=True) as our_history):
        # Both run at once, so that scripted times (fail-until) and timed actions mean the same to each.
        create_upstream(api_client, case.kind, upstream_namespace, manifest)
        start = time.monotonic()
        actions = run_actions([(at, partial(action, stage)) for at, action in case.during], start, errors)
        ours = run_ours(engine, case.kind, manifest, hold=case.hold, busy=actions.is_alive, gone=case.ttl)
        if case.hold is None:
            theirs = wait_upstream(api_client, case.kind, upstream_namespace, name, timeout=case.upstream_timeout,
                                   gone=case.ttl)
        else:
            theirs = hold_upstream(api_client, case.kind, upstream_namespace, name, start + case.hold)
        actions.join()
        time.sleep(0.5)  # the last status write reaches both watches
    assert errors == [], f"a timed action failed: {errors}"

    mine = snapshot(core_api, case.kind, namespace, name, final(ours, our_history),
                    sequence(case.kind, our_history.states, our_history.deleted))
    upstream = snapshot(core_api, case.kind, upstream_namespace, name, final(theirs, their_history),
                        sequence(case.kind, their_history.states, their_history.deleted))
    result = explain(case, compare(mine, upstream), upstream)
    result.final = json.dumps(mine.status, separators=(",", ":"))
    result.sequence = " → ".join(mine.sequence)
    result.issue = case.issue
    results.append(result)
    for line in [*result.explained, *result.unexplained]:
        print(f"{case.id}: {line}")
    if case.issue:
        assert result.unexplained, f"the reported engine difference is gone: remove the case's issue ({case.issue})"
    else:
        assert result.unexplained == []
