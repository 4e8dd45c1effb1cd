"""GPUs as optimist accounts them: per device, not only per node.

A node's `nvidia.com/gpu` (what the device plugin reports) are its GPUs,
numbered from 0. Each holds `MILLI_PER_GPU` of `optimist.io/gpu-milli`,
so a node's allocatable gains `1000 x GPUs` of it. A pod asks for either
- whole GPUs, `nvidia.com/gpu: k`: k GPUs nobody else uses, on one node;
  the pod then also takes `1000 x k` gpu-milli, so that both totals agree; or
- a share of one GPU, `optimist.io/gpu-milli: m` with 1 <= m <= 1000: m of
  the 1000 of a single GPU, which other shares may use too.

The totals are checked like any resource; the shard, and the commit script
against the committed state, also check per GPU (a share fits a GPU with
`m` left, a whole GPU must be untouched). The GPUs a pod got are written on
the pod at bind time (`GPU_INDICES_ANNOTATION`, e.g. `"0,3"`), for the
device plugin or the pod itself to use.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from cluster.errors import InvalidObject
from cluster.wire import Wire

GPU = "nvidia.com/gpu"
GPU_MILLI = "optimist.io/gpu-milli"
MILLI_PER_GPU = 1000
GPU_INDICES_ANNOTATION = "optimist.io/gpu-indices"
# GPU feature discovery's label: which model a node's GPUs are
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
# on a node: its GPUs' NVLink islands and NUMA nodes, and its NICs' NUMA nodes, as JSON:
# {"nvlink": [[0, 1, 2, 3], [4, 5, 6, 7]], "numa": [0, 0, 0, 0, 1, 1, 1, 1], "nics": [0, 1]}
GPU_TOPOLOGY_ANNOTATION = "optimist.io/gpu-topology"
# on a pod: its GPUs must share one NVLink island ("nvlink") or one NUMA node ("numa");
# without it a pod of several GPUs prefers one island, then one NUMA node
GPU_LOCALITY_ANNOTATION = "optimist.io/gpu-locality"
NVLINK, NUMA = "nvlink", "numa"
LOCALITIES = (NVLINK, NUMA)


@dataclass(frozen=True, slots=True)
class GpuDemand:
    """What a pod needs per GPU: `whole` untouched GPUs, or a `share` of one."""

    whole: int = 0
    share: int = 0  # milli of one GPU; 0 when the pod asks for whole GPUs or none

    @classmethod
    def of(cls, requests: Mapping[str, int]) -> GpuDemand:
        whole = requests.get(GPU, 0)
        return cls(whole, 0) if whole else cls(0, requests.get(GPU_MILLI, 0))

    @property
    def devices(self) -> int:
        """How many GPUs the pod is given."""
        return self.whole or (1 if self.share else 0)

    @property
    def per_device(self) -> int:
        """The milli it takes on each of its GPUs."""
        return MILLI_PER_GPU if self.whole else self.share

    def __bool__(self) -> bool:
        return bool(self.whole or self.share)


def imply_pod_milli(obj: str, requests: MutableMapping[str, int]) -> None:
    """Check a pod's GPU requests and add the gpu-milli that whole GPUs take."""
    whole, share = requests.get(GPU, 0), requests.get(GPU_MILLI, 0)
    field = "spec.containers[*].resources.requests"
    if whole and share:
        raise InvalidObject(
            obj,
            f"{field}.{GPU_MILLI}",
            share,
            f"a pod asks for whole GPUs ({GPU}: {whole}) or a share of one, not both",
        )
    if share > MILLI_PER_GPU:
        raise InvalidObject(
            obj,
            f"{field}.{GPU_MILLI}",
            share,
            f"a share of one GPU is at most {MILLI_PER_GPU}; ask for whole GPUs with {GPU}",
        )
    if whole:
        requests[GPU_MILLI] = whole * MILLI_PER_GPU


def imply_node_milli(allocatable: MutableMapping[str, int]) -> None:
    """A node's gpu-milli is 1000 per GPU it has, whatever else reported it (every
    `Node` is made so)."""
    gpus = allocatable.get(GPU, 0)
    if gpus:
        allocatable[GPU_MILLI] = gpus * MILLI_PER_GPU
    else:
        allocatable.pop(GPU_MILLI, None)


def format_indices(indices: tuple[int, ...] | list[int]) -> str:
    return ",".join(str(i) for i in indices)


def parse_indices(obj: str, text: object, gpus: int) -> tuple[int, ...]:
    """The annotation's GPU indices; each must be one of the node's `gpus` GPUs, once."""
    path = f"metadata.annotations.{GPU_INDICES_ANNOTATION}"
    if not isinstance(text, str) or not text:
        raise InvalidObject(obj, path, text, "must be GPU indices separated by commas")
    try:
        indices = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise InvalidObject(obj, path, text, "must be GPU indices separated by commas") from None
    if len(set(indices)) != len(indices) or any(not 0 <= i < gpus for i in indices):
        raise InvalidObject(obj, path, text, f"must name distinct GPUs among 0..{gpus - 1}")
    return indices


def annotated_gpus(manifest: Mapping[str, Any] | None) -> list[int]:
    """The GPU indices a bound pod's annotation names, or none if it has no readable
    one: the commit script then picks GPUs for it."""
    meta = (manifest or {}).get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    text = annotations.get(GPU_INDICES_ANNOTATION) if isinstance(annotations, Mapping) else None
    try:
        return list(parse_indices("", text, 1 << 16))
    except InvalidObject:
        return []


@dataclass(frozen=True, slots=True)
class GpuTopology(Wire):
    """Where a node's GPUs sit: per GPU, its NVLink island and its NUMA node (-1: not
    said), and the NUMA node of each NIC."""

    nvlink: tuple[int, ...] = ()
    numa: tuple[int, ...] = ()
    nics: tuple[int, ...] = ()

    def groups(self, kind: str, gpus: int) -> tuple[int, ...]:
        """Per GPU, its group of this kind (-1: none)."""
        given = self.nvlink if kind == NVLINK else self.numa
        return tuple(given[i] if i < len(given) else -1 for i in range(gpus))


def parse_topology(obj: str, text: object, gpus: int) -> GpuTopology:
    """The node annotation; a bad one names the annotation and what is wrong."""
    path = f"metadata.annotations.{GPU_TOPOLOGY_ANNOTATION}"
    try:
        doc = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or set(doc) - {"nvlink", "numa", "nics"}:
        raise InvalidObject(
            obj,
            path,
            text,
            'must be JSON {"nvlink": [[GPU, ...], ...], '
            '"numa": [NUMA node per GPU], "nics": [NUMA node per NIC]}',
        )
    islands = doc.get("nvlink") or []
    nvlink = [-1] * gpus
    if not isinstance(islands, list) or not all(isinstance(i, list) for i in islands):
        raise InvalidObject(obj, f"{path}.nvlink", islands, "must be lists of GPU indices")
    for island, members in enumerate(islands):
        for gpu in members:
            if not isinstance(gpu, int) or not 0 <= gpu < gpus or nvlink[gpu] >= 0:
                raise InvalidObject(
                    obj,
                    f"{path}.nvlink",
                    islands,
                    f"names GPU {gpu!r} twice or beyond 0..{gpus - 1}",
                )
            nvlink[gpu] = island
    numa, nics = doc.get("numa") or [], doc.get("nics") or []
    for name, values, length in (("numa", numa, gpus), ("nics", nics, None)):
        if not isinstance(values, list) or not all(isinstance(v, int) and v >= 0 for v in values):
            raise InvalidObject(obj, f"{path}.{name}", values, "must be a list of NUMA nodes")
        if length is not None and values and len(values) != length:
            raise InvalidObject(obj, f"{path}.{name}", values, f"must name one per GPU ({gpus})")
    return GpuTopology(tuple(nvlink) if islands else (), tuple(numa), tuple(nics))


def pod_locality(obj: str, annotations: Mapping[str, Any]) -> str:
    value = annotations.get(GPU_LOCALITY_ANNOTATION, "")
    if value and value not in LOCALITIES:
        path = f"metadata.annotations.{GPU_LOCALITY_ANNOTATION}"
        raise InvalidObject(obj, path, value, f"must be one of {', '.join(LOCALITIES)}")
    return str(value)
