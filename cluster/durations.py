"""Go durations ("15s", "1m30s", "250ms"), as Kubernetes configuration writes them.

durationpy (which the kubernetes client installs) reads them; it also takes units
Go's time.ParseDuration refuses ("1d", "2w", "1y"), which kube-scheduler would
refuse in the same file, so those are refused here first.
"""

from __future__ import annotations

import re
from typing import Any

import durationpy
from pydantic import GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

_GO_UNIT = re.compile(r"[0-9.](?:ns|us|µs|μs|ms|s|m|h)(?=[0-9.]|$)")
_ANY_UNIT = re.compile(r"[0-9.][a-zµμ]+")


def parse_duration(text: str) -> float:
    """The duration in seconds, as Go's time.ParseDuration reads it (to the microsecond);
    ValueError if it is not one."""
    go = text.lstrip("+-") == "0" or len(_GO_UNIT.findall(text)) == len(_ANY_UNIT.findall(text))
    try:
        if go:
            return float(durationpy.from_str(text).total_seconds())
    except durationpy.DurationError:
        pass
    raise ValueError(f"{text!r} is not a duration such as '15s', '1m30s' or '250ms'")


class GoDuration:
    """A Go duration as a configuration field holds it: the text the file wrote (which
    is also its wire form) and the seconds it means."""

    __slots__ = ("seconds", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.seconds = parse_duration(text)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"GoDuration({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GoDuration) and other.seconds == self.seconds

    def __hash__(self) -> int:
        return hash(self.seconds)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        """A string (strictly: Go's decoder takes no number) read as a duration; written
        back as its text."""
        return core_schema.no_info_plain_validator_function(
            _duration, serialization=core_schema.to_string_ser_schema()
        )


def _duration(value: object) -> GoDuration:
    if isinstance(value, GoDuration):
        return value
    if not isinstance(value, str):
        raise ValueError("must be a string")
    try:
        return GoDuration(value)
    except ValueError:
        raise ValueError('must be a duration such as "15s", "1m30s" or "250ms"') from None
