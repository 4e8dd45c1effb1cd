"""What a command starts ends with it: on ^C at any moment, on a second ^C at once, and
on SIGKILL, which nothing inside the command can handle (`optimist.lifetime`)."""

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.process_tree import MarkedCommand

OPTIMIST = str(Path(sys.executable).with_name("optimist"))
# long enough that a ^C or a kill lands while the shards schedule: it never finishes
BENCH = [OPTIMIST, "bench", "--nodes", "1000", "--pods", "30000", "--no-progress"]


def _shards_started(bench: MarkedCommand) -> bool:
    return any(line.startswith("ray::ShardActor") for line in bench.processes().values())


def _ray_starting(bench: MarkedCommand) -> bool:
    return any("gcs_server" in line for line in bench.processes().values())


@pytest.mark.parametrize(
    ("moment", "reached"),
    [("Ray starting", _ray_starting), ("shards scheduling", _shards_started)],
)
def test_a_bench_interrupted_stops_everything_it_started(tmp_path, moment, reached):
    with (tmp_path / "out.txt").open("w") as out, MarkedCommand(BENCH, out) as bench:
        bench.wait_for(moment, lambda: reached(bench))
        bench.process.send_signal(signal.SIGINT)
        bench.process.wait(timeout=60)
        assert not bench.left_after(15), (tmp_path / "out.txt").read_text()
    assert bench.process.returncode != 0  # interrupted: the run did not finish


def test_a_bench_killed_leaves_nothing_running(tmp_path):
    """SIGKILL mid-run: the private redis-server and Ray's agents, orphaned, are ended
    by the reaper, not left for someone to find."""
    with (tmp_path / "out.txt").open("w") as out, MarkedCommand(BENCH, out) as bench:
        bench.wait_for("shards scheduling", lambda: _shards_started(bench))
        started = bench.processes()
        assert any("redis-server" in line for line in started.values()), started
        bench.process.kill()
        bench.process.wait()
        assert not bench.left_after(15)


def test_a_second_interrupt_ends_the_command_at_once(tmp_path):
    """The first ^C asks the command to stop, however long that takes; the second
    ends it."""
    script = (
        "import time\n"
        "from optimist.lifetime import interrupts\n"
        "with interrupts(lambda signum: print('stopping', flush=True)):\n"
        "    print('running', flush=True)\n"
        "    time.sleep(600)\n"  # a stop that never comes
    )
    log = tmp_path / "out.txt"
    with log.open("w") as out, MarkedCommand([sys.executable, "-c", script], out) as command:
        command.wait_for("the command running", lambda: "running" in log.read_text())
        command.process.send_signal(signal.SIGINT)
        command.wait_for("the first ^C taken", lambda: "stopping" in log.read_text())
        assert command.process.poll() is None
        command.process.send_signal(signal.SIGINT)
        assert command.process.wait(timeout=15) == 128 + signal.SIGINT


def test_a_background_jobs_ignored_interrupt_stays_ignored():
    """A shell starts a background job with SIGINT ignored, so that a ^C at the
    terminal is not for it; the command keeps it so."""
    script = (
        "import signal\n"
        "from optimist.lifetime import interrupts\n"
        "with interrupts(lambda signum: None):\n"
        "    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN\n"
    )
    ignoring = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)  # noqa: E731
    subprocess.run([sys.executable, "-c", script], check=True, preexec_fn=ignoring)
