"""The plugin sets: which plugins exist, the default set, and how a profile's sets combine.

Upstream's rules, reproduced: a profile's multiPoint set merges into the
default one, then expands to each extension point a plugin implements. Of the
result, optimist runs only its registry's Filter and Score plugins; the rest
are reported as inactive, with the reason, rather than dropped in silence.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from cluster.profile_config import ProfileConfig
from optimist.configuration.fields import (
    MISSING,
    ConfigError,
    read_int,
    read_list,
    read_mapping,
    read_str,
)
from optimist.configuration.model import ExpandedProfile, InactivePlugin

# The extension points as the file names them, in the order v1's Plugins lists them.
POINTS = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)

_CHECKS = frozenset({"preFilter", "filter"})
_SCORES = frozenset({"preScore", "score"})
_FULL = _CHECKS | _SCORES

# Every in-tree plugin of kube-scheduler v1.30 and the extension points it implements;
# multiPoint enables a plugin at each of these.
UPSTREAM_PLUGINS: dict[str, frozenset[str]] = {
    "SchedulingGates": frozenset({"preEnqueue"}),
    "PrioritySort": frozenset({"queueSort"}),
    "NodeUnschedulable": frozenset({"filter"}),
    "NodeName": frozenset({"filter"}),
    "TaintToleration": frozenset({"filter", "preScore", "score"}),
    "NodeAffinity": _FULL,
    "NodePorts": _CHECKS,
    "NodeResourcesFit": _FULL,
    "VolumeRestrictions": _CHECKS,
    "EBSLimits": _CHECKS,
    "GCEPDLimits": _CHECKS,
    "NodeVolumeLimits": _CHECKS,
    "AzureDiskLimits": _CHECKS,
    "CinderLimits": _CHECKS,
    "VolumeBinding": _FULL | {"reserve", "preBind"},
    "VolumeZone": _CHECKS,
    "PodTopologySpread": _FULL,
    "InterPodAffinity": _FULL,
    "DefaultPreemption": frozenset({"postFilter"}),
    "NodeResourcesBalancedAllocation": _SCORES,
    "ImageLocality": frozenset({"score"}),
    "DefaultBinder": frozenset({"bind"}),
    # Off by default in v1.30 (the DynamicResourceAllocation gate is alpha) but known.
    "DynamicResources": _CHECKS
    | {"preEnqueue", "postFilter", "preScore", "reserve", "preBind", "postBind"},
}

# v1.30's default profile: one multiPoint set, in this order, with these score weights.
DEFAULT_MULTI_POINT: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("EBSLimits", None),
    ("GCEPDLimits", None),
    ("NodeVolumeLimits", None),
    ("AzureDiskLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
)

# Plugins that run outside the shards, at the one point they serve there.
HANDLED_OUTSIDE_SHARDS: dict[str, tuple[tuple[str, ...], str]] = {
    "PrioritySort": (("queueSort",), "handled by the dispatcher's queue"),
    "SchedulingGates": (("preEnqueue",), "handled by the dispatcher's gated pods"),
    "DefaultPreemption": (
        ("postFilter",),
        "handled by the driver's planner, binder/preemption.py",
    ),
    "DefaultBinder": (("bind",), "handled by the binder"),
    "VolumeBinding": (
        ("reserve", "preBind"),
        "handled by the API server's adapter, optimist/kube/volume_prebind.py (the simulated "
        "cluster has no PV controller: its claims stay unbound)",
    ),
}
REASON_DRA = "needs dynamic resource allocation objects optimist does not model"
# v1.30's limits of in-tree disks whose plugin is not migrated to CSI on the node
_IN_TREE_LIMITS = frozenset({"EBSLimits", "GCEPDLimits", "AzureDiskLimits", "CinderLimits"})
REASON_IN_TREE_LIMITS = (
    "counts in-tree disks not migrated to CSI, which kubelets no longer attach "
    "(removed from kube-scheduler in v1.31); NodeVolumeLimits counts migrated ones"
)
REASON_MISSING = "not implemented in optimist yet"
# VolumeBinding's Score
REASON_VOLUME_CAPACITY = (
    "its score needs the VolumeCapacityPriority gate, off in v1.30: upstream scores nothing"
)


class KnownPlugins:
    """The plugin names this loader accepts and the extension points each implements."""

    def __init__(self, filters: frozenset[str], scores: frozenset[str]) -> None:
        self.filters = filters
        self.scores = scores
        self.points = dict(UPSTREAM_PLUGINS)
        for name in (filters | scores) - UPSTREAM_PLUGINS.keys():
            # A plugin only optimist has: its registry says which points it serves.
            self.points[name] = frozenset(
                ({"filter"} if name in filters else set())
                | ({"score"} if name in scores else set())
            )

    def check(self, name: Any, path: str) -> str:
        checked = read_str(name, path)
        if checked not in self.points:
            raise ConfigError(
                path,
                checked,
                "unknown plugin (neither a kube-scheduler v1.30 in-tree plugin "
                "nor in optimist's registry)",
            )
        return checked


@dataclass(slots=True)
class PluginEntry:
    """One enabled plugin, with where the file names it ("" for a default)."""

    name: str
    weight: int | None
    path: str


@dataclass(slots=True)
class PluginSet:
    """A point's enabled and disabled plugins."""

    enabled: list[PluginEntry]
    disabled: list[str]


def read_plugin_set(value: Any, path: str, known: KnownPlugins) -> PluginSet:
    s = read_mapping(value, path, {"enabled", "disabled"})
    enabled = []
    for i, raw in enumerate(read_list(s.get("enabled"), f"{path}.enabled")):
        epath = f"{path}.enabled[{i}]"
        plugin = read_mapping(raw, epath, {"name", "weight"})
        name = known.check(plugin.get("name", MISSING), f"{epath}.name")
        weight = (
            None if plugin.get("weight") is None else read_int(plugin["weight"], f"{epath}.weight")
        )
        enabled.append(PluginEntry(name, weight, epath))
    disabled = []
    for i, raw in enumerate(read_list(s.get("disabled"), f"{path}.disabled")):
        dpath = f"{path}.disabled[{i}]"
        plugin = read_mapping(raw, dpath, {"name", "weight"})
        if plugin.get("weight") is not None:
            read_int(plugin["weight"], f"{dpath}.weight")
        # As upstream, a name that matches nothing disables nothing (old files disable
        # plugins removed since, such as SelectorSpread).
        disabled.append(read_str(plugin.get("name", MISSING), f"{dpath}.name"))
    return PluginSet(enabled, disabled)


def merge_sets(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Upstream's merge of a profile's set into the default one.

    The custom disabled names drop default plugins ("*" drops them all); a
    default plugin the profile enables again keeps its place but takes the
    profile's entry (its weight); the profile's other plugins follow, in order.
    """
    disabled = custom.disabled + default.disabled
    off = set(disabled)
    replacing = {e.name: (i, e) for i, e in enumerate(custom.enabled)}  # the last one wins
    used: set[int] = set()
    enabled: list[PluginEntry] = []
    if "*" not in off:
        for entry in default.enabled:
            if entry.name in off:
                continue
            if entry.name in replacing:
                index, entry = replacing[entry.name]
                used.add(index)
            enabled.append(entry)
    enabled += [e for i, e in enumerate(custom.enabled) if i not in used]
    return PluginSet(enabled, disabled)


def expand_point(
    point: str, specific: PluginSet, multi: PluginSet, known: KnownPlugins, path: str
) -> list[PluginEntry]:
    """The plugins at one point: those named there, and multiPoint's that implement it.

    A plugin named at the point overrides its multiPoint entry and moves to the
    front; multiPoint's others follow in their order; then the point's rest.
    A name disabled at the point keeps multiPoint from adding it there; "*"
    keeps out all of multiPoint's.
    """
    named: dict[str, PluginEntry] = {}
    for entry in specific.enabled:
        if point not in known.points[entry.name]:
            raise ConfigError(
                f"{entry.path}.name", entry.name, f"does not implement {point_title(point)}"
            )
        if entry.name in named:
            raise ConfigError(
                f"{entry.path}.name", entry.name, f"already enabled at {point_title(point)}"
            )
        named[entry.name] = entry
    if "*" in specific.disabled:
        return list(specific.enabled)
    off = set(specific.disabled)
    overridden: set[str] = set()
    from_multi: dict[str, PluginEntry] = {}
    for entry in multi.enabled:
        if point not in known.points[entry.name] or entry.name in off:
            continue
        if entry.name in named:
            overridden.add(entry.name)
        elif entry.name in from_multi:
            where = entry.path or from_multi[entry.name].path or f"{path}.multiPoint"
            raise ConfigError(
                f"{where}.name", entry.name, f"enabled twice for {point_title(point)}"
            )
        else:
            from_multi[entry.name] = entry
    first = [e for e in specific.enabled if e.name in overridden]
    rest = [e for e in specific.enabled if e.name not in overridden]
    return first + list(from_multi.values()) + rest


def point_title(point: str) -> str:
    """An extension point as upstream's docs name it: "preFilter" -> "PreFilter"."""
    return point[:1].upper() + point[1:]


# -- what optimist runs of a profile, and what it does not -----------------------------------


def active_profile(
    profile: ExpandedProfile, known: KnownPlugins, percentage: int | None
) -> ProfileConfig:
    """The profile as optimist runs it: the registry's Filter and Score plugins in the
    shards, and the args of those and of DefaultPreemption (the driver's, when enabled)."""
    filters = tuple(n for n in profile.points["filter"] if n in known.filters)
    scorers = tuple((n, profile.weights[n]) for n in profile.points["score"] if n in known.scores)
    used = {*filters, *(n for n, _ in scorers)}
    if "DefaultPreemption" in profile.points["postFilter"]:
        used.add("DefaultPreemption")
    return ProfileConfig(
        scheduler_name=profile.scheduler_name,
        filters=filters,
        scorers=scorers,
        args={n: copy.deepcopy(a) for n, a in profile.args.items() if n in used},
        percentage_of_nodes_to_score=percentage or None,  # 0 and unset both mean adaptive
    )


def inactive_plugins(profile: ExpandedProfile, known: KnownPlugins) -> list[InactivePlugin]:
    """Each plugin the profile enables that optimist does not run, once, with its points."""
    runs_at: dict[str, set[str]] = {}
    for point, names in profile.points.items():
        for name in names:
            runs_at.setdefault(name, set()).add(point)
    out = []
    for name, points in runs_at.items():
        covered: set[str] = set()
        if name in known.filters:
            covered |= _CHECKS
        if name in known.scores:
            covered |= _SCORES
        if name in HANDLED_OUTSIDE_SHARDS:
            covered.update(HANDLED_OUTSIDE_SHARDS[name][0])
        missing = [p for p in POINTS if p in points - covered]
        if missing:
            out.append(
                InactivePlugin(
                    profile.scheduler_name,
                    name,
                    tuple(map(point_title, missing)),
                    inactive_reason(name),
                )
            )
    return out


def inactive_reason(name: str) -> str:
    """Why optimist does not run a plugin it knows (the shards, the dispatcher or the
    binder serve every other)."""
    if name == "DynamicResources":
        return REASON_DRA
    if name in _IN_TREE_LIMITS:
        return REASON_IN_TREE_LIMITS
    if name == "VolumeBinding":
        return REASON_VOLUME_CAPACITY
    return REASON_MISSING
