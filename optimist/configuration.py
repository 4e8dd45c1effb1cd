"""Reading kube-scheduler's own configuration file, so optimist runs the profiles a cluster has.

The file is a standard KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1),
read unchanged, optionally followed by a second YAML document of kind
OptimistConfiguration (optimist.io/v1alpha1) with optimist's own settings.
The loader behaves as kube-scheduler v1.30 does: the same defaults, the
same merging of a profile's plugins into the default multiPoint set and the
same expansion to extension points, the same validation rules, and strict
decoding (a field that is unknown, of the wrong type or given twice is an
error). Every error names the path in the file and the value found there.

Of the plugins a profile ends up with, the shards run the Filter and Score
plugins in optimist's registry; the queue sort belongs to the dispatcher and
the bind to the binder. Every other enabled plugin is reported as inactive,
with the reason, rather than dropped in silence.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cluster.profile_config import ProfileConfig
from shards.plugins import registry as shard_registry

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
OPTIMIST_API_VERSION = "optimist.io/v1alpha1"
OPTIMIST_KIND = "OptimistConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"

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
HANDLED_OUTSIDE_SHARDS: dict[str, tuple[str, str]] = {
    "PrioritySort": ("queueSort", "handled by the dispatcher's queue"),
    "DefaultBinder": ("bind", "handled by the binder"),
}
_VOLUME_OR_DRA = frozenset(
    {
        "VolumeRestrictions",
        "EBSLimits",
        "GCEPDLimits",
        "NodeVolumeLimits",
        "AzureDiskLimits",
        "CinderLimits",
        "VolumeBinding",
        "VolumeZone",
        "DynamicResources",
    }
)
REASON_VOLUME = "needs volume/DRA objects optimist does not model"
REASON_QUEUE = "not implemented yet (queue and admission work)"
REASON_MISSING = "not implemented in optimist yet"

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_MAX_CUSTOM_PRIORITY_SCORE = 10  # upstream's ceiling for a shape point's score
_DEFAULT_RESOURCES = ({"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1})
_TYPE_META = frozenset({"apiVersion", "kind"})


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
        super().__init__(f"{path or '(document)'}: {_show(value)}: {problem}")


def _show(value: Any, limit: int = 120) -> str:
    """The value as the file would spell it (JSON), cut short if long."""
    if value is MISSING:
        return "(not set)"
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True, slots=True)
class InactivePlugin:
    """An enabled plugin optimist does not run, reported once when the file is read."""

    profile: str
    plugin: str
    extension_points: tuple[str, ...]  # upstream's names: "Filter", "Score", ...
    reason: str

    def __str__(self) -> str:
        points = ", ".join(self.extension_points)
        return f"profile {self.profile}: {self.plugin} ({points}): {self.reason}"


@dataclass(frozen=True, slots=True)
class ExpandedProfile:
    """A profile as kube-scheduler v1.30 would run it: every point's plugins, active or not."""

    scheduler_name: str
    points: dict[str, tuple[str, ...]]  # extension point (as the file names it) -> plugins
    weights: dict[str, int]  # Score plugin -> weight
    args: dict[str, dict[str, Any]]  # plugin -> args, defaulted


@dataclass(frozen=True, slots=True)
class OptimistOptions:
    """The OptimistConfiguration document; None where the file does not set a field."""

    shards: int | None = None
    redis_url: str | None = None
    ray_address: str | None = None
    batch_pods: int | None = None
    inflight_per_shard: int | None = None
    seed: int | None = None
    key_prefix: str | None = None
    metrics_address: str | None = None
    node_partitions: bool | None = None


@dataclass(frozen=True, slots=True)
class Configuration:
    """A configuration file, defaulted and validated, in the shape optimist uses."""

    profiles: tuple[ProfileConfig, ...]  # what the shards run, active plugins only
    expanded: tuple[ExpandedProfile, ...]  # what kube-scheduler would run
    inactive: tuple[InactivePlugin, ...]
    parallelism: int = 16
    percentage_of_nodes_to_score: int = 0  # the global value; 0 is upstream's adaptive rule
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    extenders: tuple[dict[str, Any], ...] = ()
    # leaderElection, clientConnection, the profiling switches, delayCacheUntilActive:
    # carried, defaulted, unused by optimist so far.
    component: dict[str, Any] = field(default_factory=dict)
    optimist: OptimistOptions = field(default_factory=OptimistOptions)


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

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
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


# -- reading typed values; each raises ConfigError naming the path ---------------------------


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _mapping(value: Any, path: str, allowed: Collection[str]) -> dict[str, Any]:
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
            raise ConfigError(_child(path, key), item, f"unknown field (known here: {known})")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(path, value, "must be a list")
    return value


def _int(
    value: Any,
    path: str,
    *,
    bits: tuple[int, int] = _INT32,
    lo: int | None = None,
    hi: int | None = None,
) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(path, value, "must be an integer")
    if not bits[0] <= value <= bits[1]:
        raise ConfigError(path, value, f"does not fit in {64 if bits is _INT64 else 32} bits")
    if lo is not None and hi is not None and not lo <= value <= hi:
        raise ConfigError(path, value, f"not in valid range [{lo}, {hi}]")
    if lo is not None and value < lo:
        raise ConfigError(path, value, f"must be at least {lo}")
    if hi is not None and value > hi:
        raise ConfigError(path, value, f"must be at most {hi}")
    return value


def _number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(path, value, "must be a number")
    return float(value)


def _str(value: Any, path: str, *, empty: bool = True) -> str:
    if not isinstance(value, str):
        raise ConfigError(path, value, "must be a string")
    if not empty and not value:
        raise ConfigError(path, value, "must not be empty")
    return value


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(path, value, "must be true or false")
    return value


def _one_of(value: Any, path: str, choices: Iterable[str]) -> str:
    options = list(choices)
    if not isinstance(value, str) or value not in options:
        raise ConfigError(path, value, f"must be one of {', '.join(options)}")
    return value


_DURATION = re.compile(r"([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")
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


def _duration(value: Any, path: str) -> float:
    """A Go duration ("15s", "1m30s", "250ms"), in seconds."""
    text = _str(value, path)
    sign, body = (-1.0, text[1:]) if text[:1] == "-" else (1.0, text.lstrip("+"))
    if body == "0":
        return 0.0
    if not body or _DURATION.sub("", body):
        raise ConfigError(path, value, 'must be a duration such as "15s", "1m30s" or "250ms"')
    return sign * sum(float(n) * _UNIT_SECONDS[u] for n, u in _DURATION.findall(body))


_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _qualified_name_problem(text: str) -> str | None:
    """Why `text` is not a qualified name ("prefix/name" or "name"), or None if it is."""
    prefix, _, name = text.rpartition("/")
    if "/" in text and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return "prefix must be a DNS subdomain such as example.com"
    if not name or len(name) > 63 or not _NAME.match(name):
        return (
            "must be a qualified name: up to 63 letters, digits, '-', '_' or '.', "
            "with an optional DNS prefix and '/'"
        )
    return None


def _qualified_name(value: Any, path: str) -> str:
    text = _str(value, path)
    problem = _qualified_name_problem(text)
    if problem:
        raise ConfigError(path, value, problem)
    return text


def _label_value(value: Any, path: str) -> str:
    text = _str(value, path)
    if text and (len(text) > 63 or not _NAME.match(text)):
        raise ConfigError(
            path, value, "must be a label value: up to 63 letters, digits, '-', '_' or '.'"
        )
    return text


def _plain(value: Any, path: str, depth: int = 0) -> Any:
    """A copy of data the loader cannot check further, which must still travel as JSON would."""
    if depth > 32:
        raise ConfigError(path, MISSING, "nested too deeply")
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list):
        return [_plain(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ConfigError(path, k, "field names must be strings")
            out[k] = _plain(v, _child(path, k), depth + 1)
        return out
    raise ConfigError(path, repr(value), "must be plain data (strings, numbers, lists, mappings)")


# -- OptimistConfiguration -------------------------------------------------------------------

_OPTIMIST_FIELDS = {
    "shards",
    "redisURL",
    "rayAddress",
    "batchPods",
    "inflightPerShard",
    "seed",
    "keyPrefix",
    "metricsAddress",
    "nodePartitions",
}


def _optimist_options(doc: dict[str, Any]) -> OptimistOptions:
    m = _mapping(doc, "", _OPTIMIST_FIELDS | _TYPE_META)

    def get(key: str, read: Callable[[Any, str], Any]) -> Any:
        return None if m.get(key) is None else read(m[key], key)

    return OptimistOptions(
        shards=get("shards", lambda v, p: _int(v, p, lo=1)),
        redis_url=get("redisURL", _redis_url),
        ray_address=get("rayAddress", lambda v, p: _str(v, p, empty=False)),
        batch_pods=get("batchPods", lambda v, p: _int(v, p, lo=1)),
        inflight_per_shard=get("inflightPerShard", lambda v, p: _int(v, p, lo=1)),
        seed=get("seed", lambda v, p: _int(v, p, bits=_INT64, lo=0)),
        key_prefix=get("keyPrefix", lambda v, p: _str(v, p, empty=False)),
        metrics_address=get("metricsAddress", _host_port),
        node_partitions=get("nodePartitions", _bool),
    )


def _redis_url(value: Any, path: str) -> str:
    url = _str(value, path)
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(path, value, "must start with redis://, rediss:// or unix://")
    return url


def _host_port(value: Any, path: str) -> str:
    text = _str(value, path)
    host, colon, port = text.rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    if (
        not colon
        or not host
        or (":" in host and not bracketed)
        or not port.isascii()
        or not port.isdigit()
        or int(port) > 65535
    ):
        raise ConfigError(
            path, value, 'must be host:port, such as "127.0.0.1:10259" or "[::1]:10259"'
        )
    return text


# -- KubeSchedulerConfiguration --------------------------------------------------------------

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
            _active(p, known, pct if pct is not None else percentage)
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


def _profiles(value: Any, known: _Known) -> tuple[list[ExpandedProfile], list[int | None]]:
    """Every profile expanded, with its own percentageOfNodesToScore (None: not set)."""
    raw_profiles = _list(value, "profiles") or [{}]  # upstream: no profiles means one
    expanded: list[ExpandedProfile] = []
    percentages: list[int | None] = []
    queue_sorts: list[dict[str, Any]] = []
    first_at: dict[str, int] = {}
    for i, raw in enumerate(raw_profiles):
        path = f"profiles[{i}]"
        prof = _mapping(
            raw, path, {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"}
        )
        name = prof.get("schedulerName")
        if name is None and len(raw_profiles) == 1:
            name = DEFAULT_SCHEDULER_NAME
        if name is None:
            raise ConfigError(
                f"{path}.schedulerName", MISSING, "required when there are several profiles"
            )
        name = _str(name, f"{path}.schedulerName")
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
                f"profiles[0] has {_show(queue_sorts[0])}",
            )
    return expanded, percentages


def _percentage(value: Any, path: str) -> int | None:
    return None if value is None else _int(value, path, lo=0, hi=100)


# -- the standard fields optimist carries -----------------------------------------------------

_LEADER_ELECTION = {
    "leaderElect": True,
    "leaseDuration": "15s",
    "renewDeadline": "10s",
    "retryPeriod": "2s",
    "resourceLock": "leases",
    "resourceName": "kube-scheduler",
    "resourceNamespace": "kube-system",
}
_LEADER_DURATIONS = ("leaseDuration", "renewDeadline", "retryPeriod")
_CLIENT_CONNECTION = {
    "kubeconfig": "",
    "acceptContentTypes": "",
    "contentType": "application/vnd.kubernetes.protobuf",
    "qps": 50.0,
    "burst": 100,
}


def _component(m: dict[str, Any]) -> dict[str, Any]:
    """leaderElection, clientConnection and the switches, checked and defaulted as upstream does."""
    le = dict(_mapping(m.get("leaderElection"), "leaderElection", _LEADER_ELECTION))
    for key, default in _LEADER_ELECTION.items():
        path, value = f"leaderElection.{key}", le.get(key)
        if value is None:
            le[key] = default
        elif key == "leaderElect":
            _bool(value, path)
        elif key in _LEADER_DURATIONS:
            if _duration(value, path) == 0:
                le[key] = default  # upstream: a zero duration means the default
        elif _str(value, path) == "":
            le[key] = default
    seconds = {key: _duration(le[key], f"leaderElection.{key}") for key in _LEADER_DURATIONS}
    if le["leaderElect"]:
        for key, value in seconds.items():
            if value <= 0:
                raise ConfigError(f"leaderElection.{key}", le[key], "must be greater than zero")
        if seconds["leaseDuration"] <= seconds["renewDeadline"]:
            raise ConfigError(
                "leaderElection.leaseDuration",
                le["leaseDuration"],
                "must be greater than renewDeadline",
            )
        if le["resourceLock"] != "leases":
            raise ConfigError("leaderElection.resourceLock", le["resourceLock"], 'must be "leases"')

    cc = dict(_mapping(m.get("clientConnection"), "clientConnection", _CLIENT_CONNECTION))
    for key in ("kubeconfig", "acceptContentTypes", "contentType"):
        cc[key] = _str(cc[key], f"clientConnection.{key}") if cc.get(key) is not None else ""
    if not cc["contentType"]:
        cc["contentType"] = _CLIENT_CONNECTION["contentType"]
    qps = 0.0 if cc.get("qps") is None else _number(cc["qps"], "clientConnection.qps")
    cc["qps"] = qps or _CLIENT_CONNECTION["qps"]
    burst = 0 if cc.get("burst") is None else _int(cc["burst"], "clientConnection.burst")
    if burst < 0:
        raise ConfigError("clientConnection.burst", burst, "must be non-negative")
    cc["burst"] = burst or _CLIENT_CONNECTION["burst"]

    def flag(key: str, default: bool) -> bool:
        return default if m.get(key) is None else _bool(m[key], key)

    profiling = flag("enableProfiling", True)
    return {
        "leaderElection": le,
        "clientConnection": cc,
        "enableProfiling": profiling,
        "enableContentionProfiling": flag("enableContentionProfiling", profiling),
        "delayCacheUntilActive": flag("delayCacheUntilActive", False),
    }


_EXTENDER_FIELDS = {
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "weight",
    "bindVerb",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
}
_TLS_FIELDS = {
    "insecure",
    "serverName",
    "certFile",
    "keyFile",
    "caFile",
    "certData",
    "keyData",
    "caData",
}


def _extenders(value: Any) -> tuple[dict[str, Any], ...]:
    """The extenders, checked as upstream does; optimist does not call them (yet)."""
    out = []
    binders: list[int] = []
    managed: set[str] = set()
    for i, raw in enumerate(_list(value, "extenders")):
        path = f"extenders[{i}]"
        ext = _mapping(raw, path, _EXTENDER_FIELDS)
        item: dict[str, Any] = {}
        for key in ("urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "bindVerb"):
            if ext.get(key) is not None:
                item[key] = _str(ext[key], f"{path}.{key}")
        for key in ("enableHTTPS", "nodeCacheCapable", "ignorable"):
            if ext.get(key) is not None:
                item[key] = _bool(ext[key], f"{path}.{key}")
        weight = (
            0 if ext.get("weight") is None else _int(ext["weight"], f"{path}.weight", bits=_INT64)
        )
        if item.get("prioritizeVerb") and weight <= 0:
            raise ConfigError(f"{path}.weight", weight, "must have a positive weight applied to it")
        if ext.get("weight") is not None:
            item["weight"] = weight
        if ext.get("httpTimeout") is not None:
            _duration(ext["httpTimeout"], f"{path}.httpTimeout")
            item["httpTimeout"] = ext["httpTimeout"]
        if ext.get("tlsConfig") is not None:
            item["tlsConfig"] = _tls_config(ext["tlsConfig"], f"{path}.tlsConfig")
        resources = []
        for j, res in enumerate(_list(ext.get("managedResources"), f"{path}.managedResources")):
            rpath = f"{path}.managedResources[{j}]"
            r = _mapping(res, rpath, {"name", "ignoredByScheduler"})
            name = _extended_resource_name(r.get("name", MISSING), f"{rpath}.name")
            if name in managed:
                raise ConfigError(f"{rpath}.name", name, "duplicate extender managed resource name")
            managed.add(name)
            ignored = r.get("ignoredByScheduler")
            resources.append(
                {
                    "name": name,
                    "ignoredByScheduler": ignored is not None
                    and _bool(ignored, f"{rpath}.ignoredByScheduler"),
                }
            )
        if resources:
            item["managedResources"] = resources
        if item.get("bindVerb"):
            binders.append(i)
        out.append(item)
    if len(binders) > 1:
        raise ConfigError(
            "extenders",
            f"found {len(binders)} extenders implementing bind (extenders{binders})",
            "only one extender can implement bind",
        )
    return tuple(out)


def _tls_config(value: Any, path: str) -> dict[str, Any]:
    tls = _mapping(value, path, _TLS_FIELDS)
    out: dict[str, Any] = {}
    for key, item in tls.items():
        if item is None:
            continue
        if key == "insecure":
            out[key] = _bool(item, f"{path}.{key}")
            continue
        out[key] = _str(item, f"{path}.{key}")
        if key.endswith("Data"):
            try:
                base64.b64decode(item, validate=True)
            except (binascii.Error, ValueError) as e:
                raise ConfigError(f"{path}.{key}", item, "must be base64-encoded data") from e
    return out


def _extended_resource_name(value: Any, path: str) -> str:
    name = _qualified_name(value, path)
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        raise ConfigError(
            path,
            name,
            "is an invalid extended resource name (expected domain/name outside kubernetes.io)",
        )
    return name


# -- profiles: plugins, multiPoint, merging, expansion ----------------------------------------


class _Known:
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
        name = _str(name, path)
        if name not in self.points:
            raise ConfigError(
                path,
                name,
                "unknown plugin (neither a kube-scheduler v1.30 in-tree plugin "
                "nor in optimist's registry)",
            )
        return name


@dataclass(slots=True)
class _Entry:
    """One enabled plugin, with where the file names it ("" for a default)."""

    name: str
    weight: int | None
    path: str


@dataclass(slots=True)
class _Set:
    """A point's enabled and disabled plugins."""

    enabled: list[_Entry]
    disabled: list[str]


def _plugin_set(value: Any, path: str, known: _Known) -> _Set:
    s = _mapping(value, path, {"enabled", "disabled"})
    enabled = []
    for i, raw in enumerate(_list(s.get("enabled"), f"{path}.enabled")):
        epath = f"{path}.enabled[{i}]"
        plugin = _mapping(raw, epath, {"name", "weight"})
        name = known.check(plugin.get("name", MISSING), f"{epath}.name")
        weight = None if plugin.get("weight") is None else _int(plugin["weight"], f"{epath}.weight")
        enabled.append(_Entry(name, weight, epath))
    disabled = []
    for i, raw in enumerate(_list(s.get("disabled"), f"{path}.disabled")):
        dpath = f"{path}.disabled[{i}]"
        plugin = _mapping(raw, dpath, {"name", "weight"})
        if plugin.get("weight") is not None:
            _int(plugin["weight"], f"{dpath}.weight")
        # As upstream, a name that matches nothing disables nothing (old files disable
        # plugins removed since, such as SelectorSpread).
        disabled.append(_str(plugin.get("name", MISSING), f"{dpath}.name"))
    return _Set(enabled, disabled)


def _merge(default: _Set, custom: _Set) -> _Set:
    """Upstream's merge of a profile's set into the default one.

    The custom disabled names drop default plugins ("*" drops them all); a
    default plugin the profile enables again keeps its place but takes the
    profile's entry (its weight); the profile's other plugins follow, in order.
    """
    disabled = custom.disabled + default.disabled
    off = set(disabled)
    replacing = {e.name: (i, e) for i, e in enumerate(custom.enabled)}  # the last one wins
    used: set[int] = set()
    enabled: list[_Entry] = []
    if "*" not in off:
        for entry in default.enabled:
            if entry.name in off:
                continue
            if entry.name in replacing:
                index, entry = replacing[entry.name]
                used.add(index)
            enabled.append(entry)
    enabled += [e for i, e in enumerate(custom.enabled) if i not in used]
    return _Set(enabled, disabled)


def _expand(point: str, specific: _Set, multi: _Set, known: _Known, path: str) -> list[_Entry]:
    """The plugins at one point: those named there, and multiPoint's that implement it.

    A plugin named at the point overrides its multiPoint entry and moves to the
    front; multiPoint's others follow in their order; then the point's rest.
    A name disabled at the point keeps multiPoint from adding it there; "*"
    keeps out all of multiPoint's.
    """
    named: dict[str, _Entry] = {}
    for entry in specific.enabled:
        if point not in known.points[entry.name]:
            raise ConfigError(
                f"{entry.path}.name", entry.name, f"does not implement {_title(point)}"
            )
        if entry.name in named:
            raise ConfigError(
                f"{entry.path}.name", entry.name, f"already enabled at {_title(point)}"
            )
        named[entry.name] = entry
    if "*" in specific.disabled:
        return list(specific.enabled)
    off = set(specific.disabled)
    overridden: set[str] = set()
    from_multi: dict[str, _Entry] = {}
    for entry in multi.enabled:
        if point not in known.points[entry.name] or entry.name in off:
            continue
        if entry.name in named:
            overridden.add(entry.name)
        elif entry.name in from_multi:
            where = entry.path or from_multi[entry.name].path or f"{path}.multiPoint"
            raise ConfigError(f"{where}.name", entry.name, f"enabled twice for {_title(point)}")
        else:
            from_multi[entry.name] = entry
    first = [e for e in specific.enabled if e.name in overridden]
    rest = [e for e in specific.enabled if e.name not in overridden]
    return first + list(from_multi.values()) + rest


def _title(point: str) -> str:
    """An extension point as upstream's docs name it: "preFilter" -> "PreFilter"."""
    return point[:1].upper() + point[1:]


def _profile(
    name: str, prof: dict[str, Any], path: str, known: _Known
) -> tuple[ExpandedProfile, dict[str, Any]]:
    """A profile's plugins merged, expanded and checked, its args defaulted; and its queueSort.

    The queueSort set as the file gives it comes back apart: upstream requires
    it to be the same in every profile, since all profiles share one queue.
    """
    ppath = f"{path}.plugins"
    plugins = _mapping(prof.get("plugins"), ppath, {*POINTS, "multiPoint"})
    custom = {
        p: _plugin_set(plugins.get(p), f"{ppath}.{p}", known) for p in (*POINTS, "multiPoint")
    }
    default_multi = _Set([_Entry(n, w, "") for n, w in DEFAULT_MULTI_POINT], [])
    multi = _merge(default_multi, custom["multiPoint"])
    points = {p: _expand(p, custom[p], multi, known, ppath) for p in POINTS}

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
        if plugin in ARGS:
            args[plugin] = ARGS[plugin]({}, "")
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
    value: Any, path: str, known: _Known, running: set[str]
) -> dict[str, dict[str, Any]]:
    """The pluginConfig entries: one per plugin, each for a plugin the profile runs."""
    args: dict[str, dict[str, Any]] = {}
    first_at: dict[str, int] = {}
    for i, raw in enumerate(_list(value, path)):
        cpath = f"{path}[{i}]"
        entry = _mapping(raw, cpath, {"name", "args"})
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
        if name in ARGS:
            args[name] = ARGS[name](raw_args, apath)
        elif name in UPSTREAM_PLUGINS:
            if raw_args:
                raise ConfigError(apath, raw_args, f"{name} takes no args")
        else:
            args[name] = _plain(raw_args, apath)
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


# -- plugin args: each reader checks and defaults one kind, as upstream's v1 does -------------


def _resources(value: Any, path: str, *, weight_must_be_one: bool = False) -> list[dict[str, Any]]:
    """ResourceSpec items; a weight of 0 or none means 1."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, raw in enumerate(_list(value, path)):
        rpath = f"{path}[{i}]"
        r = _mapping(raw, rpath, {"name", "weight"})
        name = _str(r.get("name", MISSING), f"{rpath}.name", empty=False)
        if _qualified_name_problem(name):
            raise ConfigError(
                f"{rpath}.name",
                name,
                "must be a resource name such as cpu, memory or example.com/gpu",
            )
        weight = (
            0 if r.get("weight") is None else _int(r["weight"], f"{rpath}.weight", bits=_INT64)
        ) or 1
        if weight_must_be_one:
            if name in seen:
                raise ConfigError(f"{rpath}.name", name, "duplicate resource")
            if weight != 1:
                raise ConfigError(f"{rpath}.weight", weight, "must be 1")
        elif not 0 < weight <= 100:
            raise ConfigError(
                f"{rpath}.weight", weight, f"resource weight of {name} not in valid range (0, 100]"
            )
        seen.add(name)
        out.append({"name": name, "weight": weight})
    return out


def _shape(value: Any, path: str) -> list[dict[str, int]]:
    """A utilization -> score curve: utilization 0..100 strictly increasing, score 0..10."""
    points = _list(value, path)
    if not points:
        raise ConfigError(
            path, value if value is not None else MISSING, "at least one point must be specified"
        )
    out = []
    for i, raw in enumerate(points):
        spath = f"{path}[{i}]"
        p = _mapping(raw, spath, {"utilization", "score"})
        utilization = (
            0 if p.get("utilization") is None else _int(p["utilization"], f"{spath}.utilization")
        )
        score = 0 if p.get("score") is None else _int(p["score"], f"{spath}.score")
        out.append({"utilization": utilization, "score": score})
    for i in range(1, len(out)):
        if out[i - 1]["utilization"] >= out[i]["utilization"]:
            raise ConfigError(
                f"{path}[{i}].utilization",
                out[i]["utilization"],
                "values must be sorted in increasing order",
            )
    for i, p in enumerate(out):
        if not 0 <= p["utilization"] <= 100:
            raise ConfigError(
                f"{path}[{i}].utilization", p["utilization"], "not in valid range [0, 100]"
            )
        if not 0 <= p["score"] <= _MAX_CUSTOM_PRIORITY_SCORE:
            raise ConfigError(
                f"{path}[{i}].score",
                p["score"],
                f"not in valid range [0, {_MAX_CUSTOM_PRIORITY_SCORE}]",
            )
    return out


_STRATEGIES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")


def _fit_args(raw: dict[str, Any], path: str) -> dict[str, Any]:
    m = _mapping(raw, path, {"ignoredResources", "ignoredResourceGroups", "scoringStrategy"})
    out: dict[str, Any] = {}
    if m.get("ignoredResources") is not None:
        rpath = _child(path, "ignoredResources")
        out["ignoredResources"] = [
            _qualified_name(r, f"{rpath}[{i}]")
            for i, r in enumerate(_list(m["ignoredResources"], rpath))
        ]
    if m.get("ignoredResourceGroups") is not None:
        gpath = _child(path, "ignoredResourceGroups")
        groups = []
        for i, g in enumerate(_list(m["ignoredResourceGroups"], gpath)):
            group = _str(g, f"{gpath}[{i}]")
            if "/" in group:
                raise ConfigError(f"{gpath}[{i}]", group, "resource group name can't contain '/'")
            groups.append(_qualified_name(group, f"{gpath}[{i}]"))
        out["ignoredResourceGroups"] = groups
    spath = _child(path, "scoringStrategy")
    if m.get("scoringStrategy") is None:
        out["scoringStrategy"] = {
            "type": "LeastAllocated",
            "resources": copy.deepcopy(list(_DEFAULT_RESOURCES)),
        }
        return out
    s = _mapping(m["scoringStrategy"], spath, {"type", "resources", "requestedToCapacityRatio"})
    kind = _one_of(s.get("type", ""), f"{spath}.type", _STRATEGIES)
    resources = _resources(s.get("resources"), f"{spath}.resources") or copy.deepcopy(
        list(_DEFAULT_RESOURCES)
    )
    strategy: dict[str, Any] = {"type": kind, "resources": resources}
    rpath = f"{spath}.requestedToCapacityRatio"
    ratio = s.get("requestedToCapacityRatio")
    if kind == "RequestedToCapacityRatio":
        if ratio is None:
            raise ConfigError(
                rpath, MISSING, "must be specified when type is RequestedToCapacityRatio"
            )
        r = _mapping(ratio, rpath, {"shape"})
        strategy["requestedToCapacityRatio"] = {"shape": _shape(r.get("shape"), f"{rpath}.shape")}
    elif ratio is not None:
        raise ConfigError(rpath, ratio, "must not be set unless type is RequestedToCapacityRatio")
    out["scoringStrategy"] = strategy
    return out


def _balanced_allocation_args(raw: dict[str, Any], path: str) -> dict[str, Any]:
    m = _mapping(raw, path, {"resources"})
    resources = _resources(m.get("resources"), _child(path, "resources"), weight_must_be_one=True)
    return {"resources": resources or copy.deepcopy(list(_DEFAULT_RESOURCES))}


def _inter_pod_affinity_args(raw: dict[str, Any], path: str) -> dict[str, Any]:
    m = _mapping(raw, path, {"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"})
    wpath = _child(path, "hardPodAffinityWeight")
    weight = (
        1 if m.get("hardPodAffinityWeight") is None else _int(m["hardPodAffinityWeight"], wpath)
    )
    if not 0 <= weight <= 100:
        raise ConfigError(wpath, weight, "not in valid range [0, 100]")
    out: dict[str, Any] = {"hardPodAffinityWeight": weight}
    if m.get("ignorePreferredTermsOfExistingPods") is not None:
        out["ignorePreferredTermsOfExistingPods"] = _bool(
            m["ignorePreferredTermsOfExistingPods"],
            _child(path, "ignorePreferredTermsOfExistingPods"),
        )
    return out


_CONSTRAINT_FIELDS = {
    "maxSkew",
    "topologyKey",
    "whenUnsatisfiable",
    "labelSelector",
    "minDomains",
    "nodeAffinityPolicy",
    "nodeTaintsPolicy",
    "matchLabelKeys",
}


def _pod_topology_spread_args(raw: dict[str, Any], path: str) -> dict[str, Any]:
    m = _mapping(raw, path, {"defaultConstraints", "defaultingType"})
    cpath = _child(path, "defaultConstraints")
    raw_constraints = _list(m.get("defaultConstraints"), cpath)
    tpath = _child(path, "defaultingType")
    given = m.get("defaultingType")
    defaulting = _one_of("System" if given in (None, "") else given, tpath, ("System", "List"))
    if defaulting == "System" and raw_constraints:
        raise ConfigError(tpath, defaulting, "must be List when defaultConstraints are given")
    constraints = []
    seen: dict[tuple[str, str], int] = {}
    for i, item in enumerate(raw_constraints):
        ipath = f"{cpath}[{i}]"
        c = _mapping(item, ipath, _CONSTRAINT_FIELDS)
        skew = _int(c.get("maxSkew", 0), f"{ipath}.maxSkew")
        if skew <= 0:
            raise ConfigError(f"{ipath}.maxSkew", skew, "not in valid range (0, inf)")
        key = c.get("topologyKey", "")
        if key == "":
            raise ConfigError(f"{ipath}.topologyKey", key, "can not be empty")
        key = _qualified_name(key, f"{ipath}.topologyKey")
        when = _one_of(
            c.get("whenUnsatisfiable", ""),
            f"{ipath}.whenUnsatisfiable",
            ("DoNotSchedule", "ScheduleAnyway"),
        )
        if c.get("labelSelector") is not None:
            raise ConfigError(
                f"{ipath}.labelSelector",
                c["labelSelector"],
                "must not be set: a default constraint's selector is deduced for each pod",
            )
        if (key, when) in seen:
            raise ConfigError(
                ipath, f"{{{key}, {when}}}", f"duplicate of {cpath}[{seen[key, when]}]"
            )
        seen[key, when] = i
        constraint: dict[str, Any] = {
            "maxSkew": skew,
            "topologyKey": key,
            "whenUnsatisfiable": when,
        }
        if c.get("minDomains") is not None:
            constraint["minDomains"] = _int(c["minDomains"], f"{ipath}.minDomains", lo=1)
        for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            if c.get(policy) is not None:
                constraint[policy] = _one_of(c[policy], f"{ipath}.{policy}", ("Honor", "Ignore"))
        if c.get("matchLabelKeys") is not None:
            kpath = f"{ipath}.matchLabelKeys"
            constraint["matchLabelKeys"] = [
                _qualified_name(k, f"{kpath}[{j}]")
                for j, k in enumerate(_list(c["matchLabelKeys"], kpath))
            ]
        constraints.append(constraint)
    out: dict[str, Any] = {"defaultingType": defaulting}
    if constraints:
        out["defaultConstraints"] = constraints
    return out


_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def _selector_term(value: Any, path: str) -> dict[str, Any]:
    """A NodeSelectorTerm: label expressions and metadata.name field expressions."""
    t = _mapping(value, path, {"matchExpressions", "matchFields"})
    out: dict[str, Any] = {}
    for kind in ("matchExpressions", "matchFields"):
        if t.get(kind) is None:
            continue
        requirements = []
        for i, raw in enumerate(_list(t[kind], f"{path}.{kind}")):
            rpath = f"{path}.{kind}[{i}]"
            r = _mapping(raw, rpath, {"key", "operator", "values"})
            values = [
                _str(v, f"{rpath}.values[{j}]")
                for j, v in enumerate(_list(r.get("values"), f"{rpath}.values"))
            ]
            if kind == "matchFields":
                key = _one_of(r.get("key", MISSING), f"{rpath}.key", ("metadata.name",))
                op = _one_of(r.get("operator", MISSING), f"{rpath}.operator", ("In", "NotIn"))
                if len(values) != 1:
                    raise ConfigError(
                        f"{rpath}.values", values, "must have exactly one value for metadata.name"
                    )
            else:
                key = _qualified_name(r.get("key", MISSING), f"{rpath}.key")
                op = _one_of(r.get("operator", MISSING), f"{rpath}.operator", _OPERATORS)
                _check_values(op, values, f"{rpath}.values")
            requirements.append({"key": key, "operator": op, "values": values})
        out[kind] = requirements
    return out


def _check_values(op: str, values: list[str], path: str) -> None:
    if op in ("In", "NotIn"):
        if not values:
            raise ConfigError(path, values, f"must be non-empty for operator {op}")
        for j, v in enumerate(values):
            _label_value(v, f"{path}[{j}]")
    elif op in ("Exists", "DoesNotExist"):
        if values:
            raise ConfigError(path, values, f"must be empty for operator {op}")
    elif len(values) != 1 or not re.fullmatch(r"[-+]?[0-9]+", values[0]):
        raise ConfigError(path, values, f"must be exactly one integer for operator {op}")


def _node_affinity_args(raw: dict[str, Any], path: str) -> dict[str, Any]:
    m = _mapping(raw, path, {"addedAffinity"})
    if m.get("addedAffinity") is None:
        return {}
    apath = _child(path, "addedAffinity")
    required_key = "requiredDuringSchedulingIgnoredDuringExecution"
    preferred_key = "preferredDuringSchedulingIgnoredDuringExecution"
    a = _mapping(m["addedAffinity"], apath, {required_key, preferred_key})
    affinity: dict[str, Any] = {}
    if a.get(required_key) is not None:
        rpath = f"{apath}.{required_key}"
        selector = _mapping(a[required_key], rpath, {"nodeSelectorTerms"})
        tpath = f"{rpath}.nodeSelectorTerms"
        affinity[required_key] = {
            "nodeSelectorTerms": [
                _selector_term(t, f"{tpath}[{i}]")
                for i, t in enumerate(_list(selector.get("nodeSelectorTerms"), tpath))
            ]
        }
    if a.get(preferred_key) is not None:
        ppath = f"{apath}.{preferred_key}"
        preferred = []
        for i, raw_term in enumerate(_list(a[preferred_key], ppath)):
            tpath = f"{ppath}[{i}]"
            t = _mapping(raw_term, tpath, {"weight", "preference"})
            weight = _int(t.get("weight", MISSING), f"{tpath}.weight", lo=1, hi=100)
            preference = _selector_term(t.get("preference"), f"{tpath}.preference")
            preferred.append({"weight": weight, "preference": preference})
        affinity[preferred_key] = preferred
    return {"addedAffinity": affinity}


def _default_preemption_args(raw: dict[str, Any], path: str) -> dict[str, Any]:
    m = _mapping(raw, path, {"minCandidateNodesPercentage", "minCandidateNodesAbsolute"})
    ppath, apath = (
        _child(path, "minCandidateNodesPercentage"),
        _child(path, "minCandidateNodesAbsolute"),
    )
    percentage = (
        10
        if m.get("minCandidateNodesPercentage") is None
        else _int(m["minCandidateNodesPercentage"], ppath)
    )
    absolute = (
        100
        if m.get("minCandidateNodesAbsolute") is None
        else _int(m["minCandidateNodesAbsolute"], apath)
    )
    if not 0 <= percentage <= 100:
        raise ConfigError(ppath, percentage, "not in valid range [0, 100]")
    if absolute < 0:
        raise ConfigError(apath, absolute, "not in valid range [0, inf)")
    if percentage == 0 and absolute == 0:
        raise ConfigError(
            ppath, percentage, "cannot be zero at the same time as minCandidateNodesAbsolute"
        )
    return {"minCandidateNodesPercentage": percentage, "minCandidateNodesAbsolute": absolute}


def _volume_binding_args(raw: dict[str, Any], path: str) -> dict[str, Any]:
    m = _mapping(raw, path, {"bindTimeoutSeconds", "shape"})
    tpath = _child(path, "bindTimeoutSeconds")
    timeout = (
        600
        if m.get("bindTimeoutSeconds") is None
        else _int(m["bindTimeoutSeconds"], tpath, bits=_INT64)
    )
    if timeout < 0:
        raise ConfigError(tpath, timeout, "should not be a negative value")
    if m.get("shape") is not None:
        raise ConfigError(
            _child(path, "shape"),
            m["shape"],
            "needs the VolumeCapacityPriority feature gate, which v1.30 has off; remove it",
        )
    return {"bindTimeoutSeconds": timeout}


# The plugins that take args in v1.30, each with its reader; the others take none.
ARGS: dict[str, Callable[[dict[str, Any], str], dict[str, Any]]] = {
    "DefaultPreemption": _default_preemption_args,
    "InterPodAffinity": _inter_pod_affinity_args,
    "NodeAffinity": _node_affinity_args,
    "NodeResourcesBalancedAllocation": _balanced_allocation_args,
    "NodeResourcesFit": _fit_args,
    "PodTopologySpread": _pod_topology_spread_args,
    "VolumeBinding": _volume_binding_args,
}


# -- what optimist runs of a profile, and what it does not -----------------------------------


def _active(profile: ExpandedProfile, known: _Known, percentage: int | None) -> ProfileConfig:
    """The profile as the shards run it: registry Filter and Score plugins only."""
    filters = tuple(n for n in profile.points["filter"] if n in known.filters)
    scorers = tuple((n, profile.weights[n]) for n in profile.points["score"] if n in known.scores)
    used = {*filters, *(n for n, _ in scorers)}
    return ProfileConfig(
        scheduler_name=profile.scheduler_name,
        filters=filters,
        scorers=scorers,
        args={n: copy.deepcopy(a) for n, a in profile.args.items() if n in used},
        percentage_of_nodes_to_score=percentage or None,  # 0 and unset both mean adaptive
    )


def _inactive(profile: ExpandedProfile, known: _Known) -> list[InactivePlugin]:
    """Each plugin the profile enables that optimist does not run, once, with its points."""
    runs_at: dict[str, set[str]] = {}
    for point, names in profile.points.items():
        for name in names:
            runs_at.setdefault(name, set()).add(point)
    out = []
    for name, points in runs_at.items():
        covered = set()
        if name in known.filters:
            covered |= _CHECKS
        if name in known.scores:
            covered |= _SCORES
        if name in HANDLED_OUTSIDE_SHARDS:
            covered.add(HANDLED_OUTSIDE_SHARDS[name][0])
        missing = [p for p in POINTS if p in points - covered]
        if missing:
            out.append(
                InactivePlugin(
                    profile.scheduler_name, name, tuple(map(_title, missing)), _reason(name)
                )
            )
    return out


def _reason(name: str) -> str:
    if name in _VOLUME_OR_DRA:
        return REASON_VOLUME
    if name in ("DefaultPreemption", "SchedulingGates"):
        return REASON_QUEUE
    return REASON_MISSING
