"""Workload mixes of a GPU trace: each kind reweighted to its target, the rest kept,
the same mix again for the same seed; checked on the shipped trace when it is there
(its own variants are the yardstick: the mix generator must make what they are)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.gpu.mix import composition, gpu_models, kind_of, parse_mix, resample
from benchmarks.gpu.trace_files import TraceError, TraceTask, read_nodes, read_tasks

TRACES = Path(__file__).resolve().parents[4] / "shared" / "traces" / "alibaba-gpu-v2023"


def task(name: str, num_gpu: int, gpu_milli: int, models: tuple[str, ...] = ()) -> TraceTask:
    return TraceTask(name, 4000, 8192, num_gpu, gpu_milli if num_gpu else 0, models)


KINDS = [(0, 0), (1, 1000), (1, 500), (1, 300), (2, 1000), (8, 1000)]
TASKS = [task(f"t{i}", *KINDS[i % len(KINDS)]) for i in range(600)]
MODELS = ["T4"] * 40 + ["V100"] * 24


@pytest.mark.parametrize(
    "targets",
    [
        {"cpu": 0.05},
        {"cpu": 0.40},
        {"share": 0.60},
        {"share": 0.05},
        {"multi": 0.50},
        {"share": 0.30, "multi": 0.40},
        {"spec": 0.50},
        {"cpu": 0.25, "share": 0.50, "spec": 0.20},
    ],
    ids=str,
)
def test_each_kind_reaches_its_target_and_the_others_keep_their_tasks(targets):
    mixed = resample(TASKS, targets, 7, MODELS)
    got = composition(mixed)
    for kind, target in targets.items():
        assert got[kind] == pytest.approx(target, abs=0.02), (kind, got)
    untouched = {"whole"} | ({"share", "multi"} - targets.keys())
    if "cpu" not in targets:
        untouched.add("cpu")
    for kind in untouched:
        before = sorted(t.name for t in TASKS if kind_of(t) == kind)
        assert sorted(t.name for t in mixed if kind_of(t) == kind) == before, kind
    assert len({t.name for t in mixed}) == len(mixed)  # drawn again: a name of its own


def test_the_same_seed_makes_the_same_mix():
    first = resample(TASKS, {"share": 0.6, "spec": 0.3}, 3, MODELS)
    assert first == resample(TASKS, {"share": 0.6, "spec": 0.3}, 3, MODELS)
    assert first != resample(TASKS, {"share": 0.6, "spec": 0.3}, 4, MODELS)


def test_models_come_from_the_traces_bound_tasks_or_else_by_the_clusters_gpus():
    bound = [*TASKS[:300], *(task(f"b{i}", 1, 500, ("A10", "G3")) for i in range(30))]
    mixed = resample(bound, {"spec": 0.5}, 1, MODELS)
    assert {t.models for t in mixed if t.models} == {("A10", "G3")}
    drawn = [t.models for t in resample(TASKS, {"spec": 0.5}, 1, MODELS) if t.models]
    assert set(drawn) == {("T4",), ("V100",)}
    assert 0.5 < drawn.count(("T4",)) / len(drawn) < 0.75  # 40 of the 64 GPUs are T4s
    fewer = resample(bound, {"spec": 0.0}, 1, MODELS)
    assert not any(t.models for t in fewer)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("share", "expected KIND=PERCENT"),
        ("gpu=50", "expected KIND=PERCENT"),
        ("share=many", "'many' is not a percent"),
        ("share=100", "a percent in [0, 100)"),
        ("cpu=10,cpu=20", "once per kind"),
        ("share=60,multi=40", "no room for other tasks"),
    ],
)
def test_a_bad_mix_names_what_is_wrong(text, problem):
    with pytest.raises(TraceError, match=re.escape(problem)):
        parse_mix(text)
    assert parse_mix("share=60, spec=30") == {"share": 0.6, "spec": 0.3}


@pytest.mark.skipif(not TRACES.is_dir(), reason=f"the Alibaba trace is not at {TRACES}")
@pytest.mark.parametrize(
    ("variant", "targets"),
    [
        ("cpu050", {"cpu": 0.05}),
        ("gpushare40", {"share": 0.40}),
        ("multigpu20", {"multi": 0.20}),
        ("gpuspec10", {"spec": 0.10}),
    ],
)
def test_from_the_default_trace_the_mix_of_each_shipped_variant(variant, targets):
    """What the paper's repository shipped, remade from the default trace: the kind it
    stresses at the variant's own measure, the others as in the default trace."""
    default = read_tasks(TRACES / "openb_pod_list_default.csv")
    shipped = composition(read_tasks(TRACES / f"openb_pod_list_{variant}.csv"))
    models = gpu_models(read_nodes(TRACES / "openb_node_list_gpu_node.csv"))
    made = composition(resample(default, targets, 42, models))
    kind = next(iter(targets))
    assert made[kind] == pytest.approx(shipped[kind], abs=0.01)
    assert made[kind] == pytest.approx(targets[kind], abs=0.01)
