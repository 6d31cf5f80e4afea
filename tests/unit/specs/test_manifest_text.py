"""Manifests arrive as dicts or YAML/JSON text and always leave as one private dict."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from airflow_broadcast.specs.manifest_text import ManifestError, parse_manifest


def test_a_dict_is_deep_copied() -> None:
    source = {"metadata": {"labels": {"a": "1"}}, "spec": {"items": [1, 2]}}
    parsed = parse_manifest(source)
    parsed["metadata"]["labels"]["a"] = "changed"
    parsed["spec"]["items"].append(3)
    assert source == {"metadata": {"labels": {"a": "1"}}, "spec": {"items": [1, 2]}}


def test_any_mapping_becomes_a_plain_dict() -> None:
    parsed = parse_manifest(MappingProxyType({"kind": "BroadcastJob"}))
    assert parsed == {"kind": "BroadcastJob"}
    assert type(parsed) is dict


def test_yaml_text_is_parsed() -> None:
    text = "apiVersion: apps.kruise.io/v1beta1\nkind: BroadcastJob\nmetadata:\n  name: x\n"
    assert parse_manifest(text) == {"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob",
                                    "metadata": {"name": "x"}}


def test_json_text_is_parsed() -> None:
    assert parse_manifest('{"kind": "BroadcastJob", "spec": {"parallelism": "50%"}}') == {
        "kind": "BroadcastJob", "spec": {"parallelism": "50%"}}


def test_a_single_document_with_separators_and_comments_is_fine() -> None:
    assert parse_manifest("# a job\n---\nkind: BroadcastJob\n---\n") == {"kind": "BroadcastJob"}


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("a: [1, 2\nb: 3", "line 2, column 2"),
        ("metadata:\n  name: x\n   bad: y\n", "line 3, column 7"),
        ("a: b\n\tc: d", "line 2, column 1"),
    ],
)
def test_yaml_syntax_errors_name_line_and_column(text: str, where: str) -> None:
    with pytest.raises(ManifestError, match="is not valid YAML/JSON") as caught:
        parse_manifest(text, what="BroadcastJob manifest")
    assert where in str(caught.value)
    assert str(caught.value).startswith("BroadcastJob manifest ")


def test_more_than_one_document_is_rejected() -> None:
    with pytest.raises(ManifestError, match="contains 2 YAML documents; give exactly one"):
        parse_manifest("kind: A\n---\nkind: B\n")


@pytest.mark.parametrize("text", ["", "   \n", "# only a comment\n", "---\n---\n"])
def test_an_empty_document_is_rejected(text: str) -> None:
    with pytest.raises(ManifestError, match=r"^manifest is empty$"):
        parse_manifest(text)


@pytest.mark.parametrize(
    ("text", "got"),
    [("- 1\n- 2\n", "a list"), ("just words", "a string"), ("42", "int")],
)
def test_a_top_level_that_is_not_a_mapping_is_rejected(text: str, got: str) -> None:
    with pytest.raises(ManifestError, match=f"must be a mapping at the top level, got {got}"):
        parse_manifest(text)


def test_non_string_top_level_keys_are_rejected() -> None:
    with pytest.raises(ManifestError, match="<root>: the key '1' is read as an integer, not a string: quote it"):
        parse_manifest("1: one\nkind: BroadcastJob\n")


@pytest.mark.parametrize("source", [None, b"kind: x", ["kind"]])
def test_other_types_are_rejected(source: Any) -> None:
    with pytest.raises(ManifestError, match="must be a mapping or a YAML/JSON string"):
        parse_manifest(source)


def test_manifest_error_is_a_value_error() -> None:
    assert issubclass(ManifestError, ValueError)


def test_nested_mappings_and_tuples_become_json_shapes() -> None:
    parsed = parse_manifest({"spec": MappingProxyType({"args": ("a", "b")})})
    assert parsed == {"spec": {"args": ["a", "b"]}}
    assert type(parsed["spec"]) is dict


def test_shared_values_are_interned_but_the_jobs_own_metadata_is_not() -> None:
    """Strings built at run time, as a parser builds them: identity shows what was interned."""
    import sys

    def fresh(text: str) -> str:
        return "".join(list(text))

    parsed = parse_manifest({"metadata": {"name": fresh("job-00417"), "labels": {"run": fresh("r-417")}},
                             "spec": {"template": {"spec": {"containers": [{"image": fresh("busybox")}]}}}})
    assert parsed["spec"]["template"]["spec"]["containers"][0]["image"] is sys.intern(fresh("busybox"))
    assert parsed["metadata"]["name"] is not sys.intern(fresh("job-00417")), "one job's name: not interned"
    assert parsed["metadata"]["labels"]["run"] is not sys.intern(fresh("r-417"))
    assert parsed["metadata"]["name"] == "job-00417"
