"""The node store's Lua scripts, loaded from the `.lua` files beside this module.

Each script is prepended with `common.lua` (key names, validation helpers,
version bump), so the rules they share are written once.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import redis
from redis.commands.core import Script

_NAMES = (
    "put_nodes",
    "remove_nodes",
    "changes_since",
    "commit",
    "release",
    "preempt",
    "expire",
    "claim",
    "put_namespaces",
    "settle",
    "peers",
)


def _source(name: str) -> str:
    return (resources.files(__package__) / f"{name}.lua").read_text()


@dataclass(frozen=True, slots=True)
class Scripts:
    put_nodes: Script
    remove_nodes: Script
    changes_since: Script
    commit: Script
    release: Script
    preempt: Script
    expire: Script
    claim: Script
    put_namespaces: Script
    settle: Script
    peers: Script

    @classmethod
    def register(cls, client: redis.Redis) -> Scripts:
        common = _source("common")
        return cls(**{n: client.register_script(common + "\n" + _source(n)) for n in _NAMES})
