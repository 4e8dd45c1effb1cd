"""The informer against a live (stateful, fake) API server: list then watch, resume after
a dropped watch, list afresh after 410 Gone, and nothing missed either way."""

import threading
import time

import pytest

from cluster.kube.client import ApiError, KubeClient
from cluster.kube.informer import Informer


class Seen:
    """What the handler was told: the objects there now, by name, and every event."""

    def __init__(self):
        self.lock = threading.Lock()
        self.now: dict[str, str] = {}  # name -> the label "v" it was last seen with
        self.events: list[tuple[str, str]] = []

    def __call__(self, kind, obj):
        name = obj["metadata"]["name"]
        with self.lock:
            self.events.append((kind, name))
            if kind == "DELETED":
                self.now.pop(name, None)
            else:
                self.now[name] = obj["metadata"].get("labels", {}).get("v", "")


def node(name, v="1"):
    return {"metadata": {"name": name, "labels": {"v": v}}}


def until(check, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    raise AssertionError("timed out")


def test_lists_then_watches_and_resumes_a_dropped_watch_where_it_was(kube_api):
    api, url = kube_api
    api.put("nodes", node("a"))
    seen = Seen()
    informer = Informer(KubeClient.for_host(url), "/api/v1/nodes", seen).start()
    assert informer.synced.wait(5) and seen.now == {"a": "1"}
    api.put("nodes", node("b"))
    until(lambda: "b" in seen.now)
    api.drop_watches()
    api.put("nodes", node("a", "2"))  # while no watch is open
    api.delete("nodes", "", "b")
    until(lambda: seen.now == {"a": "2"})
    informer.stop()
    assert informer.lists == 1 and informer.watches >= 2  # resumed, never listed again
    assert seen.events.count(("ADDED", "b")) == 1


def test_after_410_gone_a_fresh_list_tells_what_changed_deletions_included(kube_api):
    api, url = kube_api
    for name in "abc":
        api.put("nodes", node(name))
    seen = Seen()
    informer = Informer(KubeClient.for_host(url), "/api/v1/nodes", seen).start()
    assert informer.synced.wait(5)
    api.drop_watches()
    api.delete("nodes", "", "a")
    api.put("nodes", node("b", "2"))
    api.put("nodes", node("d"))
    api.compact()  # the watch's version is gone: it must list again
    until(lambda: seen.now == {"b": "2", "c": "1", "d": "1"})
    informer.stop()
    assert informer.lists == 2
    assert ("DELETED", "a") in seen.events and seen.events.count(("ADDED", "c")) == 1


def test_bookmarks_keep_the_version_fresh_while_nothing_changes(kube_api):
    api, url = kube_api
    api.put("nodes", node("a"))
    api.put("pods", {"metadata": {"name": "p", "namespace": "default"}})  # another resource
    seen = Seen()
    informer = Informer(KubeClient.for_host(url), "/api/v1/nodes", seen).start()
    assert informer.synced.wait(5)
    listed = int(informer.version)
    api.put("pods", {"metadata": {"name": "q", "namespace": "default"}})
    until(lambda: int(informer.version) > listed)  # a bookmark brought the version on
    informer.stop()
    assert seen.events == [("ADDED", "a")]


def test_a_throttled_list_is_retried_not_lost(kube_api):
    api, url = kube_api
    api.put("nodes", node("a"))
    api.throttle(2, retry_after_s=0)
    seen = Seen()
    informer = Informer(KubeClient.for_host(url), "/api/v1/nodes", seen).start()
    assert informer.synced.wait(10) and seen.now == {"a": "1"}
    informer.stop()


def test_a_resource_the_server_does_not_serve_counts_as_listed_and_empty(kube_api):
    _, url = kube_api
    seen = Seen()
    path = "/apis/example.com/v1/widgets"  # no such resource: 404, as without its CRD
    informer = Informer(KubeClient.for_host(url), path, seen).start()
    assert informer.synced.wait(5) and not informer.served and seen.events == []
    informer.stop()


def test_a_watch_cut_mid_stream_resumes_without_listing_again(kube_api):
    api, url = kube_api
    api.put("nodes", node("a"))
    seen = Seen()
    informer = Informer(KubeClient.for_host(url), "/api/v1/nodes", seen).start()
    assert informer.synced.wait(5)
    until(lambda: api.open_watches == 1)
    api.drop_watches(abruptly=True)  # no end to the chunked reply: a crash, a cut cable
    api.put("nodes", node("b"))
    until(lambda: "b" in seen.now)
    informer.stop()
    assert informer.lists == 1 and informer.watches >= 2


def test_a_large_list_comes_in_pages_of_one_snapshot(kube_api):
    api, url = kube_api
    for i in range(25):
        api.put("nodes", node(f"n{i:02}"))
    seen = Seen()
    informer = Informer(KubeClient.for_host(url), "/api/v1/nodes", seen, page_size=10)
    informer.start()
    assert informer.synced.wait(5)
    informer.stop()
    assert len(seen.now) == 25 and informer.lists == 1
    pages = [path for method, path, watch in api.requests if path == "/api/v1/nodes" and not watch]
    assert len(pages) == 3  # 10, 10 and 5


def test_a_continue_token_of_a_compacted_snapshot_is_410_gone(kube_api):
    """(The informer then lists afresh, as after any 410.)"""
    api, url = kube_api
    for i in range(25):
        api.put("nodes", node(f"n{i:02}"))
    client = KubeClient.for_host(url)
    first = client.request("GET", "/api/v1/nodes", {"limit": "10"})
    api.put("nodes", node("late"))
    api.compact()  # the snapshot's version is gone
    token = first["metadata"]["continue"]
    with pytest.raises(ApiError) as err:
        client.request("GET", "/api/v1/nodes", {"limit": "10", "continue": token})
    assert err.value.status == 410
