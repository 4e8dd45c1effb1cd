"""Fixtures: one real Redis server and one real Ray for the whole session; and a hook
that injects a fault in the middle of a run."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import pytest
import ray

from cluster.redis_server import EmbeddedRedis, connect
from cluster.simulator import SimulatedCluster
from cluster.store import Keys, NodeStore
from optimist.runtime import init_ray
from tests.kubeapi import FakeKubeAPI

_prefixes = itertools.count()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with EmbeddedRedis() as server:
        yield server.url


@pytest.fixture
def key_prefix() -> str:
    """A key prefix of its own for each test, so tests share the server and nothing else."""
    return f"test{next(_prefixes)}:"


@pytest.fixture
def store(redis_url: str, key_prefix: str) -> Iterator[NodeStore]:
    node_store = NodeStore(connect(redis_url), Keys(key_prefix))
    yield node_store
    node_store.clear()


@pytest.fixture(scope="session")
def ray_session() -> Iterator[None]:
    started = init_ray(None)
    yield
    if started:
        ray.shutdown()


@pytest.fixture
def kube_api() -> Iterator[tuple[FakeKubeAPI, str]]:
    """A fresh stateful API server on loopback (tests/kubeapi.py): (its state, its URL)."""
    api = FakeKubeAPI()
    url = api.start()
    yield api, url
    api.stop()


class FaultAfter:
    """An `on_bound` hook that injects `fault` once, as soon as more than `bound` pods of
    the cluster are bound; `at` is how many were bound then (None: not yet)."""

    def __init__(self, cluster: SimulatedCluster, bound: int, fault: Callable[[], None]) -> None:
        self.cluster, self.bound, self.fault = cluster, bound, fault
        self.at: int | None = None

    def __call__(self, keys: list[str]) -> None:
        if self.at is None and len(self.cluster.bindings) > self.bound:
            self.fault()
            self.at = len(self.cluster.bindings)
