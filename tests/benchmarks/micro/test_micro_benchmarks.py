"""The micro-benchmarks run at small size (their figures are read, never asserted)."""

import sys

import pytest

from benchmarks.micro import shard_micro


@pytest.mark.parametrize("kind", ["alike", "heterogeneous"])
def test_shard_micro_decides_and_reports(monkeypatch, capsys, kind):
    argv = ["shard_micro", "--nodes", "200", "--batch", "32", "--batches", "3", "--profile"]
    if kind == "heterogeneous":
        argv.append("--heterogeneous")
    monkeypatch.setattr(sys, "argv", argv)
    shard_micro.main()
    out = capsys.readouterr().out
    assert f"shard: 200 nodes, batch 32 ({kind}):" in out and "pods/s" in out
    assert "tottime" in out  # the profile was printed


@pytest.mark.usefixtures("ray_session")
def test_store_micro_commits_through_every_path(monkeypatch, capsys):
    from benchmarks.micro import store_micro

    argv = ["store_micro", "--nodes", "300", "--batch", "16", "--batches", "3"]
    monkeypatch.setattr(sys, "argv", argv)
    store_micro.main()
    out = capsys.readouterr().out
    assert "commit: batch 16:" in out and "binder actors: 8:" in out
    assert "partitioned: 3 Redis: single pods" in out and "gangs across two partitions" in out
    assert "changes_since(0), full first sync of 300 nodes" in out


def test_dispatcher_micro_moves_every_pod_through(monkeypatch, capsys):
    from benchmarks.micro import dispatcher_micro

    monkeypatch.setattr(sys, "argv", ["dispatcher_micro", "--pods", "2000", "--batch", "64"])
    dispatcher_micro.main()
    out = capsys.readouterr().out
    assert "dispatcher: 2,000 pods, batches of 64:" in out and "2,000 bound" in out
    assert all(f"  {stage}:" in out for stage in ("add", "next_batch", "on_result", "on_outcomes"))
    assert "unschedulable queue: 2,000 units waiting" in out and "sends all 2,000 back" in out


@pytest.mark.usefixtures("ray_session")
def test_memory_pending_queues_every_pod_and_reports_each_role(monkeypatch, capsys):
    from benchmarks.micro import memory_pending

    argv = ["memory_pending", "--nodes", "100", "--pods", "3000", "--shards", "1"]
    monkeypatch.setattr(sys, "argv", argv)
    memory_pending.main()
    out = capsys.readouterr().out
    assert "3,000 pending pods, 100 nodes, 1 shards" in out
    assert "pending in the dispatcher: 3,000 units" in out
    assert "optimist's processes together:" in out and "the simulated cluster, apart:" in out


def test_gpu_policy_cost_times_every_policy_on_a_trace(monkeypatch, capsys, tmp_path):
    from benchmarks.micro import gpu_policy_cost
    from shards.plugins.gpu_placement import POLICIES

    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(
        "sn,cpu_milli,memory_mib,gpu,model\n"
        + "".join(f"n{i},32000,65536,{(2, 8)[i % 2]},T4\n" for i in range(20))
    )
    pods.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
        + "".join(f"p{i},2000,1024,{i % 3},{(0, 500, 1000)[i % 3]}\n" for i in range(90))
    )
    argv = ["gpu_policy_cost", "--nodes", str(nodes), "--pods", str(pods), "--batch", "32"]
    monkeypatch.setattr(sys, "argv", [*argv, "--seed", "1", "2"])
    gpu_policy_cost.main()
    out = capsys.readouterr().out
    assert "unallocated at 100%" in out
    for policy in POLICIES:
        rows = [line.split() for line in out.splitlines() if line.startswith(f"{policy} ")]
        assert [row[1] for row in rows] == ["1", "2", "mean"]
        assert all(row[-1].endswith("%") for row in rows[:2])
    mixed = [*argv, "--policy", "fgd", "--seed", "1", "--resample", "share=50,spec=20"]
    monkeypatch.setattr(sys, "argv", mixed)
    gpu_policy_cost.main()  # a mix of the trace, as replay-gpu-trace --resample makes it
    rows = [
        line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("fgd ")
    ]
    assert [row[1] for row in rows] == ["1"] and rows[0][-1].endswith("%")


@pytest.mark.usefixtures("ray_session")
def test_soak_smoke_keeps_binding_and_reports_its_slopes(monkeypatch, capsys, tmp_path):
    """The 12-second version of the ten-minute soak: a smoke, no figure asserted."""
    import json

    from benchmarks import soak

    report = tmp_path / "soak.json"
    argv = ["soak", "--duration", "12", "--nodes", "500", "--burst", "2000", "--window", "2"]
    monkeypatch.setattr(sys, "argv", [*argv, "--report", str(report)])
    soak.main()
    r = json.loads(report.read_text())
    assert r["invariant_violations"] == []
    assert r["peak_pods_per_s"] > 0 and r["rate_pods_per_s"] == r["peak_pods_per_s"] / 2
    assert len(r["windows"]) >= 5 and all(w["bound"] > 0 for w in r["windows"])
    slopes = r["memory_slope_mib_per_min"]
    assert set(slopes) == {"driver", "shards", "redis"}
    assert r["p99_first_s"] is not None and r["p99_last_s"] is not None
    assert "memory slope, MiB/min:" in capsys.readouterr().out


def test_each_capacity_plan_holds_its_rate_when_simulated():
    """The plan's arithmetic checked by the simulation: with a core per process, what
    it plans reaches the rate it was planned for."""
    from benchmarks.capacity import plan, simulate

    checked = 0
    for nodes in (5_000, 20_000, 100_000):
        for rate in (1_000, 5_000):
            p = plan(nodes, rate)
            assert p.feasible and p.ceiling >= rate, p
            reached = simulate(p.shards, p.binder_actors, p.redis, p.cores, nodes, kube=True)
            assert reached >= rate, (p, reached)
            checked += 1
    assert checked == 6
    beyond = plan(5_000, 20_000)  # one API server and one dispatcher do not go that far
    assert not beyond.feasible and beyond.dispatchers > 1 and beyond.api_share > 1


def test_the_capacity_simulation_meets_the_arithmetic_where_cores_abound():
    from benchmarks.capacity import Costs, simulate

    c = Costs()
    # a driver dispatching alone, one binder actor, 4 shards, one Redis: Redis gives way
    redis_ceiling = 1e6 / (c.redis_commit_us + 4 * c.redis_read_us)
    assert redis_ceiling < 1e6 / c.dispatch_us
    assert simulate(4, 1, 1, 16.0) == pytest.approx(redis_ceiling, rel=0.03)
    # a second Redis: the driver's dispatch gives way
    assert simulate(4, 1, 2, 16.0) == pytest.approx(1e6 / c.dispatch_us, rel=0.03)
    # on 2 cores the processes share them, and the simulation falls below every part's
    # own ceiling, as the 2-core bench does (docs/capacity.md)
    assert simulate(1, 0, 1, 2.0) < 1e6 / (c.dispatch_us + c.commit_us)


def test_capacity_prints_its_table(monkeypatch, capsys):
    from benchmarks import capacity

    monkeypatch.setattr(sys, "argv", ["capacity"])
    capacity.main()
    out = capsys.readouterr().out
    assert out.count("\n| 100,000 |") == 3 and "gives way first" in out


def _memory_report(sizes, shards=2):
    """An API bench result file's fields the memory fit reads (and two runs it leaves
    out: one without memory, one that failed over): optimist's parts at
    100 MiB + 1,000 B a node + 500 B a pod (its shards each), kube-scheduler's at
    50 MiB + 2,000 B a pod."""
    runs = []
    for nodes, pods in sizes:
        ours = 100 * 2**20 + 1000 * nodes + 500 * pods
        for scheduler, end in (
            ("optimist", {"main": ours, "shards": shards * ours}),
            ("kube-scheduler", {"main": 50 * 2**20 + 2000 * pods}),
        ):
            memory = {"peak_bytes": end, "end_bytes": end}
            held = {"bound": 1000, "bound_at_creation": pods - 1000}
            runs.append({"scheduler": scheduler, "nodes": nodes, "all_pods": held} | {
                "scheduler_memory": memory})  # fmt: skip
    doubled = {part: 2 * rss for part, rss in runs[0]["scheduler_memory"]["end_bytes"].items()}
    two = {**runs[0], "restarts": [{"failover": True, "first_binding_s": 1.0}]} | {
        "scheduler_memory": {"peak_bytes": doubled, "end_bytes": doubled}}  # fmt: skip
    return {"shards": shards, "runs": [*runs, {"scheduler": "optimist", "nodes": 1}, two]}


def test_the_memory_fit_finds_each_part_s_bytes_per_node_and_per_pod(monkeypatch, capsys):
    from benchmarks import capacity

    report = _memory_report([(5_000, 11_000), (5_000, 51_000), (20_000, 201_000)])
    fits = {(f.scheduler, f.part): f for f in capacity.fit_memory([report])}
    assert set(fits) == {("optimist", "main"), ("optimist", "shards"), ("kube-scheduler", "main")}
    for part in ("main", "shards"):  # shards: each shard's
        f = fits["optimist", part]
        assert (f.fixed, f.per_node, f.per_pod) == pytest.approx((100 * 2**20, 1000, 500))
        assert f.runs == 3
    f = fits["kube-scheduler", "main"]
    assert (f.per_node, f.per_pod) == pytest.approx((0, 2000), abs=1e-3)
    assert f.at(100_000, 1_000_000) == pytest.approx(50 * 2**20 + 2000 * 1_000_000)
    with pytest.raises(ValueError, match="kube-scheduler main: 2 runs of too few shapes"):
        capacity.fit_memory([_memory_report([(5_000, 11_000), (10_000, 22_000)])])


@pytest.mark.usefixtures("ray_session")
def test_ray_micro_times_round_trips_and_calls_in_flight(monkeypatch, capsys):
    from benchmarks.micro import ray_micro

    monkeypatch.setattr(sys, "argv", ["ray_micro", "--calls", "20", "--frame-bytes", "1024"])
    ray_micro.main()
    out = capsys.readouterr().out
    assert "ray: empty call: round trip median" in out and "1,024-byte frames" in out
    assert out.count("pods/s at 256 pods a batch") == 4


def test_simulator_micro_binds_every_pod_it_creates(monkeypatch, capsys):
    from benchmarks.micro import simulator_micro

    argv = ["simulator_micro", "--pods", "1000", "--nodes", "50", "--chunk", "300"]
    monkeypatch.setattr(sys, "argv", argv)
    simulator_micro.main()
    out = capsys.readouterr().out
    assert "simulated cluster: 1,000 pods in chunks of 300:" in out and "1,000 bound" in out
    assert all(f"  {step}:" in out for step in ("create", "watch", "bind"))


def test_gpu_mix_sweep_compares_policies_on_mixes_and_draws_them(capsys, tmp_path):
    import json

    from benchmarks.sweeps import gpu_mixes as gpu_mix_sweep
    from tests.benchmarks.report.test_pages import parse

    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_text(
        "sn,cpu_milli,memory_mib,gpu,model\n"
        + "".join(
            f"n{i},32000,65536,{(2, 8)[i % 2]},{('T4', 'V100')[i % 3 > 0]}\n" for i in range(20)
        )
    )
    pods.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
        + "".join(
            f"p{i},{2000 + 1000 * (i % 4)},1024,{i % 3},{(0, 500, 1000)[i % 3]},{model}\n"
            for i, model in enumerate(("T4" if i % 7 == 1 else "") for i in range(90))
        )
    )
    report, page, png = tmp_path / "sweep.json", tmp_path / "sweep.html", tmp_path / "sweep.png"
    argv = ["--nodes", str(nodes), "--pods", str(pods), "--seeds", "1-2", "--jobs", "1"]
    mixes = ["--mix", "default", "--mix", f"{pods}:spec=50", "--mix", "cpu=30,share=40"]
    policies = ["--policy", "fgd-scarcity", "fgd"]
    written = ["--report", str(report), "--html", str(page), "--plot", str(png)]
    gpu_mix_sweep.main([*argv, *mixes, *policies, *written])
    out = capsys.readouterr().out
    assert "paired by seed" in out and "failed GPU requests" in out
    sweep = json.loads(report.read_text())["gpu_mix_sweep"]
    assert [m["mix"] for m in sweep["mixes"]] == ["default", "pods spec=50", "cpu=30,share=40"]
    assert len(sweep["runs"]) == 3 * 2 * 2
    for mix in sweep["mixes"]:
        for figures in mix["policies"].values():
            assert sorted(figures["seeds"]) == ["1", "2"]
            assert figures["mean"] == pytest.approx(sum(figures["seeds"].values()) / 2)
            # what was not allocated at 100% is idle somewhere
            assert sum(figures["idle_pct"].values()) == pytest.approx(figures["mean"], abs=1e-6)
    assert sweep["mixes"][1]["composition"]["spec"] == pytest.approx(0.5, abs=0.05)
    html = parse(page.read_text())
    assert html.count["svg"] == 1 and "GPU policies on workload mixes" in "".join(html.text)
    assert png.read_bytes().startswith(b"\x89PNG")


def test_gpu_mix_sweep_names_a_wrong_mix(capsys, tmp_path):
    from benchmarks.sweeps import gpu_mixes as gpu_mix_sweep

    with pytest.raises(SystemExit):
        gpu_mix_sweep.main(["--nodes", "n.csv", "--pods", "p.csv", "--mix", "gpus=20"])
    assert "--resample 'gpus=20'" in capsys.readouterr().err
