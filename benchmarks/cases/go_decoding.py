"""Templates read as upstream's harness reads them: Go's JSON decoder matches a field's
name case-insensitively (sigs.k8s.io/yaml goes through encoding/json), so a template
written `NodeTaintsPolicy: Honor` sets nodeTaintsPolicy there. Each key is put in the
case the API uses, by the schema of the object's kind, as the official `kubernetes`
client's models give it; kinds it has no model for (custom resources) stay as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from kubernetes.client import models

_LIST = re.compile(r"^[Ll]ist\[(.+)\]$")
_DICT = re.compile(r"^[Dd]ict\[(?:str|\(str), *(.+)\]$")


def canonical(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The object with its keys as the API spells them, where its kind has a model."""
    model = _model_of(str(doc.get("apiVersion", "v1")), str(doc.get("kind", "")))
    return _walk(doc, model) if model else dict(doc)


def _model_of(api_version: str, kind: str) -> str | None:
    version = api_version.rsplit("/", 1)[-1]
    name = f"{version[:1].upper()}{version[1:]}{kind}"
    return name if hasattr(models, name) else None


@cache
def _fields(model: str) -> tuple[dict[str, str], dict[str, str]]:
    """(lowercased JSON key -> JSON key, JSON key -> its type) of a model."""
    cls = getattr(models, model)
    keys = {json.lower(): json for json in cls.attribute_map.values()}
    types = {cls.attribute_map[attr]: kind for attr, kind in cls.openapi_types.items()}
    return keys, types


def _walk(value: Any, kind: str) -> Any:
    if (found := _LIST.match(kind)) and isinstance(value, list):
        return [_walk(item, found.group(1)) for item in value]
    if (found := _DICT.match(kind)) and isinstance(value, Mapping):
        return {k: _walk(v, found.group(1)) for k, v in value.items()}
    if not hasattr(models, kind) or not isinstance(value, Mapping):
        return value
    keys, types = _fields(kind)
    out: dict[Any, Any] = {}
    for key, item in value.items():
        # an exact match wins, as in encoding/json; else the case-insensitive one; else
        # the key stays as YAML read it (which may be no str: `1: x`, `~: x`)
        name: Any = key if key in types else keys.get(str(key).lower(), key)
        out[name] = _walk(item, types.get(name, ""))
    return out
