"""The functions a scheduler_perf template may call, and Go's view of the values they
take: upstream's own (`AddInt`, `DivideInt`, `Mod`, `JSON`... and the `div`/`mod` of
earlier releases) and text/template's builtins (`and`, `or`, `eq`, `len`, `index`...).

Values are what Go's would be: a template's params come from JSON decoding, so their
numbers are floats (`as_json_numbers`); `.Index`, `.Count` and integer literals are
ints; a missing key is None. Printing follows fmt's `%v` (`go_string`), so a float
param of 1000000 prints `1e+06` there as here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any


class TemplateError(ValueError):
    """A template that fails as Go's would, or that optimist cannot render; the
    message names the template and the action."""


class NotRendered(TemplateError):
    """A construct of Go's text/template that optimist does not render."""


# --- Go's view of values ------------------------------------------------------------


def as_json_numbers(value: Any) -> Any:
    """The value as Go's JSON decoding into `any` makes it: every number a float."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, Mapping):
        return {k: as_json_numbers(v) for k, v in value.items()}
    if isinstance(value, Sequence):
        return [as_json_numbers(v) for v in value]
    return value


def truth(value: Any) -> bool:
    """Go's template truth: false, 0, nil and empty things are false."""
    return bool(value)


def go_float(value: float) -> str:
    """fmt's `%v` of a float64: the shortest digits, in %e form from 1e+06 up and
    below 1e-04, as strconv's 'g' with the shortest precision does."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    point = len(text) + exponent  # where the decimal point sits in `text`
    minus = "-" if sign else ""
    if not -4 <= point - 1 < 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{minus}{mantissa}e{point - 1:+03d}"
    if point <= 0:
        return f"{minus}0.{'0' * -point}{text}"
    if point >= len(text):
        return f"{minus}{text}{'0' * (point - len(text))}"
    return f"{minus}{text[:point]}.{text[point:]}"


def go_string(value: Any) -> str:
    """fmt's `%v` of a value."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, int | str):
        return str(value)
    if isinstance(value, Mapping):
        return "map[" + " ".join(f"{k}:{go_string(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, Sequence):
        return "[" + " ".join(go_string(v) for v in value) + "]"
    return str(value)


def _json_value(value: Any) -> Any:
    """Floats with no fraction as encoding/json writes them (`3`, not `3.0`)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, Mapping):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    return value


# --- upstream's functions (its template FuncMap) -------------------------------------


def _float(value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise TemplateError(f"cannot cast {go_string(value)} to float64")


def _int(value: Any) -> int:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)  # a float truncated toward zero, as Go's int() does
    if isinstance(value, str):
        try:
            return int(value, 10)
        except ValueError:
            pass
    raise TemplateError(f"cannot cast {go_string(value)} to int")


def _divide(a: Any, b: Any) -> float:
    if _float(b) == 0:
        raise TemplateError("division by zero")
    return _float(a) / _float(b)


def _truncated_mod(a: int, b: int) -> int:
    """Go's `%`: the remainder takes the dividend's sign."""
    if b == 0:
        raise TemplateError("integer divide by zero")
    return a - b * int(a / b)


def _json(value: Any) -> str:
    return json.dumps(_json_value(value), ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _older_int(name: str, a: Any, b: Any) -> tuple[int, int]:
    """`div` and `mod` take ints alone."""
    for arg in (a, b):
        if not isinstance(arg, int) or isinstance(arg, bool):
            raise TemplateError(f"{name}: wrong type for value; expected int; got {go_string(arg)}")
    return a, b


def _old_div(a: Any, b: Any) -> int:
    x, y = _older_int("div", a, b)
    if y == 0:
        raise TemplateError("integer divide by zero")
    return int(x / y)  # Go's integer division truncates toward zero


def _old_mod(a: Any, b: Any) -> int:
    return _truncated_mod(*_older_int("mod", a, b))


def _product(*numbers: Any) -> float:
    return math.prod(_float(n) for n in numbers)


UPSTREAM: Mapping[str, tuple[Callable[..., Any], int | None]] = {
    # name: (function, its number of arguments; None: any)
    "AddFloat": (lambda *n: sum(_float(x) for x in n), None),
    "AddInt": (lambda *n: int(sum(_float(x) for x in n)), None),
    "DivideFloat": (_divide, 2),
    "DivideInt": (lambda a, b: int(_divide(a, b)), 2),
    "Int": (_int, 1),
    "JSON": (_json, 1),
    "Mod": (lambda a, b: _truncated_mod(int(_float(a)), int(_float(b))), 2),
    "MultiplyFloat": (_product, None),
    "MultiplyInt": (lambda *n: int(_product(*n)), None),
    "SubtractFloat": (lambda a, b: _float(a) - _float(b), 2),
    "SubtractInt": (lambda a, b: int(_float(a) - _float(b)), 2),
    "div": (_old_div, 2),  # the FuncMap of the first releases with templates
    "mod": (_old_mod, 2),
}


# --- text/template's builtins (`and` and `or` are the evaluator's: they are lazy) ------


def _kind(name: str, value: Any) -> str:
    if value is None:
        raise TemplateError(f"{name}: invalid type for comparison")
    return "bool" if isinstance(value, bool) else type(value).__name__


def _eq(first: Any, *others: Any) -> bool:
    """Go compares values of one basic kind (ints with ints, floats with floats...);
    nil, a missing key's value, equals nil alone."""
    if not others:
        raise TemplateError("eq: missing argument for comparison")
    for other in others:
        if first is None or other is None:
            if first is other:
                return True
            continue
        if _kind("eq", first) != _kind("eq", other):
            raise TemplateError("eq: incompatible types for comparison")
        if first == other:
            return True
    return False


def _ordered(name: str, test: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def compare(a: Any, b: Any) -> bool:
        if _kind(name, a) != _kind(name, b):
            raise TemplateError(f"{name}: incompatible types for comparison")
        if isinstance(a, bool | Mapping | list):
            raise TemplateError(f"{name}: invalid type for comparison")
        return test(a, b)

    return compare


def _len(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode())  # Go's len of a string counts bytes
    if isinstance(value, Mapping | list):
        return len(value)
    raise TemplateError(f"len of {go_string(value)}: not a string, slice or map")


def _index(value: Any, *keys: Any) -> Any:
    for key in keys:
        if isinstance(value, Mapping):
            value = value.get(key)
        elif isinstance(value, list | str) and isinstance(key, int) and 0 <= key < len(value):
            value = value[key]
        else:
            raise TemplateError(f"index of {go_string(value)} with {go_string(key)}: cannot")
    return value


def _print(*args: Any) -> str:
    """fmt.Sprint: a space between operands when neither is a string."""
    out = ""
    for i, arg in enumerate(args):
        if i and not isinstance(arg, str) and not isinstance(args[i - 1], str):
            out += " "
        out += go_string(arg)
    return out


BUILTINS: Mapping[str, tuple[Callable[..., Any], int | None]] = {
    "not": (lambda v: not truth(v), 1),
    "eq": (_eq, None),
    "ne": (lambda a, b: not _eq(a, b), 2),
    "lt": (_ordered("lt", lambda a, b: a < b), 2),
    "le": (_ordered("le", lambda a, b: a <= b), 2),
    "gt": (_ordered("gt", lambda a, b: a > b), 2),
    "ge": (_ordered("ge", lambda a, b: a >= b), 2),
    "len": (_len, 1),
    "index": (_index, None),
    "print": (_print, None),
    "println": (lambda *a: " ".join(go_string(v) for v in a) + "\n", None),
}


# text/template's builtins optimist does not render: a template calling one says so
NOT_RENDERED = ("printf", "html", "js", "urlquery", "call", "slice")


FUNCS = {**BUILTINS, **UPSTREAM}
