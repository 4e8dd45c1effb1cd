import numpy as np
import pytest

from cluster.manifests import node_from_manifest
from cluster.store import Delta
from shards.plugins.image_locality import ImageLocality
from shards.plugins.image_locality.image_locality import normalized_image_name
from shards.testing import compile_pod, every, node, pod_spec, table_of

MB = 1024 * 1024


def holding(name, *images):
    """A node whose status lists these images, each as (names, size in MB)."""
    return node_from_manifest(
        {
            "metadata": {"name": name},
            "status": {
                "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "images": [{"names": list(names), "sizeBytes": mb * MB} for names, mb in images],
            },
        }
    )


def running(*images, init=()):
    manifest = pod_spec({"cpu": "100m"})
    manifest["spec"]["containers"] = [{"name": f"c{i}", "image": n} for i, n in enumerate(images)]
    manifest["spec"]["initContainers"] = [{"name": f"i{i}", "image": n} for i, n in enumerate(init)]
    return manifest


@pytest.mark.parametrize(
    ("name", "normalized"),
    [
        ("nginx", "nginx:latest"),
        ("nginx:1.25", "nginx:1.25"),
        ("registry.io:5000/app", "registry.io:5000/app:latest"),  # the port is not a tag
        ("registry.io:5000/app:v2", "registry.io:5000/app:v2"),
        ("tool@sha256:ab12", "tool@sha256:ab12"),
    ],
)
def test_image_names_are_normalized_as_the_runtime_reports_them(name, normalized):
    assert normalized_image_name(name) == normalized


def test_size_is_scaled_by_spread_and_clamped_per_container():
    # 4 nodes; the web image (800MB) is on two of them, so it counts 400MB there;
    # the cache image (200MB, pulled as "cache" = "cache:latest") on one counts 50MB.
    table = table_of(
        [
            holding("both", (["web:2"], 800), (["cache:latest"], 200)),
            holding("web", (["web:2"], 800)),
            holding("none"),
            holding("other", (["cache:1"], 200)),
        ]
    )
    pod = compile_pod(running("web:2", "cache"), table)
    # two containers: from 23MB (score 0) to 2000MB (score 100)
    assert ImageLocality().score(pod, table, every(table)).tolist() == [
        (450 - 23) * 100 // (2000 - 23),
        (400 - 23) * 100 // (2000 - 23),
        0,
        0,
    ]


def test_a_name_has_the_size_the_first_node_to_report_it_gave_everywhere():
    # a tag that moved: "app:1" is 600MB on the first node and 1000MB on the second;
    # upstream's cache keeps the first size for the name, so both score 600MB x 2/2
    table = table_of([holding("old", (["app:1"], 600)), holding("new", (["app:1"], 1000))])
    pod = compile_pod(running("app:1"), table)
    assert (
        ImageLocality().score(pod, table, every(table)).tolist()
        == [(600 - 23) * 100 // (1000 - 23)] * 2
    )


def test_init_containers_count_too():
    table = table_of([holding("a", (["tools:1"], 1000)), holding("b")])
    pod = compile_pod(running("app:1", init=["tools:1"]), table)
    # 1000MB spread over 2 nodes = 500MB, two containers
    assert ImageLocality().score(pod, table, every(table)).tolist() == [
        (500 - 23) * 100 // (2000 - 23),
        0,
    ]


def test_small_images_score_nothing_and_huge_ones_at_most_100():
    table = table_of([holding("small", (["tiny:1"], 20)), holding("huge", (["big:1"], 5000))])
    small = compile_pod(running("tiny:1"), table)
    big = compile_pod(running("big:1"), table)
    assert ImageLocality().score(small, table, every(table)).tolist() == [0, 0]
    assert ImageLocality().score(big, table, every(table)).tolist() == [0, 100]


def test_spread_follows_the_table_as_nodes_come_and_go():
    table = table_of([holding("a", (["web:2"], 1000))])
    plugin = ImageLocality()
    pod = compile_pod(running("web:2"), table)
    assert plugin.score(pod, table, every(table)).tolist() == [100]
    table.apply(Delta(2, [], np.zeros(0, np.int64), np.zeros((0, 0), np.int64), [node("b")]))
    # the image is now on one node of two: it counts 500MB
    assert plugin.score(pod, table, every(table)).tolist() == [(500 - 23) * 100 // (1000 - 23), 0]
    table.apply(Delta(3, [], np.zeros(0, np.int64), np.zeros((0, 0), np.int64), deleted=["b"]))
    assert plugin.score(pod, table, every(table)).tolist()[0] == 100
