"""kube-scheduler v1.30's own plugins as the oracle the shards' plugins are judged by.

`main.go` beside this links upstream's framework and in-tree plugins (built by
`make oracle`, tools/build-oracle.sh); `Oracle` keeps one such process for a
test session and asks it, a line of JSON at a time, what upstream makes of a
pod on a cluster given as the API server holds it.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BINARY = Path(__file__).resolve().parents[2] / "build" / "oracle" / "oracle"
SUCCESS = "Success"
# a workload's kind -> where the request gives it
WORKLOAD_FIELDS = {
    "Service": "services",
    "ReplicationController": "replicationControllers",
    "ReplicaSet": "replicaSets",
    "StatefulSet": "statefulSets",
}
# a storage object's kind -> where the request gives it
STORAGE_FIELDS = {
    "PersistentVolume": "persistentVolumes",
    "PersistentVolumeClaim": "persistentVolumeClaims",
    "StorageClass": "storageClasses",
    "CSINode": "csiNodes",
    "CSIDriver": "csiDrivers",
}
Manifest = Mapping[str, Any]


class OracleMissing(RuntimeError):
    """The oracle is not built: what to run to build it."""


class OracleError(RuntimeError):
    """Upstream refused the request (an invalid configuration, say), in its words."""


@dataclass(frozen=True, slots=True)
class Status:
    code: str  # upstream's status code: Success, Unschedulable, UnschedulableAndUnresolvable
    plugin: str = ""
    reasons: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.code == SUCCESS

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> Status:
        return cls(raw["code"], raw.get("plugin", ""), tuple(raw.get("reasons") or ()))


@dataclass(frozen=True, slots=True)
class Verdict:
    """What upstream's framework made of one pod on one cluster."""

    filters: tuple[str, ...]  # the profile's Filter plugins, in order
    scorers: tuple[tuple[str, int], ...]  # its Score plugins and weights, in order
    alone: dict[str, dict[str, Status]]  # plugin -> node -> status, each plugin run alone
    prefilter: Status  # the framework's PreFilter, all plugins together
    rejected: dict[str, Status]  # node -> the first Filter that rejected it
    feasible: tuple[str, ...]
    # on the feasible nodes, plugin -> node -> score; a plugin PreScore skipped is absent
    raw: dict[str, dict[str, int]]
    normalized: dict[str, dict[str, int]]
    totals: dict[str, int]

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> Verdict:
        return cls(
            filters=tuple(raw.get("filters") or ()),
            scorers=tuple((s["name"], s["weight"]) for s in raw.get("scorers") or ()),
            alone={
                plugin: {node: Status.of(s) for node, s in nodes.items()}
                for plugin, nodes in raw["alone"].items()
            },
            prefilter=Status.of(raw["prefilter"]),
            rejected={node: Status.of(s) for node, s in raw["rejected"].items()},
            feasible=tuple(raw["feasible"]),
            raw=raw["raw"],
            normalized=raw["normalized"],
            totals=raw["totals"],
        )


class Oracle:
    """One oracle process, asked one request at a time; stopped by its PID on close."""

    def __init__(self, binary: Path = BINARY) -> None:
        if not binary.exists():
            raise OracleMissing(f"{binary} is not built: run `make oracle` (needs Go 1.22+)")
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self._process = subprocess.Popen(
            [str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log
        )

    def judge(
        self,
        configuration: Manifest,
        nodes: Sequence[Manifest],
        pods: Sequence[Manifest],
        namespaces: Sequence[Manifest],
        pod: Manifest,
        profile: str = "",
        workloads: Sequence[Manifest] = (),
        storage: Sequence[Manifest] = (),
    ) -> Verdict:
        """Upstream's verdict on `pod`, with `pods` bound to `nodes`, `workloads`
        (Services, ReplicationControllers, ReplicaSets, StatefulSets) selecting pods and
        `storage` (classes, PersistentVolumes, claims, CSINodes, CSIDrivers) for their
        volumes; raises OracleError with upstream's message where it refuses the request."""
        request = {
            "configuration": configuration,
            "profile": profile,
            "nodes": nodes,
            "pods": pods,
            "namespaces": namespaces,
            "pod": pod,
            **{
                field: [w for w in workloads if w["kind"] == kind]
                for kind, field in WORKLOAD_FIELDS.items()
            },
            **{
                field: [s for s in storage if s["kind"] == kind]
                for kind, field in STORAGE_FIELDS.items()
            },
        }
        assert self._process.stdin and self._process.stdout
        self._process.stdin.write(json.dumps(request).encode() + b"\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            self._log.seek(0)
            tail = self._log.read()[-4000:].decode(errors="replace")
            raise RuntimeError(f"the oracle exited ({self._process.wait()}): {tail}")
        answer = json.loads(line)
        if answer.get("error"):
            raise OracleError(answer["error"])
        return Verdict.of(answer)

    def close(self) -> None:
        process = self._process
        if process.stdin:
            process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()  # Popen.kill signals this process's own PID
            process.wait()
        if process.stdout:
            process.stdout.close()
        self._log.close()
