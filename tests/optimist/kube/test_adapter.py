"""The Kubernetes adapter against the real API server, through the fault proxy."""

import re

import pytest

from cluster.cluster_adapter import Binding
from cluster.gpus import GPU_INDICES_ANNOTATION, GPU_LOCALITY_ANNOTATION
from cluster.manifests import pod_from_manifest
from cluster.objects import Pod
from cluster.selectors import LabelSelector, Requirement
from optimist.kube.adapter import KubernetesAdapter
from optimist.kube.client import ApiError
from tests.optimist.kube.test_informer import until

OURS = frozenset({"optimist-a", "optimist-b"})


def node_doc(name, cpu="4", **labels):
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


def pod_doc(name, scheduler="optimist-a", node="", cpu="1", annotations=None, **spec):
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
    doc = {
        "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
        "spec": {"schedulerName": scheduler, "containers": [container], **spec},
    }
    if node:
        doc["spec"]["nodeName"] = node
    return doc


@pytest.fixture
def adapter(kube_api):
    api = kube_api
    api.put("nodes", node_doc("n1"))
    api.put("nodes", node_doc("n2"))
    adapter = KubernetesAdapter(api.client(), OURS).start()
    yield api, adapter
    adapter.stop()


def take_pods(adapter, count):
    found = []
    until(lambda: found.extend(adapter.take_new_pods()[0]) or len(found) >= count)
    return found


def test_only_our_profiles_unbound_pods_are_ours_to_place(adapter):
    api, adapter = adapter
    made, _ = adapter.take_node_events()
    assert sorted(n.name for n in made) == ["n1", "n2"]
    api.put("pods", pod_doc("a"))
    api.put("pods", pod_doc("b", scheduler="optimist-b"))
    api.put("pods", pod_doc("c", scheduler="default-scheduler"))
    pods = take_pods(adapter, 2)
    assert sorted(p.key for p in pods) == ["default/a", "default/b"]
    # the other scheduler binds its pod: it is usage now, never ours to place
    api.bind("default/c", "n1")
    running = []
    until(lambda: running.extend(adapter.take_running_pods()) or running)
    assert [(p.key, p.node_name) for p in running] == [("default/c", "n1")]
    assert adapter.take_new_pods() == ([], [])


def test_an_idle_loop_is_woken_by_the_watch_not_by_its_timeout(adapter):
    api, adapter = adapter
    adapter.take_node_events()
    adapter.wait_for_events(0)  # what came before is taken
    api.put("pods", pod_doc("woken"))
    assert adapter.wait_for_events(timeout_s=300)  # woken by the pod's event
    assert [p.key for p in take_pods(adapter, 1)] == ["default/woken"]


def test_a_status_change_is_no_reason_to_schedule_again_a_spec_change_is(adapter):
    """(Of a pod's spec, the server lets tolerations be added, and little else.)"""
    api, adapter = adapter
    api.put("pods", pod_doc("a"))
    take_pods(adapter, 1)
    doc = pod_doc("a")
    scheduled = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    api.put("pods", {**doc, "status": {"conditions": [scheduled]}})
    toleration = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
    tolerations = api.get("pods", "default", "a")["spec"]["tolerations"]  # admission's
    api.put("pods", {**doc, "spec": {"tolerations": [*tolerations, toleration]}})
    [again] = take_pods(adapter, 1)
    assert "gpu" in [t.key for t in again.spec.tolerations]  # beside admission's own


def test_a_heartbeat_changes_no_node_a_label_does(adapter):
    api, adapter = adapter
    adapter.take_node_events()
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady"}
    beat = {**node_doc("n1"), "status": {**node_doc("n1")["status"], "conditions": [ready]}}
    api.put("nodes", beat)
    api.put("nodes", node_doc("n2", zone="z1"))
    made = []
    until(lambda: made.extend(adapter.take_node_events()[0]) or made)
    assert [(n.name, n.labels) for n in made] == [("n2", {"zone": "z1"})]
    api.delete("nodes", "", "n2")
    gone = []
    until(lambda: gone.extend(adapter.take_node_events()[1]) or gone)
    assert gone == ["n2"]


def test_a_pod_gets_its_gpu_indices_written_before_it_is_bound(adapter):
    api, adapter = adapter
    api.put("pods", pod_doc("g"))
    take_pods(adapter, 1)
    assert adapter.bind([Binding("default/g", "n1", gpus=(1, 3))]) == [None]
    pod = api.get("pods", "default", "g")
    assert pod["metadata"]["annotations"][GPU_INDICES_ANNOTATION] == "1,3"
    assert pod["spec"]["nodeName"] == "n1"
    methods = [(r.method, r.path.rsplit("/", 1)[-1]) for r in api.requests if "/pods/g" in r.path]
    assert methods[-2:] == [("PATCH", "g"), ("POST", "binding")]


def test_binding_goes_through_the_subresource_once_and_is_reported(adapter):
    api, adapter = adapter
    api.put("pods", pod_doc("a"))
    api.put("pods", pod_doc("b"))
    take_pods(adapter, 2)
    api.delete("pods", "default", "b")  # gone before its binding
    errors = adapter.bind([Binding("default/a", "n1"), Binding("default/b", "n1")])
    assert errors[0] is None and "404" in errors[1]
    assert api.pods_bound() == {"default/a": "n1"}
    # a second binding of a pod the watch shows bound is refused without asking
    until(lambda: adapter.bound_pods().get("default/a") == "n1")
    [again] = adapter.bind([Binding("default/a", "n2")])
    bindings = [r for r in api.requests if r.path.endswith("/binding")]
    assert "already assigned to node n1" in again and len(bindings) == 2  # a, and b
    assert adapter.flush_reports()
    [event] = api.events_for("default/a")
    assert (event["reason"], event["type"]) == ("Scheduled", "Normal")
    assert event["message"] == "Successfully assigned default/a to n1"
    assert re.fullmatch(r"a\.[0-9a-f]{16}", event["metadata"]["name"])  # as client-go names it
    # our own binding, confirmed by the watch, is not somebody else's running pod
    assert adapter.take_running_pods() == []


def test_failures_and_nominations_are_written_where_kubectl_shows_them(adapter):
    api, adapter = adapter
    api.put("pods", pod_doc("a"))
    take_pods(adapter, 1)
    message = "0/2 nodes are available: 2 Insufficient cpu."
    adapter.report_unschedulable([("default/a", "Unschedulable", message)])
    adapter.nominate({"default/a": "n2"})
    assert adapter.flush_reports()
    status = api.get("pods", "default", "a")["status"]
    [condition] = status["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "PodScheduled",
        "False",
        "Unschedulable",
    )
    assert condition["message"] == message and status["nominatedNodeName"] == "n2"
    [event] = api.events_for("default/a")
    assert (event["reason"], event["type"], event["message"]) == (
        "FailedScheduling",
        "Warning",
        message,
    )
    # our own patches come back through the watch: no reason to schedule it again
    assert adapter.take_new_pods() == ([], [])


def test_a_pod_made_again_under_the_same_name_gets_its_own_condition(adapter):
    """A StatefulSet's pod, deleted and made again as it was: the new pod has none of
    the old one's status, so the same verdict is written on it again."""
    api, adapter = adapter
    message = "0/2 nodes are available: 2 Insufficient cpu."
    uids = []
    for _ in range(2):
        uids.append(api.put("pods", pod_doc("web-0", cpu="8"))["metadata"]["uid"])
        take_pods(adapter, 1)
        adapter.report_unschedulable([("default/web-0", "Unschedulable", message)])
        assert adapter.flush_reports()
        [condition] = api.get("pods", "default", "web-0")["status"]["conditions"]
        assert (condition["reason"], condition["message"]) == ("Unschedulable", message)
        api.delete("pods", "default", "web-0")
        until(lambda: adapter.take_deleted_pods() == ["default/web-0"])
    assert uids[0] != uids[1]


def test_the_explain_hint_ends_the_condition_and_leaves_the_event_as_upstream_s(kube_api):
    api = kube_api
    adapter = KubernetesAdapter(api.client(), OURS, explain_hint=True).start()
    try:
        api.put("pods", pod_doc("a"))
        take_pods(adapter, 1)
        message = "0/2 nodes are available: 2 Insufficient cpu."
        adapter.report_unschedulable([("default/a", "Unschedulable", message)])
        assert adapter.flush_reports()
        [condition] = api.get("pods", "default", "a")["status"]["conditions"]
        assert condition["message"] == (
            f"{message} Each plugin's verdict on each node: optimist explain default/a"
        )
        [event] = api.events_for("default/a")
        assert event["message"] == message
    finally:
        adapter.stop()


def test_priority_is_the_priority_class_s(kube_api):
    """The server's Priority admission writes spec.priority from the class (the global
    default where none is named), and refuses a pod that writes its own."""
    api = kube_api
    api.put("priorityclasses", {"metadata": {"name": "high"}, "value": 1000})
    api.put("priorityclasses", {"metadata": {"name": "low"}, "value": 5, "globalDefault": True})
    adapter = KubernetesAdapter(api.client(), OURS).start()
    try:
        api.put("pods", pod_doc("a", priorityClassName="high"))
        api.put("pods", pod_doc("b"))
        with pytest.raises(ApiError, match="priority"):
            api.put("pods", pod_doc("c", priority=3))
        pods = {p.name: p.priority for p in take_pods(adapter, 2)}
        assert pods == {"a": 1000, "b": 5}
    finally:
        adapter.stop()


def test_a_bad_pod_is_an_error_naming_its_field_and_the_rest_go_on(adapter):
    """A pod the server accepts and optimist cannot read: an annotation of its own."""
    api, adapter = adapter
    api.put("pods", pod_doc("bad", annotations={GPU_LOCALITY_ANNOTATION: "sideways"}))
    api.put("pods", pod_doc("good"))
    pods, errors = [], []

    def taken():
        p, e = adapter.take_new_pods()
        pods.extend(p)
        errors.extend(e)
        return len(pods) + len(errors) >= 2

    until(taken)
    assert [p.name for p in pods] == ["good"]
    [(key, error)] = errors
    assert key == "default/bad" and GPU_LOCALITY_ANNOTATION in str(error)
    assert "sideways" in str(error)


def test_deletions_and_finished_pods_give_their_room_back(adapter):
    api, adapter = adapter
    api.put("pods", pod_doc("x", scheduler="default-scheduler", node="n1"))
    until(lambda: adapter.take_running_pods())
    done = pod_doc("x", scheduler="default-scheduler", node="n1")
    api.put("pods", {**done, "status": {"phase": "Succeeded"}})
    api.put("pods", pod_doc("y"))
    take_pods(adapter, 1)
    api.delete("pods", "default", "y")
    gone = []
    until(lambda: gone.extend(adapter.take_deleted_pods()) or len(gone) >= 2)
    assert sorted(gone) == ["default/x", "default/y"]


def test_namespace_labels_are_passed_on_when_they_change(adapter):
    api, adapter = adapter
    api.put("namespaces", {"metadata": {"name": "prod", "labels": {"env": "live"}}})
    made = {}
    until(lambda: made.update(adapter.take_namespace_events()[0]) or "prod" in made)
    # the server labels every namespace with its name
    assert made["prod"] == {"env": "live", "kubernetes.io/metadata.name": "prod"}
    api.put("namespaces", {"metadata": {"name": "prod", "labels": {"env": "live"}}})  # same
    api.delete("namespaces", "", "prod")
    events = []
    until(lambda: events.append(adapter.take_namespace_events()) or events[-1][1])
    assert events[-1][1] == ["prod"]
    assert not any("prod" in made for made, _ in events)  # the same labels: nothing passed on


def test_quotas_and_reservations_come_from_their_custom_resources(adapter):
    api, adapter = adapter
    api.put("namespaces", {"metadata": {"name": "team-a"}})
    quota = {
        "metadata": {"name": "team-a", "namespace": "team-a"},
        "spec": {"min": {"cpu": "4"}, "max": {"cpu": "8"}},
    }
    api.put("elasticquotas", quota)
    template = pod_doc("vip-room", scheduler="optimist-a", cpu="2")
    template["metadata"] = {"namespace": "default"}
    api.put(
        "reservations",
        {
            "metadata": {"name": "r"},
            "spec": {"template": template, "owners": [{"object": {"name": "vip"}}], "ttl": "30m"},
        },
    )
    other = pod_doc("x", scheduler="default-scheduler")
    other["metadata"] = {"namespace": "default"}
    api.put(
        "reservations",
        {
            "metadata": {"name": "not-ours"},
            "spec": {"template": other, "owners": [{"object": {"name": "y"}}]},
        },
    )
    quotas, reservations = [], []
    until(lambda: quotas.extend(adapter.take_new_quotas()) or quotas)
    until(lambda: reservations.extend(adapter.take_new_reservations()) or reservations)
    assert [(q.name, q.namespaces) for q in quotas] == [("team-a", ("team-a",))]
    assert [r.hold_key for r in reservations] == ["default/vip"]


def test_a_repeated_failure_counts_up_on_one_event_and_writes_the_condition_once(adapter):
    api, adapter = adapter
    api.put("pods", pod_doc("a"))
    take_pods(adapter, 1)
    full = "0/2 nodes are available: 2 Insufficient cpu."
    for _ in range(3):
        adapter.report_unschedulable([("default/a", "Unschedulable", full)])
    assert adapter.flush_reports()
    [event] = api.events_for("default/a")
    assert event["count"] == 3 and event["message"] == full
    patches = [r for r in api.requests if r.method == "PATCH" and r.path.endswith("/a/status")]
    assert len(patches) == 1  # the condition did not change: written once
    other = "0/2 nodes are available: 2 node(s) had untolerated taint."
    adapter.report_unschedulable([("default/a", "Unschedulable", other)])
    assert adapter.flush_reports()
    assert sorted(e["message"] for e in api.events_for("default/a")) == sorted([full, other])


def test_a_snapshot_reads_every_bound_pod_afresh_beside_the_watched_nodes(adapter):
    """What the node store is built again from when Redis has lost it."""
    api, adapter = adapter
    api.put("namespaces", {"metadata": {"name": "default", "labels": {"env": "live"}}})
    api.put("pods", pod_doc("mine", node="n1", cpu="2"))
    api.put("pods", pod_doc("theirs", scheduler="default-scheduler", node="n2"))
    api.put("pods", pod_doc("pending"))
    gone = pod_doc("done", node="n2")
    api.put("pods", {**gone, "status": {"phase": "Succeeded"}})  # holds nothing
    until(lambda: adapter.bound_pods().keys() >= {"default/mine", "default/theirs"})
    until(lambda: "default" in adapter.snapshot().namespaces)
    state = adapter.snapshot()
    assert sorted(n.name for n in state.nodes) == ["n1", "n2"]
    assert state.namespaces["default"]["env"] == "live"
    assert sorted((p.key, p.node_name) for p in state.pods) == [
        ("default/mine", "n1"),
        ("default/theirs", "n2"),
    ]
    assert dict(next(p for p in state.pods if p.key == "default/mine").spec.requests)["cpu"] == 2000


def owned_by(kind, name, api_version="apps/v1"):
    ref = {"apiVersion": api_version, "kind": kind, "name": name, "uid": f"uid-{name}"}
    return {"ownerReferences": [{**ref, "controller": True}]}


def labelled_pod(name, labels, owner=None, **spec):
    doc = pod_doc(name, **spec)
    doc["metadata"].update(labels=labels, **(owner or {}))
    return doc


def test_each_pod_carries_the_selector_of_the_services_and_controller_that_select_it(adapter):
    api, adapter = adapter
    port = [{"port": 80}]
    api.put(
        "services",
        {"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": port}},
    )
    api.put("services", {"metadata": {"name": "all"}, "spec": {"ports": port}})
    replicas = {
        "selector": {"matchLabels": {"app": "shop"}},
        "template": {
            "metadata": {"labels": {"app": "shop"}},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        },
    }
    api.put("replicasets", {"metadata": {"name": "shop"}, "spec": {"replicas": 0, **replicas}})
    own = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]
    web = labelled_pod("a", {"app": "web", "tier": "front"})
    # a Service is read when a pod is taken: this one's watch has told it by then
    until(lambda: adapter.selectors.selector_for(pod_from_manifest(web)) is not None)
    api.put("pods", web)
    api.put("pods", labelled_pod("b", {"app": "shop"}, owned_by("ReplicaSet", "shop")))
    api.put("pods", labelled_pod("c", {"app": "web"}, topologySpreadConstraints=own))
    api.put("pods", labelled_pod("d", {"app": "db"}))
    pods = {p.name: p.spec.spread_selector for p in take_pods(adapter, 4)}
    assert pods["a"] == LabelSelector((("app", "web"),))
    assert pods["b"] == LabelSelector((), (Requirement("app", "In", ("shop",)),))
    assert pods["c"] is None and pods["d"] is None  # its own constraints; nothing selects it


def test_a_pod_waits_for_its_controller_to_be_seen(kube_api):
    api = kube_api
    adapter = KubernetesAdapter(api.client(), OURS, controller_wait_s=600).start()
    try:
        api.put("pods", labelled_pod("late", {"app": "late"}, owned_by("StatefulSet", "late")))
        held: list[Pod] = []
        until(lambda: held.extend(adapter.take_new_pods()[0]) or "default/late" in adapter.awaiting)
        assert held == []
        _set_made_of(api, "late")
        [pod] = take_pods(adapter, 1)
    finally:
        adapter.stop()
    assert pod.spec.spread_selector == LabelSelector((), (Requirement("app", "In", ("late",)),))
    assert adapter.awaiting == {}


def _set_made_of(api, name):
    set_spec = {
        "serviceName": name,
        "replicas": 0,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        },
    }
    api.put("statefulsets", {"metadata": {"name": name}, "spec": set_spec})


def test_a_start_whose_list_tells_nothing_fails_naming_the_resource(kube_api):
    """The nodes' list held unanswered: the start fails once it has told nothing for
    the sync timeout, naming the resource (a list that goes on telling, a large
    cluster's, is waited for however long it takes)."""
    kube_api.proxy.hold("/api/v1/nodes")
    adapter = KubernetesAdapter(kube_api.client(), OURS)
    try:
        with pytest.raises(TimeoutError, match="/api/v1/nodes: nothing listed for 1 s"):
            adapter.start(sync_timeout_s=1)
    finally:
        kube_api.proxy.drop()
        adapter.stop()
