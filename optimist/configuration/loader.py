"""The loader: the file's YAML documents, each checked, defaulted and put together."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from cluster.profile_config import ProfileConfig
from optimist.configuration.component import _component, _extenders
from optimist.configuration.fields import _INT32, _INT64, MISSING, ConfigError, _int, _mapping
from optimist.configuration.model import (
    _TYPE_META,
    API_VERSION,
    KIND,
    OPTIMIST_API_VERSION,
    OPTIMIST_KIND,
    Configuration,
    OptimistOptions,
)
from optimist.configuration.options import _optimist_options
from optimist.configuration.plugins import _active, _inactive, _Known
from optimist.configuration.profiles import _percentage, _profiles
from shards.plugins import registry as shard_registry


def load_file(path: str | Path) -> Configuration:
    """Read and validate the configuration file at `path`."""
    return parse_configuration(Path(path).read_text(encoding="utf-8"))


def default_configuration() -> Configuration:
    """What an empty file means: v1.30's defaults, one profile named default-scheduler."""
    return parse_configuration("")


def parse_configuration(text: str) -> Configuration:
    """Validate the text of a configuration file (one or two YAML documents) and default it."""
    kube: dict[str, Any] = {}
    options = OptimistOptions()
    seen: dict[str, int] = {}
    for number, doc in enumerate(_documents(text), start=1):
        if not isinstance(doc, dict):
            raise ConfigError(
                "", doc, f"document {number} must be a mapping with apiVersion and kind"
            )
        kind = doc.get("kind", MISSING)
        if kind not in (KIND, OPTIMIST_KIND):
            raise ConfigError(
                "kind", kind, f"document {number}: must be one of {KIND}, {OPTIMIST_KIND}"
            )
        if kind in seen:
            raise ConfigError(
                "kind", kind, f"document {number}: already given in document {seen[kind]}"
            )
        seen[kind] = number
        expected = API_VERSION if kind == KIND else OPTIMIST_API_VERSION
        version = doc.get("apiVersion", MISSING)
        if version != expected:
            raise ConfigError(
                "apiVersion", version, f"document {number}: {kind} must be {expected}"
            )
        if kind == KIND:
            kube = doc
        else:
            options = _optimist_options(doc)
    return _kube_scheduler(kube, options)


class _StrictLoader(yaml.SafeLoader):
    """YAML that refuses a field given twice in one mapping, as upstream's strict decoding does."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=deep)
                try:
                    repeated = key in seen
                    seen.add(key)
                except TypeError:
                    continue  # unhashable; the base class reports it
                if repeated:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"field {key!r} is given twice", key_node.start_mark
                    )
        return super().construct_mapping(node, deep=deep)


def _documents(text: str) -> list[Any]:
    """The non-empty YAML documents of the text."""
    try:
        docs = list(yaml.load_all(text, Loader=_StrictLoader))  # a SafeLoader
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        if mark is None:
            raise ConfigError("", MISSING, f"not valid YAML: {e}") from e
        lines = text.splitlines()
        line = lines[mark.line].strip() if mark.line < len(lines) else MISSING
        where = f"line {mark.line + 1}, column {mark.column + 1}"
        raise ConfigError(where, line, f"not valid YAML: {e.problem or e.context}") from e
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as e:
        raise ConfigError("", MISSING, f"not valid YAML: {e}") from e
    return [d for d in docs if d is not None]


_TOP_FIELDS = _TYPE_META | {
    "parallelism",
    "leaderElection",
    "clientConnection",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
}
_REMOVED_IN_V1 = ("healthzBindAddress", "metricsBindAddress")


def _kube_scheduler(doc: dict[str, Any], options: OptimistOptions) -> Configuration:
    for key in _REMOVED_IN_V1:
        if key in doc:
            raise ConfigError(
                key,
                doc[key],
                f"not a field of {API_VERSION} (older API versions had it; "
                "kube-scheduler v1.30 refuses it), remove it",
            )
    m = _mapping(doc, "", _TOP_FIELDS)
    parallelism = _optional_int(m, "parallelism", 16)
    if parallelism <= 0:
        raise ConfigError(
            "parallelism", parallelism, "should be an integer value greater than zero"
        )
    percentage = _percentage(m.get("percentageOfNodesToScore"), "percentageOfNodesToScore")
    initial = _optional_int(m, "podInitialBackoffSeconds", 1, bits=_INT64)
    if initial <= 0:
        raise ConfigError("podInitialBackoffSeconds", initial, "must be greater than 0")
    maximum = _optional_int(m, "podMaxBackoffSeconds", 10, bits=_INT64)
    if maximum < initial:
        raise ConfigError(
            "podMaxBackoffSeconds",
            maximum,
            "must be greater than or equal to podInitialBackoffSeconds",
        )
    component = _component(m)
    known = _Known(shard_registry.filter_plugins(), shard_registry.score_plugins())
    expanded, percentages = _profiles(m.get("profiles"), known)
    extenders = _extenders(m.get("extenders"))
    return Configuration(
        profiles=tuple(
            _leave_to_extenders(
                _active(p, known, pct if pct is not None else percentage), extenders
            )
            for p, pct in zip(expanded, percentages, strict=True)
        ),
        expanded=tuple(expanded),
        inactive=tuple(x for p in expanded for x in _inactive(p, known)),
        parallelism=parallelism,
        percentage_of_nodes_to_score=0 if percentage is None else percentage,
        pod_initial_backoff_seconds=initial,
        pod_max_backoff_seconds=maximum,
        extenders=extenders,
        component=component,
        optimist=options,
    )


def _optional_int(
    m: dict[str, Any], key: str, default: int, *, bits: tuple[int, int] = _INT32
) -> int:
    return default if m.get(key) is None else _int(m[key], key, bits=bits)


def _leave_to_extenders(
    profile: ProfileConfig, extenders: tuple[dict[str, Any], ...]
) -> ProfileConfig:
    """Resources an extender manages with ignoredByScheduler are not NodeResourcesFit's to check.

    As upstream, they replace NodeResourcesFit's ignoredResources in every profile.
    """
    ignored = [
        r["name"]
        for e in extenders
        for r in e.get("managedResources") or ()
        if r.get("ignoredByScheduler")
    ]
    if not ignored or "NodeResourcesFit" not in profile.args:
        return profile
    fit = {**profile.args["NodeResourcesFit"], "ignoredResources": ignored}
    return replace(profile, args={**profile.args, "NodeResourcesFit": fit})
