"""What a bench leaves of the clusters it ran, as each held them at the end (the
simulated cluster, or what the API server held): where every pod went
(`--placements`), and the last cluster as a snapshot (`--save-state`) that
`optimist explain --snapshot` and `optimist replay` read."""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from optimist.offline.simulator import SimulatedCluster

Run = tuple[str, ...]  # what names one run: its workload, then what else tells runs apart


def write_placements(
    path: Path, placed: Mapping[Run, Mapping[str, str]], columns: Sequence[str]
) -> None:
    """`namespace,pod,node` per bound pod (`placed`: each run's pod -> node), led by
    the columns (`columns` names a run's parts) whose values differ between runs: a
    single run's file is the three columns alone."""
    differ = [i for i in range(len(columns)) if len({run[i] for run in placed}) > 1]
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow([columns[i] for i in differ] + ["namespace", "pod", "node"])
        for run, bindings in placed.items():
            lead = [run[i] for i in differ]
            for key, node in sorted(bindings.items()):
                namespace, pod = key.split("/", 1)
                out.writerow([*lead, namespace, pod, node])


def write_state(path: Path, cluster: SimulatedCluster) -> None:
    """The cluster as it ended, as `kubectl get nodes,pods -A -o json` prints it."""
    path.write_text(json.dumps(cluster.objects()))
