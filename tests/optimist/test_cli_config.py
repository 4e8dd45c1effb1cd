"""`optimist check-config` and `optimist bench --config`, without Ray or Redis."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmarks.commands import sim_bench_command
from benchmarks.report.bench_report import BenchReport
from benchmarks.simulated.sim_bench import Workload
from optimist.cli import main as cli
from optimist.settings import Settings
from tests.benchmarks.report.result_files import figures
from tests.optimist.conftest import CONFIGS

pytestmark = pytest.mark.usefixtures("fixed_registry")


def test_check_config_shows_profiles_and_inactive_plugins():
    result = CliRunner().invoke(cli.app, ["check-config", str(CONFIGS / "full.yaml")])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "profile optimist-a" in out and "profile optimist-b" in out
    assert "filters: NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit" in out
    assert "scorers: TaintToleration (weight 3), NodeResourcesFit (weight 1)" in out
    assert "scorers: NodeResourcesFit (weight 5)" in out
    assert "percentageOfNodesToScore: 100" in out
    assert "queueSort: PrioritySort (handled by the dispatcher's queue)" in out
    assert "bind: DefaultBinder (handled by the binder)" in out
    assert "inactive plugins" in out
    assert "optimist-a: VolumeBinding (PreFilter, Filter, PreScore, Score)" in out
    assert "preBind: VolumeBinding (handled by the API server's adapter" in out
    assert "shards=4" in out and "batch_pods=128" in out


def test_check_config_never_prints_the_redis_password():
    result = CliRunner().invoke(cli.app, ["check-config", str(CONFIGS / "only-optimist.yaml")])
    assert result.exit_code == 0, result.output
    assert "s3cret" not in result.output and "redis://:***@127.0.0.1:6379/0" in result.output


def test_check_config_of_an_empty_file_shows_the_defaults():
    result = CliRunner().invoke(cli.app, ["check-config", str(CONFIGS / "empty.yaml")])
    assert result.exit_code == 0, result.output
    assert "profile default-scheduler" in result.output
    assert "percentageOfNodesToScore: adaptive" in result.output


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("bad-strategy.yaml", 'profiles[1].pluginConfig[0].args.scoringStrategy.type: "Fastest"'),
        ("missing.yaml", "missing.yaml"),
    ],
)
def test_check_config_exits_2_on_a_bad_file(name, expected):
    result = CliRunner().invoke(cli.app, ["check-config", str(CONFIGS / name)])
    assert result.exit_code == 2
    assert expected in result.output


class _Run:
    """What run_bench returns, for a bench that did not run."""

    ok = True
    cluster = None
    report = BenchReport.model_validate(figures("failed-op"))


@pytest.fixture
def benches(monkeypatch: pytest.MonkeyPatch) -> list[Settings]:
    """The settings each `optimist bench` would have run with."""
    seen: list[Settings] = []

    def fake(
        settings: Settings,
        workload: Workload,
        *,
        show_progress: bool,
        cpu_affinity: bool,
        profile_dir: object = None,
        chaos: object = None,
        explain_every_s: float = 0.0,
    ) -> _Run:
        seen.append(settings)
        return _Run()

    monkeypatch.setattr(sim_bench_command, "run_bench", fake)
    return seen


def test_bench_flags_override_the_file(benches, caplog):
    args = ["bench", "--config", str(CONFIGS / "full.yaml"), "--shards", "1", "--no-progress"]
    with caplog.at_level(logging.WARNING, logger="optimist"):
        result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 0, result.output
    [settings] = benches
    assert settings.shards == 1  # the flag
    assert (settings.batch_pods, settings.seed, settings.key_prefix) == (
        128,
        7,
        "prod:",
    )  # the file
    assert settings.scheduler_names == {"optimist-a", "optimist-b"}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("optimist-b: VolumeBinding" in w for w in warnings)
    assert len(warnings) == len(set(warnings))  # each once


def test_bench_without_config_uses_the_defaults(benches, caplog):
    with caplog.at_level(logging.WARNING, logger="optimist"):
        result = CliRunner().invoke(cli.app, ["bench", "--seed", "3", "--no-progress"])
    assert result.exit_code == 0, result.output
    [settings] = benches
    assert settings.shards == 2 and settings.seed == 3 and settings.pods_per_batch == 256
    assert not [r for r in caplog.records if "inactive plugin" in r.getMessage()]


def test_bench_refuses_a_bad_file(benches, tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: optimist.io/v1alpha1\nkind: OptimistConfiguration\nshards: 0\n")
    result = CliRunner().invoke(cli.app, ["bench", "--config", str(bad)])
    assert result.exit_code == 2 and not benches
    assert "shards: 0: must be at least 1" in result.output
