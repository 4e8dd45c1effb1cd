"""Fixtures: one real Redis server and one real Ray for the whole session; and a hook
that injects a fault in the middle of a run."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import ray

from benchmarks.controlplane.control_plane import (
    ControlPlane,
    ControlPlaneMissing,
    binaries,
    scheduler_perf_plane,
)
from benchmarks.controlplane.living_plane import LivingPlane
from benchmarks.controlplane.releases import RELEASES, kube_version
from cluster.redis_server import EmbeddedRedis, connect
from cluster.store import Keys, NodeStore
from optimist.offline.simulator import SimulatedCluster
from optimist.runtime import init_ray
from tests.kube.api import Api
from tests.kube.proxy import FaultProxy
from tests.oracle import Oracle, OracleMissing

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


SHARED_CRDS = Path(__file__).resolve().parents[2] / "shared" / "kubernetes" / "crds"


def _need_kube() -> None:
    """Skip, saying what to build, where the control plane is not built; under CI, fail."""
    try:
        binaries()
    except ControlPlaneMissing as missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the Kubernetes tests: {missing}")
        pytest.skip(str(missing))


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """etcd and kube-apiserver of the release OPTIMIST_KUBE_VERSION names (the newest
    by default: `benchmarks.controlplane.releases`), built from source by `make kube`,
    once for the session, with the CRDs optimist meets (../shared/kubernetes/crds) installed.
    Skipped, saying what to install, where they are not built; under CI, a failure."""
    _need_kube()
    with ControlPlane(crds=_shared_crds()) as plane:
        yield plane


def _shared_crds() -> list[Path]:
    crds = sorted(SHARED_CRDS.glob("*.yaml"))
    if not crds and os.environ.get("CI") == "true":
        pytest.fail(f"no CRDs in {SHARED_CRDS}: CI has ../shared beside the checkout")
    return crds


@pytest.fixture(scope="session")
def perf_control_plane() -> Iterator[ControlPlane]:
    """A second control plane, as scheduler_perf's harness starts its own (throughput
    flags; no Priority admission: upstream's templates set spec.priority), once for
    the session, for the tests that run upstream's files through it."""
    _need_kube()
    with scheduler_perf_plane() as plane:
        yield plane


@pytest.fixture(scope="session")
def oracle() -> Iterator[Oracle]:
    """kube-scheduler v1.30's own plugins behind a pipe (tests/oracle), once for the
    session. Skipped, saying what to build, where `make oracle` has not run; under CI,
    a failure."""
    try:
        judge = Oracle()
    except OracleMissing as missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the parity tests: {missing}")
        pytest.skip(str(missing))
    try:
        yield judge
    finally:
        judge.close()


@pytest.fixture(scope="session")
def living_plane() -> Iterator[LivingPlane]:
    """The control plane with kube-controller-manager and KWOK beside it
    (`benchmarks.controlplane.living_plane`), once for the session, with the CRDs optimist meets."""
    _need_kube()
    with LivingPlane(crds=_shared_crds()) as plane:
        yield plane


@pytest.fixture
def kube_api(control_plane: ControlPlane) -> Iterator[Api]:
    """The session's real API server behind a fault proxy of this test's own; what the
    test made is removed after it, pass or fail."""
    yield from _api(control_plane)


@pytest.fixture(scope="session")
def other_control_plane() -> Iterator[ControlPlane]:
    """`control_plane` of the other release `make kube` builds (v1.30.4 where the tests
    run the newest), for the tests that matter most on both."""
    _need_kube()
    other = next(r for r in RELEASES if r != kube_version())
    with ControlPlane(crds=_shared_crds(), bin_dir=binaries(other)) as plane:
        yield plane


@pytest.fixture(params=RELEASES)
def each_release(request: pytest.FixtureRequest) -> Iterator[tuple[ControlPlane, Api]]:
    """`control_plane` and `kube_api` of each release `make kube` builds, one per test."""
    ours = request.param == kube_version()
    plane = request.getfixturevalue("control_plane" if ours else "other_control_plane")
    yield from ((plane, api) for api in _api(plane))


@pytest.fixture
def living_api(living_plane: LivingPlane) -> Iterator[Api]:
    """`kube_api` on the living plane: its workloads go before their pods."""
    yield from _api(living_plane)


def _api(plane: ControlPlane) -> Iterator[Api]:
    with FaultProxy(plane.url, plane.serving_context(), plane.client_context()) as proxy:
        api = Api(plane, proxy)
        try:
            yield api
        finally:
            api.clean()


def needs_crds(*names: str) -> pytest.MarkDecorator:
    """Skip, saying why, where ../shared/kubernetes/crds (beside CI's checkout, not in a
    user's clone) lacks these CRDs."""
    have = {p.name for p in SHARED_CRDS.glob("*.yaml")}
    missing = [n for n in names if n not in have]
    return pytest.mark.skipif(
        bool(missing), reason=f"{', '.join(missing)} not in {SHARED_CRDS} (../shared)"
    )


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
