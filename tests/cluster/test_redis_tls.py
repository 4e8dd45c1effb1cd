"""The node store over TLS (`rediss://`), against a real redis-server with TLS on and
plain TCP off, on loopback; a client that does not speak TLS gets nothing."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from cluster.objects import Node
from cluster.redis_server import connect, find_redis_server
from cluster.store import Keys, NodeStore

pytestmark = pytest.mark.skipif(
    shutil.which("openssl") is None, reason="openssl is needed to make the test's certificate"
)


def certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, and its key."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    new = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    made = ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"]
    subprocess.run(
        ["openssl", *new, *made, "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )
    return cert, key


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def tls_redis(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    cert, key = certificate(tmp_path)
    port = free_port()
    args = [find_redis_server(), "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1"]
    args += ["--tls-cert-file", str(cert), "--tls-key-file", str(key)]
    args += ["--tls-ca-cert-file", str(cert), "--tls-auth-clients", "no"]
    args += ["--save", "", "--appendonly", "no", "--dir", str(tmp_path)]
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={cert}"
        deadline = time.monotonic() + 10
        while True:
            try:
                connect(url).ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.05)
        yield port, cert
    finally:
        server.kill()
        server.wait()


def test_the_store_commits_over_tls_and_plain_tcp_gets_nothing(tls_redis):
    port, cert = tls_redis
    store = NodeStore(connect(f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={cert}"), Keys("tls:"))
    store.put_nodes([Node("a", {"cpu": 4000, "pods": 10})])
    assert store.changes_since(0, ["cpu"]).names == ["a"]
    with pytest.raises(redis.ConnectionError):
        connect(f"redis://127.0.0.1:{port}/0").ping()
