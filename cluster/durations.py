"""Go durations ("15s", "1m30s", "250ms"), as Kubernetes configuration writes them."""

from __future__ import annotations

import re

_PART = re.compile(r"([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_duration(text: str) -> float:
    """The duration in seconds, as Go's time.ParseDuration reads it; ValueError if it is not one."""
    sign, body = (-1.0, text[1:]) if text[:1] == "-" else (1.0, text.lstrip("+"))
    if body == "0":
        return 0.0
    if not body or _PART.sub("", body):
        raise ValueError(f"{text!r} is not a duration such as '15s', '1m30s' or '250ms'")
    return sign * sum(float(n) * _UNIT_SECONDS[u] for n, u in _PART.findall(body))
