"""The Alibaba GPU trace's files (alibaba/clusterdata, cluster-trace-gpu-v2023): its
nodes and tasks, read strictly; a line that cannot be read is named with its column."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cluster.gpus import GPU, GPU_MILLI, GPU_PRODUCT_LABEL, GpuDemand
from shards.plugins.gpu_placement.workload import TaskClass

PROFILE = "gpu-trace"  # the replay's profile: the schedulerName of every task's pod
MEMORY_UNIT = 1024 * 1024  # the trace's memory is in MiB


class TraceError(ValueError):
    """A trace file that cannot be read: names the file, the line and the column."""


@dataclass(frozen=True, slots=True)
class TraceNode:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str

    def manifest(self) -> dict[str, Any]:
        allocatable = {
            "cpu": f"{self.cpu_milli}m",
            "memory": f"{self.memory_mib}Mi",
            "pods": "1000",  # the trace limits CPU, memory and GPUs only
            GPU: str(self.gpus),
        }
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.name, "labels": {GPU_PRODUCT_LABEL: self.model}},
            "status": {"allocatable": allocatable, "capacity": allocatable},
        }


@dataclass(frozen=True, slots=True)
class TraceTask:
    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    models: tuple[str, ...]  # allowed GPU models; () for any

    @property
    def gpu(self) -> GpuDemand:
        """A share of one GPU below 1000 milli; otherwise whole GPUs."""
        if self.num_gpu == 1 and 0 < self.gpu_milli < 1000:
            return GpuDemand(share=self.gpu_milli)
        return GpuDemand(whole=self.num_gpu)

    @property
    def gpu_request(self) -> int:
        """In milli: what counts towards 'arrived' and 'allocated'."""
        return self.gpu.devices * self.gpu.per_device

    @property
    def kind(self) -> str:
        gpu = self.gpu
        kind = "cpu-only" if not gpu else "gpu-share" if gpu.share else f"{gpu.whole}-gpu"
        return f"{kind}, model-constrained" if self.models else kind

    @property
    def task_class(self) -> TaskClass:
        return TaskClass(self.cpu_milli, self.gpu, frozenset(self.models) or None)

    def manifest(self, name: str) -> dict[str, Any]:
        gpu = self.gpu
        requests = {"cpu": f"{self.cpu_milli}m", "memory": f"{self.memory_mib}Mi"}
        if gpu.whole:
            requests[GPU] = str(gpu.whole)
        elif gpu.share:
            requests[GPU_MILLI] = str(gpu.share)
        spec: dict[str, Any] = {
            "schedulerName": PROFILE,
            "containers": [{"name": "task", "image": "task", "resources": {"requests": requests}}],
        }
        if self.models:
            term = {"key": GPU_PRODUCT_LABEL, "operator": "In", "values": list(self.models)}
            spec["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [term]}]
                    }
                }
            }
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "trace"},
            "spec": spec,
        }


def _rows(path: Path, columns: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in columns if c not in (reader.fieldnames or [])]
            if missing:
                raise TraceError(f"{path}: line 1: missing columns {', '.join(missing)}")
            return [(i + 2, row) for i, row in enumerate(reader)]
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise TraceError(f"{path}: {err}") from err


def _int(path: Path, line: int, row: dict[str, str], column: str, low: int = 0) -> int:
    text = row.get(column) or ""
    try:
        value = int(text)
    except ValueError:
        raise TraceError(f"{path}: line {line}: {column}={text!r}: not an integer") from None
    if value < low:
        raise TraceError(f"{path}: line {line}: {column}={value}: must be at least {low}")
    return value


def read_nodes(path: Path) -> list[TraceNode]:
    """`openb_node_list_*.csv`: sn, cpu_milli, memory_mib, gpu, model."""
    return [
        TraceNode(
            row["sn"],
            _int(path, line, row, "cpu_milli"),
            _int(path, line, row, "memory_mib"),
            _int(path, line, row, "gpu"),
            row["model"],
        )
        for line, row in _rows(path, ("sn", "cpu_milli", "memory_mib", "gpu", "model"))
    ]


def read_tasks(path: Path) -> list[TraceTask]:
    """`openb_pod_list_*.csv`: name, cpu_milli, memory_mib, num_gpu, gpu_milli, and
    gpu_spec where the file has it (multigpu20 has not: any model)."""
    tasks = []
    columns = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
    for line, row in _rows(path, columns):
        num_gpu = _int(path, line, row, "num_gpu")
        gpu_milli = _int(path, line, row, "gpu_milli")
        if num_gpu and not 0 < gpu_milli <= 1000:
            raise TraceError(f"{path}: line {line}: gpu_milli={gpu_milli}: must be 1..1000")
        if num_gpu > 1 and gpu_milli != 1000:
            raise TraceError(
                f"{path}: line {line}: gpu_milli={gpu_milli}: a task of {num_gpu} GPUs "
                "takes them whole (1000)"
            )
        models = tuple(m for m in (row.get("gpu_spec") or "").split("|") if m)
        tasks.append(
            TraceTask(
                row["name"],
                _int(path, line, row, "cpu_milli"),
                _int(path, line, row, "memory_mib"),
                num_gpu,
                gpu_milli if num_gpu else 0,
                models,
            )
        )
    return tasks
