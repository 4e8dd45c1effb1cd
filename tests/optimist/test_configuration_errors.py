"""The configuration loader refuses a bad file naming the path and the value, as
kube-scheduler v1.30 would refuse it."""

from __future__ import annotations

import pytest

from optimist.configuration import (
    ConfigError,
    load_file,
    parse_configuration,
)
from tests.optimist.conftest import CONFIGS
from tests.optimist.test_configuration import HEAD

pytestmark = pytest.mark.usefixtures("fixed_registry")

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
