"""The loader: the file's YAML documents, each checked, defaulted and put together."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from cluster.profile_config import ProfileConfig
from optimist.configuration.fields import MISSING, ConfigError
from optimist.configuration.kinds import API_VERSION, KIND, OPTIMIST_API_VERSION, OPTIMIST_KIND
from optimist.configuration.model import Configuration
from optimist.configuration.model_reader import read_model
from optimist.configuration.options import OptimistOptions
from optimist.configuration.plugins import KnownPlugins, active_profile, inactive_plugins
from optimist.configuration.profiles import read_profiles
from optimist.configuration.scheduler_configuration import KubeSchedulerConfiguration
from shards.extender_config import ExtenderConfig
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
            options = read_model(OptimistOptions, doc, "")
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
    top = read_model(KubeSchedulerConfiguration, doc, "")
    known = KnownPlugins(shard_registry.filter_plugins(), shard_registry.score_plugins())
    expanded, percentages = read_profiles(doc.get("profiles"), known)
    percentage = top.percentage_of_nodes_to_score
    return Configuration(
        profiles=tuple(
            _leave_to_extenders(
                active_profile(p, known, pct if pct is not None else percentage), top.extenders
            )
            for p, pct in zip(expanded, percentages, strict=True)
        ),
        expanded=tuple(expanded),
        inactive=tuple(x for p in expanded for x in inactive_plugins(p, known)),
        parallelism=top.parallelism,
        percentage_of_nodes_to_score=percentage or 0,
        pod_initial_backoff_seconds=top.pod_initial_backoff_seconds,
        pod_max_backoff_seconds=top.pod_max_backoff_seconds,
        extenders=top.extenders,
        leader_election=top.leader_election,
        client_connection=top.client_connection,
        enable_profiling=top.enable_profiling,
        enable_contention_profiling=top.contention_profiling,
        delay_cache_until_active=top.delay_cache_until_active,
        optimist=options,
    )


def _leave_to_extenders(
    profile: ProfileConfig, extenders: tuple[ExtenderConfig, ...]
) -> ProfileConfig:
    """Resources an extender manages with ignoredByScheduler are not NodeResourcesFit's to check.

    As upstream, they replace NodeResourcesFit's ignoredResources in every profile.
    """
    ignored = [r.name for e in extenders for r in e.managed_resources if r.ignored_by_scheduler]
    if not ignored or "NodeResourcesFit" not in profile.args:
        return profile
    fit = {**profile.args["NodeResourcesFit"], "ignoredResources": ignored}
    return replace(profile, args={**profile.args, "NodeResourcesFit": fit})
