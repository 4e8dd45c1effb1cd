"""The node store's Lua scripts, against a real Redis server."""

from dataclasses import replace

import msgpack
import pytest
import redis

from cluster.manifests import node_from_manifest, pod_from_manifest
from cluster.messages import Conflict, Decision, PodPlacement
from cluster.store.node_store import OBSERVED, _lua_frame
from cluster.volumes.needs import Attachable, VolumeNeeds, attach_counts
from shards.testing import node, pod_spec

COLUMNS = ["pods", "cpu", "memory"]


def spec(cpu="1", memory="1Gi"):
    return pod_from_manifest(pod_spec({"cpu": cpu, "memory": memory})).spec


def unit(key, *pods):
    """A placed unit: pods as (pod key, class index, candidate nodes)."""
    return Decision(
        key, [PodPlacement(p, c, list(nodes), [0] * len(nodes)) for p, c, nodes in pods]
    )


def test_put_nodes_versions_and_changes_since(store):
    v1 = store.put_nodes([node("a"), node("b")])
    delta = store.changes_since(0, COLUMNS)
    assert sorted(delta.names) == ["a", "b"]
    assert {n.name for n in delta.specs} == {"a", "b"}
    assert delta.version == v1
    assert store.changes_since(v1, COLUMNS).names == []
    v2 = store.put_nodes([node("b", cpu="8")])
    delta = store.changes_since(v1, COLUMNS)
    assert delta.names == ["b"] and delta.specs[0].allocatable["cpu"] == 8000
    assert delta.versions.tolist() == [v2] and v2 > v1


def test_commit_applies_and_reports_new_versions(store):
    store.put_nodes([node("a", cpu="2")])
    v0 = store.version()
    version, [outcome], _ = store.commit([spec()], [unit("u", ("ns/p", 0, ["a"]))])
    assert outcome.status == "committed" and outcome.nodes == ["a"]
    assert version > v0
    assert store.usage("a")["cpu"] == 1000 and store.usage("a")["pods"] == 1
    delta = store.changes_since(v0, COLUMNS)
    assert delta.names == ["a"] and delta.usage.tolist() == [[1, 1000, 2**30]]
    assert delta.specs == []  # usage changed, the spec did not
    assert store.committed_pods() == {"ns/p": "a"}


def test_a_reader_of_many_columns_gets_each_node_s_own_usage(store):
    """Each node with a resource of its own (scheduler_perf's extended-resource case):
    a full read, past the commit log, finds each node's usage by its own fields, the
    same as a reader of few columns sees it."""
    own = [f"example.com/bar-{i}" for i in range(100)]
    store.put_nodes(
        [
            node_from_manifest(
                {
                    "metadata": {"name": f"n{i}"},
                    "status": {"allocatable": {"cpu": "4", "pods": "110", resource: "1"}},
                }
            )
            for i, resource in enumerate(own)
        ]
    )
    pods = [pod_from_manifest(pod_spec({"cpu": "1", r: "1"})).spec for r in own[:3]]
    placed = [unit(f"u{i}", (f"ns/p{i}", i, [f"n{i}"])) for i in range(3)]
    _, outcomes, _ = store.commit(pods, placed)
    assert [o.status for o in outcomes] == ["committed"] * 3
    store.release(pods=["ns/p1"])  # a release is not logged: readers read the nodes
    columns = [*COLUMNS, *own]
    wide = store.changes_since(0, columns)
    assert not wide.from_log
    usage = dict(zip(wide.names, wide.usage.tolist(), strict=True))
    assert usage["n0"] == [1, 1000, 0, 1] + [0] * 99
    assert usage["n1"] == [0] * 103
    assert usage["n2"][:3] == [1, 1000, 0] and usage["n2"][5] == 1 and sum(usage["n2"]) == 1002
    assert all(sum(usage[f"n{i}"]) == 0 for i in range(3, 100))
    few = store.changes_since(0, columns[:5])
    assert few.names == wide.names and (few.usage == wide.usage[:, :5]).all()


def test_conflict_names_node_and_resource_and_applies_nothing(store):
    store.put_nodes([node("a", cpu="1")])
    _, [first, second], _ = store.commit(
        [spec(cpu="600m")], [unit("u1", ("ns/p1", 0, ["a"])), unit("u2", ("ns/p2", 0, ["a"]))]
    )
    assert first.status == "committed"
    assert second.status == "conflict" and second.conflict == Conflict.RESOURCES  # sent by Lua
    assert "node a" in second.detail and "cpu" in second.detail and "free 400" in second.detail
    assert store.usage("a")["cpu"] == 600
    assert store.committed_pods() == {"ns/p1": "a"}


def test_unit_is_all_or_nothing(store):
    store.put_nodes([node("a", cpu="1"), node("b", cpu="1")])
    # second pod does not fit on b after the first: nothing of the unit may stay on a
    _, [outcome], _ = store.commit(
        [spec(cpu="600m"), spec(cpu="2")],
        [unit("gang", ("ns/p1", 0, ["a"]), ("ns/p2", 1, ["b"]))],
    )
    assert outcome.status == "conflict"
    assert store.usage("a").get("cpu", 0) == 0
    assert store.committed_pods() == {}


def test_pods_of_one_unit_count_against_each_other(store):
    store.put_nodes([node("a", cpu="1")])
    _, [outcome], _ = store.commit(
        [spec(cpu="600m")], [unit("gang", ("ns/p1", 0, ["a"]), ("ns/p2", 0, ["a"]))]
    )
    assert outcome.status == "conflict"
    assert store.usage("a").get("cpu", 0) == 0


def test_pod_count_is_checked(store):
    store.put_nodes([node("a", pods="1")])
    _, outcomes, _ = store.commit(
        [spec(cpu="1m", memory="1")],
        [unit("u1", ("ns/p1", 0, ["a"])), unit("u2", ("ns/p2", 0, ["a"]))],
    )
    assert [o.status for o in outcomes] == ["committed", "conflict"]
    assert "insufficient pods" in outcomes[1].detail


def test_next_candidate_used_before_conflict(store):
    store.put_nodes([node("a", cpu="1"), node("b", cpu="1")])
    store.commit([spec(cpu="1")], [unit("u0", ("ns/p0", 0, ["a"]))])
    _, [outcome], _ = store.commit([spec(cpu="1")], [unit("u1", ("ns/p1", 0, ["a", "b"]))])
    assert outcome.status == "committed" and outcome.nodes == ["b"]


def test_bound_once_duplicates_refused(store):
    store.put_nodes([node("a")])
    store.commit([spec()], [unit("u", ("ns/p", 0, ["a"]))])
    _, [again], _ = store.commit([spec()], [unit("u", ("ns/p", 0, ["a"]))])
    _, [other_unit], _ = store.commit([spec()], [unit("u2", ("ns/p", 0, ["a"]))])
    assert again.status == "duplicate" and other_unit.status == "duplicate"
    assert store.usage("a")["cpu"] == 1000


def test_missing_node_is_a_conflict(store):
    store.put_nodes([node("a")])
    store.remove_nodes(["a"])
    _, [outcome], _ = store.commit([spec()], [unit("u", ("ns/p", 0, ["a"]))])
    assert outcome.status == "conflict" and "does not exist" in outcome.detail
    assert outcome.conflict == Conflict.NODE_GONE
    assert store.changes_since(0, COLUMNS).deleted == ["a"]


def test_a_commit_whose_reply_is_lost_is_not_sent_again(store, monkeypatch):
    """Redis ran the script, and the connection broke before the reply came back: the
    client raises rather than replay it (a replay would find its own units committed and
    answer 'duplicate', their room held for nobody). The caller settles the batch from
    the store (`committed_placements`), as the runtime's `_guarded` does."""
    store.put_nodes([node("a", cpu="2")])
    store.commit([spec()], [unit("warm", ("ns/w", 0, ["a"]))])  # the script loaded, not timed
    connection = store.client.connection_pool.get_connection()
    store.client.connection_pool.release(connection)
    read, lost = connection.read_response, []

    def reply_lost(*args, **kwargs):
        answer = read(*args, **kwargs)
        if not lost:
            lost.append(answer)
            raise redis.ConnectionError("connection reset after the script ran")
        return answer

    monkeypatch.setattr(connection, "read_response", reply_lost)
    with pytest.raises(redis.ConnectionError):
        store.commit([spec()], [unit("u", ("ns/p", 0, ["a"]))])
    assert lost  # the server did answer; the client never saw it
    monkeypatch.undo()
    assert store.committed_placements(["u"]) == {"u": {"ns/p": ("a", [])}}
    assert store.usage("a")["cpu"] == 2000  # once: the warm pod's and this one's


def test_release_gives_everything_back(store):
    store.put_nodes([node("a", cpu="2")])
    store.commit([spec()], [unit("u", ("ns/p1", 0, ["a"]), ("ns/p2", 0, ["a"]))])
    assert store.usage("a")["cpu"] == 2000
    released = store.release(["u", "never-committed"])
    assert (released.units, released.pods) == (1, 2)
    assert all(v == 0 for v in store.usage("a").values())
    assert store.committed_pods() == {}
    assert store.changes_since(released.version - 1, COLUMNS).names == ["a"]


def test_release_of_single_pods_leaves_the_rest_of_the_unit(store):
    store.put_nodes([node("a", cpu="2")])
    store.commit([spec()], [unit("u", ("ns/p1", 0, ["a"]), ("ns/p2", 0, ["a"]))])
    released = store.release(pods=["ns/p2", "ns/never-committed", ""])
    assert (released.units, released.pods) == (0, 1)
    assert store.usage("a")["cpu"] == 1000
    assert store.committed_pods() == {"ns/p1": "a"}
    # the unit's later release gives back only what it still holds
    assert store.release(["u"]).pods == 1
    assert store.usage("a")["cpu"] == 0


def test_lua_validates_its_input(store):
    store.put_nodes([node("a")])
    keys = store.keys
    forged = msgpack.packb(
        [[[["cpu", "pods"], [-1000, 1]]], [["u", [["ns/p", 0, ["a"]]]], ["v", "not-a-list"]]],
        use_bin_type=False,
    )
    raw = store._scripts.commit(keys=keys.script_keys, args=[keys.node_prefix, store.epoch, forged])
    _, results, _ = msgpack.unpackb(raw)
    assert [r[0] for r in results] == ["invalid", "invalid"]
    assert store.usage("a").get("cpu", 0) == 0


def test_large_memory_amounts_stay_exact(store):
    store.put_nodes([node("a", memory="2Ti")])
    _, [o], _ = store.commit([spec(memory="1536Gi")], [unit("u", ("ns/p", 0, ["a"]))])
    assert o.status == "committed"
    assert store.usage("a")["memory"] == 1536 * 2**30


def port_spec(*ports):
    """A small pod with host ports given as (protocol, hostIP, port)."""
    container = {
        "name": "c",
        "resources": {"requests": {"cpu": "10m"}},
        "ports": [
            {"containerPort": p, "hostPort": p, "protocol": proto, "hostIP": ip}
            for proto, ip, p in ports
        ],
    }
    return pod_from_manifest({"metadata": {"name": "p"}, "spec": {"containers": [container]}}).spec


def test_host_ports_are_rechecked_at_commit(store):
    store.put_nodes([node("a")])
    classes = [
        port_spec(("TCP", "", 8080)),  # any address
        port_spec(("TCP", "10.0.0.1", 9090)),
        port_spec(("TCP", "10.0.0.2", 9090)),  # another address: fine
        port_spec(("UDP", "", 8080)),  # another protocol: fine
        port_spec(("TCP", "10.0.0.3", 8080)),  # clashes with 0.0.0.0:8080
        port_spec(("TCP", "", 9090)),  # clashes with 10.0.0.1:9090
    ]
    _, outcomes, _ = store.commit(
        classes, [unit(f"u{i}", (f"ns/p{i}", i, ["a"])) for i in range(6)]
    )
    assert [o.status for o in outcomes] == ["committed"] * 4 + ["conflict"] * 2
    assert "host port TCP/10.0.0.3:8080 is in use" in outcomes[4].detail
    assert {o.conflict for o in outcomes[4:]} == {Conflict.HOST_PORT}
    delta = store.changes_since(0, COLUMNS)
    assert sorted(delta.ports["a"]) == [
        ("TCP", 8080, "0.0.0.0", 1),
        ("TCP", 9090, "10.0.0.1", 1),
        ("TCP", 9090, "10.0.0.2", 1),
        ("UDP", 8080, "0.0.0.0", 1),
    ]
    version = store.release(["u0"]).version
    _, [again], _ = store.commit([classes[4]], [unit("u4b", ("ns/p4b", 0, ["a"]))])
    assert again.status == "committed"
    assert ("TCP", 8080, "0.0.0.0", 1) not in store.changes_since(version - 1, COLUMNS).ports["a"]


def test_pods_of_one_unit_clash_on_ports_too(store):
    store.put_nodes([node("a"), node("b")])
    spec = port_spec(("TCP", "", 80))
    _, [same_node], _ = store.commit([spec], [unit("g1", ("ns/p1", 0, ["a"]), ("ns/p2", 0, ["a"]))])
    assert same_node.status == "conflict"
    _, [spread], _ = store.commit(
        [spec], [unit("g2", ("ns/p1", 0, ["a"]), ("ns/p2", 0, ["a", "b"]))]
    )
    assert spread.status == "committed" and spread.nodes == ["a", "b"]


def test_coarse_mode_refuses_any_change_since_the_shard_looked(store):
    store.put_nodes([node("a", cpu="4"), node("b", cpu="4")])
    seen = store.version()

    def at(unit_key, pod_key, *nodes):
        return Decision(unit_key, [PodPlacement(pod_key, 0, list(nodes), [seen] * len(nodes))])

    _, [first, second, third], _ = store.commit(
        [spec()],
        [at("u1", "ns/p1", "a"), at("u2", "ns/p2", "a"), at("u3", "ns/p3", "a", "b")],
        "coarse",
    )
    # u2 would still fit on a (fine mode accepts it), but a changed since version `seen`
    assert first.status == "committed"
    assert second.status == "conflict" and "changed since version" in second.detail
    assert second.conflict == Conflict.CHANGED
    assert third.status == "committed" and third.nodes == ["b"]
    _, [fine], _ = store.commit([spec()], [at("u4", "ns/p4", "a")])
    assert fine.status == "committed"


def test_unknown_conflict_mode_is_refused(store):
    with pytest.raises(ValueError, match="conflict mode"):
        store.commit([spec()], [], "optimistic")


def test_namespace_labels_reach_every_reader_by_version(store):
    before = store.version()
    store.put_namespaces({"prod": {"env": "live", "kubernetes.io/metadata.name": "prod"}})
    delta = store.changes_since(before, [])
    assert delta.namespaces == {"prod": {"env": "live", "kubernetes.io/metadata.name": "prod"}}
    assert store.changes_since(delta.version, []).namespaces == {}
    store.put_namespaces({}, deleted=["prod"])
    assert store.changes_since(delta.version, []).namespaces == {"prod": None}


def _same_delta(delta):
    """A delta's content, in an order of its own (both ways of reading list nodes in
    an order of their own)."""
    rows = {
        name: (v, tuple(u))
        for name, v, u in zip(
            delta.names, delta.versions.tolist(), delta.usage.tolist(), strict=True
        )
    }
    return (
        delta.version,
        rows,
        sorted(delta.committed),
        {n: sorted(e) for n, e in delta.ports.items()},
        {n: sorted(e) for n, e in delta.peers.items()},
        {n: list(g) for n, g in delta.gpus.items()},
        {n: sorted(e) for n, e in delta.attached.items()},
    )


def test_a_reader_close_behind_reads_the_commit_log_as_it_would_each_node(store):
    store.put_nodes([node("a"), node("b", gpus=4), node("c")])
    since = store.version()
    gpu_share = pod_from_manifest(pod_spec({"cpu": "1", "optimist.io/gpu-milli": "300"})).spec
    classes = [port_spec(("TCP", "", 8080)), gpu_share, spec(), spec(cpu="2")]
    store.commit(classes, [unit("u1", ("ns/p1", 0, ["a"])), unit("u2", ("ns/p2", 1, ["b"]))])
    store.commit(classes, [unit("u3", ("ns/p3", 2, ["a"])), unit("u4", ("ns/p4", 3, ["c"]))])
    store.commit(classes, [unit("u5", ("ns/p5", 1, ["b"]))])
    columns = ["pods", "cpu", "optimist.io/gpu-milli", "nvidia.com/gpu"]  # no memory
    logged = store.changes_since(since, columns, ["u1", "u4", "u9"])
    assert logged.from_log
    store.client.delete(store.keys.commit_log)
    read = store.changes_since(since, columns, ["u1", "u4", "u9"])
    assert not read.from_log
    assert _same_delta(logged) == _same_delta(read)
    assert sorted(logged.names) == ["a", "b", "c"]
    assert logged.committed == ["u1", "u4"]
    assert logged.ports == {"a": [("TCP", 8080, "0.0.0.0", 1)]}
    assert logged.gpus == {"b": [600]}  # both shares on GPU 0, as stored: the rest unused
    row = dict(zip(logged.names, logged.usage.tolist(), strict=True))["b"]
    assert row == [2, 2000, 600, 0]


def test_a_version_the_log_lacks_sends_the_reader_to_each_node(store):
    store.put_nodes([node("a"), node("b")])
    since = store.version()
    store.commit([spec()], [unit("u1", ("ns/p1", 0, ["a"])), unit("u2", ("ns/p2", 0, ["b"]))])
    released = store.release(["u1"]).version  # not a commit: the log has no record of it
    delta = store.changes_since(since, COLUMNS)
    assert not delta.from_log
    assert dict(zip(delta.names, delta.usage.tolist(), strict=True)) == {
        "a": [0, 0, 0],
        "b": [1, 1000, 2**30],
    }
    store.commit([spec()], [unit("u3", ("ns/p3", 0, ["b"]))])
    after = store.changes_since(released, COLUMNS)
    assert after.from_log and after.names == ["b"] and after.usage.tolist() == [[2, 2000, 2**31]]


def test_the_commit_log_keeps_its_last_versions(store):
    kept = 256  # COMMIT_LOG_KEPT in common.lua
    store.put_nodes([node("a", pods="1000", cpu="1000")])
    since = store.version()
    for i in range(kept + 3):
        store.commit([spec(cpu="1m", memory="1")], [unit(f"u{i}", (f"ns/p{i}", 0, ["a"]))])
    assert store.client.zcard(store.keys.commit_log) == kept
    behind = store.changes_since(since, COLUMNS)
    assert not behind.from_log and behind.usage.tolist() == [[kept + 3, kept + 3, kept + 3]]
    close = store.changes_since(store.version() - kept, COLUMNS)
    assert close.from_log and close.usage.tolist() == behind.usage.tolist()


EBS = "attachable-volumes-csi-ebs.csi.aws.com"
EFS = "attachable-volumes-csi-efs.csi.aws.com"
IN_TREE_EBS = "kubernetes.io/aws-ebs"


def limited(name, *limits, migrated=()):
    """A node that may attach `limits` ((limit key, volumes)), with these in-tree
    plugins migrated to CSI."""
    n = node(name)
    n.volume_limits = tuple(limits)
    n.migrated_plugins = tuple(migrated)
    return n


def ebs(handle, plugin=""):
    return Attachable(EBS, f"ebs.csi.aws.com/{handle}", plugin)


def attaching(*volumes):
    """The volumes each pod of a class attaches (classes of `commit_attaching`)."""
    return volumes


def commit_attaching(store, classes, decisions, mode="fine"):
    """Commit small pods, those of class i attaching the volumes `classes[i]` names (each
    pod's own, on its placement, as a shard sends them)."""
    specs = [
        replace(spec(cpu="10m", memory="1"), volumes=VolumeNeeds(attach=attach_counts(volumes)))
        for volumes in classes
    ]
    for decision in decisions:
        for placement in decision.placements:
            placement.volumes = list(classes[placement.cls])
    return store.commit(specs, decisions, mode)


def attached(store, name):
    """A node's attached volumes as a reader gets them: {volume handle: pods}."""
    entries = store.changes_since(0, COLUMNS).attached.get(name, [])
    return {volume.rsplit("/", 1)[1]: pods for _, volume, pods in entries}


def test_volume_limits_are_stored_with_the_node(store):
    store.put_nodes([limited("a", (EBS, 2), (EFS, 5), migrated=[IN_TREE_EBS]), node("b")])
    fields = store._hash(store.keys.node("a"))
    assert msgpack.unpackb(fields[b"vl"]) == {EBS: 2, EFS: 5}
    assert msgpack.unpackb(fields[b"mp"]) == [IN_TREE_EBS]
    [spec_a] = [n for n in store.changes_since(0, COLUMNS).specs if n.name == "a"]
    assert spec_a.volume_limits == ((EBS, 2), (EFS, 5))
    assert not {b"vl", b"mp"} & store._hash(store.keys.node("b")).keys()
    store.put_nodes([node("a")])  # its CSINode lost its drivers
    assert not {b"vl", b"mp"} & store._hash(store.keys.node("a")).keys()
    for limits, migrated in (({EBS: -1}, []), ({EBS: 1}, [""])):
        with pytest.raises(redis.ResponseError, match="node c: bad"):
            store._run("put_nodes", _lua_frame([["c", b"", {}, {}, limits, migrated]]))


def test_lua_validates_attachable_volumes(store):
    store.put_nodes([limited("a", (EBS, 1))])
    keys = store.keys

    def commit(attach):
        cls = [["pods"], [1], [], "peer", "", False, ""]
        forged = _lua_frame([[cls], [["u", [["ns/p", 0, ["a"], [0], [], attach]]]]])
        raw = store._scripts.commit(
            keys=keys.script_keys, args=[keys.node_prefix, store.epoch, forged]
        )
        return msgpack.unpackb(raw)[1][0][0]

    assert commit([[EBS, "ebs.csi.aws.com/v1"]]) == "invalid"  # no plugin
    assert commit([[EBS, "", ""]]) == "invalid"
    assert commit([[EBS, "ebs.csi.aws.com/v1", ""]]) == "committed"


def test_attach_limits_hold_across_commits(store):
    store.put_nodes([limited("a", (EBS, 2))])
    classes = [attaching(ebs(v)) for v in ("v1", "v2", "v3")] + [attaching(ebs("v1"), ebs("v1"))]
    # two shards' commits, each placed against a view without the other's volume
    for i in range(2):
        _, [o], _ = commit_attaching(store, classes, [unit(f"u{i}", (f"ns/p{i}", i, ["a"]))])
        assert o.status == "committed"
    _, [third, shared], _ = commit_attaching(
        store, classes, [unit("u2", ("ns/p2", 2, ["a"])), unit("u3", ("ns/p3", 3, ["a"]))]
    )
    assert third.status == "conflict" and third.conflict == Conflict.VOLUME_LIMIT
    assert third.detail == (
        f"pod ns/p2: node a: attaching 1 more volumes of {EBS} would make 3, over its limit 2"
    )
    assert shared.status == "committed"  # v1 is attached already: counted once
    assert attached(store, "a") == {"v1": 2, "v2": 1}


def test_a_limit_key_the_node_does_not_have_is_not_checked(store):
    store.put_nodes([limited("a", (EBS, 1))])
    efs = [Attachable(EFS, f"efs.csi.aws.com/fs-{i}") for i in range(3)]
    _, [o], _ = commit_attaching(store, [attaching(*efs)], [unit("u", ("ns/p", 0, ["a"]))])
    assert o.status == "committed"
    assert attached(store, "a") == {"fs-0": 1, "fs-1": 1, "fs-2": 1}


def test_a_migrated_volume_counts_only_where_its_plugin_is_migrated(store):
    store.put_nodes([limited("a", (EBS, 1), migrated=[IN_TREE_EBS]), limited("b", (EBS, 1))])
    classes = [attaching(ebs("v1")), attaching(ebs("v2", IN_TREE_EBS))]
    commit_attaching(
        store, classes, [unit("u1", ("ns/p1", 0, ["a"])), unit("u2", ("ns/p2", 0, ["b"]))]
    )
    _, [on_a, on_b], _ = commit_attaching(
        store, classes, [unit("u3", ("ns/p3", 1, ["a"])), unit("u4", ("ns/p4", 1, ["b"]))]
    )
    assert on_a.conflict == Conflict.VOLUME_LIMIT
    assert on_b.status == "committed"
    assert attached(store, "b") == {"v1": 1}  # in-tree there: not this limit's


def test_release_detaches_the_pod_s_volumes(store):
    store.put_nodes([limited("a", (EBS, 1))])
    classes = [attaching(ebs("v1")), attaching(ebs("v2"))]
    commit_attaching(
        store, classes, [unit("u1", ("ns/p1", 0, ["a"])), unit("u2", ("ns/p2", 0, ["a"]))]
    )
    _, [refused], _ = commit_attaching(store, classes, [unit("u3", ("ns/p3", 1, ["a"]))])
    assert refused.conflict == Conflict.VOLUME_LIMIT
    store.release(pods=["ns/p1"])
    assert attached(store, "a") == {"v1": 1}
    store.release(units=["u2"])
    assert attached(store, "a") == {}
    assert b"av" not in store._hash(store.keys.node("a"))
    _, [fits], _ = commit_attaching(store, classes, [unit("u3", ("ns/p3", 1, ["a"]))])
    assert fits.status == "committed"


def test_pods_the_cluster_runs_count_their_volumes_unchecked(store):
    store.put_nodes([limited("a", (EBS, 1))])
    classes = [attaching(ebs("v1")), attaching(ebs("v2")), attaching(ebs("v3"))]
    placed = [unit("u1", ("ns/p1", 0, ["a"])), unit("u2", ("ns/p2", 1, ["a"]))]
    _, outcomes, _ = commit_attaching(store, classes, placed, OBSERVED)
    assert [o.status for o in outcomes] == ["committed"] * 2
    assert attached(store, "a") == {"v1": 1, "v2": 1}
    _, [over, shared], _ = commit_attaching(
        store, classes, [unit("u3", ("ns/p3", 2, ["a"])), unit("u4", ("ns/p4", 0, ["a"]))]
    )
    assert (
        over.conflict == Conflict.VOLUME_LIMIT and "would make 3, over its limit 1" in over.detail
    )
    assert shared.status == "committed"


def test_readers_get_attached_volumes_from_the_log_and_from_each_node(store):
    store.put_nodes([limited("a", (EBS, 3)), node("b")])
    since = store.version()
    classes = [attaching(ebs("v1")), attaching(ebs("v1"), ebs("v2")), attaching()]
    commit_attaching(
        store, classes, [unit("u1", ("ns/p1", 0, ["a"])), unit("u2", ("ns/p2", 2, ["b"]))]
    )
    commit_attaching(
        store, classes, [unit("u3", ("ns/p3", 1, ["a"]))]
    )  # a's last record holds both
    logged = store.changes_since(since, COLUMNS)
    assert logged.from_log
    assert list(logged.attached) == ["a"]
    assert sorted(logged.attached["a"]) == [
        (EBS, "ebs.csi.aws.com/v1", 2),
        (EBS, "ebs.csi.aws.com/v2", 1),
    ]
    store.client.delete(store.keys.commit_log)
    read = store.changes_since(since, COLUMNS)
    assert not read.from_log and _same_delta(read) == _same_delta(logged)


def test_a_unit_whose_second_pod_passes_the_limit_commits_nothing(store):
    store.put_nodes([limited("a", (EBS, 2)), node("b")])
    classes = [attaching(ebs("v1"), ebs("v2")), attaching(ebs("v3")), attaching(ebs("v1"))]
    gang = unit("g", ("ns/p1", 0, ["a"]), ("ns/p2", 1, ["a"]))
    _, [outcome], _ = commit_attaching(store, classes, [gang])
    assert outcome.conflict == Conflict.VOLUME_LIMIT and "pod ns/p2: node a" in outcome.detail
    assert store.committed_pods() == {} and attached(store, "a") == {}
    # a pod sharing a volume an earlier pod of its unit attaches adds nothing to the count
    _, [shares], _ = commit_attaching(
        store, classes, [unit("g2", ("ns/p1", 0, ["a"]), ("ns/p2", 2, ["a"]))]
    )
    assert shares.status == "committed" and attached(store, "a") == {"v1": 2, "v2": 1}


def claiming(store, decisions, claims, mode="fine"):
    """Commit small pods, pod i of each unit holding the ReadWriteOncePod claims
    `claims[pod key]` names (each pod's own, on its placement, as a shard sends them)."""
    for decision in decisions:
        for placement in decision.placements:
            placement.claims = list(claims.get(placement.pod, ()))
    return store.commit([spec(cpu="10m", memory="1")], decisions, mode)


def test_a_read_write_once_pod_claim_is_one_committed_pod_s_at_a_time(store):
    store.put_nodes([node("a"), node("b")])
    mine = {"ns/p1": ["ns/data"], "ns/p2": ["ns/data"], "ns/p3": ["ns/data"]}
    # two shards' pods of one claim, on two nodes, committed in one batch
    _, [first, second], _ = claiming(
        store, [unit("u1", ("ns/p1", 0, ["a"])), unit("u2", ("ns/p2", 0, ["b"]))], mine
    )
    assert first.status == "committed"
    assert second.conflict == Conflict.VOLUME_IN_USE
    assert second.detail == "pod ns/p2: its ReadWriteOncePod claim ns/data is in use by pod ns/p1"
    _, [later], _ = claiming(store, [unit("u3", ("ns/p3", 0, ["b"]))], mine)
    assert later.conflict == Conflict.VOLUME_IN_USE  # a later batch sees it too
    # two pods of one unit on one claim: the unit commits nothing
    both = unit("g", ("ns/g1", 0, ["a"]), ("ns/g2", 0, ["b"]))
    _, [gang], _ = claiming(store, [both], {"ns/g1": ["ns/x"], "ns/g2": ["ns/x"]})
    assert (
        gang.conflict == Conflict.VOLUME_IN_USE
        and store.client.hget(store.keys.claims, "ns/x") is None
    )
    store.release(pods=["ns/p1"])  # its claim is free again
    _, [now], _ = claiming(store, [unit("u3", ("ns/p3", 0, ["b"]))], mine)
    assert now.status == "committed"
    assert store.client.hget(store.keys.claims, "ns/data") == b"ns/p3"


def test_pods_the_cluster_runs_hold_their_claims_unchecked(store):
    store.put_nodes([node("a")])
    claims = {"ns/p1": ["ns/data"], "ns/p2": ["ns/data"], "ns/p3": ["ns/data"]}
    placed = [unit("u1", ("ns/p1", 0, ["a"])), unit("u2", ("ns/p2", 0, ["a"]))]
    _, outcomes, _ = claiming(store, placed, claims, OBSERVED)
    assert [o.status for o in outcomes] == ["committed"] * 2  # there, whatever the claim
    _, [mine], _ = claiming(store, [unit("u3", ("ns/p3", 0, ["a"]))], claims)
    assert mine.conflict == Conflict.VOLUME_IN_USE


def picking(store, decisions, picks):
    """Commit small pods, each given on each candidate the free volumes `picks[pod key]`
    names per candidate ((claim, volume) each), as the control process sends them."""
    for decision in decisions:
        for placement in decision.placements:
            placement.picks = [tuple(c) for c in picks.get(placement.pod, ())]
    return store.commit([spec(cpu="10m", memory="1")], decisions)


def given(store):
    """The store's free volumes given to claims: volume -> claim."""
    held = store.client.hgetall(store.keys.given_volumes)
    return {k.decode(): v.decode() for k, v in held.items()}


def test_a_free_volume_is_given_to_one_claim(store):
    store.put_nodes([node("a"), node("b")])
    picks = {
        "ns/p1": [[("ns/c1", "pv1")]],
        "ns/p2": [[("ns/c2", "pv1")], [("ns/c2", "pv2")]],  # on a, then b
        "ns/p3": [[("ns/c3", "pv1")]],
        "ns/p4": [[("ns/c1", "pv1")]],  # a second pod of c1's
    }
    # two shards' pods picking one volume in one batch: the second goes to its next node
    _, [first, second], _ = picking(
        store, [unit("u1", ("ns/p1", 0, ["a"])), unit("u2", ("ns/p2", 0, ["a", "b"]))], picks
    )
    assert first.nodes == ["a"] and second.nodes == ["b"]
    assert given(store) == {"pv1": "ns/c1", "pv2": "ns/c2"}
    _, [later, shares], _ = picking(
        store, [unit("u3", ("ns/p3", 0, ["a"])), unit("u4", ("ns/p4", 0, ["a"]))], picks
    )
    assert later.conflict == Conflict.VOLUME_TAKEN
    assert later.detail == (
        "pod ns/p3: node a: volume pv1, picked for claim ns/c3, is given to claim ns/c1"
    )
    assert shares.status == "committed"  # pods of one claim share its volume
    store.release(pods=["ns/p1", "ns/p4"])  # its volume is free again
    _, [now], _ = picking(store, [unit("u3", ("ns/p3", 0, ["a"]))], picks)
    assert now.status == "committed" and given(store) == {"pv1": "ns/c3", "pv2": "ns/c2"}


def test_a_gang_whose_claims_cannot_all_have_a_volume_commits_nothing(store):
    store.put_nodes([node("a")])
    gang = unit("g", ("ns/g1", 0, ["a"]), ("ns/g2", 0, ["a"]))
    # two members picking one volume, then one left without any
    for second in ("pv1", ""):
        picks = {"ns/g1": [[("ns/c1", "pv1")]], "ns/g2": [[("ns/c2", second)]]}
        _, [outcome], _ = picking(store, [gang], picks)
        assert outcome.conflict == Conflict.VOLUME_TAKEN, outcome
        assert store.committed_pods() == {} and given(store) == {}
    assert "no free volume it reaches is left for claim ns/c2" in outcome.detail
    picks = {"ns/g1": [[("ns/c1", "pv1")]], "ns/g2": [[("ns/c2", "pv2")]]}
    _, [whole], _ = picking(store, [gang], picks)
    assert whole.status == "committed" and given(store) == {"pv1": "ns/c1", "pv2": "ns/c2"}
    assert store.given_volumes(["pv2", "pv3"]) == {"pv2": "ns/c2"}
    store.release(units=["g"])
    assert given(store) == {}
