"""Several binders: the fences that keep the driver's cross-pod re-check exact, on a real store."""

from binder.binder import Binder
from binder.fences import ANY_NAMESPACE, namespaces_watched
from cluster.manifests import pod_from_manifest
from cluster.messages import CommitReply, Conflict, Decision, PodPlacement
from cluster.store import Fences
from optimist.offline.simulator import SimulatedCluster
from optimist.settings import DEFAULT_PROFILE
from shards.testing import node

HOST = "kubernetes.io/hostname"


def pod_spec(app, anti=False, namespace="default", term_namespaces=None, selector=None):
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}
    if anti:
        term = {"topologyKey": HOST, "labelSelector": {"matchLabels": {"app": app}}}
        if term_namespaces:
            term["namespaces"] = term_namespaces
        if selector is not None:
            term["namespaceSelector"] = selector
        spec["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }
    meta = {"name": app, "namespace": namespace, "labels": {"app": app}}
    return pod_from_manifest({"metadata": meta, "spec": spec}).spec


def placed(pod, cls, *nodes):
    return Decision(pod, [PodPlacement(pod, cls, list(nodes), [0] * len(nodes))])


def actor_commit(store, classes, decisions, keep_away_seen):
    """What a binder actor does with a batch (binder/binder_actor.py), without Ray."""
    fences = Fences(keep_away_seen=keep_away_seen, count_namespaces=True)
    return store.commit(classes, decisions, "fine", fences)


def make_binder(store, *pods):
    """A fenced driver's binder over nodes a, b, c, with these pods in its cluster."""
    cluster = SimulatedCluster()
    nodes = [node(n, labels={HOST: n}) for n in ("a", "b", "c")]
    cluster.nodes.update({n.name: n for n in nodes})
    store.put_nodes(nodes)
    for key in pods:
        namespace, name = key.split("/")
        manifest = {"metadata": {"name": name}, "spec": {"containers": [{"name": "c"}]}}
        cluster.create_pods(manifest, 1, namespace)
    return Binder(store, cluster, [DEFAULT_PROFILE], fenced=True)


def test_the_namespaces_a_pods_rules_watch():
    assert namespaces_watched(pod_spec("web", anti=True)) == {"default"}
    listed = pod_spec("web", anti=True, namespace="a", term_namespaces=["b", "c"])
    assert namespaces_watched(listed) == {"a", "b", "c"}
    assert ANY_NAMESPACE in namespaces_watched(pod_spec("web", anti=True, selector={}))


def test_a_unit_checked_before_another_binder_committed_in_its_namespace_conflicts(store):
    binder = make_binder(store)
    web, loose = pod_spec("web", anti=True), pod_spec("web")
    screened = binder.guard.screen([web], [placed("default/w", 0, "a")])
    assert screened.admitted and screened.fences == [[("default", 0)]]
    # meanwhile an actor commits a pod the check did not see, on the same node
    [moved] = actor_commit(store, [loose], [placed("default/l", 0, "a")], 0).outcomes
    assert moved.committed
    committed = store.commit([web], screened.admitted, "fine", Fences(units=screened.fences))
    [outcome] = committed.outcomes
    assert outcome.status == "conflict"
    assert "namespace default were committed by another binder" in outcome.detail
    assert outcome.conflict == Conflict.FENCE
    assert store.committed_pods() == {"default/l": "a"}


def test_commits_in_other_namespaces_do_not_fence(store):
    binder = make_binder(store)
    web, elsewhere = pod_spec("web", anti=True), pod_spec("web", namespace="other")
    screened = binder.guard.screen([web], [placed("default/w", 0, "a")])
    actor_commit(store, [elsewhere], [placed("other/l", 0, "a")], 0)
    committed = store.commit([web], screened.admitted, "fine", Fences(units=screened.fences))
    assert committed.outcomes[0].committed


def test_a_batch_routed_before_a_keep_away_peer_was_committed_conflicts(store):
    binder = make_binder(store, "default/w")
    web, loose = pod_spec("web", anti=True), pod_spec("web")
    request = binder.request_for_actor([loose], [placed("default/l", 0, "a")])
    assert request is not None and request.keep_away_seen == 0  # nothing keeps it away yet
    [w] = binder.process([web], [placed("default/w", 0, "a")])
    assert w.status == "bound"
    late = actor_commit(store, request.classes, request.decisions, request.keep_away_seen)
    assert late.keep_away == 1
    assert late.outcomes[0].status == "conflict" and "anti-affinity" in late.outcomes[0].detail
    assert late.outcomes[0].conflict == Conflict.CROSS_POD
    # routed again, the pod is one the committed web keeps away: the driver checks it
    assert binder.request_for_actor([loose], [placed("default/l", 0, "a")]) is None


def test_an_actor_reply_that_shows_a_new_keep_away_peer_makes_routing_look_again(store):
    binder = make_binder(store)
    web, loose = pod_spec("web", anti=True), pod_spec("web")
    # a web pod of a profile the driver does not check, committed by another binder
    other = actor_commit(store, [web], [placed("default/w", 0, "a")], 0)
    assert other.keep_away == 1
    binder.guard.saw_keep_away(other.keep_away)
    assert binder.request_for_actor([loose], [placed("default/l", 0, "b")]) is None


def test_the_keep_away_count_moves_once_per_distinct_peer(store):
    make_binder(store)
    web = pod_spec("web", anti=True)
    first = store.commit([web], [placed("default/w0", 0, "a")])
    again = store.commit([web], [placed("default/w1", 0, "b")])
    plain = store.commit([pod_spec("db")], [placed("default/d", 0, "c")])
    assert (first.keep_away, again.keep_away, plain.keep_away) == (1, 1, 1)


def test_without_a_reply_the_store_tells_what_a_dead_actor_committed(store):
    binder = make_binder(store, "default/d0", "default/d1")
    plain = pod_spec("db")
    decisions = [placed("default/d0", 0, "a"), placed("default/d1", 0, "b")]
    actor_commit(store, [plain], decisions[:1], 0)  # the actor got this far, then died
    outcomes = binder.take_reply([plain], decisions, None)
    assert [(o.unit, o.status) for o in outcomes] == [
        ("default/d0", "bound"),
        ("default/d1", "conflict"),
    ]
    assert binder.cluster.bindings == {"default/d0": "a"}
    assert store.committed_pods() == {"default/d0": "a"}


def test_a_reply_is_bound_like_a_commit_of_the_drivers_own(store):
    binder = make_binder(store, "default/d0")
    plain = pod_spec("db")
    decisions = [placed("default/d0", 0, "a")]
    committed = actor_commit(store, [plain], decisions, 0)
    reply = CommitReply.decode(CommitReply(committed.outcomes, committed.keep_away).encode())
    [outcome] = binder.take_reply([plain], decisions, reply)
    assert outcome.status == "bound" and binder.cluster.bindings == {"default/d0": "a"}
