"""ConfigError, and reading what is not a typed model (the profiles' plugin sets).

Each reader takes the value and its path, and returns the value checked, or
raises ConfigError naming the path and the value found there, so a bad file
points at its own line rather than at a Python exception.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

INT32 = (-(2**31), 2**31 - 1)  # Go's int32, the type of every integer read here


class _Missing:
    """Marks a value the file does not give, so an error can say so."""

    def __repr__(self) -> str:
        return "(not set)"


MISSING: Any = _Missing()


class ConfigError(ValueError):
    """A problem in a configuration file, named by its path in the file and the value there."""

    def __init__(self, path: str, value: Any, problem: str) -> None:
        self.path = path
        self.value = value
        self.problem = problem
        super().__init__(f"{path or '(document)'}: {show(value)}: {problem}")


def show(value: Any, limit: int = 120) -> str:
    """The value as the file would spell it (JSON), cut short if long."""
    if value is MISSING:
        return "(not set)"
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def read_mapping(value: Any, path: str, allowed: Collection[str]) -> dict[str, Any]:
    """A mapping whose fields are all in `allowed`; null reads as empty, as in Go."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(path, value, "must be a mapping")
    for key, item in value.items():
        if not isinstance(key, str):
            raise ConfigError(path, key, "field names must be strings")
        if key not in allowed:
            known = ", ".join(sorted(allowed))
            raise ConfigError(child(path, key), item, f"unknown field (known here: {known})")
    return value


def read_list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(path, value, "must be a list")
    return value


def read_int(
    value: Any,
    path: str,
    *,
    lo: int | None = None,
    hi: int | None = None,
) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(path, value, "must be an integer")
    if not INT32[0] <= value <= INT32[1]:
        raise ConfigError(path, value, "does not fit in 32 bits")
    if lo is not None and hi is not None and not lo <= value <= hi:
        raise ConfigError(path, value, f"not in valid range [{lo}, {hi}]")
    if lo is not None and value < lo:
        raise ConfigError(path, value, f"must be at least {lo}")
    if hi is not None and value > hi:
        raise ConfigError(path, value, f"must be at most {hi}")
    return value


def read_str(value: Any, path: str, *, empty: bool = True) -> str:
    if not isinstance(value, str):
        raise ConfigError(path, value, "must be a string")
    if not empty and not value:
        raise ConfigError(path, value, "must not be empty")
    return value


def read_plain(value: Any, path: str, depth: int = 0) -> Any:
    """A copy of data the loader cannot check further, which must still travel as JSON would."""
    if depth > 32:
        raise ConfigError(path, MISSING, "nested too deeply")
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list):
        return [read_plain(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ConfigError(path, k, "field names must be strings")
            out[k] = read_plain(v, child(path, k), depth + 1)
        return out
    raise ConfigError(path, repr(value), "must be plain data (strings, numbers, lists, mappings)")
