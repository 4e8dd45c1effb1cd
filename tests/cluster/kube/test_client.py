"""Requests through the official client to a live (stateful, fake) API server: JSON in
and out, 429 and 5xx retried with the server's Retry-After, the rate limit honoured."""

import time

import pytest

from cluster.kube.client import ApiError, Backoff, KubeClient, TokenBucket


def test_objects_go_in_and_come_out_as_json(kube_api):
    _, url = kube_api
    client = KubeClient.for_host(url)
    made = client.request("POST", "/api/v1/nodes", body={"metadata": {"name": "n1"}})
    assert made["metadata"]["resourceVersion"] == "2"
    assert client.request("GET", "/api/v1/nodes/n1")["metadata"]["name"] == "n1"
    with pytest.raises(ApiError) as err:
        client.request("POST", "/api/v1/nodes", body={"metadata": {"name": "n1"}})
    assert (err.value.status, err.value.reason) == (409, "AlreadyExists")


def test_throttled_requests_wait_as_the_server_says_and_are_counted(kube_api):
    api, url = kube_api
    client = KubeClient.for_host(url)
    client.request("POST", "/api/v1/nodes", body={"metadata": {"name": "n1"}})
    api.throttle(2, retry_after_s=1)
    started = time.monotonic()
    assert client.request("GET", "/api/v1/nodes/n1")["metadata"]["name"] == "n1"
    assert time.monotonic() - started >= 2.0 and client.retries == 2


def test_a_server_that_keeps_refusing_is_given_up_on_with_its_status(kube_api):
    api, url = kube_api
    client = KubeClient.for_host(url, backoff=Backoff(first_s=0.01, cap_s=0.05, tries=3))
    api.throttle(10, retry_after_s=0)
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


def test_the_token_bucket_lets_a_burst_through_then_paces_at_qps():
    bucket = TokenBucket(qps=20, burst=5)
    started = time.monotonic()
    for _ in range(5):
        bucket.take()
    assert time.monotonic() - started < 0.05
    for _ in range(4):
        bucket.take()
    assert time.monotonic() - started >= 4 / 20 * 0.9


def test_a_rate_limit_that_cannot_work_is_refused():
    with pytest.raises(ValueError, match="qps 0 and burst 1"):
        TokenBucket(0, 1)
