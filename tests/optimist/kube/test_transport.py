"""The lean HTTP/1.1 transport against the real API server: kept connections reused,
a connection the server closed noticed (before the request or, failing that, by the
request going again), chunked answers whole, TLS checked, and an http:// proxy
crossed with CONNECT as client-go crosses one."""

from __future__ import annotations

import select
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import pytest
from kubernetes import client as k8s

from optimist.kube.client import Backoff, KubeClient
from optimist.kube.transport import Transport


def _admin(control_plane, **settings) -> k8s.Configuration:
    """The admin's configuration, by token, straight to the server."""
    configuration = k8s.Configuration()
    configuration.host = control_plane.url
    configuration.ssl_ca_cert = str(control_plane.ca_file)
    configuration.api_key = {"authorization": f"Bearer {control_plane.admin.token}"}
    for name, value in settings.items():
        setattr(configuration, name, value)
    return configuration


def test_requests_reuse_one_kept_connection(control_plane):
    client = KubeClient(Transport(_admin(control_plane)), qps=1000, burst=1000)
    for _ in range(20):
        assert client.request("GET", "/api/v1/namespaces/default")["metadata"]["name"]
    assert len(client.transport._idle) == 1


def test_a_connection_the_server_closed_is_not_a_failure(control_plane, monkeypatch):
    """The server ends a kept connection (here after the client's half-close, as it
    does when idle): noticed before the next request, or, when the close comes too
    late to be seen, the request goes once more on a new connection."""
    transport = Transport(_admin(control_plane))
    client = KubeClient(transport, qps=1000, burst=1000)
    client.request("GET", "/api/v1/namespaces/default")
    kept = transport._idle[-1]
    kept.sock.shutdown(socket.SHUT_WR)
    select.select([kept.sock], [], [], 5)  # the server's close has come
    assert kept.dropped()
    assert client.request("GET", "/api/v1/namespaces/default") and client.retries == 0

    client.request("GET", "/api/v1/namespaces/default")
    kept = transport._idle[-1]
    kept.sock.shutdown(socket.SHUT_WR)
    select.select([kept.sock], [], [], 5)
    monkeypatch.setattr(type(kept), "dropped", lambda self: False)  # seen too late
    assert client.request("GET", "/api/v1/namespaces/default") and client.retries == 0
    assert kept not in transport._idle


def test_a_chunked_answer_comes_whole(control_plane):
    client = KubeClient(Transport(_admin(control_plane)), qps=1000, burst=1000)
    big = {f"k{i}": "x" * 1000 for i in range(300)}  # 300 kB: the server chunks it
    client.request(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        body={"metadata": {"name": "transport-big"}, "data": big},
    )
    try:
        response = client.transport.request(
            "GET",
            "/api/v1/namespaces/default/configmaps/transport-big",
            client._headers("application/json"),
            None,
            10.0,
        )
        assert response.headers.get("transfer-encoding") == "chunked"
        assert (
            client.request("GET", "/api/v1/namespaces/default/configmaps/transport-big")["data"]
            == big
        )
    finally:
        client.request("DELETE", "/api/v1/namespaces/default/configmaps/transport-big")


def test_a_server_not_signed_by_the_ca_is_refused(control_plane, tmp_path):
    other_ca = tmp_path / "other.crt"
    other_ca.write_text(_self_signed(tmp_path))
    client = KubeClient(
        Transport(_admin(control_plane, ssl_ca_cert=str(other_ca))),
        backoff=Backoff(tries=1),
    )
    with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED"):
        client.request("GET", "/api/v1/namespaces/default")


def test_an_http_proxy_is_crossed_with_connect(control_plane):
    with _connect_proxy() as (proxy_url, tunnels):
        client = KubeClient(Transport(_admin(control_plane, proxy=proxy_url)), qps=100, burst=100)
        assert client.request("GET", "/api/v1/namespaces/default")["metadata"]["name"]
        assert tunnels == [f"127.0.0.1:{control_plane.port}"]


def test_a_proxy_it_cannot_cross_is_refused_by_name(control_plane):
    with pytest.raises(ValueError, match=r"proxy-url 'socks5://127\.0\.0\.1:1080'"):
        Transport(_admin(control_plane, proxy="socks5://127.0.0.1:1080"))


# --- helpers ---------------------------------------------------------------------------


def _self_signed(folder) -> str:
    key, crt = folder / "other.key", folder / "other.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=other", "-keyout", str(key), "-out", str(crt)),
        ],
        check=True,
        capture_output=True,
    )
    return crt.read_text()


@contextmanager
def _connect_proxy() -> Iterator[tuple[str, list[str]]]:
    """An http:// proxy that answers CONNECT and copies bytes both ways."""
    listener = socket.create_server(("127.0.0.1", 0))
    tunnels: list[str] = []

    def pipe(a: socket.socket, b: socket.socket) -> None:
        with suppress(OSError):
            while data := a.recv(65536):
                b.sendall(data)
        with suppress(OSError):
            b.shutdown(socket.SHUT_WR)

    def serve() -> None:
        with suppress(OSError):
            while True:
                conn, _ = listener.accept()
                head = b""
                while b"\r\n\r\n" not in head:
                    head += conn.recv(4096)
                target = head.split()[1].decode()
                tunnels.append(target)
                host, port = target.rsplit(":", 1)
                upstream = socket.create_connection((host, int(port)))
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                threading.Thread(target=pipe, args=(conn, upstream), daemon=True).start()
                threading.Thread(target=pipe, args=(upstream, conn), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", tunnels
    finally:
        listener.close()
        thread.join(5)
