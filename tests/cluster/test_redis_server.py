import os
import stat
import subprocess
from pathlib import Path

import pytest
import redis

from cluster.redis_server import EmbeddedRedis, connect, redact


def test_embedded_redis_listens_only_on_a_private_socket():
    with EmbeddedRedis() as server:
        assert connect(server.url).ping()
        mode = os.stat(server.socket.parent).st_mode
        assert stat.S_IMODE(mode) == 0o700
        config = connect(server.url).config_get("port")
        assert config["port"] == "0"  # no TCP listener at all
        pid = server._process.pid
        listening = subprocess.run(["ss", "-ltnp"], capture_output=True, text=True).stdout
        assert f"pid={pid}," not in listening
    assert not server.socket.exists()


def test_password_from_environment_and_redaction(monkeypatch):
    monkeypatch.setenv("OPTIMIST_REDIS_PASSWORD", "hunter2")
    client = connect("redis://127.0.0.1:1/0")
    assert client.connection_pool.connection_kwargs["password"] == "hunter2"
    assert redact("redis://user:hunter2@host:6379/0") == "redis://user:***@host:6379/0"
    assert redact("unix:///tmp/r.sock") == "unix:///tmp/r.sock"


def test_unknown_scheme_is_refused_without_leaking_the_password():
    with pytest.raises(ValueError) as err:
        connect("http://:topsecret@host")
    assert "topsecret" not in str(err.value)


def test_a_password_in_the_query_is_redacted_too():
    assert redact("unix:///tmp/r.sock?db=0&password=hunter2") == (
        "unix:///tmp/r.sock?db=0&password=***"
    )


def test_password_from_a_file_and_never_on_a_command_line(tmp_path, monkeypatch):
    secret = tmp_path / "password"
    secret.write_text("correct-horse\n")
    with EmbeddedRedis(password="correct-horse") as server:
        with pytest.raises(redis.AuthenticationError):
            connect(server.url).ping()
        monkeypatch.setenv("OPTIMIST_REDIS_PASSWORD_FILE", str(secret))
        assert connect(server.url).ping()
        cmdline = (Path("/proc") / str(server._process.pid) / "cmdline").read_bytes()
        assert b"correct-horse" not in cmdline
    monkeypatch.setenv("OPTIMIST_REDIS_PASSWORD_FILE", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="cannot read it"):
        connect("unix:///tmp/r.sock")
