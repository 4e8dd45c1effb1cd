"""The standard fields optimist carries but does not use yet: the component's and extenders'.

leaderElection, clientConnection, the profiling switches and the extenders
are checked and defaulted as kube-scheduler v1.30 does, so a file it refuses
is refused here too.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from optimist.configuration.fields import (
    _INT64,
    MISSING,
    ConfigError,
    _bool,
    _duration,
    _int,
    _list,
    _mapping,
    _number,
    _qualified_name,
    _str,
)

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
