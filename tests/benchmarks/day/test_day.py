"""A short day in the living cluster, lived by `optimist run` in a process of its own:
every kind of happening comes to pass, and the day's own checks find nothing wrong."""

from pathlib import Path

import pytest
import ray

from benchmarks.apiserver.scheduler_processes import (
    metrics_url,
    optimist_process,
    scheduler_documents,
)
from benchmarks.cases import day_file
from benchmarks.controlplane.control_plane import free_port
from benchmarks.day.day_file import load_day
from benchmarks.day.day_plan import plan_day
from benchmarks.day.day_report import day_figures
from benchmarks.day.day_runner import DayRunner
from benchmarks.report.instruments import ProcessTree
from tests.kube.api import Api

DURATION_S = 30.0
NAMES = frozenset({"default-scheduler"})


@pytest.mark.usefixtures("ray_session")
def test_a_short_day_keeps_every_invariant_and_explains_what_it_leaves_pending(
    living_api: Api, tmp_path: Path
):
    api = living_api
    # the shipped day, its node pool gone from a tenth of the day to 70% of it: the
    # node lifecycle controller needs its grace (10 s) to see it NotReady
    day = load_day(day_file())
    assert day.node_down is not None and day.drain is not None
    day = day.model_copy(
        update={
            "node_down": day.node_down.model_copy(update={"at": 0.1, "back": 0.7}),
            "drain": day.drain.model_copy(update={"at": 0.75}),
        }
    )
    plan = plan_day(day, 12, DURATION_S, seed=3, scheduler_name="default-scheduler")
    port = free_port()
    kubeconfig = api.plane.admin_kubeconfig
    address = ray.get_runtime_context().gcs_address  # the session's: not a Ray of its own
    documents = scheduler_documents(None)
    with optimist_process(kubeconfig, documents, 1, tmp_path, port, address) as pid:
        runner = DayRunner(
            plan, api.plane, api.admin, "optimist", {"scheduler": ProcessTree(pid)},
            metrics_url("optimist", port), NAMES, check_every_s=8, settle_s=60,
            explain_address=f"127.0.0.1:{port}",
        )  # fmt: skip
        outcome = runner.run()
        figures = day_figures(outcome, DURATION_S)
    assert figures.violations_during == figures.violations_at_end == []
    assert figures.placed_on_closed_nodes == []
    assert figures.checks >= 3
    flaky = sum(1 for n in plan.nodes if n["metadata"]["name"].startswith("flaky"))
    drained = sum(1 for n in plan.nodes if n["metadata"]["name"].startswith("batch"))
    assert figures.nodes_closed == {"not_ready": flaky, "cordoned": drained}
    # every pod the controllers made was bound, but those they deleted first (a scale-down
    # or a rollout can remove a pod before any scheduler placed it)
    unbound = {k for k in outcome.created_at if k not in outcome.watch.bound_at}
    assert unbound <= outcome.watch.gone and figures.pods_bound > 0
    assert figures.end.not_rolled_out == [] and figures.end.deployments > 0
    assert figures.end.daemon_pods_ready == figures.end.daemon_pods_desired > 0
    # what is left pending is the pods made to fit nowhere, each explained, and
    # `optimist explain` agrees that no node can take them
    assert figures.end.unexplained == []
    assert [p.never_fits and p.explain_agrees for p in figures.end.pending] == [True] * 3
    assert any("drained, nothing left to evict" in what for _, what in figures.happened)
    assert figures.series.t_s and max(figures.series.bound) > 0
