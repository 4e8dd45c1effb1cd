"""`optimist explain`: why a pod went where it went, or why it is still pending.

Against a running optimist (`optimist run`, or a bench while it runs or lingers) the
question goes to `/debug/explain` on its metrics server, for clients on loopback only,
as the profiles do. The HTTP thread cannot read the dispatcher, which the control loop
owns, so it leaves an ask that the loop takes up at its next step (`Explainer.poll`):
the loop notes where the pod stands and sends its unit to a shard, which judges it
between two batches with its own plugins on its own view (`ShardCore.explain`); the
HTTP thread waits for that answer, not the loop.

Against a snapshot, `optimist.offline.explain_snapshot`.
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import ray

from cluster.errors import InvalidObject
from cluster.explanation import ExplainRequest, Explanation, Standing, UnitExplanation
from cluster.inventory import BoundPods
from cluster.manifests import pod_from_manifest
from cluster.objects import Pod, SchedulingSpec
from cluster.wire import MalformedMessage
from dispatcher.dispatcher import Dispatcher
from dispatcher.queue import ANY_SHARD

log = logging.getLogger(__name__)

RUNNING, WHAT_IF = "running", "what-if"


class ExplainError(Exception):
    """A pod that cannot be explained; `status` is the HTTP status that says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(slots=True)
class _Ask:
    """An explanation the HTTP thread asked for: a pod by key, or a what-if pod."""

    pod: str
    what_if: Pod | None
    top: int
    taken: threading.Event = field(default_factory=threading.Event)
    answer: Any = None  # the shard's ObjectRef, once the loop sent the unit
    standing: Standing | None = None
    bound_to: str = ""
    error: ExplainError | None = None


class Explainer:
    def __init__(self, scheduler_names: frozenset[str], reach_s: float = 10.0) -> None:
        self.scheduler_names = scheduler_names
        # how long the loop may take to reach its next poll, or a shard to answer
        self.reach_s = reach_s
        self._asks: list[_Ask] = []
        self._lock = threading.Lock()
        self.shards: list[Any] = []  # the running platform's shard actors

    def attach(self, shards: list[Any]) -> None:
        self.shards = list(shards)

    def detach(self) -> None:
        """The loop is done: asks it did not take are answered so."""
        self.shards = []
        with self._lock:
            asks, self._asks = self._asks, []
        for ask in asks:
            ask.error = ExplainError(503, "the control loop stopped")
            ask.taken.set()

    # --- the HTTP thread ----------------------------------------------------------------

    def explain(
        self, pod: str = "", manifest: Mapping[str, Any] | None = None, top: int = 0
    ) -> Explanation:
        """`pod` (namespace/name) as it stands, or the pod `manifest` describes as if it
        were created now."""
        what_if = self.what_if(manifest) if manifest is not None else None
        if what_if is None and pod.count("/") != 1:
            raise ExplainError(400, f"pod: {pod!r} is not namespace/name")
        ask = _Ask(what_if.key if what_if else pod, what_if, top)
        with self._lock:
            self._asks.append(ask)
        if not ask.taken.wait(self.reach_s):
            with self._lock:
                if ask in self._asks:
                    self._asks.remove(ask)
            raise ExplainError(503, "the control loop is not running")
        if ask.error is not None:
            raise ask.error
        try:
            explained = UnitExplanation.decode(ray.get(ask.answer, timeout=self.reach_s))
        except (ray.exceptions.RayError, TimeoutError) as err:
            raise ExplainError(503, f"the shard did not answer: {err}") from None
        except MalformedMessage as err:
            raise ExplainError(502, f"the shard's answer is malformed: {err}") from None
        source = WHAT_IF if what_if else RUNNING
        return Explanation(ask.pod, source, ask.bound_to, ask.standing, explained)

    def what_if(self, manifest: Mapping[str, Any]) -> Pod:
        """A pod manifest as a pod of a profile optimist schedules, or a 400 that names
        the field."""
        if not isinstance(manifest, Mapping):
            raise ExplainError(400, "the manifest must be a Pod object (a mapping)")
        meta = dict(manifest.get("metadata") or {})
        meta.setdefault("name", "what-if")
        meta.setdefault("namespace", "default")
        try:
            pod = pod_from_manifest({**manifest, "metadata": meta})
        except InvalidObject as err:
            raise ExplainError(400, str(err)) from None
        if pod.scheduler_name not in self.scheduler_names:
            raise ExplainError(
                400,
                f"Pod {pod.key}: spec.schedulerName: {pod.scheduler_name!r} is not a profile "
                f"optimist schedules ({', '.join(sorted(self.scheduler_names))})",
            )
        return pod

    # --- the control loop's thread --------------------------------------------------------

    def poll(
        self,
        dispatcher: Dispatcher,
        bound: BoundPods,
        in_flight: Callable[[int], int] = lambda shard: 0,
    ) -> None:
        """From the control loop, once per step: send the units asked about to a shard,
        the one with the fewest batches out (`in_flight`) unless the unit has its own."""
        if not self._asks:
            return
        with self._lock:
            asks, self._asks = self._asks, []
        for ask in asks:
            try:
                request, shard = self._request(ask, dispatcher, bound)
                if shard == ANY_SHARD:
                    shard = self._least_busy(request.unit, in_flight)
                ask.answer = self.shards[shard].explain.remote(request.encode())
            except ExplainError as err:
                ask.error = err
            except Exception as err:  # an explanation never stops the loop
                log.exception("explaining %s failed", ask.pod)
                ask.error = ExplainError(500, f"explaining {ask.pod} failed: {err}")
            ask.taken.set()

    def _request(
        self, ask: _Ask, dispatcher: Dispatcher, bound: BoundPods
    ) -> tuple[ExplainRequest, int]:
        """The unit to judge, and the shard it must go to (ANY_SHARD: any)."""
        if not self.shards:
            raise ExplainError(503, "no shard runs now")
        if ask.what_if is not None:
            return single(ask.pod, ask.what_if.spec, top=ask.top), ANY_SHARD
        held = dispatcher.held(ask.pod)
        if held is not None:
            ask.standing = held.standing
            classes: dict[SchedulingSpec, int] = {}
            judged = [dispatcher.resolve(p) for p in held.pods]  # volumes resolved
            pods = [(p.key, classes.setdefault(p.spec, len(classes))) for p in judged]
            request = ExplainRequest(held.unit, list(classes), pods, held.min_member, top=ask.top)
            return request, held.shard % len(self.shards) if held.shard != ANY_SHARD else ANY_SHARD
        running = bound.get(ask.pod)
        if running is not None and running.spec is not None:
            ask.bound_to = running.node
            return single(ask.pod, running.spec, running.node, ask.top), ANY_SHARD
        rejection = dispatcher.rejection(ask.pod)
        if rejection is not None:
            raise ExplainError(422, f"pod {ask.pod}: cannot be scheduled as written: {rejection}")
        raise ExplainError(
            404, f"pod {ask.pod}: not found among the pods optimist holds or has bound"
        )

    def _least_busy(self, key: str, in_flight: Callable[[int], int]) -> int:
        """The shard with the fewest batches out; among those, one picked by the key."""
        count = len(self.shards)
        first = zlib.crc32(key.encode()) % count
        return min(((first + i) % count for i in range(count)), key=in_flight)


def single(key: str, spec: SchedulingSpec, bound_to: str = "", top: int = 0) -> ExplainRequest:
    """A request for one pod, bound to `bound_to` or not."""
    return ExplainRequest(key, [spec], [(key, 0)], 1, [bound_to] if bound_to else [], top)


def ask_endpoint(
    address: str, pod: str = "", manifest: Any = None, top: int = 0, timeout_s: float = 30.0
) -> Explanation:
    """Ask the optimist serving metrics at `address` (HOST:PORT) through /debug/explain."""
    query = urllib.parse.urlencode({"pod": pod, "top": top})
    url = f"http://{address}/debug/explain?{query}"
    data = None if manifest is None else json.dumps(manifest).encode()
    request = urllib.request.Request(url, data=data, method="GET" if data is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            return Explanation.from_json(json.loads(answer.read()))
    except urllib.error.HTTPError as err:
        raise ExplainError(err.code, err.read().decode(errors="replace")) from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise ExplainError(
            503,
            f"nothing answers at {address} ({reason}): is `optimist run` (or a bench with "
            "--metrics-address) serving there?",
        ) from None
