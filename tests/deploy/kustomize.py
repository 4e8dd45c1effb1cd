"""Render a Kustomize overlay as `kubectl apply -k` would, for the subset deploy/ uses.

Neither kustomize nor kubectl can be installed here, so the tests render the
overlays themselves: `resources` (files, or directories holding a
kustomization), `namespace`, and `patches` as RFC 6902 JSON patches with a
kind/name target. A kustomization using anything else is refused, so an
overlay cannot silently depend on a feature this renderer would ignore.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

KNOWN = {"apiVersion", "kind", "namespace", "resources", "patches"}


class RenderError(Exception):
    pass


def render(directory: Path) -> list[dict[str, Any]]:
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = set(kustomization) - KNOWN
    if unknown:
        raise RenderError(f"{directory}: fields this renderer does not know: {sorted(unknown)}")
    objects: list[dict[str, Any]] = []
    for resource in kustomization.get("resources", []):
        path = directory / resource
        if path.is_dir():
            objects += render(path)
        else:
            objects += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    namespace = kustomization.get("namespace")
    if namespace:
        for obj in objects:
            if obj["kind"] not in CLUSTER_SCOPED:
                obj.setdefault("metadata", {})["namespace"] = namespace
    for patch in kustomization.get("patches", []):
        target = patch["target"]
        matched = [
            o
            for o in objects
            if o["kind"] == target["kind"] and o["metadata"]["name"] == target["name"]
        ]
        if len(matched) != 1:
            raise RenderError(f"{directory}: patch target {target} matches {len(matched)} objects")
        for op in yaml.safe_load(patch["patch"]):
            _apply(matched[0], op)
    return objects


CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}


def _apply(obj: dict[str, Any], op: dict[str, Any]) -> None:
    """One RFC 6902 operation: add, replace or remove."""
    *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in op["path"][1:].split("/")]
    node: Any = obj
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    key: Any = int(last) if isinstance(node, list) and last != "-" else last
    kind, path = op["op"], op["path"]
    if kind not in ("add", "replace", "remove"):
        raise RenderError(f"op {kind!r}: this renderer knows add, replace and remove")
    there = key in node if isinstance(node, dict) else key != "-" and key < len(node)
    if kind != "add" and not there:
        raise RenderError(f"{kind} {path}: nothing there")
    if kind == "remove":
        del node[key]
    elif kind == "replace" or not isinstance(node, list):
        node[key] = copy.deepcopy(op["value"])
    else:
        node.insert(len(node) if key == "-" else key, copy.deepcopy(op["value"]))
