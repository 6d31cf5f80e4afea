"""A record's manifest is kept as text: it reads like the parsed object, and the spec memo still hits."""

from __future__ import annotations

import json

from support.bcj_builders import make_spec

from airflow_broadcast.cluster.job_records import record_view
from airflow_broadcast.reconcilers.json_text import JsonText
from airflow_broadcast.reconcilers.spec_memo import SpecMemo
from airflow_broadcast.specs.broadcast_job import parse_broadcast_job, to_manifest

MANIFEST = {"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob", "metadata": {"name": "a"},
            "spec": {"completionPolicy": {"type": "Always", "activeDeadlineSeconds": 60}, "paused": False}}


def test_reads_like_the_parsed_object() -> None:
    text = JsonText(json.dumps(MANIFEST))
    assert text["metadata"] == {"name": "a"}
    assert text.get("spec", {})["completionPolicy"]["activeDeadlineSeconds"] == 60
    assert text.get("status") is None and "kind" in text and len(text) == 4
    assert dict(text.items()) == MANIFEST and dict(text) == MANIFEST
    assert text == MANIFEST and text != {**MANIFEST, "kind": "TFJob"}
    assert MANIFEST == text  # noqa: SIM300 - a dict on the left goes through JsonText's reflected __eq__


def test_reads_give_fresh_copies_so_a_caller_cannot_change_the_record() -> None:
    text = JsonText(json.dumps(MANIFEST))
    text["spec"]["paused"] = True
    assert text["spec"]["paused"] is False


def test_empty_or_non_object_text_reads_as_empty() -> None:
    assert dict(JsonText("")) == {} and dict(JsonText("[1, 2]")) == {}


def test_same_text_is_equal_without_a_parse_and_the_spec_memo_keeps_its_spec() -> None:
    stored = json.dumps(to_manifest(make_spec()), sort_keys=True)
    first, second = JsonText(stored), JsonText(str(stored))
    assert first == second
    memo: SpecMemo[object] = SpecMemo()
    parses: list[int] = []

    def parse(manifest: JsonText) -> object:
        parses.append(1)
        return parse_broadcast_job(manifest, namespace="ns")

    spec = memo.get(first, "ns", lambda: parse(first))
    assert memo.get(second, "ns", lambda: parse(second)) is spec
    assert len(parses) == 1


def test_the_record_view_keeps_the_manifest_as_the_records_text() -> None:
    raw = {"metadata": {"name": "r", "namespace": "ns", "uid": "u", "labels": {}},
           "data": {"manifest": json.dumps(MANIFEST), "status": "{}"}}
    view = record_view(raw)
    assert isinstance(view.manifest, JsonText) and view.manifest.text is raw["data"]["manifest"]
    assert view.manifest == MANIFEST
