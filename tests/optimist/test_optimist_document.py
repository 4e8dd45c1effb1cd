"""The OptimistConfiguration document, and the settings made of it with the flags over
it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from optimist.configuration import (
    ConfigError,
    default_configuration,
    load_file,
    parse_configuration,
)
from optimist.settings import Settings
from tests.optimist.conftest import CONFIGS
from tests.optimist.test_configuration import DEFAULT_PROFILES, HEAD, UPSTREAM_EXPANDED

pytestmark = pytest.mark.usefixtures("fixed_registry")


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
