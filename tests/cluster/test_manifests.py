import pytest

from cluster import resources as res
from cluster.errors import InvalidObject
from cluster.manifests import condition, condition_true, node_from_manifest, pod_from_manifest
from cluster.objects import SchedulingSpec
from cluster.wire import MalformedMessage
from shards.testing import pod_spec


def requests_of(manifest):
    return dict(pod_from_manifest(manifest).spec.requests)


def test_containers_add_up_and_count_as_one_pod():
    m = pod_spec({"cpu": "100m", "memory": "500Mi"})
    m["spec"]["containers"].append({"name": "b", "resources": {"requests": {"cpu": "1"}}})
    r = requests_of(m)
    assert r["cpu"] == 1100
    assert r["memory"] == 500 * 2**20
    assert r["pods"] == 1
    # the second container asks no memory: scorers count 200Mi for it
    assert r[res.NONZERO_MEMORY] == 500 * 2**20 + 200 * 2**20
    assert r[res.NONZERO_CPU] == 1100


def test_empty_requests_get_nonzero_defaults_only_for_scoring():
    r = requests_of(pod_spec({}))
    assert "cpu" not in r and "memory" not in r
    assert r[res.NONZERO_CPU] == 100
    assert r[res.NONZERO_MEMORY] == 200 * 2**20


def test_limits_default_requests():
    m = pod_spec()
    m["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2", "memory": "1Gi"}}
    assert requests_of(m)["cpu"] == 2000


def test_init_containers_and_sidecars_and_overhead():
    m = pod_spec({"cpu": "1"})
    m["spec"]["initContainers"] = [
        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
        {"name": "init", "resources": {"requests": {"cpu": "3"}}},
    ]
    m["spec"]["overhead"] = {"cpu": "100m"}
    # regular 1 + sidecar 0.5 = 1.5; the init moment is 3 + 0.5 = 3.5; plus overhead
    assert requests_of(m)["cpu"] == 3600


def test_a_bound_pod_adds_non_zero_amounts_as_upstreams_node_info_counts_them():
    # a container asking nothing, a sidecar asking 50m and nothing of memory, an init
    # container asking nothing: placing it, the scorers weigh 100m + 50m of CPU and
    # 200Mi + 200Mi of memory, its defaults per container, sidecar added in; once
    # bound, its node counts the larger of the regular sum (100m, 200Mi) and each init
    # moment defaulted as a whole (the sidecar's 50m alone; 200Mi)
    m = pod_spec({})
    m["spec"]["initContainers"] = [
        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"}}},
        {"name": "init"},
    ]
    spec = pod_from_manifest(m).spec
    on_node = dict(spec.requests)
    assert (on_node[res.NONZERO_CPU], on_node[res.NONZERO_MEMORY]) == (100, 200 * 2**20)
    assert dict(spec.weighed) == {res.NONZERO_CPU: 150, res.NONZERO_MEMORY: 400 * 2**20}
    assert pod_from_manifest(pod_spec({})).spec.weighed == ()  # no init containers: alike


def test_extended_resources_are_whole_numbers():
    m = pod_spec({"nvidia.com/gpu": "2"})
    assert requests_of(m)["nvidia.com/gpu"] == 2
    with pytest.raises(InvalidObject, match=r"nvidia.com/gpu"):
        pod_from_manifest(pod_spec({"nvidia.com/gpu": "500m"}))


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"nodeSelector": {"a": 1}}, "spec.nodeSelector.a"),
        ({"tolerations": [{"operator": "Sometimes"}]}, "spec.tolerations[0].operator"),
        ({"tolerations": [{"key": "k", "effect": "Never"}]}, "spec.tolerations[0].effect"),
        ({"priority": "high"}, "spec.priority"),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "z", "operator": "Near", "values": ["a"]}
                                    ]
                                }
                            ]
                        }
                    }
                }
            },
            "nodeSelectorTerms[0].matchExpressions[0].operator",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "n", "operator": "Gt", "values": ["ten"]}
                                    ]
                                }
                            ]
                        }
                    }
                }
            },
            "matchExpressions[0].values[0]",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 1,
                                "preference": {
                                    "matchExpressions": [
                                        {"key": "n", "operator": "Lt", "values": ["+3"]}
                                    ]
                                },
                            }
                        ]
                    }
                }
            },
            "preference.matchExpressions[0].values[0]",
        ),
        ({"containers": []}, "spec.containers"),
        ({"schedulingGates": [{"name": ""}]}, "spec.schedulingGates[0].name"),
        ({"schedulingGates": "later"}, "spec.schedulingGates"),
        ({"preemptionPolicy": "Sometimes"}, "spec.preemptionPolicy"),
    ],
)
def test_bad_pods_name_the_field(spec, field):
    m = pod_spec({"cpu": "1"})
    m["spec"].update(spec)
    with pytest.raises(InvalidObject) as err:
        pod_from_manifest(m)
    assert field in str(err.value)
    assert "Pod default/p" in str(err.value)


def test_preemption_policy_never_keeps_a_pod_from_preempting():
    assert pod_from_manifest(pod_spec({"cpu": "1"})).preempts
    lower = pod_spec({"cpu": "1"}, preemptionPolicy="PreemptLowerPriority")
    assert pod_from_manifest(lower).preempts
    assert not pod_from_manifest(pod_spec({"cpu": "1"}, preemptionPolicy="Never")).preempts


def test_node_allocatable_falls_back_to_capacity():
    n = node_from_manifest(
        {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4", "pods": "110"}}}
    )
    assert n.allocatable == {"cpu": 4000, "pods": 110}


def test_node_bad_taint_is_named():
    with pytest.raises(InvalidObject, match=r"Node n: spec.taints\[0\].effect"):
        node_from_manifest(
            {"metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "effect": "Maybe"}]}}
        )


def test_spec_survives_the_wire_and_equal_specs_share_a_digest():
    m = pod_spec(
        {"cpu": "1"},
        nodeSelector={"zone": "a"},
        tolerations=[{"key": "k", "operator": "Exists"}],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "x", "operator": "In", "values": ["1", "2"]}
                            ],
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n1"]}
                            ],
                        }
                    ]
                }
            }
        },
    )
    spec = pod_from_manifest(m).spec
    assert SchedulingSpec.from_wire(spec.to_wire()) == spec
    again = pod_from_manifest(m).spec  # the equivalence class is the spec's value
    assert again == spec and hash(again) == hash(spec)
    m["spec"]["nodeSelector"] = {"zone": "b"}
    assert pod_from_manifest(m).spec != spec


FULL_SPEC = {
    "nodeName": "",
    "containers": [
        {
            "name": "web",
            "image": "nginx:1.27",
            "ports": [
                {"containerPort": 80, "hostPort": 8080},
                {"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"},
                {"containerPort": 9000},
            ],
            "resources": {"requests": {"cpu": "250m"}},
        }
    ],
    "initContainers": [{"name": "init", "image": "busybox"}],
    "affinity": {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 20,
                    "preference": {
                        "matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]
                    },
                }
            ]
        },
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": "zone",
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "namespaces": ["data"],
                }
            ]
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 50,
                    "podAffinityTerm": {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {
                            "matchExpressions": [
                                {"key": "app", "operator": "In", "values": ["web"]}
                            ]
                        },
                        "namespaceSelector": {},
                        "matchLabelKeys": ["rev"],
                    },
                }
            ]
        },
    },
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
            "minDomains": 3,
            "nodeTaintsPolicy": "Honor",
        }
    ],
}


def test_full_spec_parses_and_survives_the_wire():
    m = {
        "metadata": {"name": "w", "namespace": "shop", "labels": {"app": "web", "rev": "7"}},
        "spec": FULL_SPEC,
    }
    spec = pod_from_manifest(m).spec
    assert spec.namespace == "shop" and dict(spec.labels) == {"app": "web", "rev": "7"}
    assert [(p.protocol, p.host_ip, p.port) for p in spec.host_ports] == [
        ("TCP", "", 8080),
        ("UDP", "10.0.0.1", 53),
    ]
    assert spec.images == ("busybox", "nginx:1.27")
    assert spec.preferred_terms[0][0] == 20
    assert spec.affinity_required[0].namespaces == ("data",)
    assert spec.affinity_required[0].label_selector.matches({"app": "db"})
    anti = spec.anti_affinity_preferred[0]
    assert anti.weight == 50 and anti.term.namespace_selector.matches({"any": "thing"})
    assert anti.term.match_label_keys == ("rev",)
    spread = spec.topology_spread[0]
    assert (
        spread.max_skew,
        spread.min_domains,
        spread.node_taints_policy,
        spread.node_affinity_policy,
    ) == (1, 3, "Honor", "Honor")
    assert SchedulingSpec.from_wire(spec.to_wire()) == spec


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (
            {
                "topologySpreadConstraints": [
                    {"maxSkew": 0, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}
                ]
            },
            "spec.topologySpreadConstraints[0].maxSkew",
        ),
        (
            {
                "topologySpreadConstraints": [
                    {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "Sometimes"}
                ]
            },
            "spec.topologySpreadConstraints[0].whenUnsatisfiable",
        ),
        (
            {
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "z",
                        "whenUnsatisfiable": "ScheduleAnyway",
                        "minDomains": 2,
                    }
                ]
            },
            "spec.topologySpreadConstraints[0].minDomains",
        ),
        (
            {
                "affinity": {
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]
                    }
                }
            },
            "podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
        ),
        (
            {
                "affinity": {
                    "podAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 101, "podAffinityTerm": {"topologyKey": "z"}}
                        ]
                    }
                }
            },
            "preferredDuringSchedulingIgnoredDuringExecution[0].weight",
        ),
        (
            {
                "affinity": {
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "topologyKey": "z",
                                "labelSelector": {
                                    "matchExpressions": [
                                        {"key": "a", "operator": "Gt", "values": ["1"]}
                                    ]
                                },
                            }
                        ]
                    }
                }
            },
            "labelSelector.matchExpressions[0].operator",
        ),
        (
            {"containers": [{"name": "c", "ports": [{"hostPort": 70000}]}]},
            "spec.containers[0].ports[0].hostPort",
        ),
        (
            {"containers": [{"name": "c", "ports": [{"hostPort": 80, "protocol": "ICMP"}]}]},
            "spec.containers[0].ports[0].protocol",
        ),
    ],
)
def test_bad_affinity_spread_and_ports_name_the_field(change, field):
    m = pod_spec({"cpu": "1"})
    m["spec"].update(change)
    with pytest.raises(InvalidObject) as err:
        pod_from_manifest(m)
    assert field in str(err.value)


def test_node_images_and_wire():
    n = node_from_manifest(
        {
            "metadata": {"name": "n", "labels": {"zone": "a"}},
            "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
            "status": {
                "capacity": {"cpu": "1"},
                "images": [{"names": ["nginx:1.27", "nginx@sha256:abc"], "sizeBytes": 500000000}],
            },
        }
    )
    assert n.images[0].size_bytes == 500_000_000 and n.images[0].names[0] == "nginx:1.27"
    from cluster.objects import Node

    assert Node.from_wire(n.to_wire()) == n


def test_forged_wire_is_refused():
    spec = pod_from_manifest(pod_spec({"cpu": "1"})).spec
    wire = spec.to_wire()
    wire[0] = [["cpu", "a lot"]]
    with pytest.raises(
        MalformedMessage, match=r"^SchedulingSpec\.requests\[0\]\[1\]: expected int"
    ):
        SchedulingSpec.from_wire(wire)
    with pytest.raises(
        MalformedMessage,
        match=r"^SchedulingSpec: expected the 20 fields of SchedulingSpec, got a list of 3",
    ):
        SchedulingSpec.from_wire(wire[:3])


def test_a_condition_is_found_by_its_type_and_true_only_when_it_says_so():
    pod = {
        "status": {
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"},
                {"type": "Ready", "status": "True"},
            ]
        }
    }
    assert condition(pod, "PodScheduled") == pod["status"]["conditions"][0]
    assert condition_true(pod, "Ready") and not condition_true(pod, "PodScheduled")
    assert condition({}, "Ready") is None and not condition_true({"status": {}}, "Ready")
