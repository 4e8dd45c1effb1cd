"""`optimist bench --explain-every S`: an operator asking `optimist explain` mid-run.

Every S seconds, from a thread of its own as the HTTP server's would be, the probe
explains a pod of the workload picked at random (pending or bound), every node
described, and times it: the wall time the caller waits (the loop reaching its next
step, the shard reaching the gap between two batches, the judging, the transfer) and
the shard's own judging. Whether explaining stalls scheduling shows in the run's pods/s
beside a run without the probe.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from benchmarks.report import instruments
from optimist.explain import Explainer, ExplainError


class ExplainProbe(threading.Thread):
    def __init__(self, explainer: Explainer, keys: list[str], every_s: float, seed: int) -> None:
        super().__init__(daemon=True, name="explain-probe")
        self.explainer, self.keys, self.every_s = explainer, keys, every_s
        self._rng = random.Random(seed)
        self._halt = threading.Event()
        self.waited: list[float] = []  # seconds, per call answered
        self.judged: list[float] = []  # the shard's seconds, per call answered
        self.nodes = 0
        self.errors: list[str] = []

    def run(self) -> None:
        while not self._halt.wait(self.every_s):
            if not self.keys:
                continue
            key = self.keys[self._rng.randrange(len(self.keys))]  # a list only grows
            started = time.perf_counter()
            try:
                found = self.explainer.explain(key)
            except ExplainError as err:
                if err.status != 404:  # deleted meanwhile (churn): nothing to explain
                    self.errors.append(str(err))
                continue
            self.waited.append(time.perf_counter() - started)
            self.judged.append(found.unit.seconds)
            self.nodes = max((p.nodes for p in found.unit.pods), default=self.nodes)

    def __enter__(self) -> ExplainProbe:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._halt.set()
        self.join()

    def summary(self) -> dict[str, Any]:
        return {
            "every_s": self.every_s,
            "calls": len(self.waited),
            "nodes": self.nodes,
            "waited_s": instruments.latency(self.waited),
            "judged_s": instruments.latency(self.judged),
            "errors": self.errors[:10],
        }
