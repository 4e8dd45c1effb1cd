import pytest

from shards.plugins.registry import REGISTRY, filter_plugins, score_plugins

# the node-local plugins of kube-scheduler's default profile, and the extension points
# each implements there
NODE_LOCAL_FILTERS = {
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
}
NODE_LOCAL_SCORES = {
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
}


def test_node_local_plugins_are_registered_at_their_extension_points():
    assert filter_plugins() >= NODE_LOCAL_FILTERS
    assert score_plugins() >= NODE_LOCAL_SCORES
    assert not filter_plugins() & {"NodeResourcesBalancedAllocation", "ImageLocality"}
    assert not score_plugins() & {"NodeUnschedulable", "NodeName", "NodePorts"}


@pytest.mark.parametrize(
    ("name", "dynamic", "normalizes"),
    [
        # only what changes when a pod is placed makes a plugin dynamic
        ("NodeUnschedulable", False, False),
        ("NodeName", False, False),
        ("TaintToleration", False, True),
        ("NodeAffinity", False, True),
        ("NodePorts", True, False),
        ("NodeResourcesFit", True, False),
        ("NodeResourcesBalancedAllocation", True, False),
        ("ImageLocality", False, False),
    ],
)
def test_usage_dependence_and_normalization(name, dynamic, normalizes):
    plugin = REGISTRY[name]({})
    assert plugin.dynamic is dynamic
    assert getattr(plugin, "normalizes", False) is normalizes


@pytest.mark.parametrize(
    ("name", "events"),
    [
        # upstream v1.30's EventsToRegister, as the events of cluster/events.py
        ("NodeUnschedulable", {"NodeAdd", "NodeUpdate"}),
        ("NodeName", {"NodeAdd", "NodeUpdate"}),
        ("TaintToleration", {"NodeAdd", "NodeUpdate"}),
        ("NodeAffinity", {"NodeAdd", "NodeUpdate"}),
        ("NodePorts", {"AssignedPodDelete", "NodeAdd", "NodeUpdate"}),
        ("NodeResourcesFit", {"AssignedPodDelete", "NodeAdd", "NodeUpdate"}),
        ("InterPodAffinity", {"AssignedPodAdd", "AssignedPodDelete", "NodeAdd", "NodeUpdate"}),
        # pods and nodes alike move its counts per domain
        (
            "PodTopologySpread",
            {"AssignedPodAdd", "AssignedPodDelete", "NodeAdd", "NodeUpdate", "NodeDelete"},
        ),
    ],
)
def test_each_filter_names_the_events_that_can_make_it_pass(name, events):
    """The queue's hints: a unit a filter rejected waits for one of these events."""
    assert REGISTRY[name]({}).events == events
