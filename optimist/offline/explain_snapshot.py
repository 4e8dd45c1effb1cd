"""`optimist explain` against a snapshot (`kubectl get nodes,pods -A -o yaml`, or what a
bench's `--save-state` wrote): a node store and one shard are built in this process from
the snapshot's nodes and bound pods, and the shard judges the pod as `optimist run`'s
would."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from cluster.explanation import Explanation
from cluster.redis_server import EmbeddedRedis
from cluster.store import Keys, open_store
from optimist.explain import WHAT_IF, Explainer, ExplainError, single
from optimist.offline.replay import load_snapshot, run_in_place
from optimist.offline.simulator import SimulatedCluster
from optimist.settings import Settings
from shards.plugins import build_profile
from shards.scheduler import ShardCore


def explain_snapshot(
    path: Path,
    settings: Settings,
    pod: str = "",
    manifest: Mapping[str, Any] | None = None,
    top: int = 0,
) -> Explanation:
    """`pod` of a snapshot (or a what-if `manifest`), judged on the snapshot's nodes with
    its bound pods where they are. Raises `SnapshotError` for a file that is none."""
    snap = load_snapshot(path, settings.scheduler_names)
    explainer = Explainer(settings.scheduler_names)
    target = explainer.what_if(manifest) if manifest is not None else None
    pods = {p.key: p for p in [*snap.replayed, *snap.background]}
    if target is None:
        found = pods.get(pod)
        if found is None:
            raise ExplainError(404, f"pod {pod}: not in {path}")
        target = found
    bound_to = snap.actual.get(target.key, target.node_name) if manifest is None else ""
    placed = [
        replace(p, node_name=snap.actual[p.key], spec=replace(p.spec, node_name=snap.actual[p.key]))
        for p in snap.replayed
        if p.key in snap.actual
    ]
    cluster = SimulatedCluster(settings.scheduler_names)
    for node in snap.node_manifests:
        cluster.create_nodes(node, 1)
    server = EmbeddedRedis().start()
    try:
        store = open_store([server.url], Keys(settings.key_prefix))
        try:
            store.open()
            store.put_nodes(cluster.nodes.values())
            run_in_place(store, cluster, [*snap.background, *placed], [])
            profiles = [build_profile(p) for p in settings.profiles]
            core = ShardCore(0, store, profiles, settings.seed)
            unit = core.explain(single(target.key, target.spec, bound_to, top))
        finally:
            store.close()
    finally:
        server.stop()
    source = WHAT_IF if manifest is not None else f"snapshot {path}"
    return Explanation(target.key, source, bound_to, None, unit)
