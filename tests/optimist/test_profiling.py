"""CPU profiles on demand: of the control loop (which profiles itself when it polls), of a
shard (through its actor, on real Ray), over HTTP to loopback clients only."""

from __future__ import annotations

import marshal
import pstats
import threading
import urllib.error
import urllib.request

import pytest

from optimist.loop import SchedulingLoop
from optimist.metrics.definitions import SchedulerMetrics
from optimist.metrics.server import MetricsServer
from optimist.offline.simulator import SimulatedCluster
from optimist.profiling import Profiler, ProfilingError
from optimist.runtime import Platform
from optimist.settings import Settings
from tests.test_binders_end_to_end import labelled_nodes, pod_doc


def functions(stats: bytes) -> set[str]:
    return {name for (_, _, name) in marshal.loads(stats)}


def busy_work() -> int:
    return sum(i * i for i in range(2000))


class Loop(threading.Thread):
    """A stand-in for the control loop: works and polls until stopped."""

    def __init__(self, profiler: Profiler) -> None:
        super().__init__(daemon=True)
        self.profiler, self.stop = profiler, threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            busy_work()
            self.profiler.poll()
        self.profiler.detach()

    def __enter__(self) -> Loop:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.join()


def test_the_loop_profiles_itself_when_asked():
    profiler = Profiler()
    with Loop(profiler):
        stats = profiler.profile("control", 0.3)
    assert "busy_work" in functions(stats)


def test_a_loop_that_does_not_poll_is_reported_not_running():
    with pytest.raises(ProfilingError, match="not running") as err:
        Profiler(reach_s=0.1).profile("control", 1)
    assert err.value.status == 503


@pytest.mark.parametrize(
    ("target", "seconds", "status", "words"),
    [
        ("control", 0, 400, "seconds: 0 is not in"),
        ("control", 301, 400, "seconds: 301"),
        ("driver", 1, 400, "target: 'driver' is neither"),
        ("shard-x", 1, 400, "target: 'shard-x'"),
        ("shard-3", 1, 404, "0 shards run now"),
    ],
)
def test_bad_requests_name_the_parameter_and_value(target, seconds, status, words):
    with pytest.raises(ProfilingError, match=words) as err:
        Profiler().profile(target, seconds)
    assert err.value.status == status


def test_one_profile_at_a_time():
    profiler = Profiler()
    with Loop(profiler):
        first = threading.Thread(target=profiler.profile, args=("control", 0.5))
        first.start()
        while profiler._ask is None:  # the first has asked
            pass
        with pytest.raises(ProfilingError, match="another profile") as err:
            profiler.profile("control", 0.1)
        first.join()
    assert err.value.status == 409


def test_served_to_loopback_only_and_only_when_enabled(tmp_path):
    profiler = Profiler()
    with Loop(profiler), MetricsServer(SchedulerMetrics(), "127.0.0.1:0", profiler=profiler) as s:
        base = f"http://{s.address}/debug/profile"
        stats = urllib.request.urlopen(f"{base}?target=control&seconds=0.3").read()
        (tmp_path / "control.prof").write_bytes(stats)
        assert pstats.Stats(str(tmp_path / "control.prof")).total_calls > 0
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"{base}?seconds=soon")
        assert err.value.code == 400 and b"seconds: 'soon'" in err.value.read()
        # a peer elsewhere (none can connect here: the server listens on loopback)
        status, _, body = s._profile({"REMOTE_ADDR": "10.1.2.3"}, profiler)
        assert status.startswith("403") and b"loopback" in body
    with (
        MetricsServer(SchedulerMetrics(), "127.0.0.1:0") as s,
        pytest.raises(urllib.error.HTTPError) as err,
    ):
        urllib.request.urlopen(f"http://{s.address}/debug/profile")
    assert err.value.code == 404


def test_a_shard_and_the_real_loop_profiled_while_they_schedule(ray_session, redis_url, key_prefix):
    settings = Settings(shards=2, redis_url=redis_url, key_prefix=key_prefix, batch_pods=8)
    cluster = SimulatedCluster(settings.scheduler_names)
    labelled_nodes(cluster, 50)
    profiler = Profiler()
    taken: dict[str, bytes] = {}

    def ask() -> None:
        for target in ("shard-1", "control"):
            taken[target] = profiler.profile(target, 0.5)

    with Platform(settings) as platform:
        loop = SchedulingLoop(platform, cluster, profiler=profiler)
        asking = threading.Thread(target=ask)
        asking.start()
        while asking.is_alive():  # keep the shards busy until both profiles are taken
            cluster.create_pods(pod_doc("p"), 200)
            loop.run_until_settled()
            cluster.delete_pods(list(cluster.bindings))
        profiler.detach()
    assert "handle" in functions(taken["shard-1"])  # ShardCore.handle
    assert "step" in functions(taken["control"])  # SchedulingLoop.step
