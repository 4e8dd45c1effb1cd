"""Requests through the official client to the real API server: JSON in and out, 429
and 5xx retried with the server's Retry-After (the 429s from the fault proxy), the
rate limit honoured."""

import time
from types import SimpleNamespace

import pytest

from optimist.kube import client as client_module
from optimist.kube.client import ApiError, Backoff, KubeClient, TokenBucket


def test_objects_go_in_and_come_out_as_json(kube_api):
    client = kube_api.client()
    made = client.request("POST", "/api/v1/nodes", body={"metadata": {"name": "n1"}})
    assert int(made["metadata"]["resourceVersion"]) > 0 and made["metadata"]["uid"]
    assert client.request("GET", "/api/v1/nodes/n1")["metadata"]["name"] == "n1"
    with pytest.raises(ApiError) as err:
        client.request("POST", "/api/v1/nodes", body={"metadata": {"name": "n1"}})
    assert (err.value.status, err.value.reason) == (409, "AlreadyExists")
    assert 'nodes "n1" already exists' in err.value.message


def test_a_request_the_server_refuses_says_why(kube_api):
    """The real server's validation, as optimist reports it: the field and the value."""
    client = kube_api.client()
    bad = {"metadata": {"name": "Not_A_Name"}}
    with pytest.raises(ApiError) as err:
        client.request("POST", "/api/v1/nodes", body=bad)
    assert err.value.status == 422 and "Not_A_Name" in err.value.message


def test_throttled_requests_wait_as_the_server_says_and_are_counted(kube_api):
    client = kube_api.client()
    client.request("POST", "/api/v1/nodes", body={"metadata": {"name": "n1"}})
    kube_api.throttle(2, retry_after_s=1)
    started = time.monotonic()
    assert client.request("GET", "/api/v1/nodes/n1")["metadata"]["name"] == "n1"
    assert time.monotonic() - started >= 2.0 and client.retries == 2


def test_a_server_that_keeps_refusing_is_given_up_on_with_its_status(kube_api):
    client = kube_api.client(backoff=Backoff(first_s=0.01, cap_s=0.05, tries=3))
    kube_api.throttle(10, retry_after_s=0)
    with pytest.raises(ApiError) as err:
        client.request("GET", "/api/v1/nodes")
    assert err.value.status == 429 and client.retries == 2


def test_an_unreachable_server_is_an_error_not_a_spin():
    client = KubeClient.for_host(
        "http://127.0.0.1:9", backoff=Backoff(first_s=0.05, cap_s=0.05, tries=3)
    )
    started = time.monotonic()
    with pytest.raises(ApiError, match="Unreachable"):
        client.request("GET", "/api/v1/nodes")
    assert time.monotonic() - started >= 0.1  # two waits between three tries


def test_the_token_bucket_lets_a_burst_through_then_paces_at_qps(monkeypatch):
    """The waits it asks for, not the time they took: a token every 2 s, which no
    stall of a loaded machine makes up for."""
    waits: list[float] = []
    clock = SimpleNamespace(monotonic=time.monotonic, sleep=waits.append)
    monkeypatch.setattr(client_module, "time", clock)
    bucket = TokenBucket(qps=0.5, burst=5)
    for _ in range(5):
        bucket.take()
    assert waits == []
    for _ in range(4):
        bucket.take()
    assert waits == pytest.approx([2.0, 4.0, 6.0, 8.0], abs=0.5)


def test_a_rate_limit_that_cannot_work_is_refused():
    with pytest.raises(ValueError, match="qps 0 and burst 1"):
        TokenBucket(0, 1)
