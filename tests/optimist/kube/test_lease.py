"""Leader election on a Lease of the real API server: one leader at a time, a standby
takes over when the leader stops renewing or gives the lease up."""

import threading
import time
from dataclasses import replace

import pytest

from optimist.kube.client import Backoff
from optimist.kube.lease import LeaderElector, LeaseConfig

FAST = LeaseConfig(
    namespace="default",
    name="optimist",
    lease_duration_s=1.0,
    renew_deadline_s=0.6,
    retry_period_s=0.1,
)


def elector(api, identity):
    client = api.client(backoff=Backoff(first_s=0.05, cap_s=0.1, tries=2))
    return LeaderElector(client, identity, FAST)


class Standby(threading.Thread):
    def __init__(self, elector):
        super().__init__(daemon=True)
        self.elector, self.stop, self.led_at = elector, threading.Event(), None

    def run(self):
        if self.elector.acquire(self.stop):
            self.led_at = time.monotonic()


def holder(api):
    return api.get("leases", "default", "optimist")["spec"]["holderIdentity"]


@pytest.fixture
def leader_and_standby(kube_api):
    """ "a" leads; "b" waits in a thread of its own: (api, a, b's thread)."""
    api = kube_api
    a = elector(api, "a")
    assert a.acquire(threading.Event())
    standby = Standby(elector(api, "b"))
    standby.start()
    yield api, a, standby
    standby.stop.set()
    standby.elector.release()


def test_a_standby_takes_over_only_once_the_leader_stops_renewing(leader_and_standby):
    api, a, standby = leader_and_standby
    time.sleep(2.0)  # the leader renews: the standby waits
    assert standby.led_at is None and holder(api) == "a"
    a._stop.set()  # the leader dies: nobody renews
    died = time.monotonic()
    standby.join(5)
    assert standby.led_at is not None and holder(api) == "b"
    # judged by its own clock from when it last saw the lease change (a renewal ago)
    late = FAST.lease_duration_s - 2 * FAST.retry_period_s
    assert late <= standby.led_at - died < FAST.lease_duration_s + 1.0
    lease = api.get("leases", "default", "optimist")["spec"]
    assert lease["leaseTransitions"] == 1


def test_a_lease_given_up_is_taken_at_once(kube_api):
    """With a 5-second lease, a standby that waited it out would lead 4.8 s or more
    after the release; taken at once, it leads within a few polls, even on a machine
    as loaded as a full test run makes it."""
    long = replace(FAST, lease_duration_s=5.0, renew_deadline_s=3.0)
    a = LeaderElector(elector(kube_api, "a").client, "a", long)
    assert a.acquire(threading.Event())
    standby = Standby(LeaderElector(elector(kube_api, "b").client, "b", long))
    standby.start()
    try:
        time.sleep(0.3)
        given = time.monotonic()
        a.release()
        standby.join(10)
        assert standby.led_at - given < 2.5 and holder(kube_api) == "b" and a.lost.is_set()
    finally:
        standby.stop.set()
        standby.elector.release()


def test_a_leader_that_cannot_renew_stops_leading_before_its_lease_runs_out(kube_api):
    api = kube_api
    a = elector(api, "a")
    assert a.acquire(threading.Event())
    api.throttle(1000, retry_after_s=0)  # the API refuses everything for a while
    assert a.lost.wait(FAST.renew_deadline_s + 1.0)
    api.throttle(0)
