from collections import Counter

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


def test_spread_domains_follow_the_node_specs_and_the_pods(store):
    """Which nodes count for a constraint is kept per view until a node's spec changes;
    the counts are read off the pods every time."""
    from cluster.crosspod.topology_spread import DO_NOT_SCHEDULE, domain_counts, spreads

    store.put_nodes([node("a", labels={"zone": "z1"}), node("b", labels={"zone": "z2"})])
    manifest = {
        "metadata": {"name": "s", "labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "web"}},
                }
            ],
        },
    }
    spread = pod_from_manifest(manifest).spec
    constraints = spreads(spread, DO_NOT_SCHEDULE)
    view = CommittedView()
    view.sync(store)
    assert domain_counts(spread, constraints, view) == [{"z1": 0, "z2": 0}]
    store.commit([labelled("web")], [Decision("u1", [PodPlacement("ns/w1", 0, ["a"], [0])])])
    view.sync(store)
    assert domain_counts(spread, constraints, view) == [{"z1": 1, "z2": 0}]
    store.put_nodes([node("b", labels={"zone": "z3"}), node("c")])  # relabelled; no zone
    view.sync(store)
    assert domain_counts(spread, constraints, view) == [{"z1": 1, "z3": 0}]


def test_pods_by_domain_follow_commits_releases_and_relabelled_nodes(store):
    store.put_nodes([node("a", labels={"zone": "z1"}), node("b", labels={"zone": "z1"})])
    web = labelled("web")
    view = CommittedView()
    view.sync(store)
    assert view.pods_by_domain(web.peer, "zone") == {}  # asked before any pod: kept up to date
    store.commit(
        [web],
        [
            Decision(
                "u1", [PodPlacement("ns/w1", 0, ["a"], [0]), PodPlacement("ns/w2", 0, ["b"], [0])]
            )
        ],
    )
    view.sync(store)
    assert view.pods_by_domain(web.peer, "zone") == {"z1": 2}
    view.add("a", web.peer)  # a placement the binder is checking
    assert view.pods_by_domain(web.peer, "zone") == {"z1": 3}
    view.add("a", web.peer, -1)
    store.release(pods=["ns/w1"])
    view.sync(store)
    assert +Counter(view.pods_by_domain(web.peer, "zone")) == {"z1": 1}
    store.put_nodes([node("b", labels={"zone": "z2"})])  # relabelled: counted anew
    view.sync(store)
    assert +Counter(view.pods_by_domain(web.peer, "zone")) == {"z2": 1}
