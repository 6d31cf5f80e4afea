"""A hand-edited job record cannot hold up the reconcile loop: every pass reads and validates the stored
manifest again, within 0.2 s of CPU for any content a record can hold (a ConfigMap holds at most 1 MiB).

Each corpus input that decodes is stored as a record would store it, and the pass the loop runs
(`record_view`, then the kind's reconcile) must refuse it in time; so must JSON that no decoder
accepts, and the largest manifests the bounds let through must reconcile in time.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from support.fake_engine import FakeEngine, fake_engine
from unit.specs.hostile.corpus import Case, Kind, all_cases, bcj_manifest, edited, tf_manifest
from unit.specs.hostile.corpus_pass import (
    cpu_seconds,
    largest_broadcast_job,
    largest_tf_job,
    one_pass,
    stored_records,
)

from airflow_broadcast.cluster.kinds.registry import kind_for
from airflow_broadcast.specs.manifest_limits import MAX_STORED_MANIFEST_BYTES, MAX_VALUES, ManifestError, count_values
from airflow_broadcast.specs.manifest_text import parse_manifest

MAX_PASS_CPU_SECONDS = 0.2
RECORD_LIMIT = 1024 * 1024


def refused(kind: Kind, manifest_text: str) -> None:
    with pytest.raises((ValueError, RecursionError)):
        one_pass(kind, manifest_text)


STORED = stored_records()


def test_most_of_the_corpus_gets_as_far_as_a_record() -> None:
    assert len(STORED) >= 150


@pytest.mark.parametrize(("name", "kind", "text"), STORED, ids=[name for name, _, _ in STORED])
def test_a_stored_corpus_manifest_is_refused_by_the_pass_within_0_2_s(name: str, kind: Kind, text: str) -> None:
    assert cpu_seconds(lambda: refused(kind, text)) <= MAX_PASS_CPU_SECONDS


UNREADABLE = {
    "not-json": "{apiVersion: v1",
    "nested-300000-deep": "[" * 300_000 + "]" * 300_000,
    "nested-objects-100000-deep": '{"a":' * 100_000 + "1" + "}" * 100_000,
    "integer-of-5000-digits": '{"spec": {"parallelism": ' + "9" * 5000 + "}}",
    "nan": '{"apiVersion": "apps.kruise.io/v1beta1", "spec": {"parallelism": NaN}}',
    "a-list": "[1, 2, 3]",
    "1-mib-of-one-string": json.dumps({"metadata": {"name": "x" * (RECORD_LIMIT - 40)}}),
    "1-mib-of-zeros": json.dumps({"spec": {"args": [0] * ((RECORD_LIMIT - 64) // 3)}}),
    "1-mib-of-objects": json.dumps({"spec": {"x": [{}] * ((RECORD_LIMIT - 64) // 4)}}),
    "stored-limit-of-zeros": json.dumps({"spec": {"args": [0] * ((MAX_STORED_MANIFEST_BYTES - 64) // 3)}}),
    "stored-limit-of-objects": json.dumps({"spec": {"x": [{}] * ((MAX_STORED_MANIFEST_BYTES - 64) // 4)}}),
    "stored-limit-of-strings": json.dumps({"spec": {"x": [""] * ((MAX_STORED_MANIFEST_BYTES - 64) // 4)}}),
}


@pytest.mark.parametrize("kind", ["BroadcastJob", "TFJob"])
@pytest.mark.parametrize("name", list(UNREADABLE))
def test_a_hand_edited_manifest_no_decoder_accepts_is_refused_within_0_2_s(kind: Kind, name: str) -> None:
    text = UNREADABLE[name]
    assert len(text.encode()) <= RECORD_LIMIT, "a record cannot hold more"
    assert cpu_seconds(lambda: refused(kind, text)) <= MAX_PASS_CPU_SECONDS


@pytest.mark.parametrize("build", [largest_broadcast_job, largest_tf_job], ids=["BroadcastJob", "TFJob"])
def test_the_largest_manifest_the_bounds_allow_reconciles_within_0_2_s(build: Callable[[], dict[str, Any]]) -> None:
    manifest = build()
    assert MAX_VALUES * 0.95 < count_values(manifest) <= MAX_VALUES
    kind: Kind = manifest["kind"]
    text = json.dumps(manifest)

    assert cpu_seconds(lambda: one_pass(kind, text)) <= MAX_PASS_CPU_SECONDS


BIG_STRINGS = {
    "plain": "x" * 500_000,
    "escaped": "\x01" * 60_000 + '"\\' * 20_000,
    "non-ascii": "é" * 40_000 + "\U0001f600" * 20_000,
}


@pytest.mark.parametrize("kind", ["BroadcastJob", "TFJob"])
@pytest.mark.parametrize("content", list(BIG_STRINGS))
def test_the_largest_strings_the_bounds_allow_fit_what_the_loop_reads(kind: Kind, content: str) -> None:
    """The operator measures a manifest as the record's JSON encoder writes it, escapes included."""
    steps = ("spec", "template", "spec", "containers", 0) if kind == "BroadcastJob" else (
        "spec", "tfReplicaSpecs", "Worker", "template", "spec", "containers", 0)
    job = kind_for(kind).parse(edited(kind, ((*steps, "env", 0, "value"), BIG_STRINGS[content])), namespace="ns",
                               default_namespace="default")
    stored = json.dumps(job.manifest, sort_keys=True)

    assert 400_000 < len(stored) <= MAX_STORED_MANIFEST_BYTES
    assert cpu_seconds(lambda: one_pass(kind, stored)) <= MAX_PASS_CPU_SECONDS


def test_a_string_too_long_once_escaped_is_refused() -> None:
    with pytest.raises(ManifestError, match="larger than 512 KiB"):
        parse_manifest({"spec": {"args": ["\x01" * 100_000]}})


@pytest.fixture
async def env(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeEngine]:
    async with fake_engine(monkeypatch) as engine:
        yield engine


@pytest.mark.parametrize("text", [UNREADABLE["not-json"], UNREADABLE["nested-300000-deep"],
                                  json.dumps({"spec": {"args": [0] * 30_000}})], ids=["not-json", "deep", "too-many"])
async def test_the_loop_ends_as_invalid_on_a_record_it_cannot_read_and_deletes_nothing(env: FakeEngine,
                                                                                      text: str) -> None:
    for node in ("node-1", "node-2"):
        env.fake.add_node(node)
    submission = await env.submit(edited("BroadcastJob", (("metadata", "namespace"), env.namespace)))
    loop = env.start(submission, "BroadcastJob")
    await env.wait_pods(2)

    env.fake.patch(f"/api/v1/namespaces/{env.namespace}/configmaps/{submission.name}", {"data": {"manifest": text}})
    outcome = await asyncio.wait_for(loop, 5)

    assert outcome.reason == "invalid"
    assert len(outcome.message) <= 2000
    assert len(env.pods()) == 2, "a record it cannot read deletes nothing"


def test_the_base_manifests_are_valid() -> None:
    for kind, build in (("BroadcastJob", bcj_manifest), ("TFJob", tf_manifest)):
        kind_for(kind).parse(build(), namespace="ns", default_namespace="default")


def test_cases_are_named_as_a_reader_would_search_for_them() -> None:
    assert all(isinstance(case, Case) and case.name == case.name.lower() for case in all_cases())
