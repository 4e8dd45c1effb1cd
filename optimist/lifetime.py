"""How a command's processes end: with it, whatever ends it, and at once on a second ^C.

Nothing can clean up after SIGKILL (a CI job's hard timeout, the OOM killer)
from the inside, and the processes a command starts do not all end with it:
a private redis-server runs on for ever, and Ray's dashboard and runtime-env
agents, which see that the raylet died, then spend a minute reporting it to a
GCS that died too. So a command starts a reaper before anything else: a
small process in a session of its own (a ^C at the terminal is not for it)
that waits on a pipe from the command. The pipe closes when the command ends,
however it ends; the reaper then ends what the command left: SIGTERM, then
SIGKILL for those still there after a grace period. After a clean exit it
finds nothing left to end.

What the command left is found two ways, since neither finds everything:
- its descendants, which the reaper notes while the command runs: once the
  command is dead, its children belong to init and nothing ties them to it;
- the processes whose environment carries the command's mark, which every
  process it starts inherits: that finds one started a moment before the
  command died, but not one that wrote its title over its environment
  (redis-server, Ray's agents).
Both are read from /proc, so processes are reaped on Linux only.
"""

from __future__ import annotations

import os
import secrets
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType

MARK = "OPTIMIST_REAPED_BY"
GRACE_S = 3.0
# how often the reaper notes the command's descendants: every LOOK_S while they change
# (a command starts most of them at its start), then less often, up to LOOK_MAX_S, while
# they hold still; a look reads every process's stat, 1.5 to 3 ms of CPU here
LOOK_S, LOOK_MAX_S = 0.5, 4.0
_PROC = Path("/proc")


def start_reaper() -> subprocess.Popen[bytes] | None:
    """Start this process's reaper and mark the environment every later child inherits;
    None where there is no /proc to find them by."""
    if not _PROC.is_dir():
        return None
    mark = f"{os.getpid()}-{secrets.token_hex(8)}"
    environment = {k: v for k, v in os.environ.items() if k != MARK}
    reaper = subprocess.Popen(
        [sys.executable, "-m", "optimist.lifetime", str(os.getpid()), mark],
        stdin=subprocess.PIPE,  # ours is the only write end: it closes as we end
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=environment,
        start_new_session=True,
    )
    os.environ[MARK] = mark
    return reaper


Process = tuple[int, int]  # pid, start time: a pid used again is another process


def process_table() -> dict[Process, int]:
    """Every running process now but this one, with its parent's pid."""
    out = {}
    for entry in _PROC.iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with suppress(OSError, IndexError, ValueError):  # gone meanwhile
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if fields[0] != "Z":  # ended, waiting to be collected: nothing to end
                    out[int(entry.name), int(fields[19])] = int(fields[1])
    return out


def descendants(roots: Iterable[int], table: dict[Process, int]) -> set[Process]:
    """The processes below `roots` in `table`."""
    children: dict[int, list[Process]] = {}
    for process, parent in table.items():
        children.setdefault(parent, []).append(process)
    found: set[Process] = set()
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child[0])
    return found


def marked(table: dict[Process, int], mark: str, variable: str = MARK) -> set[Process]:
    """The processes of `table` whose environment holds `variable` set to `mark`."""
    needle = f"{variable}={mark}\0".encode()
    found = set()
    for process in table:
        with suppress(OSError):  # gone meanwhile, or another user's
            if needle in (_PROC / str(process[0]) / "environ").read_bytes():
                found.add(process)
    return found


def reap(seen: set[Process], mark: str, grace_s: float = GRACE_S, rounds: int = 5) -> None:
    """End what is left of `seen`, the marked processes and whatever is below them:
    SIGTERM, SIGKILL after `grace_s`; again for those started meanwhile (a raylet
    starting a worker), a few rounds at most."""
    for _ in range(rounds):
        table = process_table()
        left = (seen & table.keys()) | marked(table, mark)
        left |= descendants((pid for pid, _ in left), table)
        if not left:
            return
        _signal(left, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while (left := left & process_table().keys()) and time.monotonic() < deadline:
            time.sleep(0.05)
        _signal(left, signal.SIGKILL)


def _signal(processes: set[Process], signum: signal.Signals) -> None:
    for pid, _ in processes:
        with suppress(ProcessLookupError):
            os.kill(pid, signum)


@contextmanager
def interrupts(first: Callable[[int], None]) -> Iterator[None]:
    """While the context lasts, SIGINT and SIGTERM call `first` with the signal, once:
    the command stops as it chooses (unwinding, what it started stopped by the code
    that started it). A second one ends the process at once; the reaper ends what it
    leaves. A SIGINT that was ignored when the command started (a background job of
    a shell) stays ignored, as the shell meant."""
    interrupted = False

    def handle(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupted
        if interrupted:
            os._exit(128 + signum)
        interrupted = True
        first(signum)

    # None: a handler set outside Python, which is neither replaced nor restored
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    taken = [s for s, handler in before.items() if handler not in (signal.SIG_IGN, None)]
    for signum in taken:
        signal.signal(signum, handle)
    try:
        yield
    finally:
        for signum in taken:
            signal.signal(signum, before[signum])


def unwind(signum: int) -> None:
    """`interrupts`'s `first` for a command that stops by unwinding: ^C as Python's
    KeyboardInterrupt, SIGTERM as an exit with 128 + its number."""
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


def _main(command: int, mark: str) -> None:
    """The reaper: note what runs below the command until the command ends, then end
    what it left."""
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # it ends when the command has, not before
    seen: set[Process] = set()
    look_s = LOOK_S
    while not _ended(look_s):
        now = descendants([command], process_table())
        look_s = min(look_s * 2, LOOK_MAX_S) if now <= seen else LOOK_S
        seen |= now
    reap(seen, mark)


def _ended(wait_s: float) -> bool:
    """Whether the command's end of the pipe closed, waiting for it up to `wait_s`."""
    readable, _, _ = select.select([sys.stdin.buffer], [], [], wait_s)
    return bool(readable) and not os.read(sys.stdin.fileno(), 4096)


if __name__ == "__main__":
    _main(int(sys.argv[1]), sys.argv[2])
