"""The scheduling framework inside a shard: one small interface per extension point.

A plugin answers for many nodes at once: it gets the pod's equivalence
class and the rows of the node table to judge, and returns one array. The
same call judges every node when a class is first seen and a single node
after the shard has placed a pod there.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

import numpy as np

from cluster import resources as res
from cluster.events import EVENTS
from cluster.gpus import GpuDemand
from cluster.objects import SchedulingSpec
from cluster.volumes.needs import Attachable
from shards.gpu_fit import least_free
from shards.node_table import NodeTable, Ports
from shards.stopwatch import FILTER, SCORE, Stopwatch

Rows = np.ndarray | slice
MAX_NODE_SCORE = 100
NORMALIZE = "ScoreExtensionNormalize"  # the extension point's name in upstream's metrics


@dataclass(slots=True)
class PodClass:
    """An equivalence class, with its requests laid out along the table's columns."""

    spec: SchedulingSpec
    request: np.ndarray  # int64 [columns]: what a pod of the class adds to its node
    checked: np.ndarray  # columns the pod requests and the filter must check
    ports: Ports  # host ports as (protocol, bind ip, port)
    peer: int  # the table's column counting pods like this one
    gpu: GpuDemand  # what it takes per GPU (cluster/gpus.py)
    # int64 [columns]: what the scorers weigh it by while placing it (`request` but
    # for SchedulingSpec.weighed); `request` itself where the two agree
    weighed: np.ndarray
    # the volumes one pod of the class attaches, once it is placed (`UnitRequest.volumes`):
    # the class itself says only how many (`VolumeNeeds.attach`)
    attach: tuple[Attachable, ...] = ()

    @classmethod
    def compile(cls, spec: SchedulingSpec, table: NodeTable) -> PodClass:
        table.ensure_columns(name for name, _ in spec.requests)
        request = np.zeros(len(table.columns), dtype=np.int64)
        for name, amount in spec.requests:
            request[table.col[name]] = amount
        checked = np.array(
            [table.col[n] for n, a in spec.requests if a > 0 and not res.is_score_only(n)],
            dtype=np.intp,
        )
        ports = tuple((p.protocol, p.bind_ip, p.port) for p in spec.host_ports)
        peer = spec.peer
        gpu = GpuDemand.of(dict(spec.requests))
        weighed = request
        if spec.weighed:
            weighed = request.copy()
            for name, amount in spec.weighed:
                weighed[table.col[name]] = amount
        peer_column = table.peer_column(peer.id, peer)
        return cls(spec, request, checked, ports, peer_column, gpu, weighed)


class FilterPlugin(ABC):
    """Filter: which of the given rows can hold the pod."""

    name: ClassVar[str]
    # True when the answer depends on usage, so it must be recomputed for a
    # node after a pod is placed there; False when it depends on specs only.
    dynamic: ClassVar[bool] = False
    # The cluster events (`cluster.events`) that can make a node this filter
    # rejected pass, upstream's EventsToRegister; every event unless narrowed.
    events: ClassVar[frozenset[str]] = EVENTS
    # True when evicting pods of lower priority from a node can make it pass
    # (upstream's Unschedulable, as against UnschedulableAndUnresolvable): preemption
    # looks only at nodes that every other filter lets the pod onto.
    preemptible: ClassVar[bool] = False

    @abstractmethod
    def filter(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        """A boolean per row."""

    def prefilter(self, spec: SchedulingSpec) -> str | None:
        """Why no node can take the pod, whichever it is (upstream's PreFilter answering
        UnschedulableAndUnresolvable), or None. A plugin that rejects here rejects every
        row in `filter` too; `explain` then says this alone, as upstream does."""
        return None

    def candidates(self, spec: SchedulingSpec) -> frozenset[str] | None:
        """The only nodes, by name, that can take the pod, read off its spec (upstream's
        PreFilterResult), or None for any: the shard then judges those rows alone."""
        return None

    @abstractmethod
    def reasons(self, pod: PodClass, table: NodeTable, rows: np.ndarray) -> Counter[str]:
        """Why this plugin rejects the given rows, as kube-scheduler words it."""

    def spans_nodes(self, pod: PodClass, table: NodeTable) -> bool:
        """True when placing a pod on one node can change the answer on others
        (pods counted per topology domain): the shard then judges every node again."""
        return False

    def static_key(self, spec: SchedulingSpec) -> Hashable:
        """For a filter that reads node specs only (not `dynamic`): the part of the pod
        it reads. Classes that agree on it get the same answer on every node, so the
        shard judges it once for all of them (`Profile.static_rows`)."""
        return spec


class ScorePlugin(ABC):
    """Score: how good each of the given rows is for the pod.

    `score` gives raw int64 scores; `normalize` (NormalizeScore) maps the raw
    scores of the feasible nodes to 0..MAX_NODE_SCORE. A plugin that
    normalizes sets `normalizes`, so the shard knows a change on one node can
    move every node's final score.
    """

    name: ClassVar[str]
    dynamic: ClassVar[bool] = True
    normalizes: ClassVar[bool] = False

    @abstractmethod
    def score(self, pod: PodClass, table: NodeTable, rows: Rows) -> np.ndarray:
        """An int64 per row."""

    def normalize(
        self, pod: PodClass, table: NodeTable, rows: np.ndarray, scores: np.ndarray
    ) -> np.ndarray:
        """The raw scores of the feasible rows `rows`, normalized; identity unless overridden.

        Like upstream's PreScore, it sees which nodes are feasible: a score
        that depends on them (topology spreading's domains) is finished here.
        """
        return scores

    def spans_nodes(self, pod: PodClass, table: NodeTable) -> bool:
        """As `FilterPlugin.spans_nodes`."""
        return False

    def observe(self, pods: Sequence[tuple[PodClass, int]]) -> None:
        """The pods of a batch, (class, how many), before any is placed: for a scorer
        that learns the workload it places against (GPUPlacement). Most learn nothing."""
        return None


def tightest_gpus(table: NodeTable, row: int, pod: PodClass) -> tuple[int, ...]:
    """The GPUs a pod gets on `row` unless a policy says otherwise: the tightest fit,
    from one NVLink island or NUMA node where it can."""
    local = table.locality(row, pod.spec.gpu_locality)
    return least_free(table.gpu_free(slice(row, row + 1))[0], pod.gpu, local)


# How a profile picks a pod's GPUs on the node it chose: (table, row, pod) -> indices
GpuChoice = Callable[[NodeTable, int, PodClass], tuple[int, ...]]


def default_normalize(scores: np.ndarray, *, reverse: bool) -> np.ndarray:
    """Upstream's `DefaultNormalizeScore`: scale to 0..100 by the maximum, optionally reversed."""
    top = int(scores.max()) if len(scores) else 0
    if top == 0:
        return np.full_like(scores, MAX_NODE_SCORE) if reverse else scores
    scaled = MAX_NODE_SCORE * scores // top
    return MAX_NODE_SCORE - scaled if reverse else scaled


@dataclass(slots=True)
class Profile:
    """A scheduler profile: its filters in order and its weighted scorers."""

    name: str
    filters: list[FilterPlugin]
    scorers: list[tuple[ScorePlugin, int]]
    percentage_of_nodes_to_score: int | None = None  # None: upstream's adaptive rule
    # which GPUs of the chosen node a pod gets; a GPU policy plugin may set its own
    choose_gpus: GpuChoice = tightest_gpus
    # None: the best nodes' ties are broken at random, as upstream does; a seed: by a
    # fixed priority of the nodes drawn from it (`NodeTable.node_priority`)
    tie_seed: int | None = None
    # where the time goes; the shard shares one between its profiles
    stopwatch: Stopwatch = field(default_factory=Stopwatch)
    # each plugin that can span nodes, once (a filter that also scores is one plugin)
    _spanning: list[FilterPlugin | ScorePlugin] = field(init=False, default_factory=list)
    _static: list[FilterPlugin] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self._static = [plugin for plugin in self.filters if not plugin.dynamic]
        plugins: list[FilterPlugin | ScorePlugin] = [*self.filters, *(p for p, _ in self.scorers)]
        self._spanning = [
            plugin
            for plugin in dict.fromkeys(plugins)
            if type(plugin).spans_nodes not in (FilterPlugin.spans_nodes, ScorePlugin.spans_nodes)
        ]

    def observe(self, pods: Sequence[tuple[PodClass, int]]) -> None:
        """A batch's pods of this profile, (class, how many), before any is placed."""
        for plugin, _ in self.scorers:
            plugin.observe(pods)

    def feasible(self, pod: PodClass, table: NodeTable, rows: Rows, *, dynamic: bool) -> np.ndarray:
        """The AND of the filters that are (dynamic=True) or are not (False) usage-dependent."""
        started = time.perf_counter()
        mask = table.alive[rows].copy()
        for plugin in self.filters:
            if plugin.dynamic == dynamic:
                mask &= self._call(plugin, "Filter", plugin.filter, pod, table, rows)
        self.stopwatch.seconds[FILTER] += time.perf_counter() - started
        return mask

    def _call(
        self,
        plugin: FilterPlugin | ScorePlugin,
        point: str,
        method: Callable[..., np.ndarray],
        *args: object,
    ) -> np.ndarray:
        """`method(*args)`, the plugin's work at `point`, timed alone in a sampled batch."""
        if not self.stopwatch.sampling:
            return method(*args)
        started = time.perf_counter()
        out = method(*args)
        self.stopwatch.plugin(plugin.name, point, started)
        return out

    def static_rows(self, pod: PodClass, table: NodeTable) -> StaticRows:
        """The rows the spec-only filters let the pod onto, judged once per distinct
        `static_key` and kept by the table until a node's spec changes: most classes
        share them. Where filters name the only candidates, only those rows are judged."""
        names: frozenset[str] | None = None
        for plugin in self.filters:
            if (named := plugin.candidates(pod.spec)) is not None:
                names = named if names is None else names & named
        key = ("static", self.name, names, *(p.static_key(pod.spec) for p in self._static))
        return table.derived(key, lambda: self._judge_static(pod, table, names))

    def _judge_static(
        self, pod: PodClass, table: NodeTable, names: frozenset[str] | None
    ) -> StaticRows:
        if names is None:
            mask = self.feasible(pod, table, slice(0, table.size), dynamic=False)
            candidates = None
        else:
            found = [row for name in names if (row := table.index.get(name)) is not None]
            candidates = np.array(sorted(found), dtype=np.intp)
            mask = np.zeros(table.size, dtype=bool)
            mask[candidates] = self.feasible(pod, table, candidates, dynamic=False)
            candidates.flags.writeable = False
        rows = np.flatnonzero(mask)
        mask.flags.writeable = rows.flags.writeable = False
        return StaticRows(mask, rows, candidates)

    def preemption_rows(self, pod: PodClass, table: NodeTable) -> np.ndarray:
        """The rows only `preemptible` filters reject the pod from, or none: where
        evicting pods might make room (upstream's nodesWherePreemptionMightHelp)."""
        rows = self.static_rows(pod, table).rows
        started = time.perf_counter()
        keep = np.ones(len(rows), dtype=bool)
        for plugin in self.filters:
            if plugin.dynamic and not plugin.preemptible and len(rows):
                keep &= self._call(plugin, "Filter", plugin.filter, pod, table, rows)
        self.stopwatch.seconds[FILTER] += time.perf_counter() - started
        return rows[keep]

    def raw_scores(self, pod: PodClass, table: NodeTable, rows: Rows) -> list[np.ndarray]:
        """Each scorer's raw scores for the rows, in the order of `scorers`."""
        started = time.perf_counter()
        raws = [self._call(p, "Score", p.score, pod, table, rows) for p, _ in self.scorers]
        self.stopwatch.seconds[SCORE] += time.perf_counter() - started
        return raws

    def dynamic_scores(
        self, pod: PodClass, table: NodeTable, rows: np.ndarray
    ) -> list[np.ndarray | None]:
        """The raw scores of the usage-dependent scorers for the rows (None for the others):
        what a placement on those rows can have changed."""
        started = time.perf_counter()
        raws = [
            self._call(plugin, "Score", plugin.score, pod, table, rows) if plugin.dynamic else None
            for plugin, _ in self.scorers
        ]
        self.stopwatch.seconds[SCORE] += time.perf_counter() - started
        return raws

    def weighted(
        self,
        pod: PodClass,
        table: NodeTable,
        rows: np.ndarray,
        raws: list[np.ndarray],
        feasible: np.ndarray,
    ) -> list[np.ndarray]:
        """Each scorer's part of the final score: normalized over the feasible rows, weighted.

        `raws` and `feasible` are aligned with `rows`, the table rows they are for.
        """
        started = time.perf_counter()
        parts = []
        every = bool(feasible.all())  # a first search scores feasible rows only
        for (plugin, weight), raw in zip(self.scorers, raws, strict=True):
            if not plugin.normalizes:
                part = raw
            elif every:
                part = self._call(plugin, NORMALIZE, plugin.normalize, pod, table, rows, raw)
            else:
                part = np.zeros_like(raw)
                part[feasible] = self._call(
                    plugin, NORMALIZE, plugin.normalize, pod, table, rows[feasible], raw[feasible]
                )
            parts.append(part if weight == 1 else part * weight)
        self.stopwatch.seconds[SCORE] += time.perf_counter() - started
        return parts

    def spans_nodes(self, pod: PodClass, table: NodeTable) -> bool:
        """Whether a placement anywhere can change this pod's answers on other nodes."""
        return any(plugin.spans_nodes(pod, table) for plugin in self._spanning)

    def explain(self, pod: PodClass, table: NodeTable) -> Rejection:
        """Per reason, how many nodes the first failing filter rejected, as upstream
        counts; and which filters those were, with the events that could change them."""
        for plugin in self.filters:
            if (why := plugin.prefilter(pod.spec)) is not None:
                return Rejection(Counter(), (plugin.name,), plugin.events, prefilter=why)
        started = time.perf_counter()
        reasons: Counter[str] = Counter()
        plugins: list[FilterPlugin] = []
        remaining = np.flatnonzero(table.alive[: table.size])
        for plugin in self.filters:
            if not len(remaining):
                break
            ok = self._call(plugin, "Filter", plugin.filter, pod, table, remaining)
            if not ok.all():
                reasons.update(plugin.reasons(pod, table, remaining[~ok]))
                plugins.append(plugin)
            remaining = remaining[ok]
        self.stopwatch.seconds[FILTER] += time.perf_counter() - started
        return Rejection(
            reasons,
            tuple(p.name for p in plugins),
            frozenset().union(*(p.events for p in plugins)) if plugins else EVENTS,
        )


class StaticRows(NamedTuple):
    """What the spec-only filters let a class onto, all read-only."""

    mask: np.ndarray  # bool per row
    rows: np.ndarray  # the rows it is True on, sorted
    # the sorted rows of the only nodes a filter said could take the pod (upstream's
    # PreFilterResult), passing the other filters or not; None: every row was a candidate
    candidates: np.ndarray | None

    def reach(self, total: int) -> int:
        """How many nodes a search that goes through all of them goes through."""
        return total if self.candidates is None else len(self.candidates)

    def went(self, start: int, last: int, total: int) -> int:
        """How many nodes a search from row `start` to row `last`, wrapping round,
        went through (upstream's processed nodes): the candidates among them."""
        span = (last - start) % total
        if self.candidates is None:
            return span + 1
        return int(np.count_nonzero((self.candidates - start) % total <= span))


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why no node can take a class. With no filter to blame (no node at all), any event
    may help, as upstream requeues a pod that no plugin rejected on any event."""

    reasons: Counter[str]
    plugins: tuple[str, ...]  # the filters that rejected some node, in profile order
    events: frozenset[str]  # the cluster events that can make one of those nodes pass
    prefilter: str = ""  # a PreFilter rejected the pod before any node: its words

    @classmethod
    def unexplained(cls) -> Rejection:
        return cls(Counter(), (), EVENTS)

    def joined(self, other: Rejection) -> Rejection:
        """A gang's: the reasons of its first pod that found no node, the plugins and
        events of all of them (any of those pods finding a node may be enough)."""
        plugins = tuple(dict.fromkeys(self.plugins + other.plugins))
        return Rejection(self.reasons, plugins, self.events | other.events, self.prefilter)


def final_scores(parts: list[np.ndarray], feasible: np.ndarray) -> np.ndarray:
    """The sum of the parts; infeasible rows get -1, below any real score."""
    total = np.zeros(feasible.shape, dtype=np.int64)
    for part in parts:
        total += part
    total[~feasible] = -1
    return total
