"""Leader election on a Lease of the real API server: one leader at a time, a standby
takes over when the leader stops renewing or gives the lease up."""

import threading
import time
from dataclasses import replace
from urllib.parse import urlsplit

from benchmarks.apiserver.link import Link
from optimist.kube.client import Backoff, KubeClient
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


def renewed(api):
    return api.get("leases", "default", "optimist")["spec"]["renewTime"]


def test_a_standby_takes_over_only_once_the_leader_stops_renewing(kube_api):
    """With a lease that a loaded machine cannot starve the leader's renewals past (4 s),
    a standby waits while the leader renews, and takes over about a lease after the
    last renewal it saw."""
    steady = replace(FAST, lease_duration_s=4.0, renew_deadline_s=2.5)
    a = LeaderElector(elector(kube_api, "a").client, "a", steady)
    assert a.acquire(threading.Event())
    standby = Standby(LeaderElector(elector(kube_api, "b").client, "b", steady))
    standby.start()
    try:
        renewals = {renewed(kube_api)}
        while len(renewals) < 3:  # the leader renews twice: the standby waits on
            renewals.add(renewed(kube_api))
            time.sleep(0.05)
        assert standby.led_at is None and holder(kube_api) == "a"
        a._stop.set()  # the leader dies: nobody renews
        died = time.monotonic()
        standby.join(60)
        assert standby.led_at is not None and holder(kube_api) == "b"
        # judged by its own clock from when it last saw the lease change (a renewal
        # ago); the upper bound is loose: the standby's polls may come late under load
        late = steady.lease_duration_s - 2 * steady.retry_period_s
        assert late <= standby.led_at - died < steady.lease_duration_s + 30.0
        lease = kube_api.get("leases", "default", "optimist")["spec"]
        assert lease["leaseTransitions"] == 1
    finally:
        standby.stop.set()
        standby.elector.release()


def test_a_lease_given_up_is_taken_at_once(kube_api):
    """With a 60-second lease, a standby that waited it out would lead 59.8 s or more
    after the release; taken at once, it leads within a few polls, which even a
    machine as loaded as a full test run makes no longer than seconds."""
    long = replace(FAST, lease_duration_s=60.0, renew_deadline_s=40.0)
    a = LeaderElector(elector(kube_api, "a").client, "a", long)
    assert a.acquire(threading.Event())
    standby = Standby(LeaderElector(elector(kube_api, "b").client, "b", long))
    standby.start()
    try:
        given = time.monotonic()
        a.release()
        standby.join(90)
        assert standby.led_at - given < 30 and holder(kube_api) == "b" and a.lost.is_set()
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


class RenewalBetween:
    """A client that lets the renewal thread's write land between a give-up's read and
    its write, if the give-up reads while a renewal is in flight: the interleaving that
    left a stopped leader holding its lease."""

    def __init__(self, client):
        self.client = client
        self.renewing = threading.Event()  # the renewal has read and is about to write
        self.given_up_read = threading.Event()
        self.renewed = threading.Event()
        self.caller = threading.current_thread()

    def request(self, method, path, **kwargs):
        own = threading.current_thread() is self.caller
        if method == "GET" and own:
            answer = self.client.request(method, path, **kwargs)
            self.given_up_read.set()
            return answer
        if method == "PUT" and not own and not self.renewed.is_set():
            self.renewing.set()
            self.given_up_read.wait(1.0)  # a release that joins first never reads here
            try:
                return self.client.request(method, path, **kwargs)
            finally:
                self.renewed.set()
        if method == "PUT" and own:
            self.renewed.wait(1.0)
        return self.client.request(method, path, **kwargs)


def test_a_leader_gives_its_lease_up_even_with_a_renewal_in_flight(kube_api):
    client = RenewalBetween(elector(kube_api, "a").client)
    a = LeaderElector(client, "a", FAST)
    assert a.acquire(threading.Event())
    assert client.renewing.wait(10)
    a.release()
    assert holder(kube_api) == ""


def test_a_leader_whose_server_answers_nothing_stops_leading_before_its_lease_runs_out(kube_api):
    """A connection that stalls (no reset, no answer: a partition) must not hold the
    renewal past its deadline, or the leader goes on scheduling after a standby that
    can reach the server has taken the lease over."""
    plane = kube_api.plane
    config = replace(FAST, lease_duration_s=10.0, renew_deadline_s=1.0)
    parts = urlsplit(plane.url)
    with Link((parts.hostname, parts.port)) as link:
        client = KubeClient.for_kubeconfig(str(link.kubeconfig(plane.admin_kubeconfig)))
        a = LeaderElector(client, "a", config)
        assert a.acquire(threading.Event())
        link.stall()
        stalled = time.monotonic()
        try:
            assert a.lost.wait(config.lease_duration_s)
            # before anybody else may take the lease: renewed at most a retry before
            assert time.monotonic() - stalled < config.lease_duration_s - config.retry_period_s
        finally:
            link.resume()
            a.release()
