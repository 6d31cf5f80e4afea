"""Kubernetes resource quantities, parsed the way apimachinery's ParseQuantity does."""

from __future__ import annotations

from fractions import Fraction

import pytest

from airflow_broadcast.specs.quantities import (
    QUANTITY_FORMAT_MSG,
    QUANTITY_RANGE_MSG,
    QUANTITY_SUFFIX_MSG,
    QuantityError,
    int_value,
    milli_value,
    parse_quantity,
)

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
        ("9223372036854775807", 2**63 - 1),
        ("9223372036854775807000m", 2**63 - 1),
        ("9.223372036854775807E", 2**63 - 1),
        ("-9223372036854775807", -(2**63 - 1)),
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


@pytest.mark.parametrize(
    "text", ["9223372036854775808", "100E", "1e19", "-1e19", "12345678901234567890", "9223372036854775807.1"]
)
def test_decimal_quantities_above_int64_are_refused_as_out_of_range(text: str) -> None:
    with pytest.raises(QuantityError, match="out of range") as raised:
        parse_quantity(text)
    assert raised.value.reason == QUANTITY_RANGE_MSG
    assert raised.value.text == text


@pytest.mark.parametrize("text", ["-", "+", ".", "k", "Mi", "e3", "-.m"])
def test_upstream_reads_a_bare_sign_dot_or_suffix_as_zero(text: str) -> None:
    assert parse_quantity(text) == 0


@pytest.mark.parametrize("text", ["1e4294967296", "1e2147483648", "1e-2147483648", "1e99999999999999999999"])
def test_exponents_outside_int32_are_refused_not_truncated(text: str) -> None:
    with pytest.raises(QuantityError) as raised:
        parse_quantity(text)
    assert raised.value.reason == QUANTITY_SUFFIX_MSG


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1e-999999999", NANO),
        ("-1e-2147483647", -NANO),
        ("1.5e-2147483647", NANO),
        ("1e-00000000000000000000009", NANO),
        ("0." + "0" * 100_000 + "1", NANO),
        ("1." + "0" * 100_000 + "1", 1 + NANO),
        ("0." + "3" * 100_000 + "Ki", Fraction(341333333334, 10**9)),
        ("9" * 100_000 + "e-99990", Fraction(10**10)),
        ("1" * 100_000 + "Ki", 2**63 - 1),
        ("1e" + "0" * 100_000 + "5", 10**5),
    ],
)
def test_hostile_sizes_and_exponents_are_bounded_without_computing_them(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("1e999999999", QUANTITY_RANGE_MSG),
        ("1e2147483647", QUANTITY_RANGE_MSG),
        ("9" * 100_000, QUANTITY_RANGE_MSG),
        ("1" * 100_000 + "x", QUANTITY_FORMAT_MSG),
        ("." * 100_000, QUANTITY_FORMAT_MSG),
        ("1" + "e" * 100_000 + "1", QUANTITY_SUFFIX_MSG),
    ],
)
def test_hostile_quantities_are_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(QuantityError) as raised:
        parse_quantity(text)
    assert raised.value.reason == reason


def test_json_integers_beyond_int64_are_out_of_range() -> None:
    assert parse_quantity(2**63 - 1) == 2**63 - 1
    with pytest.raises(QuantityError, match="out of range"):
        parse_quantity(10**5000)


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
        "1e-",
        "1+5",
        "0.1mi",
        ".5i",
        "-3.01e-",
        "1\n",
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
