"""namespaceSelector with the namespaces' own labels, on real Ray and a real Redis: the
labels reach the shards and the binder's re-check through the store."""

from __future__ import annotations

import copy

import pytest

from optimist.loop import SchedulingLoop
from optimist.offline.invariants import check_invariants
from optimist.offline.simulator import SimulatedCluster
from optimist.runtime import Platform
from optimist.settings import Settings
from tests.test_binders_end_to_end import HOST, labelled_nodes, pod_doc

pytestmark = pytest.mark.usefixtures("ray_session")


def test_anti_affinity_reaches_pods_in_namespaces_selected_by_their_labels(redis_url, key_prefix):
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, seed=3)
    cluster = SimulatedCluster(settings.scheduler_names)
    labelled_nodes(cluster, 2)
    cluster.create_namespace("prod", {"env": "live"})
    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster)
        [db] = cluster.create_pods(pod_doc("db", "db"), 1, namespace="prod")
        loop.run_until_settled()
        taken = cluster.bindings[db]
        # pods elsewhere that keep away from db pods in any namespace labelled env=live:
        # only prod's labels, as the cluster has them, can tell them where db is
        away = pod_doc("web")
        term = {
            "topologyKey": HOST,
            "labelSelector": {"matchLabels": {"app": "db"}},
            "namespaceSelector": {"matchLabels": {"env": "live"}},
        }
        away["spec"]["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }
        webs = cluster.create_pods(copy.deepcopy(away), 12, namespace="default")
        loop.run_until_settled()
        assert {cluster.bindings[w] for w in webs} == {n for n in cluster.nodes if n != taken}
        assert check_invariants(cluster, loop.dispatcher.unschedulable(), platform.store) == []
