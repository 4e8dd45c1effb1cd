"""A command run as a user runs it, and every process it started, found as its reaper
finds them (`optimist.lifetime`), by a mark of the test's own: whatever the command
does to clean up (or fails to), the test sees what is left, and stops it by PID when
it ends."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

import pytest

from optimist.lifetime import Process, descendants, marked, process_table

MARK = "OPTIMIST_TEST_PROCESS_TREE"


def _as_at_a_terminal() -> None:
    """SIGINT as a terminal leaves it: a test runner started in the background (a CI
    job, `cmd &` in a script) hands its children SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class MarkedCommand:
    def __init__(self, command: Sequence[str], out: IO[str]) -> None:
        if not Path("/proc").is_dir():
            pytest.skip("finds the processes a command started through /proc (Linux)")
        self.mark = uuid.uuid4().hex
        self.seen: set[Process] = set()
        self.process = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, MARK: self.mark},
            preexec_fn=_as_at_a_terminal,
        )

    def processes(self) -> dict[int, str]:
        """Every live process the command started: those below it, seen now or at an
        earlier look, and those carrying the mark; pid -> its command line."""
        table = process_table()
        self.seen |= descendants([self.process.pid], table)
        found = (self.seen & table.keys()) | marked(table, self.mark, MARK)
        lines = {}
        for pid, _ in found | descendants((pid for pid, _ in found), table):
            with contextlib.suppress(OSError):  # gone meanwhile
                lines[pid] = (Path("/proc") / str(pid) / "cmdline").read_bytes()
        return {
            pid: line.replace(b"\0", b" ").decode(errors="replace") for pid, line in lines.items()
        }

    def wait_for(self, what: str, holds: Callable[[], bool], timeout_s: float = 180.0) -> None:
        """Until `holds()`, which the command is expected to bring about; fails naming
        `what` if the command ends or the time runs out first."""
        deadline = time.monotonic() + timeout_s
        while not holds():
            assert self.process.poll() is None, f"the command ended before {what}"
            assert time.monotonic() < deadline, f"no {what} within {timeout_s:.0f} s"
            time.sleep(0.1)

    def left_after(self, timeout_s: float) -> dict[int, str]:
        """What is still running `timeout_s` after now, or nothing as soon as all ended."""
        deadline = time.monotonic() + timeout_s
        while (left := self.processes()) and time.monotonic() < deadline:
            time.sleep(0.1)
        return left

    def __enter__(self) -> MarkedCommand:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        """Whatever the test found, nothing it started runs on."""
        for pid in [self.process.pid, *self.processes()]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait()
