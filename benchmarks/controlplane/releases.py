"""The Kubernetes releases `make kube` builds, and the one a control plane comes from.

Two are built: v1.30.4, which the plugin oracle and the parity tests are pinned to,
and the newest release that builds here, the kube-scheduler users run today. One
setting picks the release of a control plane, its controllers and its kube-scheduler:
`--kube-version` in the bench, OPTIMIST_KUBE_VERSION in the tests and the make
targets. The newest is the default.
"""

from __future__ import annotations

import os
from pathlib import Path

PINNED = "v1.30.4"
NEWEST = "v1.37.2"
RELEASES = (PINNED, NEWEST)
VERSION_VARIABLE = "OPTIMIST_KUBE_VERSION"
# where `make kube` links each release's binaries (etcd and KWOK are the same for both)
_BUILT = Path(__file__).resolve().parents[2] / "build"
_FOLDERS = {PINNED: "kube", NEWEST: "kube-newest"}


class UnknownRelease(ValueError):
    """A version that `make kube` does not build; the message names the setting."""


def kube_version(version: str | None = None) -> str:
    """`version`, or the environment's OPTIMIST_KUBE_VERSION, or the newest; checked."""
    chosen = version or os.environ.get(VERSION_VARIABLE) or NEWEST
    if chosen not in RELEASES:
        where = "--kube-version" if version else VERSION_VARIABLE
        raise UnknownRelease(f"{where}={chosen!r}: the releases built are {', '.join(RELEASES)}")
    return chosen


def release_folder(version: str) -> Path:
    """Where `make kube` links the binaries of `version` (a release it builds)."""
    return _BUILT / _FOLDERS[version]


def minor(version: str) -> int:
    """The minor version: 30 for v1.30.4."""
    return int(version.lstrip("v").split(".")[1])
