"""Go durations ("15s", "1m30s", "250ms"), as Kubernetes configuration writes them.

durationpy (which the kubernetes client installs) reads them; it also takes units
Go's time.ParseDuration refuses ("1d", "2w", "1y"), which kube-scheduler would
refuse in the same file, so those are refused here first.
"""

from __future__ import annotations

import re

import durationpy

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
