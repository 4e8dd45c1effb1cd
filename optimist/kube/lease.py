"""Leader election with a coordination.k8s.io/v1 Lease, as client-go's leaderelection does.

One control process (dispatcher and binder) schedules at a time; standbys
wait and take the lease over when its holder stops renewing it. Whether the
holder's lease has run out is judged by the standby's own clock, from when
it last saw the record change, never by comparing timestamps written on
another machine's clock. Writes use the lease's resourceVersion, so two
standbys racing for an expired lease cannot both win (409 for the loser).

A leader that cannot renew within `renew_deadline_s` stops leading
(`lost` is set) before its lease can have run out for anybody else: the
caller must stop scheduling then, and exit.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from optimist.kube.client import ApiError, KubeClient

log = logging.getLogger(__name__)

GIVE_UP_TRIES = 3  # a 409 on giving up: read the lease again, it may still be ours


@dataclass(frozen=True, slots=True)
class LeaseConfig:
    """leaderElection, as KubeSchedulerConfiguration names it."""

    namespace: str = "kube-system"
    name: str = "optimist"
    lease_duration_s: float = 15.0
    renew_deadline_s: float = 10.0
    retry_period_s: float = 2.0


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, client: KubeClient, identity: str, config: LeaseConfig) -> None:
        if config.lease_duration_s <= config.renew_deadline_s:
            raise ValueError("leaderElection: leaseDuration must be greater than renewDeadline")
        self.client, self.identity, self.config = client, identity, config
        self.path = f"/apis/coordination.k8s.io/v1/namespaces/{config.namespace}/leases"
        self.lost = threading.Event()  # set when this process stops being the leader
        self._observed: tuple[str, str] | None = None  # (holder, renewTime) last seen
        self._observed_at = 0.0  # time.monotonic() when the record last changed
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    def acquire(
        self, stop: threading.Event, between: Callable[[float], object] | None = None
    ) -> bool:
        """Wait until this process holds the lease (True), or `stop` is set (False); then
        keep renewing it in a thread of its own. Between tries, `between(seconds)` (a
        standby keeping warm), else a sleep."""
        while not stop.is_set():
            if self._try(time.monotonic() + self.config.renew_deadline_s):
                log.info("%s leads (lease %s/%s)", self.identity, *self._where())
                self._renewer = threading.Thread(target=self._renew_forever, daemon=True)
                self._renewer.start()
                return True
            (between or stop.wait)(self.config.retry_period_s)
        return False

    def release(self) -> None:
        """Stop renewing and give the lease up at once, so a standby need not wait it out.

        The renewal in flight finishes first: were it to write after the lease was read
        here, the give-up would meet a 409 and the lease would stay held until it ran out.
        """
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(self.config.renew_deadline_s)
        if self.lost.is_set():
            return
        url = f"{self.path}/{self.config.name}"
        # a server that answers nothing: the lease runs out instead
        deadline = time.monotonic() + self.config.renew_deadline_s
        try:
            for _ in range(GIVE_UP_TRIES):
                lease = self.client.request("GET", url, deadline=deadline)
                if lease.get("spec", {}).get("holderIdentity") != self.identity:
                    break
                lease["spec"].update(holderIdentity="", leaseDurationSeconds=1)
                try:
                    self.client.request("PUT", url, body=lease, deadline=deadline)
                    break
                except ApiError as err:
                    if err.status != 409:
                        raise
        except ApiError as err:
            log.warning("giving up the lease failed: %s", err)
        self.lost.set()

    def _where(self) -> tuple[str, str]:
        return self.config.namespace, self.config.name

    def _renew_forever(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(self.config.retry_period_s):
            if self._try(last + self.config.renew_deadline_s):
                last = time.monotonic()
            elif time.monotonic() - last > self.config.renew_deadline_s:
                log.error("%s could not renew its lease: no longer the leader", self.identity)
                self.lost.set()
                return

    def _try(self, deadline: float) -> bool:
        """One attempt to take or renew the lease, over by `deadline` (time.monotonic())
        whatever the connection does; True if this process holds it now."""
        url = f"{self.path}/{self.config.name}"
        now = _now()
        try:
            lease = self.client.request("GET", url, deadline=deadline)
        except ApiError as err:
            if err.status != 404:
                log.warning("reading the lease failed: %s", err)
                return False
            return self._create(now, deadline)
        spec: dict[str, Any] = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        record = (holder, str(spec.get("renewTime") or ""))
        if record != self._observed:
            self._observed, self._observed_at = record, time.monotonic()
        duration = float(spec.get("leaseDurationSeconds") or self.config.lease_duration_s)
        expired = time.monotonic() - self._observed_at > duration
        if holder and holder != self.identity and not expired:
            return False
        if holder != self.identity:
            spec["acquireTime"] = now
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        spec.update(
            holderIdentity=self.identity,
            leaseDurationSeconds=int(self.config.lease_duration_s),
            renewTime=now,
        )
        lease["spec"] = spec
        try:
            # carries the version read: 409 if stale
            self.client.request("PUT", url, body=lease, deadline=deadline)
        except ApiError as err:
            if err.status != 409:
                log.warning("renewing the lease failed: %s", err)
            return False
        self._observed, self._observed_at = (self.identity, now), time.monotonic()
        return True

    def _create(self, now: str, deadline: float) -> bool:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.config.name, "namespace": self.config.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": int(self.config.lease_duration_s),
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }
        try:
            self.client.request("POST", self.path, body=body, deadline=deadline)
        except ApiError as err:
            if err.status != 409:  # 409: another standby created it first
                log.warning("creating the lease failed: %s", err)
            return False
        self._observed, self._observed_at = (self.identity, now), time.monotonic()
        return True
