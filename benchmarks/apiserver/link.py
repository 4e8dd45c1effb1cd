"""The network between the scheduler under test and the API server, held by the bench so
that `--chaos` can fail it: a TCP relay on loopback that the scheduler's kubeconfig
names instead of the server.

It relays bytes and nothing else: TLS runs end to end between the scheduler and the
server (the server's certificate names 127.0.0.1, whatever the port), so the
scheduler sees the same server, users and certificates as without it. Two faults:

- `stall`: no byte passes either way, on any connection old or new, until `resume`:
  a link congested or flapping. Connections stay open, as TCP's would; what the
  scheduler sends waits in the kernel's buffers and arrives late.
- `cut`: every open connection reset (RST) at once, as when a load balancer in
  between restarts; new connections pass.

Its threads only copy between sockets (the GIL released while they wait), so the
bench's process, whose CPU is the client's in the report, pays little for it.
"""

from __future__ import annotations

import socket
import struct
import threading
from contextlib import suppress
from pathlib import Path

import yaml

_CHUNK = 65536
_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends RST


class Link:
    """Relays 127.0.0.1:`port` to `upstream` (host, port) while the context lasts."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._flowing = threading.Event()
        self._flowing.set()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._closed = False

    def __enter__(self) -> Link:
        threading.Thread(target=self._accept, name="link-accept", daemon=True).start()
        return self

    def __exit__(self, *_: object) -> None:
        self._closed = True
        self._flowing.set()
        with suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self.cut()

    def kubeconfig(self, kubeconfig: Path) -> Path:
        """`kubeconfig` with its server here (written beside it, named for the link)."""
        doc = yaml.safe_load(kubeconfig.read_text())
        for cluster in doc["clusters"]:
            cluster["cluster"]["server"] = f"https://127.0.0.1:{self.port}"
        path = kubeconfig.with_name(f"link-{kubeconfig.name}")
        path.write_text(yaml.safe_dump(doc))
        return path

    # --- faults -----------------------------------------------------------------

    def stall(self) -> None:
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()

    def cut(self) -> int:
        """Reset every open connection; how many there were (both ends of each)."""
        with self._lock:
            sockets, self._open = self._open, set()
        for sock in sockets:
            with suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes its pump's recv
            sock.close()
        return len(sockets) // 2

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self._open) // 2

    # --- relaying ---------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._connect, args=(client,), daemon=True).start()

    def _connect(self, client: socket.socket) -> None:
        self._flowing.wait()  # a stalled link answers no new connection either
        try:
            server = socket.create_connection(self.upstream)
        except OSError:  # the server is down: the client sees its connection reset
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
            client.close()
            return
        for sock in (client, server):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self._open |= {client, server}
        threading.Thread(target=self._pump, args=(server, client), daemon=True).start()
        self._pump(client, server)

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        """Bytes from `source` to `sink` until either ends; then both are closed, so the
        other direction's pump ends too."""
        try:
            while data := source.recv(_CHUNK):
                self._flowing.wait()
                sink.sendall(data)
        except OSError:
            pass
        with self._lock:
            mine = source in self._open
            self._open -= {source, sink}
        if mine:  # not cut meanwhile (cut closes them itself)
            for sock in (source, sink):
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
