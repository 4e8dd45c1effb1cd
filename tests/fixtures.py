"""Fixtures: one real Redis server and one real Ray for the whole session."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
import ray

from cluster.redis_server import EmbeddedRedis, connect
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
