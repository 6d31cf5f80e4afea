"""Kubernetes resource quantities (`resource.Quantity`) as exact fractions, in time linear in the text.

This mirrors apimachinery's `ParseQuantity`, quirks included, so that a value the
API server accepts compares here exactly as it does in the scheduler:

* non-zero values are rounded up, away from zero, to a whole number of nano units;
* values with a binary suffix (Ki … Ei) are capped at 2**63-1;
* a bare sign, dot or suffix ("-", ".", "k") is read as 0;
* an `e`/`E` exponent outside the int32 range is refused, as current upstream does.

Kubernetes documents that no quantity may exceed 2**63-1 in magnitude (its `Value()`
and `MilliValue()` overflow beyond it), so a larger decimal value is refused as out of
range. That bound is checked on the digit count before any arithmetic, and only the
digits that can change the rounded result are converted, so a short hostile text such
as `1e999999999` or `1e-999999999` costs microseconds, never a billion-digit number.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

from airflow_broadcast.specs.api_types import MAX_INT32, MAX_INT64

__all__ = [
    "QUANTITY_FORMAT_MSG", "QUANTITY_RANGE_MSG", "QUANTITY_SUFFIX_MSG",
    "QuantityError", "int_value", "milli_value", "parse_quantity",
]

QUANTITY_FORMAT_MSG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
QUANTITY_SUFFIX_MSG = "unable to parse quantity's suffix"
QUANTITY_RANGE_MSG = f"is out of range: a quantity must be at most {MAX_INT64} (2^63-1) in magnitude"


class QuantityError(ValueError):
    """A value that Kubernetes would refuse as a resource quantity; `reason` is the message without the value."""

    def __init__(self, text: str, reason: str) -> None:
        super().__init__(f"quantity {text!r}: {reason}")
        self.text = text
        self.reason = reason


# The upstream scanner: sign, digits, optional fraction, then a suffix of letters from the
# suffix alphabet and/or a sign, then digits. Every part starts where the previous cannot
# continue, and the quantifiers are possessive, so matching never backtracks.
_SCAN = re.compile(r"([+-]?)([0-9]*+)(?:\.([0-9]*+))?((?:[eEinumkKMGTP]++[+-]?|[+-])[0-9]*+)?")
_GO_INT = re.compile(r"([+-]?+)([0-9]++)")
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_NANO_DIGITS = 9
_INT64_DIGITS = len(str(MAX_INT64))  # a value with more integer digits is above 2**63-1
_CACHED_LENGTH = 64  # node allocatables repeat; long (odd) texts are not worth keeping


def parse_quantity(value: object) -> Fraction:
    """A quantity as JSON/YAML gives it (a string, int or float) → its exact value.

    Raises QuantityError for anything Kubernetes would not accept.
    """
    if isinstance(value, str):
        return _parse_cached(value) if len(value) <= _CACHED_LENGTH else _parse(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise QuantityError(str(value), f"must be a string or a number, got {type(value).__name__}")
    if isinstance(value, int):
        if abs(value) > MAX_INT64:
            raise QuantityError(f"<a {value.bit_length()}-bit integer>", QUANTITY_RANGE_MSG)
        return Fraction(value)
    if not math.isfinite(value):
        raise QuantityError(str(value), "must be finite")
    return _parse(repr(value))


def _parse(text: str) -> Fraction:
    match = _SCAN.fullmatch(text)
    if not text or match is None:
        raise QuantityError(text, QUANTITY_FORMAT_MSG)
    sign, whole, fraction, suffix = match.groups(default="")
    base, exponent = _interpret_suffix(text, suffix)
    digits = (whole + fraction).lstrip("0")
    significant = digits.rstrip("0")
    if not significant:
        return Fraction(0)
    # The value is int(significant) * 10**scale * 2**binary.
    scale = len(digits) - len(significant) - len(fraction) + (exponent if base == 10 else 0)
    binary = exponent if base == 2 else 0
    if len(significant) + scale <= _INT64_DIGITS:
        amount = Fraction(_nanos_rounded_up(significant, scale + _NANO_DIGITS, binary), 10**_NANO_DIGITS)
        if amount <= MAX_INT64:
            return -amount if sign == "-" else amount
    if base == 10:
        raise QuantityError(text, QUANTITY_RANGE_MSG)
    return Fraction(-MAX_INT64 if sign == "-" else MAX_INT64)  # upstream caps binary SI values


_parse_cached = lru_cache(maxsize=8192)(_parse)


def _interpret_suffix(text: str, suffix: str) -> tuple[int, int]:
    """(base, exponent) of a suffix: SI, binary SI, or an int32 decimal exponent."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix]
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix]
    exponent = _go_int32(suffix[1:]) if suffix[:1] in ("e", "E") else None
    if exponent is None:
        raise QuantityError(text, QUANTITY_SUFFIX_MSG)
    return 10, exponent


def _go_int32(text: str) -> int | None:
    """`strconv.ParseInt(text, 10, 64)` within ±MaxInt32 (as upstream now requires), else None."""
    match = _GO_INT.fullmatch(text)
    if match is None:
        return None
    digits = match.group(2).lstrip("0") or "0"
    if len(digits) > len(str(MAX_INT32)):
        return None
    value = int(match.group(1) + digits)
    return value if abs(value) <= MAX_INT32 else None


def _nanos_rounded_up(significant: str, shift: int, binary: int) -> int:
    """ceil(int(significant) * 2**binary * 10**shift), converting at most ~90 digits.

    The caller has bounded the value below 10**19 * 2**binary. When `shift` is very
    negative, the low digits past 10**binary only add a non-zero amount smaller than the
    step between multiples of 2**binary / 10**binary, a grid every integer lies on; so
    they are dropped and the result is one more than the floor of what remains.
    """
    if shift >= 0:
        return (int(significant) << binary) * _power_of_ten(shift)
    dropped = -shift - binary
    if dropped > 0:
        kept = significant[:-dropped] or "0"
        return (int(kept) << binary) // _power_of_ten(binary) + 1
    return -(-(int(significant) << binary) // _power_of_ten(-shift))


def _power_of_ten(exponent: int) -> int:
    power: int = 10**exponent  # exponent >= 0, always small here
    return power


def _round_away_from_zero(amount: Fraction) -> int:
    return math.ceil(amount) if amount >= 0 else math.floor(amount)


def int_value(amount: Fraction) -> int:
    """`Quantity.Value()`: whole units, rounded away from zero (how memory and pods are compared)."""
    return _round_away_from_zero(amount)


def milli_value(amount: Fraction) -> int:
    """`Quantity.MilliValue()`: thousandths, rounded away from zero (how cpu is compared)."""
    return _round_away_from_zero(amount * 1000)
