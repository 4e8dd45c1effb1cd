"""The profiles: each one's name, plugins merged and expanded, and pluginConfig read.

All profiles share the dispatcher's one queue, so their queueSort must agree.
"""

from __future__ import annotations

from typing import Any

from optimist.configuration.arg_readers import ARG_MODELS, read_args
from optimist.configuration.fields import (
    MISSING,
    ConfigError,
    read_int,
    read_list,
    read_mapping,
    read_plain,
    read_str,
    show,
)
from optimist.configuration.kinds import API_VERSION, DEFAULT_SCHEDULER_NAME
from optimist.configuration.model import ExpandedProfile
from optimist.configuration.plugins import (
    DEFAULT_MULTI_POINT,
    POINTS,
    UPSTREAM_PLUGINS,
    KnownPlugins,
    PluginEntry,
    PluginSet,
    expand_point,
    merge_sets,
    read_plugin_set,
)


def read_profiles(
    value: Any, known: KnownPlugins
) -> tuple[list[ExpandedProfile], list[int | None]]:
    """Every profile expanded, with its own percentageOfNodesToScore (None: not set)."""
    raw_profiles = read_list(value, "profiles") or [{}]  # upstream: no profiles means one
    expanded: list[ExpandedProfile] = []
    percentages: list[int | None] = []
    queue_sorts: list[dict[str, Any]] = []
    first_at: dict[str, int] = {}
    for i, raw in enumerate(raw_profiles):
        path = f"profiles[{i}]"
        prof = read_mapping(
            raw, path, {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"}
        )
        name = prof.get("schedulerName")
        if name is None and len(raw_profiles) == 1:
            name = DEFAULT_SCHEDULER_NAME
        if name is None:
            raise ConfigError(
                f"{path}.schedulerName", MISSING, "required when there are several profiles"
            )
        name = read_str(name, f"{path}.schedulerName")
        if not name:
            raise ConfigError(f"{path}.schedulerName", name, "required, must not be empty")
        if name in first_at:
            raise ConfigError(
                f"{path}.schedulerName",
                name,
                f"duplicate, already the name of profiles[{first_at[name]}]",
            )
        first_at[name] = i
        percentages.append(
            _percentage(prof.get("percentageOfNodesToScore"), f"{path}.percentageOfNodesToScore")
        )
        profile, queue_sort = _profile(name, prof, path, known)
        expanded.append(profile)
        queue_sorts.append(queue_sort)
    for i, queue_sort in enumerate(queue_sorts[1:], start=1):
        if queue_sort != queue_sorts[0]:
            raise ConfigError(
                f"profiles[{i}].plugins.queueSort",
                queue_sort,
                "must be the same for all profiles (the queue is shared), "
                f"profiles[0] has {show(queue_sorts[0])}",
            )
    return expanded, percentages


def _percentage(value: Any, path: str) -> int | None:
    return None if value is None else read_int(value, path, lo=0, hi=100)


def _profile(
    name: str, prof: dict[str, Any], path: str, known: KnownPlugins
) -> tuple[ExpandedProfile, dict[str, Any]]:
    """A profile's plugins merged, expanded and checked, its args defaulted; and its queueSort.

    The queueSort set as the file gives it comes back apart: upstream requires
    it to be the same in every profile, since all profiles share one queue.
    """
    ppath = f"{path}.plugins"
    plugins = read_mapping(prof.get("plugins"), ppath, {*POINTS, "multiPoint"})
    custom = {
        p: read_plugin_set(plugins.get(p), f"{ppath}.{p}", known) for p in (*POINTS, "multiPoint")
    }
    default_multi = PluginSet([PluginEntry(n, w, "") for n, w in DEFAULT_MULTI_POINT], [])
    multi = merge_sets(default_multi, custom["multiPoint"])
    points = {p: expand_point(p, custom[p], multi, known, ppath) for p in POINTS}

    weights: dict[str, int] = {}
    scoring = {e.name for e in points["score"]}
    for entry in custom["score"].enabled + multi.enabled:
        if entry.name in scoring and entry.name not in weights:
            weight = entry.weight or 1  # upstream: no weight, or 0, means 1
            if weight < 0:
                raise ConfigError(
                    f"{entry.path}.weight",
                    weight,
                    "must not be negative (optimist ranks infeasible nodes at -1)",
                )
            weights[entry.name] = weight

    if len(points["queueSort"]) != 1:
        raise ConfigError(
            f"{ppath}.queueSort",
            [e.name for e in points["queueSort"]],
            "a profile needs exactly one queue sort plugin",
        )
    if not points["bind"]:
        raise ConfigError(f"{ppath}.bind", [], "a profile needs at least one bind plugin")

    running = {e.name for entries in points.values() for e in entries}
    args = _plugin_config(prof.get("pluginConfig"), f"{path}.pluginConfig", known, running)
    for plugin in sorted(running - args.keys()):
        if plugin in ARG_MODELS:
            args[plugin] = read_args(plugin, {}, "")
    expanded = ExpandedProfile(
        scheduler_name=name,
        points={p: tuple(e.name for e in entries) for p, entries in points.items()},
        weights=weights,
        args=args,
    )
    qs = custom["queueSort"]
    queue_sort = {
        "enabled": [{"name": e.name, "weight": e.weight} for e in qs.enabled],
        "disabled": [{"name": n} for n in qs.disabled],
    }
    return expanded, queue_sort


def _plugin_config(
    value: Any, path: str, known: KnownPlugins, running: set[str]
) -> dict[str, dict[str, Any]]:
    """The pluginConfig entries: one per plugin, each for a plugin the profile runs."""
    args: dict[str, dict[str, Any]] = {}
    first_at: dict[str, int] = {}
    for i, raw in enumerate(read_list(value, path)):
        cpath = f"{path}[{i}]"
        entry = read_mapping(raw, cpath, {"name", "args"})
        name = known.check(entry.get("name", MISSING), f"{cpath}.name")
        if name in first_at:
            raise ConfigError(
                f"{cpath}.name", name, f"duplicate, already configured at {path}[{first_at[name]}]"
            )
        first_at[name] = i
        if name not in running:
            raise ConfigError(
                f"{cpath}.name", name, "has args but the plugin is not enabled in this profile"
            )
        apath = f"{cpath}.args"
        raw_args = entry.get("args")
        if raw_args is not None and not isinstance(raw_args, dict):
            raise ConfigError(apath, raw_args, "must be a mapping")
        raw_args = _type_meta(dict(raw_args or {}), name, apath)
        if name in ARG_MODELS:
            args[name] = read_args(name, raw_args, apath)
        elif name in UPSTREAM_PLUGINS:
            if raw_args:
                raise ConfigError(apath, raw_args, f"{name} takes no args")
        else:
            args[name] = read_plain(raw_args, apath)
    return args


def _type_meta(raw: dict[str, Any], plugin: str, path: str) -> dict[str, Any]:
    """The args without apiVersion and kind, which must name this plugin's args if given."""
    version = raw.pop("apiVersion", None)
    if version is not None and version != API_VERSION:
        raise ConfigError(f"{path}.apiVersion", version, f"must be {API_VERSION}")
    kind = raw.pop("kind", None)
    if kind is not None and kind != f"{plugin}Args":
        raise ConfigError(f"{path}.kind", kind, f"must be {plugin}Args")
    return raw
