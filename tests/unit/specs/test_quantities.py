"""Kubernetes resource quantities, parsed the way apimachinery's ParseQuantity does."""

from __future__ import annotations

from fractions import Fraction

import pytest

from airflow_broadcast.specs.quantities import QuantityError, int_value, milli_value, parse_quantity

NANO = Fraction(1, 10**9)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("000", 0),
        ("1", 1),
        ("+5", 5),
        ("-5", -5),
        ("0.5", Fraction(1, 2)),
        (".5", Fraction(1, 2)),
        ("1.", 1),
        ("500m", Fraction(1, 2)),
        ("100n", 100 * NANO),
        ("250u", Fraction(250, 10**6)),
        ("1k", 1000),
        ("1M", 10**6),
        ("1G", 10**9),
        ("1T", 10**12),
        ("1P", 10**15),
        ("1E", 10**18),
        ("1Ki", 1024),
        ("1Mi", 2**20),
        ("2Gi", 2 * 2**30),
        ("1.5Gi", 3 * 2**29),
        ("1Ti", 2**40),
        ("1Pi", 2**50),
        ("1Ei", 2**60),
        ("1e3", 1000),
        ("1E3", 1000),
        ("1e+3", 1000),
        ("1e-3", Fraction(1, 1000)),
        ("1.5e3", 1500),
        ("12e0", 12),
        ("1.G", 10**9),
        ("12345678901234567890", 12345678901234567890),
        ("123456789012345678901234567890m", Fraction(123456789012345678901234567890, 1000)),
    ],
)
def test_parses_valid_quantities(text: str, expected: Fraction | int) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.0000000001", NANO),
        ("-0.0000000001", -NANO),
        ("1.0000000001", 1 + NANO),
        ("1e-20", NANO),
        ("0.1n", NANO),
        ("1.5n", 2 * NANO),
        ("0.0000000000", 0),
    ],
)
def test_non_zero_values_round_up_away_from_zero_to_nano(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", ["8Ei", "16Ei", "100000Pi"])
def test_binary_quantities_are_capped_at_int64_max(text: str) -> None:
    assert parse_quantity(text) == 2**63 - 1


def test_decimal_quantities_are_not_capped() -> None:
    assert parse_quantity("100E") == 100 * 10**18


@pytest.mark.parametrize("text", ["-", "+", ".", "k", "Mi", "e3", "-.m"])
def test_upstream_reads_a_bare_sign_dot_or_suffix_as_zero(text: str) -> None:
    assert parse_quantity(text) == 0


def test_exponent_is_truncated_to_int32_like_go() -> None:
    assert parse_quantity("1e4294967296") == 1
    assert parse_quantity("1e4294967299") == 1000


@pytest.mark.parametrize(
    "text",
    [
        "",
        "12x",
        "--1",
        "+-1",
        " 1",
        "1 ",
        "1K",
        "1ki",
        "1mi",
        "1e",
        "1E+",
        "1e3.5",
        "1.5.5",
        "1e1e1",
        "1m3",
        "Ki5",
        "0.5x",
        "abc",
        "1,5",
        "1_000",
        "1e99999999999999999999",
        "1e5000",
        "\u0661",  # ARABIC-INDIC DIGIT ONE: only ASCII digits count
    ],
)
def test_malformed_quantities_raise_quantity_error(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_quantity_error_is_a_value_error_with_the_offending_text() -> None:
    with pytest.raises(ValueError, match="12x"):
        parse_quantity("12x")


@pytest.mark.parametrize(
    ("value", "expected"),
    [(2, 2), (0, 0), (-3, -3), (1.5, Fraction(3, 2)), (1e-05, Fraction(1, 100000)), (2e3, 2000)],
)
def test_accepts_json_numbers(value: float, expected: Fraction | int) -> None:
    assert parse_quantity(value) == expected


@pytest.mark.parametrize("value", [None, True, float("nan"), float("inf"), [1], {"a": 1}])
def test_rejects_non_numbers(value: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(value)


@pytest.mark.parametrize(
    ("text", "milli", "units"),
    [
        ("1", 1000, 1),
        ("500m", 500, 1),
        ("0.0001", 1, 1),
        ("1.7", 1700, 2),
        ("2Gi", 2 * 2**30 * 1000, 2 * 2**30),
        ("0", 0, 0),
        ("-0.0001", -1, -1),
        ("-1.5", -1500, -2),
    ],
)
def test_milli_and_int_values_round_away_from_zero(text: str, milli: int, units: int) -> None:
    amount = parse_quantity(text)
    assert milli_value(amount) == milli
    assert int_value(amount) == units
