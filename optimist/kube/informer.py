"""An informer: list a resource, then watch it from the list's version, for ever.

What client-go's reflector does, in a thread: a dropped watch resumes from
the last version seen (bookmarks keep that version fresh while nothing
changes); `410 Gone` (the version was compacted away) means list afresh, and
the fresh list is told as the difference from what was known, deletions
included, so that nothing that happened while the watch was down is missed.
Failures back off; the thread never spins on a failing API. A resource the
server does not serve (a custom resource whose definition is not installed:
no PodGroups without the coscheduling plugin's CRD) counts as listed and
empty, and is looked for again now and then.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from optimist.kube.client import ApiError, Backoff, KubeClient

log = logging.getLogger(__name__)

WATCH_BACKOFF = Backoff(first_s=0.2, cap_s=30.0)
NOT_SERVED_RECHECK_S = 60.0
# (event type: ADDED, MODIFIED or DELETED; the object)
Handler = Callable[[str, dict[str, Any]], None]


def object_key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))


def list_pages(
    client: KubeClient, path: str, page_size: int = 500
) -> tuple[str, Iterator[list[dict[str, Any]]]]:
    """The list's resourceVersion and every object at `path`, a page at a time as
    client-go's pager reads them: all pages are one snapshot, at the first page's
    version (an expired continue token is 410 Gone: the caller lists again). A page is
    the caller's to handle and drop before the next is read, so that a large cluster
    is never held whole as the server's JSON."""
    query = {"limit": str(page_size)}
    first = client.request("GET", path, query)
    return str((first.get("metadata") or {}).get("resourceVersion", "")), _pages(
        client, path, query, first
    )


def _pages(
    client: KubeClient, path: str, query: dict[str, str], listed: dict[str, Any]
) -> Iterator[list[dict[str, Any]]]:
    while True:
        yield listed.get("items") or []
        token = (listed.get("metadata") or {}).get("continue")
        if not token:
            return
        listed = client.request("GET", path, {**query, "continue": token})


def list_all(client: KubeClient, path: str, page_size: int = 500) -> tuple[list[Any], str]:
    """Every object at `path` (`list_pages`, held together) and the list's version."""
    version, pages = list_pages(client, path, page_size)
    return [obj for page in pages for obj in page], version


class Informer:
    def __init__(
        self,
        client: KubeClient,
        path: str,
        handle: Handler,
        *,
        watch_timeout_s: float = 300.0,
        backoff: Backoff = WATCH_BACKOFF,
        page_size: int = 500,
        arrived: threading.Event | None = None,
    ) -> None:
        self.client, self.path, self.handle = client, path, handle
        # set after each event is handled: what waits for news wakes without polling
        self.arrived = arrived or threading.Event()
        self.watch_timeout_s = watch_timeout_s
        self.page_size = page_size
        self.backoff = backoff
        self.synced = threading.Event()  # the first list has been handled
        self.version = ""  # the last resourceVersion seen; "" until listed
        self.lists = 0  # lists made: 1, plus one per 410 Gone
        self.served = True  # False while the server answers 404 for the resource
        self.watches = 0  # watches opened
        self.told = 0  # events told the handler, the lists' included: a list's progress
        self._known: dict[str, str] = {}  # object key -> resourceVersion
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"informer {path}", daemon=True)

    def start(self) -> Informer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                if not self.version:
                    self._list()
                self._watch()
                failures = 0
            except ApiError as err:
                if err.status == 404 and not self.version:
                    if self.served:
                        log.info(
                            "%s is not served; looked for again every %.0f s",
                            self.path,
                            NOT_SERVED_RECHECK_S,
                        )
                    self.served = False
                    self.synced.set()
                    self._stop.wait(NOT_SERVED_RECHECK_S)
                    continue
                if err.status == 410:
                    log.info("%s: %s; listing afresh", self.path, err.message)
                    self.version = ""
                    continue
                wait = self.backoff.wait_s(failures, None)
                failures = min(failures + 1, 16)
                log.warning("%s: %s; again in %.1f s", self.path, err, wait)
                self._stop.wait(wait)
            except Exception:  # a handler's bug must not end the informer silently
                log.exception("%s: informer failed; listing afresh", self.path)
                self.version = ""
                self._stop.wait(self.backoff.wait_s(failures, None))
                failures = min(failures + 1, 16)

    def _handle(self, kind: str, obj: dict[str, Any]) -> None:
        self.handle(kind, obj)
        self.told += 1
        self.arrived.set()

    def _list(self) -> None:
        """Every object, a page of `page_size` at a time as client-go's pager reads them;
        all pages are one snapshot, at the first page's version (an expired continue
        token is 410 Gone: the list starts again)."""
        seen: dict[str, str] = {}
        version, pages = list_pages(self.client, self.path, self.page_size)
        for page in pages:
            for obj in page:
                key, known = object_key(obj), obj["metadata"].get("resourceVersion", "")
                seen[key] = known
                before = self._known.get(key)
                if before is None:
                    self._handle("ADDED", obj)
                elif before != known:
                    self._handle("MODIFIED", obj)
                self._known[key] = known  # told: a list started again does not tell it twice
        for key in self._known.keys() - seen.keys():  # deleted while nobody watched
            namespace, _, name = key.rpartition("/")
            self._handle("DELETED", {"metadata": {"name": name, "namespace": namespace}})
        self._known = seen
        self.version = version
        self.lists += 1
        self.served = True
        self.synced.set()

    def _watch(self) -> None:
        query = {
            "watch": "true",
            "resourceVersion": self.version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(int(self.watch_timeout_s)),
        }
        self.watches += 1
        for event in self.client.stream(self.path, query, self.watch_timeout_s + 10):
            if self._stop.is_set():
                return
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                raise ApiError(
                    int(obj.get("code") or 0), str(obj.get("reason")), str(obj.get("message"))
                )
            version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
            if kind == "BOOKMARK":
                self.version = version or self.version
                continue
            key = object_key(obj)
            if kind == "DELETED":
                self._known.pop(key, None)
            else:
                self._known[key] = version
            self._handle(str(kind), obj)
            self.version = version or self.version
