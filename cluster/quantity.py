"""Kubernetes resource quantities, parsed exactly.

Feasibility is decided in integers, so a quantity is parsed into a Fraction
and rounded up once, the way `resource.Quantity.Value()` and `MilliValue()`
round: a request is never rounded down into a node that cannot hold it.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

from cluster.errors import InvalidObject

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# <sign><digits>[.<digits>] then a suffix: binary SI, decimal SI, or an exponent.
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>(?:[eE][+-]?[0-9]+)|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)$"
)
# Kubernetes refuses quantities beyond what an int64 of nano-units can carry.
_MAX_EXPONENT = 18


def parse_quantity(text: object) -> Fraction:
    """The exact value of a quantity string such as `100m`, `1.5Gi` or `2e3` (or of an int
    or float, as YAML reads a bare number); ValueError for anything else."""
    if isinstance(text, bool):
        raise ValueError(f"quantity {text!r} is a boolean, not a number")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise ValueError(f"quantity {text!r} is not finite")
        return Fraction(str(text))
    if not isinstance(text, str):
        raise ValueError(f"quantity {text!r} is not a string or number")
    match = _QUANTITY.match(text)
    if match is None:
        raise ValueError(f"quantity {text!r} does not match <number><suffix>")
    number = Fraction(match["num"])
    suffix = match["suffix"]
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    exponent = int(suffix[1:])
    if abs(exponent) > _MAX_EXPONENT:
        raise ValueError(f"quantity {text!r} has an exponent beyond ±{_MAX_EXPONENT}")
    return number * Fraction(10) ** exponent


def to_int(value: Fraction, *, milli: bool) -> int:
    """Round up as Kubernetes does: `MilliValue()` for CPU, `Value()` otherwise."""
    return math.ceil(value * 1000) if milli else math.ceil(value)


def quantity_field(obj: str, field: str, text: object, *, milli: bool, whole: bool) -> int:
    """Parse one request or capacity into an exact, non-negative integer.

    `obj` and `field` name where the value came from, so that a bad manifest
    can be fixed from the error message alone.
    """
    amount = _amount(text, milli, whole) if isinstance(text, str) else _convert(text, milli, whole)
    if isinstance(amount, str):
        raise InvalidObject(obj, field, text, amount)
    return amount


@functools.lru_cache(maxsize=4096)
def _amount(text: str, milli: bool, whole: bool) -> int | str:
    """Pods repeat the same few quantity strings: parse each once."""
    return _convert(text, milli, whole)


def _convert(text: object, milli: bool, whole: bool) -> int | str:
    """The integer amount, or what is wrong with the quantity."""
    try:
        value = parse_quantity(text)
    except ValueError as err:
        return str(err)
    if value < 0:
        return "must not be negative"
    if whole and value.denominator != 1:
        return "must be a whole number"
    return to_int(value, milli=milli)
