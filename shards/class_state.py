"""An equivalence class's view of the nodes while a shard places a batch.

Feasibility and scores are computed once over every node, then kept up to
date row by row as the shard places pods, and read through upstream's
percentageOfNodesToScore window when one is configured.

Catching up costs a round of every plugin however few rows changed, so it
waits until it matters: the rows this class itself took stay stale until a
window reaches one of them (with upstream's rotating window of 10% of 5,000
nodes, every tenth pod), then all are judged again at once. Rows changed
any other way are caught up before the next search.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from shards.framework import PodClass, Profile, Rejection, StaticRows, final_scores
from shards.node_table import NodeTable

_TIED_KEPT = 8  # rows tied with a pick kept as its runners-up
_SMALL_WINDOW = 64  # up to this many rows, a set finds a row among them quicker than numpy
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE = 5


def nodes_to_find(percentage: int | None, total: int) -> int:
    """Upstream's `numFeasibleNodesToFind`: how many feasible nodes are enough."""
    if total < MIN_FEASIBLE_NODES_TO_FIND:
        return total
    if not percentage:
        percentage = max(50 - total // 125, MIN_FEASIBLE_NODES_PERCENTAGE)
    return max(total * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


_NONE = np.zeros(0, dtype=np.intp)


def pick_tied(
    scores: np.ndarray, rng: np.random.Generator, priority: np.ndarray | None = None
) -> tuple[int, np.ndarray]:
    """Index of the top score, ties broken uniformly at random or, given a `priority`
    aligned with the scores, by the highest (-1 if nothing is feasible); and a few of the
    indices tied with it, in the order met after it (by priority)."""
    if not len(scores):
        return -1, _NONE
    top = scores.max()
    if top < 0:
        return -1, _NONE
    ties = np.flatnonzero(scores == top)
    n = len(ties)
    if n == 1:
        return int(ties[0]), _NONE
    if priority is not None:
        ranked = ties[np.argsort(-priority[ties], kind="stable")]
        return int(ranked[0]), ranked[1 : 1 + _TIED_KEPT]
    i = min(int(rng.random() * n), n - 1)  # uniform; Generator.integers costs more per call
    after = ties[i + 1 : i + 1 + _TIED_KEPT]
    if len(after) < min(n - 1, _TIED_KEPT):  # wrap round to the ties before it
        after = np.concatenate((after, ties[: min(n - 1, _TIED_KEPT) - len(after)]))
    return int(ties[i]), after


def pick(scores: np.ndarray, rng: np.random.Generator) -> int:
    """Index of the top score, ties broken uniformly at random; -1 if nothing is feasible."""
    return pick_tied(scores, rng)[0]


class ClassState:
    """One equivalence class's view of the nodes during one batch.

    Feasibility and raw scores are computed once over all nodes; after the
    shard places a pod, only the rows that changed are judged again. Final
    scores are recombined in full only when a normalizing scorer could see a
    different set of feasible nodes or different raw values.
    """

    __slots__ = (
        "_feasible",
        "_feasible_rows",
        "_judged",
        "_own",
        "_preemptible",
        "_priority",
        "_scores",
        "_searched_at",
        "_sensitive",
        "_spanned",
        "_tied",
        "_why",
        "_window",
        "_window_scores",
        "mark",
        "parts",
        "pod",
        "profile",
        "raws",
        "static",
        "table",
    )

    def __init__(self, pod: PodClass, profile: Profile, table: NodeTable) -> None:
        self.pod, self.profile, self.table = pod, profile, table
        # the profile's fixed ranking of the nodes for ties, if it has one
        seed = profile.tie_seed
        self._priority = None if seed is None else table.node_priority(seed)
        self._spanned = profile.spans_nodes(pod, table)
        self._searched_at = -1  # the table's change count at the last first search; -1: none
        self._own = 0  # rows this class took since `mark` (see `took`)
        self.mark = len(table.changed_rows)
        self._window: np.ndarray | None = None  # the rows the last search scored; None: all
        self._window_scores: np.ndarray | None = None  # their scores, as that search saw them
        self._tied: list[int] = []  # rows that tied with the last pick, in the order met
        self._why: tuple[int, Rejection] | None = None
        self._preemptible: tuple[int, list[str]] | None = None
        # Nothing is judged until asked: a class's first search judges only the rows it
        # goes through (`_first_search`); anything more judges every row (`_judge_all`).
        self._judged = False

    @property
    def feasible(self) -> npt.NDArray[np.bool_]:
        """Per row: the plugins let this class's pods onto it."""
        if not self._judged:
            self._judge_all()
        return self._feasible

    @property
    def scores(self) -> np.ndarray:
        """Per row: the final score, -1 where infeasible."""
        if not self._judged:
            self._judge_all()
        return self._scores

    def took(self, row: int) -> None:
        """The shard placed a pod of this class on `row` (and logged the row as changed).

        Its own placements cannot make a class that does not span nodes start
        to, so they may be caught up later, together."""
        self._own += 1

    def _judge_all(self) -> None:
        size = self.table.size
        if not self._judged:  # specs do not change within a batch: once is enough
            self.static: StaticRows = self.profile.static_rows(self.pod, self.table)
            self._judged = True
        if self.static.candidates is None:
            every = slice(0, size)
            self._feasible: npt.NDArray[np.bool_] = self.static.mask & self.profile.feasible(
                self.pod, self.table, every, dynamic=True
            )
            self.raws = self.profile.raw_scores(self.pod, self.table, every)
        else:  # a filter named the only nodes that can take the pod: judge those alone
            rows = self.static.rows
            self._feasible = np.zeros(size, dtype=bool)
            self._feasible[rows] = self.profile.feasible(self.pod, self.table, rows, dynamic=True)
            if self.single:  # as upstream, the one node is taken unscored, unweighed
                unscored = np.zeros(size, dtype=np.int64)
                unscored.flags.writeable = False
                self.raws = [unscored] * len(self.profile.scorers)
            else:
                self.raws = []
                for raw in self.profile.raw_scores(self.pod, self.table, rows):
                    self.raws.append(np.zeros(size, dtype=raw.dtype))
                    self.raws[-1][rows] = raw
        self._feasible_rows: np.ndarray | None = None  # np.flatnonzero(feasible), when asked
        if self.single:
            self.parts = list(self.raws)
        else:
            self.parts = self.profile.weighted(
                self.pod, self.table, np.arange(self.table.size), self.raws, self._feasible
            )
        self._scores = final_scores(self.parts, self._feasible)
        self.mark, self._own = len(self.table.changed_rows), 0
        self._sensitive = self._window_sensitive()

    @property
    def single(self) -> bool:
        """A filter named one node as the only one that can take the pod (a DaemonSet's)."""
        return self.static.candidates is not None and len(self.static.rows) <= 1

    def _window_sensitive(self) -> bool:
        """Whether a window's own normalization can rank its nodes differently from the
        scores normalized over all feasible nodes: not if every normalizing scorer gives
        every feasible node the same raw score (usually 0: no preferences, no taints)."""
        for (plugin, _), raw in zip(self.profile.scorers, self.raws, strict=True):
            if plugin.normalizes:
                seen = raw[self._feasible]
                if len(seen) and seen.min() != seen.max():
                    return True
        return False

    def _pending(self) -> list[int] | None:
        """The rows changed since the last catch-up, if all were this class's own
        placements and the class spans no nodes; None if it must catch up now."""
        log = self.table.changed_rows
        if self._spanned or len(log) - self.mark != self._own:
            return None
        return log[self.mark :]

    def _catch_up(self) -> None:
        if not self._judged:
            self._judge_all()
            return
        log = self.table.changed_rows
        if len(log) == self.mark:
            return
        self._own = 0
        spans = self.profile.spans_nodes(self.pod, self.table)
        if spans or self._spanned:
            # counts per topology domain moved (or did until this change): judge every node
            self._spanned = spans
            self._judge_all()
            return
        rows = np.unique(np.asarray(log[self.mark :], dtype=np.intp))
        self.mark = len(log)
        feasible = self.static.mask[rows] & self.profile.feasible(
            self.pod, self.table, rows, dynamic=True
        )
        reshaped = not np.array_equal(feasible, self._feasible[rows])
        if reshaped:
            self._feasible[rows] = feasible
            self._feasible_rows = None
        if self.single:  # no score to keep: only whether the one node still fits
            self._scores[rows] = np.where(feasible, 0, -1)
            return
        scorers = self.profile.scorers
        renormalize = reshaped
        scored = self.profile.dynamic_scores(self.pod, self.table, rows)
        for (plugin, _), raw, fresh in zip(scorers, self.raws, scored, strict=True):
            if fresh is not None:
                renormalize |= plugin.normalizes and not np.array_equal(fresh, raw[rows])
                raw[rows] = fresh
        if renormalize:
            # the feasible set or a normalized plugin's raw score moved: every node may rank anew
            self.parts = self.profile.weighted(
                self.pod, self.table, np.arange(self.table.size), self.raws, self._feasible
            )
            self._scores = final_scores(self.parts, self._feasible)
            self._sensitive = self._window_sensitive()
            return
        for (plugin, weight), raw, part in zip(scorers, self.raws, self.parts, strict=True):
            if plugin.dynamic and not plugin.normalizes:
                part[rows] = raw[rows] * weight
        self._scores[rows] = final_scores([part[rows] for part in self.parts], feasible)

    def best(
        self, rng: np.random.Generator, start: int, home: np.ndarray | None = None
    ) -> tuple[int, int]:
        """The best feasible row among those kube-scheduler would have scored; -1 if none.

        With percentageOfNodesToScore below 100, upstream stops filtering once
        enough feasible nodes are found, searching round-robin from where the
        last pod stopped, and scores (and normalizes over) only those. Returns
        the row and how many nodes the search went through from `start`.

        With `home` rows (the shard's node partition), the search looks there
        first and goes to the other nodes only when no home node fits.
        """
        if home is None and self._spanned and self._searched_at != len(self.table.changed_rows):
            # a placement moved counts per domain, so every row may answer anew: search
            # afresh as upstream does, judging only the rows the search goes through,
            # rather than judging every row again to catch up
            fresh = self._first_search(rng, start)
            if fresh is not None:
                return fresh
        if not self._judged:
            never_searched = self._window_scores is None
            first = self._first_search(rng, start) if home is None and never_searched else None
            if first is not None:
                return first
            self._judge_all()
        pending = self._pending()
        if pending is None:
            self._catch_up()
        if home is not None:
            row, searched = self._search(rng, start, home, pending)
            if row >= 0:
                return row, searched
        return self._search(rng, start, None, pending)

    def best_of_run(
        self, rng: np.random.Generator, start: int, pods: int, runners: int
    ) -> list[tuple[int, int, list[int]]]:
        """`best` and `runners_up` for up to `pods` pods of this class placed one after
        another, decided together where their windows are apart: for each, (row, nodes
        searched, runners-up). Returns one at least; the caller assumes them in order.

        Consecutive pods search consecutive windows of the feasible rows, so as long as
        those windows hold none of the rows changed since the last catch-up, each pod's
        choice is what it would be alone: the best of its window, ties broken at random.
        """
        if not self._judged:
            return [self._one(rng, start, runners)]
        pending = self._pending()
        total = len(self._scores)
        reach = self.static.reach(total)
        wanted = nodes_to_find(self.profile.percentage_of_nodes_to_score, reach)
        if pending is None or self._sensitive or pods < 2 or wanted >= reach:
            return [self._one(rng, start, runners)]
        if pending:
            # the rows this class took since its last catch-up: judged again now, so that
            # the run may go a whole round of the nodes (the next round meets them anyway)
            self._catch_up()
            if self._sensitive:
                return [self._one(rng, start, runners)]
        # never round onto its own first window
        windows = min(pods, len(self._sorted_feasible()) // wanted)
        if windows < 2:
            return [self._one(rng, start, runners)]
        span = self._feasible_from(start, windows * wanted)
        lasts = span[wanted - 1 :: wanted]
        grid = span[: windows * wanted].reshape(windows, wanted)
        # the score first, then a random key: the best, ties broken uniformly, and the next
        ties = self._priority[grid] if self._priority is not None else None
        if ties is None:
            ties = rng.integers(0, 1 << 20, size=grid.shape)
        keys = (self._scores[grid] << 20) | ties
        keep = min(runners + 1, wanted)
        top = np.argpartition(-keys, keep - 1, axis=1)[:, :keep]
        order = np.take_along_axis(top, np.argsort(-np.take_along_axis(keys, top, 1), 1), 1)
        ranked = np.take_along_axis(grid, order, 1).tolist()
        ends = [start, *(lasts[: windows - 1] + 1).tolist()]
        self._window = None
        return [
            (rows[0], self.static.went(begin, int(last), total), rows[1:])
            for rows, begin, last in zip(ranked, ends, lasts[:windows].tolist(), strict=True)
        ]

    def _first_search(self, rng: np.random.Generator, start: int) -> tuple[int, int] | None:
        """The first pod of a class, searched as upstream does: judge the rows from
        `start` on, a window's worth at a time, until more than enough are feasible
        (or none is left), and score only the first that are enough. None when the
        window is every row of the table, or no row is feasible: judging every row then
        costs no more.

        The spec-only filters' answer is shared between classes (`Profile.static_rows`),
        so only the usage-dependent filters walk the rows, over those it lets through;
        where filters named the only candidates, over those alone (a DaemonSet's pod)."""
        total = self.table.size
        static = self.profile.static_rows(self.pod, self.table)
        reach = static.reach(total)
        wanted = nodes_to_find(self.profile.percentage_of_nodes_to_score, reach)
        if wanted >= total:
            return None
        first = int(np.searchsorted(static.rows, start))
        order = np.concatenate((static.rows[first:], static.rows[:first]))
        found: list[np.ndarray] = []
        count = went = 0
        # enough for more than `wanted` when few of these rows are full: one call, not two
        step = wanted + 1 + wanted // 8
        while count <= wanted and went < len(order):
            rows = order[went : went + step]
            rows = rows[self.profile.feasible(self.pod, self.table, rows, dynamic=True)]
            found.append(rows)
            count, went = count + len(rows), went + step
            # the next step, from the share of rows found feasible so far: every call of
            # the filters costs the same few microseconds however few rows it is given
            step = max(wanted, int((wanted + 1 - count) * went / max(count, 1) * 1.25))
        self._searched_at = len(self.table.changed_rows)
        if not count:  # no row is feasible: judging every row says why, at no more cost
            return None
        window = np.concatenate(found)[:wanted]
        # too few feasible rows: upstream went through every node and scores all it found
        searched = reach if count <= wanted else static.went(start, int(window[-1]), total)
        if len(window) == 1:  # upstream takes the one feasible node without scoring it
            self._window, self._window_scores, self._tied = window, np.zeros(1, np.int64), []
            return int(window[0]), searched
        everywhere = np.ones(len(window), dtype=bool)
        raws = self.profile.raw_scores(self.pod, self.table, window)
        parts = self.profile.weighted(self.pod, self.table, window, raws, everywhere)
        self._window, self._window_scores = window, final_scores(parts, everywhere)
        return self._pick_among(rng, window, self._window_scores), searched

    def _one(
        self, rng: np.random.Generator, start: int, runners: int
    ) -> tuple[int, int, list[int]]:
        row, searched = self.best(rng, start)
        return row, searched, self.runners_up(row, runners) if row >= 0 else []

    def _search(
        self,
        rng: np.random.Generator,
        start: int,
        rows: np.ndarray | None,
        pending: list[int] | None,
    ) -> tuple[int, int]:
        window, processed = self._window_of(start, rows)
        if (
            pending is not None
            and len(pending)
            and (window is None or self._reaches(window, pending, start, processed, rows))
        ):
            # a row the window holds is stale: judge them all, and look again
            self._catch_up()
            window, processed = self._window_of(start, rows)
        self._window, self._window_scores = window, None
        if window is None or window is rows:
            return self._pick_among(rng, rows), processed
        if self._sensitive:
            feasible = self._feasible[window]
            parts = self.profile.weighted(
                self.pod, self.table, window, [raw[window] for raw in self.raws], feasible
            )
            self._window_scores = final_scores(parts, feasible)
        else:
            self._window_scores = self._scores[window]
        return self._pick_among(rng, window, self._window_scores), processed

    def _window_of(self, start: int, rows: np.ndarray | None) -> tuple[np.ndarray | None, int]:
        """The rows upstream would score for a pod whose search starts at `start` (`rows`
        itself, None meaning all, when that is every one of them) and how many it went
        through to find them."""
        feasible = self.feasible
        total = len(feasible)
        reach = self.static.reach(total)
        wanted = nodes_to_find(self.profile.percentage_of_nodes_to_score, reach)
        n = reach if rows is None else len(rows)
        if wanted >= n:
            if rows is None and self.static.candidates is not None:
                return self.static.rows, n  # every candidate, not every row
            return rows, n
        if rows is None:
            return self._window_from(start, wanted, total)
        order = rows[(start + np.arange(n)) % n]
        found = np.cumsum(feasible[order])
        if found[-1] <= wanted:
            return rows, n
        processed = int(np.searchsorted(found, wanted)) + 1
        return order[:processed], processed

    def _window_from(self, start: int, wanted: int, total: int) -> tuple[np.ndarray | None, int]:
        """`_window_of` over all rows, read off the sorted feasible rows instead of
        walking every row."""
        if len(self._sorted_feasible()) <= wanted:
            return None, self.static.reach(total)
        window = self._feasible_from(start, wanted)
        return window, self.static.went(start, int(window[-1]), total)

    def _sorted_feasible(self) -> np.ndarray:
        if self._feasible_rows is None:
            self._feasible_rows = np.flatnonzero(self._feasible)
        return self._feasible_rows

    def _feasible_from(self, start: int, count: int) -> np.ndarray:
        """The first `count` feasible rows from `start` on, wrapping round (at most all)."""
        found = self._sorted_feasible()
        first = int(np.searchsorted(found, start % max(len(self._feasible), 1)))
        rows = found[first : first + count]
        if len(rows) < count:
            rows = np.concatenate((rows, found[: min(count, len(found)) - len(rows)]))
        return rows

    def _reaches(
        self,
        window: np.ndarray,
        pending: list[int],
        start: int,
        processed: int,
        rows: np.ndarray | None,
    ) -> bool:
        """Whether the search went through a pending row (a few: plain Python is quicker)."""
        if rows is None and self.static.candidates is None:
            total = len(self._scores)
            return any((row - start) % total < processed for row in pending)
        if len(window) <= _SMALL_WINDOW:
            return not set(pending).isdisjoint(window.tolist())
        return bool(np.isin(pending, window).any())

    def _pick_among(
        self,
        rng: np.random.Generator,
        rows: np.ndarray | None,
        scores: np.ndarray | None = None,
    ) -> int:
        """The best of `rows` (all rows if None) by `scores` (theirs, or the class's),
        ties broken uniformly at random; remembers the next tied rows for `runners_up`."""
        if scores is None:
            scores = self._scores if rows is None else self._scores[rows]
        priority = self._priority
        if priority is not None and rows is not None:
            priority = priority[rows]
        i, tied = pick_tied(scores, rng, priority)
        if rows is None:
            self._tied = tied.tolist()
            return i
        self._tied = rows[tied].tolist()
        return int(rows[i]) if i >= 0 else -1

    def runners_up(self, row: int, count: int, home: np.ndarray | None = None) -> list[int]:
        """The next best feasible rows after `row` among those its search scored, best
        first: where the binder may fall back.

        With a `home` mask, home rows come before the others, as in `best`.
        """
        if count <= 0:
            return []
        if home is None and len(self._tied) >= count:
            return self._tied[:count]  # as good as `row`: nothing ranks above them
        scored, scores = self.searched()
        keep = (scores >= 0) & (scored != row)
        others, rank = scored[keep], scores[keep]
        if home is not None and rank.size:
            rank = rank + home[others] * (int(rank.max()) + 1)
        if len(others) > count:
            top = np.argpartition(-rank, count - 1)[:count]
            others, rank = others[top], rank[top]
        chosen: list[int] = others[np.argsort(-rank, kind="stable")].tolist()
        return chosen

    def searched(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows the last search scored and the scores it compared them by (-1 where
        infeasible): every row, unless upstream's window held fewer."""
        scored, scores = self._window, self._window_scores
        if scored is None:
            return np.arange(len(self.scores)), self.scores
        return scored, self.scores[scored] if scores is None else scores

    def feasible_rows(self) -> np.ndarray:
        """Every node the plugins let this pod onto, now."""
        self._catch_up()
        return np.flatnonzero(self._feasible)

    def why(self) -> Rejection:
        """Why no node fits, computed once until the table changes again."""
        mark = len(self.table.changed_rows)
        if self._why is None or self._why[0] != mark:
            self._why = (mark, self.profile.explain(self.pod, self.table))
        return self._why[1]

    def preemptible(self) -> list[str]:
        """The nodes where evicting pods might make room (`Profile.preemption_rows`),
        by name, worked out once until the table changes again."""
        mark = len(self.table.changed_rows)
        if self._preemptible is None or self._preemptible[0] != mark:
            rows = self.profile.preemption_rows(self.pod, self.table)
            names = self.table.names
            self._preemptible = (mark, [names[r] for r in rows.tolist()])
        return self._preemptible[1]
