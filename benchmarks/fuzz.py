"""Coverage-guided fuzzing of the parsers with atheris: a long run, not a CI test.

    make fuzz [FUZZ_SECONDS=120]            # every target in turn
    .venv/bin/python -m benchmarks.fuzz TARGET [libFuzzer options, e.g. -max_total_time=60]

Each target feeds one parser whatever libFuzzer makes up, starting from
real inputs (the shipped templates and configuration, real message frames,
written to `.fuzz/TARGET/`, which keeps what the run learns); the parser
must answer with a value or its own error (the one that names the bad
field), never anything else. A crash stops the run and leaves the input
that made it in the current folder (crash-*). The Hypothesis tests cover
the same parsers in CI, briefly.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, cast

import atheris
import yaml

with atheris.instrument_imports():
    from benchmarks.cases import cases_file
    from cluster.errors import InvalidObject
    from cluster.explanation import ExplainRequest, UnitExplanation
    from cluster.manifests import node_from_manifest, pod_from_manifest
    from cluster.messages import (
        CommitReply,
        CommitRequest,
        Decision,
        PodPlacement,
        ShardBatch,
        ShardResult,
        UnitRequest,
    )
    from cluster.quantity import parse_quantity
    from cluster.wire import MalformedMessage
    from optimist.configuration import ConfigError, parse_configuration


def _text(data: bytes) -> str:
    provider = atheris.FuzzedDataProvider(data)
    return cast(str, provider.ConsumeUnicodeNoSurrogates(len(data)))  # atheris is untyped


def quantity(data: bytes) -> None:
    with suppress(ValueError):
        parse_quantity(_text(data))


def _manifest(data: bytes, parse: Callable[[Any], object]) -> None:
    try:
        doc = json.loads(_text(data))
    except (ValueError, RecursionError):
        return  # not JSON: nothing a watch would hand over
    with suppress(InvalidObject):
        parse(doc)


def pod(data: bytes) -> None:
    _manifest(data, pod_from_manifest)


def node(data: bytes) -> None:
    _manifest(data, node_from_manifest)


def configuration(data: bytes) -> None:
    with suppress(ConfigError):
        parse_configuration(_text(data))


def messages(data: bytes) -> None:
    for kind in (
        ShardBatch,
        ShardResult,
        CommitRequest,
        CommitReply,
        ExplainRequest,
        UnitExplanation,
    ):
        with suppress(MalformedMessage):
            kind.decode(data)


TARGETS: dict[str, Callable[[bytes], None]] = {
    "quantity": quantity,
    "pod": pod,
    "node": node,
    "configuration": configuration,
    "messages": messages,
}


SHIPPED = cases_file().parent  # the shipped case file's folder: templates, configurations


def seeds(target: str) -> list[bytes]:
    """Real inputs for a target to start from."""
    templates = sorted((SHIPPED / "templates").glob(f"{target}-*.yaml"))
    if target in ("pod", "node"):
        return [json.dumps(yaml.safe_load(t.read_text())).encode() for t in templates]
    if target == "configuration":
        return [(SHIPPED / "gpu-scheduler.yaml").read_bytes()]
    if target == "messages":
        placed = Decision("ns/u", [PodPlacement("ns/p", 0, ["n1", "n2"], [3, 4], [0])])
        return [
            ShardBatch(1, [], [UnitRequest("ns/u", [("ns/p", 0)])], [0]).encode(),
            ShardResult(1, 2, 3, [placed], epoch="e").encode(),
            ExplainRequest("ns/u", [], [("ns/p", 0)]).encode(),
        ]
    return [b"100m", b"1.5Gi", b"2e3"]


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(f"usage: python -m benchmarks.fuzz {{{','.join(TARGETS)}}} [libFuzzer options]")
    name = sys.argv[1]
    corpus = Path(".fuzz") / name
    if not corpus.is_dir():
        corpus.mkdir(parents=True)
        for i, seed in enumerate(seeds(name)):
            (corpus / f"seed-{i}").write_bytes(seed)
    atheris.Setup([sys.argv[0], *sys.argv[2:], str(corpus)], TARGETS[name])
    atheris.Fuzz()


if __name__ == "__main__":
    main()
