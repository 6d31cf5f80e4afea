"""`parallelism` as int-or-percent: Kubernetes' scaling, plus the admission check upstream lacks."""

from __future__ import annotations

import re
from typing import Any

import pytest

from airflow_broadcast.specs.int_or_percent import (
    MAX_INT32,
    parse_int_or_percent,
    scaled_value,
    validate_int_or_percent,
)


def test_parse_int_and_percent() -> None:
    assert parse_int_or_percent(7) == (7, False)
    assert parse_int_or_percent("40%") == (40, True)


@pytest.mark.parametrize(
    ("value", "total", "expected"),
    [
        (3, 100, 3),
        (MAX_INT32, 5, MAX_INT32),
        ("40%", 5, 2),
        ("50%", 10, 5),
        ("150%", 10, 15),
        ("33%", 10, 4),
        ("1%", 1, 1),
        ("0%", 10, 0),
        ("100%", 0, 0),
    ],
)
def test_scaled_value_rounds_up_like_kubernetes(value: int | str, total: int, expected: int) -> None:
    assert scaled_value(value, total) == expected


def test_scaled_value_can_round_down() -> None:
    assert scaled_value("33%", 10, round_up=False) == 3
    assert scaled_value("150%", 3, round_up=False) == 4


def test_scaled_value_of_a_string_without_percent_is_upstreams_error() -> None:
    with pytest.raises(ValueError, match=r"^invalid value for IntOrString: invalid type: string is not a percentage$"):
        scaled_value("5", 10)


def test_scaled_value_of_a_malformed_percent_is_an_error() -> None:
    expected = 'invalid value "abc%": strconv.Atoi: parsing "abc": invalid syntax'
    with pytest.raises(ValueError, match=re.escape(expected)):
        scaled_value("abc%", 10)


@pytest.mark.parametrize("value", [0, 1, 10, MAX_INT32, "0%", "5%", "100%", "150%"])
def test_V13_valid_parallelism_passes(value: int | str) -> None:
    assert validate_int_or_percent(value, "spec.parallelism") is None


def test_V13_negative_int_is_rejected() -> None:
    error = validate_int_or_percent(-1, "spec.parallelism")
    assert error is not None
    assert str(error) == "spec.parallelism: Invalid value: -1: must be greater than or equal to 0"


def test_V13_int_beyond_int32_is_rejected() -> None:
    error = validate_int_or_percent(MAX_INT32 + 1, "spec.parallelism")
    assert error is not None
    assert error.message == "must be between 0 and 2147483647, inclusive"


@pytest.mark.parametrize("value", ["5", "abc", ""])
def test_V13_non_percent_strings_are_rejected(value: str) -> None:
    error = validate_int_or_percent(value, "spec.parallelism")
    assert error is not None
    assert error.path == "spec.parallelism"
    assert error.kind == "Invalid"
    assert 'must be a percentage such as "50%"' in error.message


@pytest.mark.parametrize("value", ["5.5%", "-3%", "%", "+5%", " 5%", "5 %"])
def test_V13_malformed_percents_are_rejected(value: str) -> None:
    error = validate_int_or_percent(value, "spec.parallelism")
    assert error is not None
    assert error.message == 'a percentage must be a whole non-negative number followed by "%", e.g. "50%"'
    assert error.value == value


@pytest.mark.parametrize("value", [True, 2.5, None, ["5%"]])
def test_V13_other_types_are_rejected(value: Any) -> None:
    error = validate_int_or_percent(value, "spec.parallelism")
    assert error is not None
    assert error.message == 'must be an integer or a percentage string such as "50%"'
