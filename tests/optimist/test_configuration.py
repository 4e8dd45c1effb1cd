"""The configuration loader: kube-scheduler v1.30's defaults, merging and validation."""

from __future__ import annotations

from dataclasses import replace

import pytest

from optimist.configuration import (
    REASON_MISSING,
    REASON_VOLUME,
    ConfigError,
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


# Each bad file: the text after the header, the path the error must name, the value it shows.
BAD = {
    "unknown plugin": (
        "profiles:\n  - plugins:\n      score:\n"
        "        enabled: [{name: NodeResourcesMostAllocated}]\n",
        "profiles[0].plugins.score.enabled[0].name",
        '"NodeResourcesMostAllocated"',
    ),
    "unknown plugin in multiPoint": (
        "profiles:\n  - plugins:\n      multiPoint:\n        enabled: [{name: Coscheduling}]\n",
        "profiles[0].plugins.multiPoint.enabled[0].name",
        '"Coscheduling"',
    ),
    "unknown field in plugins": (
        "profiles:\n  - plugins:\n      filtr: {enabled: [{name: NodeName}]}\n",
        "profiles[0].plugins.filtr",
        '{"enabled": [{"name": "NodeName"}]}',
    ),
    "unknown top-level field": (
        "percentageOfNodeToScore: 50\n",
        "percentageOfNodeToScore",
        "50",
    ),
    "unknown field in args": (
        "profiles:\n  - pluginConfig:\n      - name: NodeResourcesFit\n"
        "        args: {scoringStrategy: {type: LeastAllocated, shape: []}}\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.shape",
        "[]",
    ),
    "field removed from v1": (
        "healthzBindAddress: 0.0.0.0:10251\n",
        "healthzBindAddress",
        '"0.0.0.0:10251"',
    ),
    "duplicate schedulerName": (
        "profiles:\n  - schedulerName: a\n  - schedulerName: b\n  - schedulerName: a\n",
        "profiles[2].schedulerName",
        '"a"',
    ),
    "empty schedulerName": (
        "profiles:\n  - schedulerName: ''\n",
        "profiles[0].schedulerName",
        '""',
    ),
    "missing schedulerName among several": (
        "profiles:\n  - schedulerName: a\n  - {}\n",
        "profiles[1].schedulerName",
        "(not set)",
    ),
    "score weight beyond int32": (
        "profiles:\n  - plugins:\n      score:\n"
        "        enabled: [{name: TaintToleration, weight: 2147483648}]\n",
        "profiles[0].plugins.score.enabled[0].weight",
        "2147483648",
    ),
    "negative score weight": (
        "profiles:\n  - plugins:\n      multiPoint:\n"
        "        enabled: [{name: ImageLocality, weight: -1}]\n",
        "profiles[0].plugins.multiPoint.enabled[0].weight",
        "-1",
    ),
    "score weight not a number": (
        "profiles:\n  - plugins:\n      score:\n"
        "        enabled: [{name: TaintToleration, weight: heavy}]\n",
        "profiles[0].plugins.score.enabled[0].weight",
        '"heavy"',
    ),
    "plugin at a point it does not implement": (
        "profiles:\n  - plugins:\n      score:\n        enabled: [{name: NodeUnschedulable}]\n",
        "profiles[0].plugins.score.enabled[0].name",
        '"NodeUnschedulable"',
    ),
    "plugin twice at a point": (
        "profiles:\n  - plugins:\n      filter:\n"
        "        enabled: [{name: NodeName}, {name: NodeName}]\n",
        "profiles[0].plugins.filter.enabled[1].name",
        '"NodeName"',
    ),
    "global percentage above 100": (
        "percentageOfNodesToScore: 101\n",
        "percentageOfNodesToScore",
        "101",
    ),
    "profile percentage below 0": (
        "profiles:\n  - percentageOfNodesToScore: -1\n",
        "profiles[0].percentageOfNodesToScore",
        "-1",
    ),
    "fit resource without a name": (
        "profiles:\n  - pluginConfig:\n      - name: NodeResourcesFit\n"
        "        args: {scoringStrategy: {type: LeastAllocated, resources: [{name: ''}]}}\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].name",
        '""',
    ),
    "fit resource with a bad name": (
        "profiles:\n  - pluginConfig:\n      - name: NodeResourcesFit\n"
        "        args: {scoringStrategy: {type: LeastAllocated, resources: [{name: 'a b'}]}}\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].name",
        '"a b"',
    ),
    "fit resource weight above 100": (
        "profiles:\n  - pluginConfig:\n      - name: NodeResourcesFit\n"
        "        args:\n          scoringStrategy:\n            type: MostAllocated\n"
        "            resources: [{name: cpu, weight: 101}]\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight",
        "101",
    ),
    "fit without a strategy type": (
        "profiles:\n  - pluginConfig:\n      - name: NodeResourcesFit\n"
        "        args: {scoringStrategy: {resources: [{name: cpu}]}}\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.type",
        "(not set)",
    ),
    "ratio without its shape": (
        "profiles:\n  - pluginConfig:\n      - name: NodeResourcesFit\n"
        "        args: {scoringStrategy: {type: RequestedToCapacityRatio}}\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio",
        "(not set)",
    ),
    "ratio with an empty shape": (
        "profiles:\n  - pluginConfig:\n      - name: NodeResourcesFit\n"
        "        args:\n          scoringStrategy:\n            type: RequestedToCapacityRatio\n"
        "            requestedToCapacityRatio: {shape: []}\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape",
        "[]",
    ),
    "ratio utilization not increasing": (
        "profiles:\n  - pluginConfig:\n      - name: NodeResourcesFit\n"
        "        args:\n          scoringStrategy:\n            type: RequestedToCapacityRatio\n"
        "            requestedToCapacityRatio:\n"
        "              shape: [{utilization: 50, score: 1}, {utilization: 50, score: 2}]\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape[1]"
        ".utilization",
        "50",
    ),
    "ratio utilization above 100": (
        "profiles:\n  - pluginConfig:\n      - name: NodeResourcesFit\n"
        "        args:\n          scoringStrategy:\n            type: RequestedToCapacityRatio\n"
        "            requestedToCapacityRatio: {shape: [{utilization: 101, score: 1}]}\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape[0]"
        ".utilization",
        "101",
    ),
    "ratio score above 10": (
        "profiles:\n  - pluginConfig:\n      - name: NodeResourcesFit\n"
        "        args:\n          scoringStrategy:\n            type: RequestedToCapacityRatio\n"
        "            requestedToCapacityRatio: {shape: [{utilization: 10, score: 11}]}\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape[0].score",
        "11",
    ),
    "ratio given to another strategy": (
        "profiles:\n  - pluginConfig:\n      - name: NodeResourcesFit\n"
        "        args:\n          scoringStrategy:\n            type: LeastAllocated\n"
        "            requestedToCapacityRatio: {shape: [{utilization: 10, score: 1}]}\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio",
        '{"shape": [{"utilization": 10, "score": 1}]}',
    ),
    "hard pod affinity weight above 100": (
        "profiles:\n  - pluginConfig:\n      - name: InterPodAffinity\n"
        "        args: {hardPodAffinityWeight: 101}\n",
        "profiles[0].pluginConfig[0].args.hardPodAffinityWeight",
        "101",
    ),
    "spread defaulting type unknown": (
        "profiles:\n  - pluginConfig:\n      - name: PodTopologySpread\n"
        "        args: {defaultingType: Custom}\n",
        "profiles[0].pluginConfig[0].args.defaultingType",
        '"Custom"',
    ),
    "spread System with constraints": (
        "profiles:\n  - pluginConfig:\n      - name: PodTopologySpread\n"
        "        args:\n          defaultingType: System\n          defaultConstraints:\n"
        "            - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n",
        "profiles[0].pluginConfig[0].args.defaultingType",
        '"System"',
    ),
    "spread constraint with no skew": (
        "profiles:\n  - pluginConfig:\n      - name: PodTopologySpread\n"
        "        args:\n          defaultingType: List\n          defaultConstraints:\n"
        "            - {maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n",
        "profiles[0].pluginConfig[0].args.defaultConstraints[0].maxSkew",
        "0",
    ),
    "spread constraint with a selector": (
        "profiles:\n  - pluginConfig:\n      - name: PodTopologySpread\n"
        "        args:\n          defaultingType: List\n          defaultConstraints:\n"
        "            - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule,\n"
        "               labelSelector: {matchLabels: {app: x}}}\n",
        "profiles[0].pluginConfig[0].args.defaultConstraints[0].labelSelector",
        '{"matchLabels": {"app": "x"}}',
    ),
    "spread constraint with a bad action": (
        "profiles:\n  - pluginConfig:\n      - name: PodTopologySpread\n"
        "        args:\n          defaultingType: List\n          defaultConstraints:\n"
        "            - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: Maybe}\n",
        "profiles[0].pluginConfig[0].args.defaultConstraints[0].whenUnsatisfiable",
        '"Maybe"',
    ),
    "spread constraints repeated": (
        "profiles:\n  - pluginConfig:\n      - name: PodTopologySpread\n"
        "        args:\n          defaultingType: List\n          defaultConstraints:\n"
        "            - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n"
        "            - {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n",
        "profiles[0].pluginConfig[0].args.defaultConstraints[1]",
        '"{zone, DoNotSchedule}"',
    ),
    "added affinity with a bad operator": (
        "profiles:\n  - pluginConfig:\n      - name: NodeAffinity\n        args:\n"
        "          addedAffinity:\n            requiredDuringSchedulingIgnoredDuringExecution:\n"
        "              nodeSelectorTerms:\n"
        "                - matchExpressions: [{key: zone, operator: Near, values: [a]}]\n",
        "profiles[0].pluginConfig[0].args.addedAffinity"
        ".requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].operator",
        '"Near"',
    ),
    "added affinity In without values": (
        "profiles:\n  - pluginConfig:\n      - name: NodeAffinity\n        args:\n"
        "          addedAffinity:\n            requiredDuringSchedulingIgnoredDuringExecution:\n"
        "              nodeSelectorTerms:\n"
        "                - matchExpressions: [{key: zone, operator: In}]\n",
        "nodeSelectorTerms[0].matchExpressions[0].values",
        "(not set)",
    ),
    "added affinity Gt with a word": (
        "profiles:\n  - pluginConfig:\n      - name: NodeAffinity\n        args:\n"
        "          addedAffinity:\n            requiredDuringSchedulingIgnoredDuringExecution:\n"
        "              nodeSelectorTerms:\n"
        "                - matchExpressions: [{key: cores, operator: Gt, values: [many]}]\n",
        "nodeSelectorTerms[0].matchExpressions[0].values",
        '["many"]',
    ),
    "added affinity Gt with a signed integer, which is no label value": (
        "profiles:\n  - pluginConfig:\n      - name: NodeAffinity\n        args:\n"
        "          addedAffinity:\n            requiredDuringSchedulingIgnoredDuringExecution:\n"
        "              nodeSelectorTerms:\n"
        "                - matchExpressions: [{key: cores, operator: Gt, values: ['-5']}]\n",
        "nodeSelectorTerms[0].matchExpressions[0].values[0]",
        '"-5"',
    ),
    "added affinity field other than the name": (
        "profiles:\n  - pluginConfig:\n      - name: NodeAffinity\n        args:\n"
        "          addedAffinity:\n            requiredDuringSchedulingIgnoredDuringExecution:\n"
        "              nodeSelectorTerms:\n"
        "                - matchFields: [{key: metadata.labels, operator: In, values: [a]}]\n",
        "nodeSelectorTerms[0].matchFields[0].key",
        '"metadata.labels"',
    ),
    "added affinity preferred weight 0": (
        "profiles:\n  - pluginConfig:\n      - name: NodeAffinity\n        args:\n"
        "          addedAffinity:\n            preferredDuringSchedulingIgnoredDuringExecution:\n"
        "              - weight: 0\n                preference:\n"
        "                  matchExpressions: [{key: zone, operator: Exists}]\n",
        "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
        "0",
    ),
    "added affinity not a mapping": (
        "profiles:\n  - pluginConfig:\n      - name: NodeAffinity\n"
        "        args: {addedAffinity: [zone]}\n",
        "profiles[0].pluginConfig[0].args.addedAffinity",
        '["zone"]',
    ),
    "args for a plugin the profile does not enable": (
        "profiles:\n  - plugins:\n      multiPoint:\n        disabled: [{name: InterPodAffinity}]\n"
        "    pluginConfig:\n      - name: InterPodAffinity\n"
        "        args: {hardPodAffinityWeight: 2}\n",
        "profiles[0].pluginConfig[0].name",
        '"InterPodAffinity"',
    ),
    "args for an unknown plugin": (
        "profiles:\n  - pluginConfig:\n      - name: Coscheduling\n        args: {}\n",
        "profiles[0].pluginConfig[0].name",
        '"Coscheduling"',
    ),
    "args twice for one plugin": (
        "profiles:\n  - pluginConfig:\n      - name: InterPodAffinity\n"
        "      - name: NodeAffinity\n      - name: InterPodAffinity\n",
        "profiles[0].pluginConfig[2].name",
        '"InterPodAffinity"',
    ),
    "args for a plugin that takes none": (
        "profiles:\n  - pluginConfig:\n      - name: TaintToleration\n"
        "        args: {strict: true}\n",
        "profiles[0].pluginConfig[0].args",
        '{"strict": true}',
    ),
    "args of the wrong kind": (
        "profiles:\n  - pluginConfig:\n      - name: InterPodAffinity\n"
        "        args: {kind: NodeAffinityArgs}\n",
        "profiles[0].pluginConfig[0].args.kind",
        '"NodeAffinityArgs"',
    ),
    "no queue sort": (
        "profiles:\n  - plugins:\n      multiPoint:\n        disabled: [{name: PrioritySort}]\n",
        "profiles[0].plugins.queueSort",
        "[]",
    ),
    "queue sort differs between profiles": (
        "profiles:\n  - schedulerName: a\n  - schedulerName: b\n    plugins:\n"
        "      queueSort:\n        enabled: [{name: PrioritySort}]\n",
        "profiles[1].plugins.queueSort",
        '{"enabled": [{"name": "PrioritySort", "weight": null}], "disabled": []}',
    ),
    "no bind": (
        "profiles:\n  - plugins:\n      bind:\n        disabled: [{name: '*'}]\n",
        "profiles[0].plugins.bind",
        "[]",
    ),
    "parallelism zero": ("parallelism: 0\n", "parallelism", "0"),
    "initial backoff zero": ("podInitialBackoffSeconds: 0\n", "podInitialBackoffSeconds", "0"),
    "max backoff below initial": (
        "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 4\n",
        "podMaxBackoffSeconds",
        "4",
    ),
    "two binding extenders": (
        "extenders:\n  - {urlPrefix: 'http://a', bindVerb: bind}\n"
        "  - {urlPrefix: 'http://b', bindVerb: bind}\n",
        "extenders",
        "found 2 extenders implementing bind",
    ),
    "prioritizing extender without weight": (
        "extenders:\n  - {urlPrefix: 'http://a', prioritizeVerb: prioritize}\n",
        "extenders[0].weight",
        "0",
    ),
    "extender with a native managed resource": (
        "extenders:\n  - {urlPrefix: 'http://a', managedResources: [{name: cpu}]}\n",
        "extenders[0].managedResources[0].name",
        '"cpu"',
    ),
    "extender with a bad timeout": (
        "extenders:\n  - {urlPrefix: 'http://a', httpTimeout: 5 seconds}\n",
        "extenders[0].httpTimeout",
        '"5 seconds"',
    ),
    "extender with an unknown field": (
        "extenders:\n  - {urlPrefix: 'http://a', verb: filter}\n",
        "extenders[0].verb",
        '"filter"',
    ),
    "leader election on another lock": (
        "leaderElection: {leaderElect: true, resourceLock: endpoints}\n",
        "leaderElection.resourceLock",
        '"endpoints"',
    ),
    "leader election with a negative lease": (
        "leaderElection: {leaseDuration: -5s}\n",
        "leaderElection.leaseDuration",
        '"-5s"',
    ),
    "leader election lease as a number, which Go's decoder refuses": (
        "leaderElection: {leaseDuration: 15}\n",
        "leaderElection.leaseDuration",
        "15",
    ),
    "lease shorter than the renew deadline": (
        "leaderElection: {leaseDuration: 5s}\n",
        "leaderElection.leaseDuration",
        '"5s"',
    ),
    "client connection with a negative burst": (
        "clientConnection: {burst: -1}\n",
        "clientConnection.burst",
        "-1",
    ),
    "profiles not a list": ("profiles: {schedulerName: a}\n", "profiles", '{"schedulerName": "a"}'),
}


@pytest.mark.parametrize("case", BAD.values(), ids=BAD.keys())
def test_every_error_names_the_path_and_the_value(case):
    text, path, value = case
    with pytest.raises(ConfigError) as caught:
        parse_configuration(HEAD + text)
    message = str(caught.value)
    assert path in message and value in message, message
    assert caught.value.path.endswith(path)


def test_the_documented_example_message():
    with pytest.raises(ConfigError) as caught:
        load_file(CONFIGS / "bad-strategy.yaml")
    assert str(caught.value) == (
        'profiles[1].pluginConfig[0].args.scoringStrategy.type: "Fastest": '
        "must be one of LeastAllocated, MostAllocated, RequestedToCapacityRatio"
    )
    assert caught.value.value == "Fastest"


@pytest.mark.parametrize(
    ("text", "where", "shown"),
    [
        (
            "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
            "apiVersion",
            "v1beta3",
        ),
        ("apiVersion: v1\nkind: ConfigMap\n", "kind", '"ConfigMap"'),
        ("kind: KubeSchedulerConfiguration\n", "apiVersion", "(not set)"),
        (HEAD + "---\n" + HEAD, "kind", "already given in document 1"),
        ("- a\n- b\n", "", '["a", "b"]'),
        (HEAD + "parallelism: 1\nparallelism: 2\n", "line 4", "given twice"),
        (HEAD + "profiles: [\n", "line", "not valid YAML"),
    ],
)
def test_document_level_errors(text, where, shown):
    with pytest.raises(ConfigError) as caught:
        parse_configuration(text)
    assert caught.value.path.startswith(where) and shown in str(caught.value), str(caught.value)


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
    assert by_key["optimist-a", "VolumeBinding"] == InactivePlugin(
        "optimist-a",
        "VolumeBinding",
        ("PreFilter", "Filter", "PreScore", "Score", "Reserve", "PreBind"),
        REASON_VOLUME,
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
    for volume in ("VolumeRestrictions", "EBSLimits", "GCEPDLimits", "NodeVolumeLimits"):
        assert by_key["optimist-b", volume].reason == REASON_VOLUME
    assert "profile optimist-a: VolumeZone (PreFilter, Filter): needs volume" in str(
        by_key["optimist-a", "VolumeZone"]
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
    assert dra.reason == REASON_VOLUME and "Filter" in dra.extension_points


def test_optimist_document_alone():
    c = load_file(CONFIGS / "only-optimist.yaml")
    assert c.optimist.shards == 3
    assert c.optimist.redis_url == "redis://:s3cret@127.0.0.1:6379/0"
    assert c.expanded[0].points == UPSTREAM_EXPANDED


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        ("shards", "0", "0"),
        ("batchPods", "-1", "-1"),
        ("inflightPerShard", "two", '"two"'),
        ("seed", "-3", "-3"),
        ("redisURL", "http://x", '"http://x"'),
        ("metricsAddress", "'10259'", '"10259"'),
        ("metricsAddress", "localhost:99999", '"localhost:99999"'),
        ("nodePartitions", "maybe", '"maybe"'),
        ("binders", "0", "0"),
        ("shardTimeoutSeconds", "0", "0"),
        ("shardTimeoutSeconds", "soon", '"soon"'),
        ("shardResources", "optimist-shard", '"optimist-shard"'),
        ("binderResources", "[1]", "[1]"),
        ("keyPrefix", "''", '""'),
        ("shard", "2", "2"),
    ],
)
def test_optimist_document_errors(field, value, shown):
    error = optimist_error(f"{field}: {value}")
    assert error.path == field and shown in str(error), str(error)


def test_the_node_store_may_be_split_over_redis_servers():
    o = parse_configuration(
        "apiVersion: optimist.io/v1alpha1\nkind: OptimistConfiguration\n"
        "redisURLs: [redis://10.0.0.1:6379/0, 'rediss://10.0.0.2:6379/0']\nredisPartitions: 2\n"
    ).optimist
    assert o.redis_urls == ("redis://10.0.0.1:6379/0", "rediss://10.0.0.2:6379/0")
    assert o.redis_partitions == 2


@pytest.mark.parametrize(
    ("body", "path", "problem"),
    [
        ("redisURLs: [redis://a]", "redisURLs", "two servers or more"),
        ("redisURLs: [redis://a, http://b]", "redisURLs[1]", "must start with"),
        ("redisURLs: redis://a", "redisURLs", "must be a list"),
        ("redisPartitions: 0", "redisPartitions", ""),
    ],
)
def test_a_split_store_names_what_is_wrong(body, path, problem):
    error = optimist_error(body)
    assert error.path == path and problem in str(error), str(error)


@pytest.mark.parametrize(
    "settings",
    [
        {"redis_url": "redis://a", "redis_partitions": 2},
        {"redis_url": "redis://a", "redis_urls": ("redis://b", "redis://c")},
        {"redis_urls": ("redis://b",)},
        {"redis_partitions": 3, "binders": 2},
    ],
)
def test_settings_refuse_a_split_store_that_does_not_go_together(settings):
    with pytest.raises(ValueError, match=r"redis_url|redis_urls|binders"):
        Settings(**settings)


@pytest.mark.parametrize("amount", ["0", "-1", "many", "null"])
def test_a_ray_resource_amount_must_be_positive(amount):
    error = optimist_error(f"shardResources: {{optimist-shard: {amount}}}")
    assert error.path == "shardResources.optimist-shard", str(error)


def optimist_error(body: str) -> ConfigError:
    """The error an OptimistConfiguration document with this body is refused with."""
    with pytest.raises(ConfigError) as caught:
        parse_configuration(
            f"apiVersion: optimist.io/v1alpha1\nkind: OptimistConfiguration\n{body}\n"
        )
    return caught.value


def test_optimist_document_needs_its_own_api_version():
    with pytest.raises(ConfigError, match=r"optimist\.io/v1alpha1"):
        parse_configuration("apiVersion: optimist.io/v1\nkind: OptimistConfiguration\n")


def test_settings_take_flags_over_the_file_over_defaults():
    c = load_file(CONFIGS / "full.yaml")
    from_file = Settings.from_configuration(c)
    assert (from_file.shards, from_file.batch_pods, from_file.inflight_per_shard) == (4, 128, 3)
    assert (from_file.seed, from_file.key_prefix) == (7, "prod:")
    assert (from_file.metrics_address, from_file.node_partitions) == ("0.0.0.0:10260", True)
    assert (from_file.binders, from_file.shard_timeout_s) == (2, 12.5)
    assert from_file.shard_resources == {"optimist-shard": 1.0}
    assert (from_file.backoff_initial_s, from_file.backoff_max_s) == (2.0, 20.0)
    assert from_file.profiles == c.profiles
    assert from_file.scheduler_names == {"optimist-a", "optimist-b"}
    flagged = Settings.from_configuration(c, shards=1, seed=0, redis_url="unix:///tmp/r.sock")
    assert (flagged.shards, flagged.seed, flagged.redis_url) == (1, 0, "unix:///tmp/r.sock")
    assert flagged.batch_pods == 128  # no flag: the file's value
    plain = Settings.from_configuration(default_configuration())
    assert replace(plain, profiles=DEFAULT_PROFILES) == Settings()


def test_settings_public_hides_the_password_from_the_file():
    public = Settings.from_configuration(load_file(CONFIGS / "only-optimist.yaml")).public()
    assert "s3cret" not in str(public)


def test_the_documented_example_is_a_valid_file():
    page = (CONFIGS.parents[2] / "docs" / "configuration.md").read_text()
    example = page.split("```yaml\n", 1)[1].split("```", 1)[0]
    c = parse_configuration(example)
    assert [p.scheduler_name for p in c.profiles] == ["default-scheduler", "packer"]
    assert c.expanded[1].args["NodeResourcesFit"]["scoringStrategy"]["type"] == "MostAllocated"
    assert (c.optimist.shards, c.optimist.batch_pods) == (4, 128)


def test_extender_managed_resources_ignored_by_scheduler_leave_fit():
    config = parse_configuration(
        """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
extenders:
  - urlPrefix: http://127.0.0.1:8888
    filterVerb: filter
    managedResources:
      - {name: example.com/fpga, ignoredByScheduler: true}
      - {name: example.com/dongle}
"""
    )
    fit = config.profiles[0].args["NodeResourcesFit"]
    assert fit["ignoredResources"] == ["example.com/fpga"]


def test_pods_per_batch_keeps_about_a_thousand_pods_in_flight_unless_set():
    shards = (1, 2, 4, 8, 16)
    assert [Settings(shards=n).batches_in_flight for n in shards] == [2, 2, 1, 1, 1]
    assert [Settings(shards=n).pods_per_batch for n in shards] == [256, 256, 256, 128, 64]
    assert Settings(shards=4, batch_pods=300).pods_per_batch == 300
    # told how many batches a shard holds, the batch keeps the pods in flight as they were
    assert Settings(shards=4, inflight_per_shard=2).pods_per_batch == 128
    assert Settings(shards=4, inflight_per_shard=3).batches_in_flight == 3
    with pytest.raises(ValueError, match="batch_pods must be at least 1"):
        Settings(batch_pods=0)


def test_quotas_come_from_the_optimist_document():
    text = (
        "apiVersion: optimist.io/v1alpha1\nkind: OptimistConfiguration\nquotas:\n"
        "  - {name: org, max: {cpu: '64'}}\n"
        "  - {name: team-a, parent: org, min: {cpu: '8', memory: 16Gi}, sharedWeight: 2,"
        " namespaces: [a]}\n"
    )
    settings = Settings.from_configuration(parse_configuration(text))
    org, team = settings.quotas
    assert (org.name, org.max) == ("org", {"cpu": 64000})
    assert (team.parent, team.weight, team.namespaces) == ("org", 2, ("a",))
    assert team.min == {"cpu": 8000, "memory": 16 * 2**30}


@pytest.mark.parametrize(
    ("quotas", "path", "shown"),
    [
        ("[{name: a, min: {cpu: '2'}, max: {cpu: '1'}}]", "quotas[0].min.cpu", '"2"'),
        ("[{name: a, parent: b}]", "quotas: quota a: parent", '"b"'),
        ("{name: a}", "quotas", '{"name": "a"}'),
    ],
)
def test_a_bad_quota_names_its_path_and_value(quotas, path, shown):
    error = optimist_error(f"quotas: {quotas}")
    assert error.path == path and shown in str(error), str(error)


def test_a_profile_with_default_preemption_disabled_carries_no_preemption_args():
    text = HEAD + (
        "profiles:\n"
        "  - schedulerName: calm\n"
        "    plugins:\n"
        "      postFilter:\n"
        "        disabled: [{name: DefaultPreemption}]\n"
        "  - schedulerName: eager\n"
        "    pluginConfig:\n"
        "      - name: DefaultPreemption\n"
        "        args: {minCandidateNodesAbsolute: 5}\n"
    )
    calm, eager = parse_configuration(text).profiles
    assert "DefaultPreemption" not in calm.args
    assert eager.args["DefaultPreemption"]["minCandidateNodesAbsolute"] == 5
