"""A local Ray started in under a second rather than about five.

Where a one-machine `ray.init` spent its time (Ray 2.60, the 2-core machine,
its logs and timings; docs/performance.md):
- the raylet holds the driver's registration until the Python workers it
  prestarts have registered (`prestart_worker_first_driver`): turned off, so
  the first actor starts its worker while the driver goes on;
- the head starts and waits for an API server that, without the dashboard,
  serves usage statistics alone, which Ray turns off in release wheels: not
  started;
- the raylet waits for the dashboard agent to write the ports it serves on.
  Without Ray's dashboard packages (the minimal install) it serves none, and
  writes -1 only after trying to import every dashboard module: written
  beforehand, on minimal installs only. It waits for the runtime-env agent's
  port file too, unless it is given the port: a free one is picked for it.
The autoscaler's monitor is left running: without it the driver spent about
25 us more CPU per pod in the SchedulingBasic bench (6 runs against 6), for
no start-up time that the runs could tell apart.

The internals are changed only while `ray.init` runs, and each only where it
is as this Ray has it; a start that fails under them is tried again plainly
(`optimist.runtime.init_ray`).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

log = logging.getLogger(__name__)

# Ray adds to the system config it is given (the object spilling directory of that
# session, which a later start would then reuse): hand it a copy
SYSTEM_CONFIG: Mapping[str, object] = MappingProxyType({"prestart_worker_first_driver": False})
# the ports the dashboard agent reports; -1: it serves nothing there
_AGENT_PORTS = ("metrics_agent_port", "metrics_export_port", "dashboard_agent_listen_port")


@contextmanager
def lean_start() -> Iterator[list[str]]:
    """Ray's start-up as the module says, while the context lasts; yields the names of
    the changes made (the rest were not possible with this Ray)."""
    undo: list[Callable[[], None]] = []
    made: list[str] = []
    try:
        for name, change in _CHANGES:
            try:
                undo.append(change())
                made.append(name)
            except (ImportError, AttributeError) as e:  # another Ray: start it as it is
                log.debug("lean Ray start: %s not possible: %s", name, e)
        yield made
    finally:
        for restore in reversed(undo):
            restore()


def _replace(owner: Any, attribute: str, make: Callable[[Any], Any]) -> Callable[[], None]:
    """Put `make(original)` in the original's place; returns what puts it back."""
    original = getattr(owner, attribute)
    setattr(owner, attribute, make(original))
    return lambda: setattr(owner, attribute, original)


def _runtime_env_port() -> Callable[[], None]:
    from ray._private.parameter import RayParams

    def make(original: Callable[..., None]) -> Callable[..., None]:
        def init(self: Any, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("runtime_env_agent_port", _free_port())
            original(self, *args, **kwargs)

        return init

    return _replace(RayParams, "__init__", make)


def _no_api_server() -> Callable[[], None]:
    from ray._private.node import Node

    def make(original: Callable[..., None]) -> Callable[..., None]:
        def start_api_server(self: Any, *, include_dashboard: bool | None, **_: Any) -> None:
            if include_dashboard:
                original(self, include_dashboard=include_dashboard, **_)
            else:
                self._webui_url = ""

        return start_api_server

    return _replace(Node, "start_api_server", make)


def _agent_ports_written() -> Callable[[], None]:
    from ray._private.node import Node
    from ray._private.utils import get_dashboard_dependency_error
    from ray._raylet import persist_port  # type: ignore[attr-defined]  # the Cython module has it; ray/_raylet.pyi stubs only part of that module

    if get_dashboard_dependency_error() is None:
        raise ImportError("the dashboard's packages are installed: its agent serves ports")

    def make(original: Callable[..., None]) -> Callable[..., None]:
        def start_raylet(self: Any, *args: Any, **kwargs: Any) -> None:
            for name in _AGENT_PORTS:
                persist_port(self._session_dir, self._node_id, name, -1)
            original(self, *args, **kwargs)

        return start_raylet

    return _replace(Node, "start_raylet", make)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_CHANGES: tuple[tuple[str, Callable[[], Callable[[], None]]], ...] = (
    ("runtime-env-port", _runtime_env_port),
    ("no-api-server", _no_api_server),
    ("agent-ports", _agent_ports_written),
)
