"""The configuration loader: kube-scheduler v1.30's defaults, merging and validation."""

from __future__ import annotations

import pytest

from optimist.configuration import (
    REASON_DRA,
    REASON_IN_TREE_LIMITS,
    REASON_MISSING,
    REASON_VOLUME_CAPACITY,
    InactivePlugin,
    default_configuration,
    load_file,
    parse_configuration,
)
from optimist.settings import DEFAULT_PROFILE, Settings
from shards.plugins import registry
from tests.optimist.conftest import CONFIGS

pytestmark = pytest.mark.usefixtures("fixed_registry")

# kube-scheduler v1.30's default profile after multiPoint expansion, point by point.
UPSTREAM_EXPANDED = {
    "preEnqueue": ("SchedulingGates",),
    "queueSort": ("PrioritySort",),
    "preFilter": (
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "EBSLimits",
        "GCEPDLimits",
        "NodeVolumeLimits",
        "AzureDiskLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
    ),
    "filter": (
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "EBSLimits",
        "GCEPDLimits",
        "NodeVolumeLimits",
        "AzureDiskLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
    ),
    "postFilter": ("DefaultPreemption",),
    "preScore": (
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
    ),
    "score": (
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
    ),
    "reserve": ("VolumeBinding",),
    "permit": (),
    "preBind": ("VolumeBinding",),
    "bind": ("DefaultBinder",),
    "postBind": (),
}
UPSTREAM_WEIGHTS = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "VolumeBinding": 1,  # no weight in the default set: upstream makes it 1
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
    "NodeResourcesBalancedAllocation": 1,
    "ImageLocality": 1,
}
CPU_MEMORY = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
UPSTREAM_ARGS = {
    "DefaultPreemption": {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
    "InterPodAffinity": {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False},
    "NodeAffinity": {},
    "NodeResourcesBalancedAllocation": {"resources": CPU_MEMORY},
    "NodeResourcesFit": {"scoringStrategy": {"type": "LeastAllocated", "resources": CPU_MEMORY}},
    "PodTopologySpread": {"defaultingType": "System"},
    "VolumeBinding": {"bindTimeoutSeconds": 600},
}
DEFAULT_PROFILES = Settings().profiles
HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


@pytest.mark.parametrize("text", ["", HEAD, HEAD + "profiles: []\n", "---\n---\n"])
def test_an_empty_file_or_no_profiles_gives_upstreams_default_profile(text):
    c = parse_configuration(text)
    [expanded] = c.expanded
    assert expanded.scheduler_name == "default-scheduler"
    assert expanded.points == UPSTREAM_EXPANDED
    assert expanded.weights == UPSTREAM_WEIGHTS
    assert expanded.args == UPSTREAM_ARGS
    assert (c.parallelism, c.percentage_of_nodes_to_score) == (16, 0)
    assert (c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds) == (1, 10)
    assert c.extenders == ()
    assert c.leader_election.resource_lock == "leases"
    assert c.leader_election.lease_duration.seconds == 15.0
    assert c.client_connection.to_wire() == {
        "kubeconfig": "",
        "acceptContentTypes": "",
        "contentType": "application/vnd.kubernetes.protobuf",
        "qps": 50.0,
        "burst": 100,
    }
    assert c.enable_profiling and c.enable_contention_profiling
    [profile] = c.profiles
    assert profile.filters == (
        "NodeUnschedulable",
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
    )
    assert profile.scorers == (("TaintToleration", 3), ("NodeResourcesFit", 1))
    assert profile.args == {
        "NodeAffinity": {},
        "NodeResourcesFit": UPSTREAM_ARGS["NodeResourcesFit"],
        "DefaultPreemption": UPSTREAM_ARGS["DefaultPreemption"],  # the driver's
    }
    assert profile.percentage_of_nodes_to_score is None


def test_zero_or_empty_component_fields_take_upstreams_defaults():
    c = parse_configuration(
        HEAD + "leaderElection: {leaseDuration: 0s, resourceName: ''}\n"
        "clientConnection: {qps: 0, burst: 0, contentType: ''}\n"
    )
    assert c.leader_election.lease_duration.seconds == 15.0
    assert c.leader_election.resource_name == "kube-scheduler"
    assert (c.client_connection.qps, c.client_connection.burst) == (50.0, 100)
    assert c.client_connection.content_type == "application/vnd.kubernetes.protobuf"


def test_a_single_unnamed_profile_is_the_default_scheduler():
    c = parse_configuration(HEAD + "profiles:\n  - percentageOfNodesToScore: 30\n")
    assert c.profiles[0].scheduler_name == "default-scheduler"
    assert c.profiles[0].percentage_of_nodes_to_score == 30


def test_default_profile_is_the_default_configurations_active_part(monkeypatch):
    monkeypatch.undo()  # the real registry, as DEFAULT_PROFILE was built with it
    assert default_configuration().profiles[0] == DEFAULT_PROFILE == Settings().profiles[0]
    filters, scores = registry.filter_plugins(), registry.score_plugins()
    assert set(DEFAULT_PROFILE.filters) <= filters
    assert {n for n, _ in DEFAULT_PROFILE.scorers} <= scores
    order = UPSTREAM_EXPANDED["filter"]
    assert list(DEFAULT_PROFILE.filters) == [n for n in order if n in filters]


def test_full_example_file():
    c = load_file(CONFIGS / "full.yaml")
    a, b = c.profiles
    assert (a.scheduler_name, b.scheduler_name) == ("optimist-a", "optimist-b")
    assert (
        a.filters
        == b.filters
        == (
            "NodeUnschedulable",
            "TaintToleration",
            "NodeAffinity",
            "NodeResourcesFit",
        )
    )
    assert a.scorers == (("TaintToleration", 3), ("NodeResourcesFit", 1))
    assert b.scorers == (("NodeResourcesFit", 5),)
    assert b.args["NodeResourcesFit"] == {
        "scoringStrategy": {
            "type": "MostAllocated",
            "resources": [
                {"name": "cpu", "weight": 2},
                {"name": "memory", "weight": 1},
                {"name": "nvidia.com/gpu", "weight": 10},
            ],
        },
        # the extender's managed resource that the scheduler is told to ignore
        "ignoredResources": ["example.com/foo"],
    }
    assert a.args["NodeResourcesFit"] == {
        **UPSTREAM_ARGS["NodeResourcesFit"],
        "ignoredResources": ["example.com/foo"],
    }
    # The global percentage unless the profile sets its own.
    assert (a.percentage_of_nodes_to_score, b.percentage_of_nodes_to_score) == (40, 100)

    ea, eb = c.expanded
    assert ea.points == UPSTREAM_EXPANDED
    assert eb.points["score"] == (
        "NodeResourcesFit",
        "NodeAffinity",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
    )
    assert eb.points["filter"] == UPSTREAM_EXPANDED["filter"]
    assert eb.args["InterPodAffinity"]["hardPodAffinityWeight"] == 5
    assert eb.args["PodTopologySpread"] == {"defaultingType": "System"}

    assert (c.parallelism, c.percentage_of_nodes_to_score) == (32, 40)
    assert (c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds) == (2, 20)
    [extender] = c.extenders
    assert extender.to_wire() == {
        "urlPrefix": "http://127.0.0.1:8888/",
        "filterVerb": "filter",
        "preemptVerb": "",
        "prioritizeVerb": "prioritize",
        "weight": 2,
        "bindVerb": "",
        "enableHTTPS": False,
        "httpTimeout": "5s",
        "nodeCacheCapable": True,
        "managedResources": [{"name": "example.com/foo", "ignoredByScheduler": True}],
        "ignorable": True,
    }
    assert extender.http_timeout.seconds == 5.0
    assert c.leader_election.resource_name == "optimist"
    assert c.leader_election.lease_duration.text == "15s"
    assert c.client_connection.burst == 200
    assert c.enable_profiling is False
    assert c.enable_contention_profiling is False
    o = c.optimist
    assert (o.shards, o.batch_pods, o.inflight_per_shard, o.seed) == (4, 128, 3, 7)
    assert (o.key_prefix, o.metrics_address, o.node_partitions) == ("prod:", "0.0.0.0:10260", True)
    assert (o.binders, o.shard_timeout_s) == (2, 12.5)
    assert (o.shard_resources, o.binder_resources) == (
        {"optimist-shard": 1.0},
        {"optimist-control": 0.5},
    )
    assert o.redis_url is None and o.ray_address is None


def test_multipoint_and_per_point_sets_merge_as_upstream():
    merged, minimal = load_file(CONFIGS / "multipoint.yaml").expanded
    assert merged.points["filter"] == (
        "NodeResourcesFit",  # named at Filter and in multiPoint: first
        "NodeName",  # multiPoint's, NodeUnschedulable disabled at Filter
        "TaintToleration",
        "NodePorts",
        "VolumeRestrictions",
        "EBSLimits",
        "GCEPDLimits",
        "NodeVolumeLimits",
        "AzureDiskLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeAffinity",  # named at Filter only: last
    )
    assert "NodeAffinity" not in merged.points["preFilter"]  # disabled in multiPoint
    assert merged.points["preScore"] == ()
    assert merged.points["score"] == (
        "NodeResourcesFit",
        "TaintToleration",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
    )
    assert merged.weights == {
        "NodeResourcesFit": 6,
        "TaintToleration": 1,
        "VolumeBinding": 1,
        "PodTopologySpread": 2,
        "InterPodAffinity": 2,
        "NodeResourcesBalancedAllocation": 1,
    }
    assert minimal.points == {
        **dict.fromkeys(UPSTREAM_EXPANDED, ()),
        "queueSort": ("PrioritySort",),
        "preFilter": ("NodeResourcesFit",),
        "filter": ("NodeResourcesFit",),
        "preScore": ("NodeResourcesFit",),
        "score": ("NodeResourcesFit",),
        "bind": ("DefaultBinder",),
    }
    assert minimal.weights == {"NodeResourcesFit": 2}
    assert set(minimal.args) == {"NodeResourcesFit"}


def test_multipoint_weight_replaces_the_default_in_place():
    c = parse_configuration(
        HEAD
        + """profiles:
  - plugins:
      multiPoint:
        enabled:
          - name: ImageLocality
            weight: 7
          - name: NodeResourcesBalancedAllocation
"""
    )
    [p] = c.expanded
    assert p.points["score"] == UPSTREAM_EXPANDED["score"]
    assert p.weights["ImageLocality"] == 7
    assert p.weights["NodeResourcesBalancedAllocation"] == 1
    assert c.profiles[0].scorers == (("TaintToleration", 3), ("NodeResourcesFit", 1))


def test_a_score_weight_of_zero_means_one():
    c = parse_configuration(
        HEAD + "profiles:\n  - plugins:\n      score:\n        enabled:\n"
        "          - name: TaintToleration\n            weight: 0\n"
    )
    assert dict(c.profiles[0].scorers)["TaintToleration"] == 1


def test_disabling_all_filters_keeps_only_those_named_there_in_order():
    c = parse_configuration(
        HEAD
        + """profiles:
  - plugins:
      filter:
        disabled: [{name: "*"}]
        enabled: [{name: NodeResourcesFit}, {name: NodeUnschedulable}]
"""
    )
    assert c.expanded[0].points["filter"] == ("NodeResourcesFit", "NodeUnschedulable")
    assert c.profiles[0].filters == ("NodeResourcesFit", "NodeUnschedulable")


def test_plugin_config_is_merged_with_defaults():
    c = parse_configuration(
        HEAD
        + """profiles:
  - pluginConfig:
      - name: NodeResourcesFit
        args:
          ignoredResources: [example.com/ignored]
          scoringStrategy:
            type: RequestedToCapacityRatio
            resources: [{name: cpu, weight: 0}]
            requestedToCapacityRatio:
              shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]
      - name: PodTopologySpread
        args:
          defaultingType: List
          defaultConstraints:
            - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone,
               whenUnsatisfiable: ScheduleAnyway}
      - name: DefaultPreemption
        args: {minCandidateNodesAbsolute: 0}
"""
    )
    args = c.expanded[0].args
    assert args["NodeResourcesFit"] == {
        "ignoredResources": ["example.com/ignored"],
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "cpu", "weight": 1}],
            "requestedToCapacityRatio": {
                "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
            },
        },
    }
    assert args["PodTopologySpread"]["defaultConstraints"][0]["maxSkew"] == 1
    assert args["DefaultPreemption"] == {
        "minCandidateNodesPercentage": 10,
        "minCandidateNodesAbsolute": 0,
    }
    assert args["VolumeBinding"] == {"bindTimeoutSeconds": 600}


def test_a_disabled_name_that_matches_nothing_disables_nothing():
    # As upstream: old files disable plugins removed since.
    c = parse_configuration(
        HEAD + "profiles:\n  - plugins:\n      score:\n        disabled: [{name: SelectorSpread}]\n"
    )
    assert c.expanded[0].points == UPSTREAM_EXPANDED


def test_inactive_plugins_are_reported_once_with_their_reason():
    c = load_file(CONFIGS / "full.yaml")
    by_key = {(x.profile, x.plugin): x for x in c.inactive}
    assert len(by_key) == len(c.inactive)
    # (the registry is fixed here: with the shards' own, its PreFilter and Filter run)
    assert by_key["optimist-a", "VolumeBinding"] == InactivePlugin(
        "optimist-a",
        "VolumeBinding",
        ("PreFilter", "Filter", "PreScore", "Score"),
        REASON_VOLUME_CAPACITY,
    )
    # handled outside the shards: active
    assert ("optimist-a", "SchedulingGates") not in by_key
    assert ("optimist-a", "DefaultPreemption") not in by_key
    assert by_key["optimist-a", "ImageLocality"].reason == REASON_MISSING
    # Active at Filter, not at Score: only the points it misses.
    assert by_key["optimist-a", "NodeAffinity"].extension_points == ("PreScore", "Score")
    assert by_key["optimist-a", "NodeResourcesBalancedAllocation"].reason == REASON_MISSING
    # Handled by the dispatcher and the binder, and fully active plugins: not inactive.
    for plugin in ("PrioritySort", "DefaultBinder", "NodeResourcesFit", "TaintToleration"):
        assert ("optimist-a", plugin) not in by_key
    # optimist-b disabled these at Score; upstream still runs PreScore of the second.
    assert ("optimist-b", "ImageLocality") not in by_key
    assert by_key["optimist-b", "NodeResourcesBalancedAllocation"].extension_points == ("PreScore",)
    for in_tree in ("EBSLimits", "GCEPDLimits"):
        assert by_key["optimist-b", in_tree].reason == REASON_IN_TREE_LIMITS
    # filters like any other: inactive only where the registry (fixed here) lacks them
    for volume in ("NodeVolumeLimits", "VolumeRestrictions"):
        assert by_key["optimist-b", volume].reason == REASON_MISSING
    assert "profile optimist-b: EBSLimits (PreFilter, Filter): counts in-tree disks" in str(
        by_key["optimist-b", "EBSLimits"]
    )


def test_the_registry_decides_what_is_active(monkeypatch):
    monkeypatch.setattr(registry, "filter_plugins", lambda: frozenset({"NodeResourcesFit"}))
    monkeypatch.setattr(
        registry, "score_plugins", lambda: frozenset({"NodeResourcesFit", "ImageLocality", "Mine"})
    )
    c = parse_configuration(
        HEAD + "profiles:\n  - plugins:\n      score:\n        enabled: [{name: Mine, weight: 4}]\n"
        "    pluginConfig:\n      - name: Mine\n        args: {depth: [1, 2]}\n"
    )
    [p] = c.profiles
    assert p.filters == ("NodeResourcesFit",)
    assert p.scorers == (("NodeResourcesFit", 1), ("ImageLocality", 1), ("Mine", 4))
    assert p.args["Mine"] == {"depth": [1, 2]}
    inactive = {x.plugin for x in c.inactive}
    assert {"TaintToleration", "NodeUnschedulable"} <= inactive
    assert "ImageLocality" not in inactive and "Mine" not in inactive


def test_dynamic_resources_is_known_and_inactive():
    c = parse_configuration(
        HEAD + "profiles:\n  - plugins:\n      multiPoint:\n"
        "        enabled: [{name: DynamicResources}]\n"
    )
    [dra] = [x for x in c.inactive if x.plugin == "DynamicResources"]
    assert dra.reason == REASON_DRA and "Filter" in dra.extension_points
