"""The extender client against real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from cluster.objects import Node
from shards.extender import (
    DEFAULT_TIMEOUT_S,
    ExtenderError,
    FilterAnswer,
    HTTPExtender,
    _tls_context,
)
from shards.extender_config import ExtenderConfig, ExtenderTLSConfig
from shards.testing import node, pod_spec

# (path, parsed request body) -> (status, response bytes)
Route = Callable[[str, Any], tuple[int, bytes]]


class _Server:
    """A ThreadingHTTPServer that answers with `route` and records what it was sent."""

    def __init__(self, route: Route, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[tuple[str, Any]] = []
        self.release = threading.Event()  # lets slow handlers finish at teardown
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length))
                outer.requests.append((self.path, body))
                status, payload = route(self.path, body)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up (timeout tests)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        scheme = "http"
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}/ext"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True)

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@contextmanager
def serving(route: Route, tls: ssl.SSLContext | None = None) -> Iterator[_Server]:
    server = _Server(route, tls)
    server.thread.start()
    try:
        yield server
    finally:
        server.close()


def answer(obj: Any, status: int = 200) -> tuple[int, bytes]:
    return status, json.dumps(obj).encode()


def labels_of(body: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {n["metadata"]["name"]: n["metadata"]["labels"] for n in body["Nodes"]["items"]}


def good_route(path: str, body: Any) -> tuple[int, bytes]:
    """Filters out nodes labelled bad=true; scores by the label score."""
    labels = labels_of(body)
    if path.endswith("/filter"):
        passed = [
            n for n in body["Nodes"]["items"] if labels[n["metadata"]["name"]].get("bad") != "true"
        ]
        failed = {name: "bad node" for name, lb in labels.items() if lb.get("bad") == "true"}
        return answer({"Nodes": {"items": passed}, "FailedNodes": failed, "Error": ""})
    if path.endswith("/prioritize"):
        return answer(
            [{"Host": name, "Score": int(lb.get("score", "0"))} for name, lb in labels.items()]
        )
    return answer({}, 404)


def extender_from(wire: dict[str, Any]) -> HTTPExtender:
    """An extender built from settings in the file's spelling."""
    return HTTPExtender.from_config(ExtenderConfig.from_wire(wire))


def config(url: str, **extra: Any) -> ExtenderConfig:
    """An extender's settings as the loader reads them from the file."""
    return ExtenderConfig.from_wire(
        {
            "urlPrefix": url,
            "filterVerb": "filter",
            "prioritizeVerb": "prioritize",
            "weight": 2,
            "httpTimeout": "2s",
            **extra,
        }
    )


NODES: list[Node] = [
    node(
        "a",
        cpu="4",
        labels={"score": "7"},
        taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}],
    ),
    node("b", cpu="500m", labels={"bad": "true", "score": "3"}),
    node("c", labels={"score": "10"}, unschedulable=True),
]
POD = pod_spec({"cpu": "1"})


def test_filter_and_prioritize_against_a_correct_extender() -> None:
    with serving(good_route) as server:
        ext = HTTPExtender.from_config(config(server.url))
        assert (ext.name, ext.weight, ext.ignorable, ext.has_filter, ext.has_prioritize) == (
            server.url,
            2,
            False,
            True,
            True,
        )
        got = ext.filter(POD, NODES)
        assert got == FilterAnswer(("a", "c"), {"b": "bad node"}, {})
        assert ext.prioritize(POD, NODES) == {"a": 7, "b": 3, "c": 10}
    path, body = server.requests[0]
    assert path == "/ext/filter"
    assert body["Pod"] == POD
    assert body["NodeNames"] is None
    a, b, c = body["Nodes"]["items"]
    assert a == {
        "metadata": {"name": "a", "labels": {"score": "7"}},
        "spec": {
            "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}],
            "unschedulable": False,
        },
        "status": {"allocatable": {"cpu": "4000m", "memory": str(32 * 2**30), "pods": "110"}},
    }
    assert b["status"]["allocatable"]["cpu"] == "500m"
    assert c["spec"]["unschedulable"] is True
    assert server.requests[1][0] == "/ext/prioritize"


def test_slow_extender_times_out_within_the_timeout() -> None:
    def slow(path: str, body: Any) -> tuple[int, bytes]:
        server.release.wait(5)
        return answer([])

    with serving(slow) as server:
        ext = HTTPExtender.from_config(config(server.url, httpTimeout="300ms"))
        assert ext.timeout_s == pytest.approx(0.3)
        start = time.monotonic()
        with pytest.raises(ExtenderError, match="timed out"):
            ext.prioritize(POD, NODES)
        assert time.monotonic() - start < 4.0  # the server would answer after 5 s


def test_slow_trickling_body_is_bounded_by_one_deadline() -> None:
    """A server that keeps sending a byte at a time cannot stretch the call past the timeout."""

    class Trickle(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            try:
                for _ in range(1000):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                pass

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        ext = HTTPExtender.from_config(config(url, httpTimeout="300ms"))
        start = time.monotonic()
        with pytest.raises(ExtenderError):
            ext.filter(POD, NODES)
        assert time.monotonic() - start < 10.0  # the whole body would take 50 s
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def test_server_error_and_refused_connection_are_extender_errors() -> None:
    with serving(lambda path, body: answer({"oops": 1}, 500)) as server:
        ext = HTTPExtender.from_config(config(server.url))
        with pytest.raises(ExtenderError, match="HTTP 500"):
            ext.filter(POD, NODES)
        with pytest.raises(ExtenderError, match="HTTP 500"):
            ext.prioritize(POD, NODES)
    closed = HTTPExtender.from_config(config(server.url))  # the server is gone now
    with pytest.raises(ExtenderError):
        closed.filter(POD, NODES)


@pytest.mark.parametrize(
    ("verb", "reply", "match"),
    [
        ("filter", (200, b"{not json"), "not JSON"),
        ("prioritize", (200, b"[{]"), "not JSON"),
        ("filter", answer({"Nodes": {"items": [{"metadata": {"name": "zz"}}]}}), "not sent"),
        ("filter", answer({"NodeNames": ["a"], "FailedNodes": {"zz": "no"}}), "not sent"),
        ("filter", answer({"Error": "boom"}), "boom"),
        ("filter", answer(["a"]), "not an object"),
        ("prioritize", answer([{"Host": "zz", "Score": 1}]), "not sent"),
        ("prioritize", answer([{"Host": "a", "Score": 11}]), "0..10"),
        ("prioritize", answer([{"Host": "a", "Score": -1}]), "0..10"),
        ("prioritize", answer([{"Host": "a", "Score": 1.5}]), "0..10"),
        ("prioritize", answer([{"Host": "a", "Score": 1}, {"Host": "a", "Score": 2}]), "twice"),
        ("prioritize", answer({"Host": "a"}), "not a list"),
    ],
)
def test_wrong_answers_are_extender_errors(verb: str, reply: tuple[int, bytes], match: str) -> None:
    with serving(lambda path, body: reply) as server:
        ext = HTTPExtender.from_config(config(server.url))
        with pytest.raises(ExtenderError, match=match):
            getattr(ext, verb)(POD, NODES)


def test_node_cache_capable_sends_names_and_reads_names() -> None:
    def route(path: str, body: Any) -> tuple[int, bytes]:
        if path.endswith("/filter"):
            return answer(
                {
                    "NodeNames": ["c", "a"],
                    "FailedNodes": {"b": "full", "c": "ignored: also unresolvable"},
                    "FailedAndUnresolvableNodes": {"c": "wrong zone"},
                }
            )
        return answer([{"Host": "b", "Score": 4}])  # a and c left out: they score 0

    with serving(route) as server:
        ext = HTTPExtender.from_config(config(server.url, nodeCacheCapable=True))
        got = ext.filter(POD, NODES)
        assert got.passed == ("c", "a")
        assert got.failed == {"b": "full"}  # unresolvable takes precedence, as upstream
        assert got.unresolvable == {"c": "wrong zone"}
        assert ext.prioritize(POD, NODES) == {"b": 4}
    for _, body in server.requests:
        assert body["NodeNames"] == ["a", "b", "c"]
        assert body.get("Nodes") is None


def test_field_names_are_matched_case_insensitively_as_go_does() -> None:
    with serving(lambda path, body: answer({"nodenames": ["a"], "error": ""})) as server:
        ext = HTTPExtender.from_config(config(server.url, nodeCacheCapable=True))
        assert ext.filter(POD, NODES).passed == ("a",)


def test_without_verbs_nothing_is_sent() -> None:
    ext = extender_from({"urlPrefix": "http://127.0.0.1:9"})
    assert not ext.has_filter and not ext.has_prioritize
    assert ext.filter(POD, NODES) == FilterAnswer(("a", "b", "c"), {}, {})
    assert ext.prioritize(POD, NODES) == {"a": 0, "b": 0, "c": 0}
    assert ext.timeout_s == DEFAULT_TIMEOUT_S


def test_interest_in_managed_resources() -> None:
    everyone = extender_from({"urlPrefix": "http://127.0.0.1:9"})
    gpu = extender_from(
        {
            "urlPrefix": "http://127.0.0.1:9",
            "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
            "ignorable": True,
        }
    )
    assert gpu.ignorable
    plain = pod_spec({"cpu": "1"})
    requests = pod_spec({"cpu": "1", "example.com/gpu": "1"})
    limits = {
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"example.com/gpu": "1"}}}]}
    }
    init = {
        "spec": {
            "containers": [{"name": "c"}],
            "initContainers": [{"name": "i", "resources": {"requests": {"example.com/gpu": "2"}}}],
        }
    }
    other = pod_spec({"example.com/fpga": "1"})
    assert everyone.interested(plain) and everyone.interested({})
    assert not gpu.interested(plain)
    assert gpu.interested(requests) and gpu.interested(limits) and gpu.interested(init)
    assert not gpu.interested(other)


def test_weighted_scores_as_upstream() -> None:
    ext = extender_from({"urlPrefix": "http://127.0.0.1:9", "weight": 3})
    # score * weight * (MaxNodeScore / MaxExtenderPriority) = score * 3 * 10
    assert ext.weighted_scores({"a": 0, "b": 7, "c": 10}) == {"a": 0, "b": 210, "c": 300}


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("1m30s", 90.0),
        ("250ms", 0.25),
        ("0", DEFAULT_TIMEOUT_S),
        (None, DEFAULT_TIMEOUT_S),
    ],
)
def test_http_timeout(value: str | None, seconds: float) -> None:
    wire = {"urlPrefix": "http://127.0.0.1:9"}
    if value is not None:
        wire["httpTimeout"] = value
    ext = extender_from(wire)
    assert ext.timeout_s == pytest.approx(seconds)


def test_tls_settings_follow_upstream() -> None:
    # enableHTTPS without a CA: upstream turns verification off.
    off = _tls_context(ExtenderTLSConfig(), enable_https=True)
    assert off.verify_mode == ssl.CERT_NONE and not off.check_hostname
    # An https URL without enableHTTPS or a CA: the system roots, verified.
    on = _tls_context(ExtenderTLSConfig(), enable_https=False)
    assert on.verify_mode == ssl.CERT_REQUIRED and on.check_hostname
    with pytest.raises(ValueError, match="insecure"):
        _tls_context(ExtenderTLSConfig(insecure=True, caData=base64.b64encode(b"x").decode()), True)
    with pytest.raises(ValueError, match="both"):
        _tls_context(ExtenderTLSConfig(certFile="/nonexistent.pem"), True)
    ext = extender_from({"urlPrefix": "127.0.0.1:8443", "enableHTTPS": True})
    assert ext._scheme == "https" and ext._tls is not None
    assert extender_from({"urlPrefix": "http://127.0.0.1:9"})._tls is None


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A self-signed certificate for the name extender.test, made with the openssl tool."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl tool to make a certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = str(folder / "cert.pem"), str(folder / "key.pem")
    subprocess.run(
        [
            *(openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"),
            *("-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=extender.test"),
            *("-addext", "subjectAltName=DNS:extender.test"),
        ],
        check=True,
        capture_output=True,
        timeout=10,
    )
    return cert, key


def test_https_with_a_ca_and_server_name(certificate: tuple[str, str]) -> None:
    cert, key = certificate
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    with serving(good_route, server_context) as server:
        url = server.url
        with open(cert, "rb") as f:
            ca_data = base64.b64encode(f.read()).decode()
        trusted = HTTPExtender.from_config(
            config(
                url, enableHTTPS=True, tlsConfig={"caData": ca_data, "serverName": "extender.test"}
            )
        )
        assert trusted.prioritize(POD, NODES) == {"a": 7, "b": 3, "c": 10}
        # The right CA but the wrong name (127.0.0.1): verification fails.
        wrong_name = HTTPExtender.from_config(config(url, tlsConfig={"caFile": cert}))
        with pytest.raises(ExtenderError):
            wrong_name.prioritize(POD, NODES)
        # enableHTTPS without a CA: not verified, as upstream.
        unverified = HTTPExtender.from_config(config(url, enableHTTPS=True))
        assert unverified.filter(POD, NODES).passed == ("a", "c")
