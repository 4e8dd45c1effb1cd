"""Reports about pods, as kube-scheduler writes them: events (Scheduled,
FailedScheduling), the PodScheduled condition and nominatedNodeName; and events about
the other objects optimist reads and cannot (`optimist.kube.left_out`).

They go out from threads of their own through bounded queues, on a rate limit of their
own, as client-go's event broadcaster does: a burst of FailedScheduling events never
makes a binding wait, and when the API cannot keep up they are dropped and counted.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from optimist.kube.client import MERGE_PATCH, ApiError, KubeClient
from optimist.kube.left_out import INVALID_OBJECT, Involved

log = logging.getLogger(__name__)

_WRITTEN_KEPT = 100_000  # pods whose last report is remembered, to aggregate repeats
REPORTERS = 4  # threads writing reports (events and status patches)


@dataclass(slots=True)
class _Written:
    """What was last written about one pod."""

    event: str = ""  # the Event's name
    reason: str = ""
    message: str = ""
    count: int = 0
    status: str | None = None  # `_sameness` of the last status written


def _sameness(status: dict[str, Any] | None) -> str | None:
    """A status patch as compared with the last: its condition's times left out."""
    if status is None:
        return None
    conditions = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"}
        for c in status.get("conditions", [])
    ]
    return json.dumps({**status, "conditions": conditions}, sort_keys=True)


@dataclass(frozen=True, slots=True)
class _Report:
    """One write about an object: an event, and (a pod's) optionally a status patch."""

    about: Involved
    event_type: str  # Normal, Warning
    reason: str  # Scheduled, FailedScheduling, Preempted...
    message: str
    status: dict[str, Any] | None = None  # merged into the pod's status, if given


class Reporter:
    """What the adapter tells the API server about pods, written in the background."""

    def __init__(
        self,
        client: KubeClient,
        component: str,
        explain_hint: bool,
        queue_size: int,
        is_bound: Callable[[str], bool],
        uid_of: Callable[[str], str | None],
    ) -> None:
        self.client = client.sibling(client.bucket.qps, client.bucket.burst)
        self.component = component
        self.explain_hint = explain_hint  # see `unschedulable`
        self._is_bound = is_bound  # a pod bound since: no nominatedNodeName for it
        self._uid_of = uid_of
        self.dropped = 0
        self.quiet = False  # a standby's: the leader says what is said about pods
        # reports go out from several threads, a pod's always from the same one (its
        # writes stay in order, and each thread aggregates its own pods' events): one
        # thread, a request at a time, fell minutes behind a few hundred pods a second,
        # and a pending pod's condition waited behind other pods' Scheduled events
        self._reports: list[queue.Queue[_Report | None]] = [
            queue.Queue(queue_size // REPORTERS) for _ in range(REPORTERS)
        ]
        # what was last written about each pod, by key and uid: a pod made again under
        # the same name (a StatefulSet's) has none of its predecessor's status
        self._written: list[OrderedDict[tuple[str, str], _Written]] = [
            OrderedDict() for _ in range(REPORTERS)
        ]
        self._threads = [
            threading.Thread(target=self._report_forever, args=(i,), daemon=True)
            for i in range(REPORTERS)
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self, drain_s: float) -> None:
        """Reports queued get `drain_s` to go; then the threads end."""
        self.flush(drain_s)
        for reports in self._reports:
            reports.put(None)

    def scheduled(self, pod: str, node: str) -> None:
        self._report(pod, "Normal", "Scheduled", f"Successfully assigned {pod} to {node}")

    def unschedulable(self, failures: list[tuple[str, str, str]]) -> None:
        """(pod, reason, message) for pods whose attempt failed: a FailedScheduling
        event and the PodScheduled condition, as kube-scheduler writes them. `reason`
        is the condition's: Unschedulable, SchedulerError or SchedulingGated. With
        `explain_hint`, the condition's message (not the event's, which stays upstream's)
        ends with the command that explains the pod plugin by plugin."""
        for pod, reason, message in failures:
            said = message
            if self.explain_hint and reason == "Unschedulable":
                said = f"{message} Each plugin's verdict on each node: optimist explain {pod}"
            condition = {
                "type": "PodScheduled",
                "status": "False",
                "reason": reason,
                "message": said,
                "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            event = "FailedScheduling" if reason != "SchedulingGated" else ""
            self._report(pod, "Warning", event, message, {"conditions": [condition]})

    def rejected(self, pod: str, uid: str, node: str, reason: str, message: str) -> None:
        """A pod of ours that the kubelet of `node` turned away after its binding
        (`reason`: OutOfcpu...): another scheduler promised the node's room too."""
        said = (
            f"The kubelet on {node} rejected the pod after it was bound there ({reason}: "
            f"{message}): another scheduler placed a pod in the same room. Its controller, "
            "if it has one, makes a new pod."
        )
        self._report(pod, "Warning", "KubeletRejected", said, uid=uid)

    def invalid(self, about: Involved, message: str) -> None:
        """An object optimist leaves out, told on the object (`left_out`)."""
        if not self.quiet:
            self._put(_Report(about, "Warning", INVALID_OBJECT, message))

    def nominate(self, nominations: dict[str, str]) -> None:
        """status.nominatedNodeName of pods that preempted room on a node."""
        for pod, node in nominations.items():
            self._report(pod, "", "", "", {"nominatedNodeName": node})

    def _report(
        self,
        pod: str,
        event_type: str,
        reason: str,
        message: str,
        status: dict[str, Any] | None = None,
        uid: str | None = None,  # where the pod is no longer in `uid_of`'s books
    ) -> None:
        if self.quiet:
            return
        uid = uid if uid is not None else self._uid_of(pod) or ""
        namespace, name = pod.split("/", 1)
        about = Involved("Pod", "v1", namespace, name, uid)
        self._put(_Report(about, event_type, reason, message, status))

    def _put(self, report: _Report) -> None:
        try:
            shard = self._reports[zlib.crc32(report.about.key.encode()) % REPORTERS]
            shard.put_nowait(report)
        except queue.Full:
            self.dropped += 1

    def _report_forever(self, shard: int) -> None:
        reports, written = self._reports[shard], self._written[shard]
        while (report := reports.get()) is not None:
            try:
                self._write(report, written)
            finally:
                reports.task_done()

    def _write(self, report: _Report, written: OrderedDict[tuple[str, str], _Written]) -> None:
        """One report, aggregated as client-go's event correlator does: a status the pod
        already has is not written again, and an event that repeats the last one about
        the pod counts up on it instead of making another (an unschedulable pod retried
        for an hour is one event, not thousands)."""
        about = report.about
        pod = f"{about.namespace}/{about.name}"
        last = written.pop((about.key, about.uid), None) or _Written()
        written[about.key, about.uid] = last  # the most recent last, for the cap below
        if len(written) > _WRITTEN_KEPT // REPORTERS:
            written.popitem(last=False)
        nominates = bool(report.status) and "nominatedNodeName" in (report.status or {})
        if nominates and self._is_bound(pod):  # bound meanwhile: from v1.35 the
            report = replace(report, status=None)  # binding clears it, and it is refused
        try:
            status = _sameness(report.status)
            if report.status is not None and status != last.status:
                self.client.request(
                    "PATCH",
                    f"/api/v1/namespaces/{about.namespace}/pods/{about.name}/status",
                    body={"status": report.status},
                    content_type="application/strategic-merge-patch+json",
                    answer=False,  # the whole pod: not read
                )
                last.status = status
            if report.reason:
                self._write_event(report, last)
        except ApiError as err:
            if err.status != 404:  # an object gone meanwhile needs no report
                log.warning("reporting %s on %s failed: %s", report.reason, about.key, err)

    def _write_event(self, report: _Report, last: _Written) -> None:
        events = f"/api/v1/namespaces/{report.about.namespace or 'default'}/events"
        if last.event and (last.reason, last.message) == (report.reason, report.message):
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            try:
                self.client.request(
                    "PATCH",
                    f"{events}/{last.event}",
                    body={"count": last.count + 1, "lastTimestamp": now},
                    content_type=MERGE_PATCH,
                    answer=False,
                )
                last.count += 1
                return
            except ApiError as err:
                if err.status != 404:  # gone (events expire): a new one below
                    raise
        event = self._event(report)
        named = event["metadata"].get("name")
        made = self.client.request("POST", events, body=event, answer=not named)
        last.event = named or made["metadata"]["name"]
        last.reason, last.message, last.count = report.reason, report.message, 1

    def _event(self, report: _Report) -> dict[str, Any]:
        about = report.about
        namespace, name = about.namespace or "default", about.name
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        # named as client-go's recorder names them, so that the answer need not be read;
        # where that would pass 253 characters, by the server
        meta = {"name": f"{name}.{time.time_ns():x}"}
        if len(meta["name"]) > 253:
            meta = {"generateName": f"{name}."}
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {**meta, "namespace": namespace},
            "involvedObject": {
                "apiVersion": about.api_version,
                "kind": about.kind,
                "name": name,
                **({"namespace": about.namespace} if about.namespace else {}),
                "uid": about.uid,
            },
            "type": report.event_type,
            "reason": report.reason,
            "message": report.message,
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "action": "Binding" if report.reason == "Scheduled" else "Scheduling",
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until every report queued so far is written (tests, shutdown)."""
        deadline = time.monotonic() + timeout_s
        while self._unwritten() and time.monotonic() < deadline:
            time.sleep(0.02)
        return not self._unwritten()

    def _unwritten(self) -> int:
        return sum(reports.unfinished_tasks for reports in self._reports)
