"""The workload a policy learns: the common classes of a window of recent pods."""

from cluster.gpus import GpuDemand
from shards.plugins.gpu_placement.workload import TaskClass, Workload

CPU = TaskClass(1000, GpuDemand(), None)
SHARE = TaskClass(1000, GpuDemand(share=500), None)
RARE = TaskClass(3000, GpuDemand(whole=8), None)


def test_the_classes_kept_cover_the_common_pods_and_weigh_by_popularity():
    w = Workload(window=1000, coverage=0.95)
    w.observe([CPU] * 60 + [SHARE] * 38 + [RARE] * 2)
    classes = w.classes()
    assert classes.tasks == (CPU, SHARE)  # 98% covered; the rare 2% left out
    assert classes.weight.tolist() == [60 / 98, 38 / 98]


def test_old_pods_leave_the_window_and_the_classes_follow_in_steps():
    w = Workload(window=100)
    w.observe([CPU] * 100)
    assert w.classes().tasks == (CPU,)
    w.observe([SHARE] * 40)  # under half the window is new: as it was
    assert w.classes().tasks == (CPU,)
    w.observe([SHARE] * 20)
    assert w.classes().tasks == (SHARE, CPU)  # 60 of the last 100


def test_learnt_from_a_window_every_class_seen_is_kept():
    w = Workload(window=1000)
    w.observe([CPU] * 60 + [SHARE] * 38 + [RARE] * 2)
    assert w.classes().tasks == (CPU, SHARE, RARE)
