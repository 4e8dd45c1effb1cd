"""Two schedulers on one pool: which profiles each serves, and the configurations that
cannot be shared refused with what they lack."""

import pytest

from benchmarks.apiserver.scheduler_processes import ApiBenchError
from benchmarks.apiserver.shared_pool import (
    BESIDE_KUBE_SCHEDULER,
    KUBE_SCHEDULERS,
    split_profiles,
)

FIRST = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
QUOTA = {"apiVersion": "optimist.io/v1alpha1", "kind": "OptimistConfiguration"}


def profiles(*names: str) -> dict:
    return {**FIRST, "profiles": [{"schedulerName": n} for n in names]}


def test_kube_scheduler_takes_the_first_profile_and_optimist_the_rest_with_its_own_documents():
    parts = split_profiles(BESIDE_KUBE_SCHEDULER, [profiles("a", "b", "c"), QUOTA])
    assert parts == [
        ("kube-scheduler", [profiles("a")]),
        ("optimist", [profiles("b", "c"), QUOTA]),
    ]


def test_two_kube_schedulers_take_a_profile_each():
    parts = split_profiles(KUBE_SCHEDULERS, [profiles("a", "b")])
    assert parts == [("kube-scheduler", [profiles("a")]), ("kube-scheduler", [profiles("b")])]


@pytest.mark.parametrize(
    ("setup", "names", "count"),
    [(BESIDE_KUBE_SCHEDULER, (), "0"), (BESIDE_KUBE_SCHEDULER, ("a",), "1"),
     (KUBE_SCHEDULERS, ("a", "b", "c"), "3")],
)  # fmt: skip
def test_a_configuration_without_the_profiles_to_share_is_refused(setup, names, count):
    with pytest.raises(ApiBenchError, match=f"the configuration has {count} profile"):
        split_profiles(setup, [profiles(*names) if names else FIRST])
