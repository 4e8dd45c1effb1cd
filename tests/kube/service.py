"""optimist's service on a real API server, run by a test."""

from __future__ import annotations

import threading

from optimist.service import Service


class Running:
    """A Service in a thread of its own, for as long as the block lasts."""

    def __init__(self, service: Service) -> None:
        self.service, self.stop = service, threading.Event()
        self.thread = threading.Thread(target=service.run, args=(self.stop,), daemon=True)

    def __enter__(self) -> Service:
        self.thread.start()
        assert self.service.ready.wait(60), "the service did not start"
        return self.service

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(30)
