"""Kubernetes resource quantities (`resource.Quantity`) as exact fractions.

This mirrors apimachinery's `ParseQuantity`, quirks included, so that a value the
API server accepts compares here exactly as it does in the scheduler:

* non-zero values are rounded up, away from zero, to a whole number of nano units;
* values with a binary suffix (Ki … Ei) are capped at 2**63-1;
* a bare sign, dot or suffix ("-", ".", "k") is read as 0, as upstream does;
* an `e`/`E` exponent is truncated to int32 the way Go's `int32(parsed)` does.

One deliberate difference: exponents beyond ±1000 are refused. Upstream accepts them,
but no real resource is that large or small, and computing 10**(2**31) would hang.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

__all__ = ["QuantityError", "int_value", "milli_value", "parse_quantity"]


class QuantityError(ValueError):
    """A value that Kubernetes would refuse as a resource quantity."""


# The upstream scanner: sign, digits, optional fraction, then a suffix made of
# letters from the suffix alphabet, an optional sign and digits, and nothing else.
_SCAN = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64_MAX = 2**63 - 1
_NANO = 10**9
_MAX_EXPONENT = 1000


def parse_quantity(value: object) -> Fraction:
    """A quantity as JSON/YAML gives it (a string, int or float) → its exact value.

    Raises QuantityError for anything Kubernetes would not accept.
    """
    if isinstance(value, str):
        return _parse_text(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise QuantityError(f"quantity must be a string or a number, got {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise QuantityError(f"quantity must be finite, got {value!r}")
    return _parse_text(str(value))


@lru_cache(maxsize=8192)
def _parse_text(text: str) -> Fraction:
    match = _SCAN.fullmatch(text)
    if not text or match is None:
        raise QuantityError(f"quantities must match the regular expression "
                            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {text!r}")
    sign, whole, fraction, suffix = match.groups()
    fraction = fraction or ""
    base, exponent = _interpret_suffix(text, suffix)
    try:
        digits = int((whole + fraction) or "0")
    except ValueError as err:  # more digits than Python's int() conversion limit
        raise QuantityError(f"quantity {text!r} has too many digits") from err
    amount = Fraction(digits, 10 ** len(fraction))
    if abs(exponent) > _MAX_EXPONENT:
        raise QuantityError(f"quantity {text!r} is out of range")
    amount *= Fraction(base) ** exponent
    if amount:
        amount = Fraction(math.ceil(amount * _NANO), _NANO)
    if base == 2 and amount > _INT64_MAX:
        amount = Fraction(_INT64_MAX)
    return -amount if sign == "-" else amount


def _interpret_suffix(text: str, suffix: str) -> tuple[int, int]:
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix]
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix]
    if len(suffix) > 1 and suffix[0] in "eE" and _GO_INT.fullmatch(suffix[1:]):
        parsed = int(suffix[1:])
        if -_INT64_MAX - 1 <= parsed <= _INT64_MAX:
            return 10, (parsed + 2**31) % 2**32 - 2**31
    raise QuantityError(f"unable to parse quantity's suffix {suffix!r} in {text!r}")


def _round_away_from_zero(amount: Fraction) -> int:
    return math.ceil(amount) if amount >= 0 else math.floor(amount)


def int_value(amount: Fraction) -> int:
    """`Quantity.Value()`: whole units, rounded away from zero (how memory and pods are compared)."""
    return _round_away_from_zero(amount)


def milli_value(amount: Fraction) -> int:
    """`Quantity.MilliValue()`: thousandths, rounded away from zero (how cpu is compared)."""
    return _round_away_from_zero(amount * 1000)
