"""The informer against the real API server: list then watch, resume after a dropped
watch, list afresh after a real 410 Gone (etcd compacted), and nothing missed."""

import threading
import time

import pytest

from optimist.kube.client import ApiError
from optimist.kube.informer import Informer

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"  # the server keeps no watch cache of them


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
                self.now[name] = (obj["metadata"].get("labels") or {}).get("v", "")


def node(name, v="1"):
    return {"metadata": {"name": name, "labels": {"v": v}}}


def until(check, timeout_s=20.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    raise AssertionError("timed out")


def test_lists_then_watches_and_resumes_a_dropped_watch_where_it_was(kube_api):
    kube_api.put("nodes", node("a"))
    seen = Seen()
    informer = Informer(kube_api.client(), "/api/v1/nodes", seen).start()
    assert informer.synced.wait(10) and seen.now == {"a": "1"}
    kube_api.put("nodes", node("b"))
    until(lambda: "b" in seen.now)
    kube_api.drop_watches()
    kube_api.put("nodes", node("a", "2"))  # while the watch is down, or just back
    kube_api.delete("nodes", "", "b")
    until(lambda: seen.now == {"a": "2"})
    informer.stop()
    assert informer.lists == 1 and informer.watches >= 2  # resumed, never listed again
    assert seen.events.count(("ADDED", "b")) == 1


def test_the_watch_starts_at_the_list_s_version_not_an_item_s(kube_api):
    """A list's resourceVersion is the store's, newer than any item in it; a watch from
    an item's would replay what the list already told."""
    kube_api.put("nodes", node("a"))
    kube_api.put("nodes", node("b"))
    kube_api.delete("nodes", "", "b")  # after a's version, before the list's
    deleted_by = kube_api.version  # the server's own writes (its leases) move it on too
    seen = Seen()
    informer = Informer(kube_api.client(), "/api/v1/nodes", seen).start()
    assert informer.synced.wait(10)
    assert int(informer.version) >= deleted_by
    kube_api.put("nodes", node("c"))  # a watch tells in order: once c is told, all is
    until(lambda: ("ADDED", "c") in seen.events)
    informer.stop()
    assert seen.events == [("ADDED", "a"), ("ADDED", "c")]


def test_after_a_real_410_gone_a_fresh_list_tells_what_changed_deletions_included(kube_api):
    for name in "abc":
        kube_api.put("configmaps", {"metadata": {"name": name, "labels": {"v": "1"}}})
    seen = Seen()
    informer = Informer(kube_api.client(), CONFIGMAPS, seen).start()
    assert informer.synced.wait(10)
    until(lambda: kube_api.open_watches == 1)  # a watch still connecting would outlive the cut
    kube_api.throttle(10**6, retry_after_s=0)  # the watch cannot come back meanwhile
    kube_api.drop_watches()
    kube_api.delete("configmaps", "default", "a")
    kube_api.put("configmaps", {"metadata": {"name": "b", "labels": {"v": "2"}}})
    kube_api.put("configmaps", {"metadata": {"name": "d", "labels": {"v": "1"}}})
    kube_api.compact()  # etcd forgets the versions the informer knew
    kube_api.throttle(0)
    until(lambda: seen.now == {"b": "2", "c": "1", "d": "1"})
    informer.stop()
    assert informer.lists == 2
    assert ("DELETED", "a") in seen.events and seen.events.count(("ADDED", "c")) == 1


def test_a_list_cut_by_compaction_between_its_pages_tells_nothing_twice(kube_api):
    """A list's pages are told as they come (a large cluster is never held whole). One
    whose continue token expires between two pages (etcd compacted: 410 Gone) starts
    again, and what its first page told is not told again."""
    for name in "abc":
        kube_api.put("configmaps", {"metadata": {"name": name, "labels": {"v": "1"}}})
    seen = Seen()
    compacted = threading.Event()

    def handle(kind, obj):
        seen(kind, obj)
        if not compacted.is_set():  # after the first page: a write, then compaction
            compacted.set()
            kube_api.put("configmaps", {"metadata": {"name": "d", "labels": {"v": "1"}}})
            kube_api.compact()

    informer = Informer(kube_api.client(), CONFIGMAPS, handle, page_size=1).start()
    assert informer.synced.wait(20)
    informer.stop()
    assert sorted(seen.events) == [("ADDED", name) for name in "abcd"], seen.events


def test_bookmarks_keep_the_version_fresh_while_nothing_changes(kube_api):
    """The real server sends a watch its bookmark 2 s before the watch's timeout."""
    kube_api.put("nodes", node("a"))
    seen = Seen()
    informer = Informer(kube_api.client(), "/api/v1/nodes", seen, watch_timeout_s=4).start()
    assert informer.synced.wait(10)
    listed = int(informer.version)
    kube_api.put("configmaps", {"metadata": {"name": "q"}})  # another resource
    until(lambda: int(informer.version) > listed)  # a bookmark brought the version on
    informer.stop()
    assert seen.events == [("ADDED", "a")]


def test_a_throttled_list_is_retried_not_lost(kube_api):
    kube_api.put("nodes", node("a"))
    kube_api.throttle(2, retry_after_s=0)
    seen = Seen()
    informer = Informer(kube_api.client(), "/api/v1/nodes", seen).start()
    assert informer.synced.wait(10) and seen.now == {"a": "1"}
    informer.stop()


def test_a_resource_the_server_does_not_serve_counts_as_listed_and_empty(kube_api):
    seen = Seen()
    path = "/apis/example.com/v1/widgets"  # no such resource: 404, as without its CRD
    informer = Informer(kube_api.client(), path, seen).start()
    assert informer.synced.wait(10) and not informer.served and seen.events == []
    informer.stop()


def test_a_watch_cut_mid_stream_resumes_without_listing_again(kube_api):
    kube_api.put("nodes", node("a"))
    seen = Seen()
    informer = Informer(kube_api.client(), "/api/v1/nodes", seen).start()
    assert informer.synced.wait(10)
    until(lambda: kube_api.open_watches == 1)
    kube_api.drop_watches(abruptly=True)  # no end to the chunked reply: a crash, a cut cable
    kube_api.put("nodes", node("b"))
    until(lambda: "b" in seen.now)
    informer.stop()
    assert informer.lists == 1 and informer.watches >= 2


def test_a_large_list_comes_in_pages_of_one_snapshot(kube_api):
    for i in range(25):
        kube_api.put("nodes", node(f"n{i:02}"))
    seen = Seen()
    informer = Informer(kube_api.client(), "/api/v1/nodes", seen, page_size=10)
    informer.start()
    assert informer.synced.wait(10)
    informer.stop()
    assert len(seen.now) == 25 and informer.lists == 1
    pages = [r for r in kube_api.requests if r.path == "/api/v1/nodes" and not r.watch]
    assert len(pages) == 3  # 10, 10 and 5


def test_a_continue_token_of_a_compacted_snapshot_is_410_gone_or_read_from_the_cache(kube_api):
    """(The informer then lists afresh, as after any 410.) Servers from v1.34 serve the
    pages of a list from their watch cache's snapshots (ListFromCacheSnapshot): there the
    token still reads the first page's snapshot, without the node made after it."""
    for i in range(25):
        kube_api.put("nodes", node(f"n{i:02}"))
    client = kube_api.client()
    first = client.request("GET", "/api/v1/nodes", {"limit": "10"})
    kube_api.put("nodes", node("late"))
    kube_api.compact()  # the snapshot's version is gone from etcd
    token = first["metadata"]["continue"]
    rest = {"limit": "100", "continue": token}
    if int(client.request("GET", "/version")["minor"]) < 34:
        with pytest.raises(ApiError) as err:
            client.request("GET", "/api/v1/nodes", rest)
        assert err.value.status == 410
        return
    page = client.request("GET", "/api/v1/nodes", rest)
    names = [n["metadata"]["name"] for n in first["items"] + page["items"]]
    assert names == [f"n{i:02}" for i in range(25)]
