"""Typed fields out of Kubernetes manifests (dicts), with errors that name the object,
the field path and the value: what every decoder of a manifest shares."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster.errors import InvalidObject
from cluster.selectors import (
    LABEL_SELECTOR_OPERATORS,
    NODE_SELECTOR_OPERATORS,
    LabelSelector,
    NodeSelectorTerm,
    Requirement,
    is_label_value,
    parse_int64,
)

# a decoded manifest's maps are dicts: checked first, as a Mapping's ABC check costs a
# decoder about a tenth of its time
MAPS = (dict, Mapping)


def map_field(obj: str, path: str, raw: object) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, MAPS):
        raise InvalidObject(obj, path, raw, "must be a map")
    return raw


def list_field(obj: str, path: str, raw: object) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InvalidObject(obj, path, raw, "must be a list")
    return raw


def string_map(obj: str, path: str, raw: object) -> dict[str, str]:
    out = {}
    for key, value in map_field(obj, path, raw).items():
        if not isinstance(value, str):
            raise InvalidObject(obj, f"{path}.{key}", value, "must be a string")
        out[str(key)] = value
    return out


def strings(obj: str, path: str, raw: object) -> tuple[str, ...]:
    items = list_field(obj, path, raw)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise InvalidObject(obj, f"{path}[{i}]", item, "must be a string")
    return tuple(items)


def int_field(obj: str, path: str, raw: object, *, low: int, high: int | None = None) -> int:
    if not isinstance(raw, int) or isinstance(raw, bool) or raw < low or (high and raw > high):
        bounds = f"{low}..{high}" if high else f">= {low}"
        raise InvalidObject(obj, path, raw, f"must be an integer {bounds}")
    return raw


def requirement(
    obj: str, path: str, raw: object, allowed: tuple[str, ...], *, fields: bool = False
) -> Requirement:
    raw = map_field(obj, path, raw)
    key = raw.get("key")
    op = raw.get("operator")
    values = strings(obj, f"{path}.values", raw.get("values"))
    if not isinstance(key, str) or not key:
        raise InvalidObject(obj, f"{path}.key", key, "must be a non-empty string")
    if op not in allowed:
        raise InvalidObject(obj, f"{path}.operator", op, f"must be one of {', '.join(allowed)}")
    if fields and key != "metadata.name":
        raise InvalidObject(obj, f"{path}.key", key, "matchFields supports only metadata.name")
    if fields and len(values) != 1:
        raise InvalidObject(obj, f"{path}.values", values, "matchFields takes exactly one value")
    _check_values(obj, path, op, values, fields=fields)
    return Requirement(key, op, tuple(str(v) for v in values))


def _check_values(obj: str, path: str, op: str, values: tuple[str, ...], *, fields: bool) -> None:
    """A requirement's values as its operator takes them."""
    if op in ("In", "NotIn") and not values:
        raise InvalidObject(obj, f"{path}.values", values, f"{op} needs at least one value")
    if op in ("Exists", "DoesNotExist") and values:
        raise InvalidObject(obj, f"{path}.values", values, f"{op} takes no values")
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            raise InvalidObject(obj, f"{path}.values", values, f"{op} needs exactly one value")
        if parse_int64(values[0]) is None:
            raise InvalidObject(obj, f"{path}.values[0]", values[0], "must be an integer")
    if not fields:
        # upstream's API server takes such a pod, and its scheduler then skips the term
        # (required) or fails every attempt (preferred): refused here, saying where
        for j, value in enumerate(values):
            if not is_label_value(value):
                raise InvalidObject(
                    obj,
                    f"{path}.values[{j}]",
                    value,
                    "must be a label value: up to 63 letters, digits, '-', '_' or '.', "
                    "starting and ending with a letter or digit",
                )


def node_selector_term(obj: str, path: str, raw: object) -> NodeSelectorTerm:
    raw = map_field(obj, path, raw)
    exprs = list_field(obj, f"{path}.matchExpressions", raw.get("matchExpressions"))
    flds = list_field(obj, f"{path}.matchFields", raw.get("matchFields"))
    return NodeSelectorTerm(
        tuple(
            requirement(obj, f"{path}.matchExpressions[{i}]", e, NODE_SELECTOR_OPERATORS)
            for i, e in enumerate(exprs)
        ),
        tuple(
            requirement(obj, f"{path}.matchFields[{i}]", f, ("In", "NotIn"), fields=True)
            for i, f in enumerate(flds)
        ),
    )


def label_selector(obj: str, path: str, raw: object) -> LabelSelector | None:
    """A metav1.LabelSelector; None where it is absent (which selects nothing)."""
    if raw is None:
        return None
    raw = map_field(obj, path, raw)
    labels = string_map(obj, f"{path}.matchLabels", raw.get("matchLabels"))
    exprs = list_field(obj, f"{path}.matchExpressions", raw.get("matchExpressions"))
    return LabelSelector(
        tuple(sorted(labels.items())),
        tuple(
            requirement(obj, f"{path}.matchExpressions[{i}]", e, LABEL_SELECTOR_OPERATORS)
            for i, e in enumerate(exprs)
        ),
    )


CLUSTER_SCOPED = frozenset({"Node", "PersistentVolume", "StorageClass", "CSINode"})


def metadata(raw: Mapping[str, Any], kind: str) -> tuple[str, str, Mapping[str, Any]]:
    """(name, namespace, metadata) of an object, its name checked; the namespace of a
    namespaced object defaults as the API server defaults it."""
    if not isinstance(raw, MAPS):
        raise InvalidObject(kind, "", raw, "must be an object")
    meta = raw.get("metadata")
    if not isinstance(meta, MAPS):
        raise InvalidObject(kind, "metadata", meta, "must be a map")
    name = meta.get("name")
    namespace = meta.get("namespace") or "default"
    obj = f"{kind} {name}" if kind in CLUSTER_SCOPED else f"{kind} {namespace}/{name}"
    if not isinstance(name, str) or not name:
        raise InvalidObject(obj, "metadata.name", name, "must be a non-empty string")
    return name, str(namespace), meta
