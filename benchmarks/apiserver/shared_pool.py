"""Two schedulers on one node pool, as a user runs optimist beside kube-scheduler in a
rollout: each serves some of the configuration's profiles, and neither sees the room the
other has promised until the watch shows it the binding. The API server does not check
that a node has room, so both may promise its last room; kubelets then turn the later
pod away (`OutOfcpu`). The bench counts what is left so (`invariants.kubelet_rejections`).

The setups, by the name the bench's `--scheduler`/`--compare` take: two kube-schedulers,
the first profile for one and the second for the other; kube-scheduler for the first
profile and optimist for the rest. optimist alone for every profile is `optimist`."""

from __future__ import annotations

from typing import Any

from benchmarks.apiserver.scheduler_processes import ApiBenchError

KUBE_SCHEDULERS = "kube-scheduler+kube-scheduler"
BESIDE_KUBE_SCHEDULER = "kube-scheduler+optimist"
SHARED_POOL = (KUBE_SCHEDULERS, BESIDE_KUBE_SCHEDULER)


def split_profiles(
    name: str, documents: list[dict[str, Any]]
) -> list[tuple[str, list[dict[str, Any]]]]:
    """The setup `name`'s schedulers, each with the configuration documents it runs: the
    KubeSchedulerConfiguration with its share of the profiles (optimist's own documents
    go to optimist). ApiBenchError unless the configuration has the profiles to share."""
    first, *rest = documents
    profiles = list(first.get("profiles") or [])
    wanted = "two profiles" if name == KUBE_SCHEDULERS else "two profiles or more"
    if len(profiles) < 2 or (name == KUBE_SCHEDULERS and len(profiles) > 2):
        raise ApiBenchError(
            f"--scheduler {name}: the configuration has {len(profiles)} profile(s); "
            f"{name} shares a pool between {wanted}, one for kube-scheduler first"
        )
    if name == KUBE_SCHEDULERS:
        return [("kube-scheduler", [{**first, "profiles": [p]}]) for p in profiles]
    return [
        ("kube-scheduler", [{**first, "profiles": profiles[:1]}]),
        ("optimist", [{**first, "profiles": profiles[1:]}, *rest]),
    ]
