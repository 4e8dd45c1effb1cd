from cluster.crosspod.committed import CommittedView
from cluster.manifests import pod_from_manifest
from cluster.messages import Decision, PodPlacement
from shards.testing import node


def labelled(app, anti=False):
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}
    if anti:
        term = {
            "topologyKey": "kubernetes.io/hostname",
            "labelSelector": {"matchLabels": {"app": app}},
        }
        spec["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }
    return pod_from_manifest({"metadata": {"name": app, "labels": {"app": app}}, "spec": spec}).spec


def test_view_follows_commits_and_releases(store):
    store.put_nodes([node("a", labels={"zone": "z1"}), node("b")])
    view = CommittedView()
    view.sync(store)
    assert set(view.node_names()) == {"a", "b"} and view.node("a").labels == {"zone": "z1"}
    web, db = labelled("web"), labelled("db", anti=True)
    store.commit(
        [web, db],
        [
            Decision(
                "u1", [PodPlacement("ns/w1", 0, ["a"], [0]), PodPlacement("ns/w2", 0, ["a"], [0])]
            ),
            Decision("u2", [PodPlacement("ns/d1", 1, ["b"], [0])]),
        ],
    )
    view.sync(store)
    assert view.peers_on("a") == {web.peer: 2}
    assert view.peers_on("b") == {db.peer: 1}
    assert view.keeping_away() == [db.peer]
    store.release(["u1"])
    view.sync(store)
    assert view.peers_on("a") == {}
    store.remove_nodes(["b"])
    view.sync(store)
    assert set(view.node_names()) == {"a"}
