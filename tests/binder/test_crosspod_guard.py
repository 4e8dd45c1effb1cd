"""The binder's re-check of cross-pod rules, against a real store."""

from binder.crosspod_guard import CrossPodGuard
from cluster.manifests import pod_from_manifest
from cluster.messages import Decision, PodPlacement
from optimist.settings import DEFAULT_PROFILE
from shards.testing import node

HOST = "kubernetes.io/hostname"


def pod_spec(app, anti=False):
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}
    if anti:
        term = {"topologyKey": HOST, "labelSelector": {"matchLabels": {"app": app}}}
        spec["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }
    labels = {"app": app} if app else {}
    return pod_from_manifest(
        {"metadata": {"name": app or "plain", "labels": labels}, "spec": spec}
    ).spec


def placed(unit, cls, *nodes):
    return Decision(unit, [PodPlacement(f"ns/{unit}", cls, list(nodes), [0] * len(nodes))])


def test_refuses_what_the_committed_pods_forbid(store):
    store.put_nodes([node(n, labels={HOST: n}) for n in ("a", "b", "c")])
    web, plain = pod_spec("web", anti=True), pod_spec("")
    store.commit([web], [placed("w0", 0, "a")])  # committed by another shard's batch
    guard = CrossPodGuard(store, [DEFAULT_PROFILE])
    classes = [web, plain]
    admitted, refused, _ = guard.screen(
        classes,
        [
            placed("w1", 0, "a"),  # the shard had not seen w0 yet
            placed("w2", 0, "b"),
            placed("w3", 0, "b"),  # clashes with w2, earlier in the same batch
            placed("w4", 0, "a", "c"),  # first candidate refused, the next one kept
            placed("p1", 1, "a"),  # a plain pod is not kept away by web
        ],
    )
    assert [d.unit for d in admitted] == ["w2", "w4", "p1"]
    assert admitted[1].placements[0].nodes == ["c"]
    assert {o.unit for o in refused} == {"w1", "w3"}
    assert all(o.status == "conflict" and "anti-affinity" in o.detail for o in refused)
    assert guard.refused == 2


def test_existing_anti_affinity_reaches_pods_it_selects(store):
    store.put_nodes([node(n, labels={HOST: n}) for n in ("a", "b")])
    # db keeps app=cache pods off its host; the cache pod has no rules of its own
    db = pod_from_manifest(
        {
            "metadata": {"name": "db", "labels": {"app": "db"}},
            "spec": {
                "containers": [{"name": "c"}],
                "affinity": {
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "topologyKey": HOST,
                                "labelSelector": {"matchLabels": {"app": "cache"}},
                            }
                        ]
                    }
                },
            },
        }
    ).spec
    cache, other = pod_spec("cache"), pod_spec("other")
    guard = CrossPodGuard(store, [DEFAULT_PROFILE])
    admitted, _, _ = guard.screen([db], [placed("db", 0, "a")])
    store.commit([db], admitted)
    guard.note_committed(db)
    admitted, refused, _ = guard.screen(
        [cache, other], [placed("cache", 0, "a"), placed("other", 1, "a")]
    )
    assert [d.unit for d in admitted] == ["other"]
    assert [o.unit for o in refused] == ["cache"]
    assert "existing pods anti-affinity" in refused[0].detail
