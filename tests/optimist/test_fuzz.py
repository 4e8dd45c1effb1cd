"""Whatever a file holds, the loader answers with a Configuration or a ConfigError."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optimist.configuration import (
    API_VERSION,
    KIND,
    OPTIMIST_API_VERSION,
    OPTIMIST_KIND,
    POINTS,
    UPSTREAM_PLUGINS,
    ConfigError,
    parse_configuration,
)

# Names the loader knows, so that random documents reach deep into its checks.
FIELDS = [
    *POINTS,
    "multiPoint",
    "enabled",
    "disabled",
    "name",
    "weight",
    "args",
    "schedulerName",
    "plugins",
    "pluginConfig",
    "percentageOfNodesToScore",
    "scoringStrategy",
    "type",
    "resources",
    "requestedToCapacityRatio",
    "shape",
    "utilization",
    "score",
    "hardPodAffinityWeight",
    "defaultingType",
    "defaultConstraints",
    "maxSkew",
    "topologyKey",
    "whenUnsatisfiable",
    "addedAffinity",
    "requiredDuringSchedulingIgnoredDuringExecution",
    "nodeSelectorTerms",
    "matchExpressions",
    "key",
    "operator",
    "values",
    "parallelism",
    "extenders",
    "bindVerb",
    "managedResources",
    "leaderElection",
    "leaseDuration",
    "clientConnection",
]
WORDS = [
    *UPSTREAM_PLUGINS,
    "*",
    "LeastAllocated",
    "MostAllocated",
    "RequestedToCapacityRatio",
    "System",
    "List",
    "In",
    "Exists",
    "Gt",
    "cpu",
    "15s",
]
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**65), max_value=2**65)
    | st.floats(allow_nan=False)
    | st.sampled_from(WORDS)
    | st.text(max_size=6)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=4), inner, max_size=5)
    ),
    max_leaves=40,
)
plugin = st.fixed_dictionaries(
    {"name": st.sampled_from(WORDS)}, optional={"weight": st.integers(-5, 200)}
)
plugin_set = st.fixed_dictionaries(
    {}, optional={"enabled": st.lists(plugin, max_size=4), "disabled": st.lists(plugin, max_size=3)}
)
profile = st.fixed_dictionaries(
    {},
    optional={
        "schedulerName": st.sampled_from(["a", "b", ""]),
        "plugins": st.dictionaries(
            st.sampled_from([*POINTS, "multiPoint"]), plugin_set, max_size=4
        ),
        "pluginConfig": st.lists(
            st.fixed_dictionaries({"name": st.sampled_from(WORDS)}, optional={"args": values}),
            max_size=3,
        ),
        "percentageOfNodesToScore": st.integers(-5, 105),
    },
)
kube_doc = st.fixed_dictionaries(
    {"apiVersion": st.just(API_VERSION), "kind": st.just(KIND)},
    optional={"profiles": st.lists(profile, max_size=3), "extenders": values},
)
optimist_doc = st.fixed_dictionaries(
    {"apiVersion": st.just(OPTIMIST_API_VERSION), "kind": st.just(OPTIMIST_KIND)},
    optional={
        key: values
        for key in (
            "shards",
            "redisURL",
            "batchPods",
            "seed",
            "metricsAddress",
            "nodePartitions",
            "binders",
        )
    },
)


def _load(text: str) -> None:
    try:
        parse_configuration(text)
    except ConfigError as e:
        assert e.path is not None and str(e)


FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(kube_doc, st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=4), values, max_size=4))
def test_random_kube_scheduler_documents(doc: dict[str, Any], extra: dict[str, Any]):
    _load(yaml.safe_dump({**extra, **doc}))


@FUZZ
@given(st.lists(kube_doc | optimist_doc | values, max_size=3))
def test_random_document_streams(docs: list[Any]):
    _load(yaml.safe_dump_all(docs))


@FUZZ
@given(st.text(max_size=200))
def test_random_text(text: str):
    _load(text)
