"""The node store: committed usage per node, versioned, changed only by Lua scripts.

Readers ask "what changed since version V" and get only the nodes touched
after V (a sorted set of node -> version of its last change), so a shard's
sync costs what changed, not the size of the cluster. Each commit also logs
what it changed, as its changed nodes' hashes then hold it: a reader whose
versions since V are all logged commits takes those records as they are, and
Redis reads no node for it (every shard reads every change: 3.7 -> 0.1 us of
Redis per changed node).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from math import ceil
from typing import Any, NamedTuple, cast

import msgpack
import numpy as np
import redis

from cluster.gpus import GPU, LOCALITIES, annotated_gpus
from cluster.messages import Conflict, Decision, PodPlacement, Status, UnitOutcome
from cluster.objects import Node, Peer, Pod, SchedulingSpec
from cluster.store.keys import Keys
from cluster.store.scripts import Scripts

_PUT_CHUNK = 1000
CONFLICT_MODES = ("fine", "coarse")
OBSERVED = "observed"  # commit's mode for pods the cluster runs already (`observe`)
OBSERVED_PER_CALL = 2000  # running pods one script records: a few tens of ms of Redis
_BUILDING = "building:"  # the epoch while `rebuild` loads the store: nobody may use it yet


class EpochChanged(RuntimeError):
    """The store is not the one this client worked in: Redis lost it (restarted empty,
    or failed over) and it was built again from the cluster's truth, or is being built,
    or is not built yet. Nothing was read or changed. A reader starts over from
    version 0 in the new epoch; the driver builds the store again (`rebuild`)."""

    def __init__(self, known: str | None, current: str) -> None:
        self.known = known
        self.current = current  # "" if the store has no epoch (empty)
        super().__init__(
            f"node store epoch {current or '(none: the store is empty)'}, "
            f"this client knew {known or '(none)'}"
        )

    def __reduce__(self) -> tuple[type, tuple[str | None, str]]:
        return EpochChanged, (self.known, self.current)  # Ray sends it back pickled

    @property
    def ready(self) -> bool:
        """The store is built (in another epoch) and may be used from version 0."""
        return bool(self.current) and not self.current.startswith(_BUILDING)


# What a call to the store may raise when Redis is away or lost the store.
STORE_ERRORS = (EpochChanged, redis.ConnectionError, redis.TimeoutError)


def _lua_frame(wire: object) -> bytes:
    """msgpack for Redis' Lua cmsgpack, which reads no `bin` type: bytes go as raw strings."""
    return cast(bytes, msgpack.packb(wire, use_bin_type=False))  # msgpack is untyped


@dataclass(slots=True)
class Delta:
    """The store's changes after some version, for the columns a reader keeps."""

    version: int
    names: list[str]
    versions: np.ndarray  # int64 [len(names)]
    usage: np.ndarray  # int64 [len(names), len(columns)]
    specs: list[Node] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    committed: list[str] = field(default_factory=list)  # awaited units found committed
    # changed nodes with host ports in use -> [(protocol, port, ip, pods)]
    ports: dict[str, list[tuple[str, int, str, int]]] = field(default_factory=dict)
    # changed nodes with pods -> [(peer id, pods)]
    peers: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    # namespaces changed -> their labels, None if deleted
    namespaces: dict[str, dict[str, str] | None] = field(default_factory=dict)
    # changed nodes with GPUs in use -> milli used per GPU (cluster/gpus.py)
    gpus: dict[str, list[int]] = field(default_factory=dict)
    # changed nodes with volumes attached -> [(limit key, volume, pods)]
    attached: dict[str, list[tuple[str, str, int]]] = field(default_factory=dict)
    from_log: bool = False  # read from the commit log, not from each changed node

    def apply_namespaces(self, labels: dict[str, dict[str, str]]) -> bool:
        """Bring a reader's namespace labels up to this delta; whether any changed."""
        for name, changed in self.namespaces.items():
            if changed is None:
                labels.pop(name, None)
            else:
                labels[name] = changed
        return bool(self.namespaces)


class Committed(NamedTuple):
    version: int
    outcomes: list[UnitOutcome]
    keep_away: int  # distinct peers with required anti-affinity ever committed


@dataclass(frozen=True, slots=True)
class Fences:
    """What a commit re-checks when several binders commit (binder/fences.py says why)."""

    keep_away_seen: int = -1  # the keep-away count the batch was routed with; -1: unchecked
    count_namespaces: bool = False  # bump the fence of each namespace committed in
    units: Sequence[Sequence[tuple[str, int]]] = ()  # per unit: (namespace or "*", count seen)

    def to_wire(self, prefix: str) -> list[object]:
        return [
            prefix,
            self.keep_away_seen,
            self.count_namespaces,
            [list(map(list, u)) for u in self.units],
        ]


@dataclass(frozen=True, slots=True)
class Released:
    version: int
    units: int
    pods: int
    holds: int = 0


@dataclass(frozen=True, slots=True)
class Hold:
    """Room held on a node for one pod that has not committed yet: what a preemptor's
    victims freed, or a Reservation placed for its owner (`cluster/reservations.py`).
    It counts as used for every other pod; the owner consumes it when it commits, on
    whichever node; it is given back at `expires_at`."""

    pod: str
    node: str
    requests: tuple[tuple[str, int], ...]  # as SchedulingSpec.requests
    expires_at: float  # unix seconds

    def to_wire(self) -> list[object]:
        return [
            self.pod,
            self.node,
            [n for n, _ in self.requests],
            [a for _, a in self.requests],
            self.expires_at,
        ]


@dataclass(frozen=True, slots=True)
class Preempted:
    """The store's verdict on a preemption: `reserved` (victims released, room held)
    or `conflict` / `invalid` with why (nothing changed)."""

    version: int
    status: Status
    detail: str = ""
    conflict: Conflict | None = None

    @property
    def reserved(self) -> bool:
        return self.status == Status.RESERVED


@dataclass(frozen=True, slots=True)
class Reservation:
    """How a partition holds its part of a unit that spans partitions: until
    `expires_at` (unix seconds), for the unit's `home` partition to decide."""

    expires_at: float
    home: int


class NodeStore:
    def __init__(self, client: redis.Redis, keys: Keys | None = None) -> None:
        self.client = client
        self.keys = keys or Keys()
        self._scripts = Scripts.register(client)
        self._script_keys = self.keys.script_keys
        self.epoch: str | None = None  # the epoch this client works in, once known

    def _run(self, script: str, *args: object, epoch: str | None = None) -> Any:
        """Run a script in `epoch` (by default this client's): EpochChanged if the store
        is in another. The reply is untyped, as the script sent it (Redis integers, bulk
        strings and arrays of them): each caller reads the shape its script sends."""
        expected = epoch or self.working_epoch()
        try:
            return getattr(self._scripts, script)(
                keys=self._script_keys, args=[self.keys.node_prefix, expected, *args]
            )
        except redis.ResponseError as err:
            if str(err).startswith("EPOCH"):
                raise EpochChanged(expected, str(err)[len("EPOCH ") :]) from None
            raise

    def _hash(self, key: str) -> dict[bytes, bytes]:
        """A hash's fields and values. This client decodes no responses (nothing here asks
        redis-py to), so they are bytes; redis-py types them `bytes | str`, not knowing
        how the client was made."""
        return cast("dict[bytes, bytes]", self.client.hgetall(key))

    # --- epochs ------------------------------------------------------------------

    def current_epoch(self) -> str:
        """The store's epoch now, "" if it has none."""
        raw = cast("bytes | None", self.client.get(self.keys.epoch))  # see `_hash`: bytes
        return raw.decode() if raw else ""

    def working_epoch(self) -> str:
        """The epoch this client works in: the store's, adopted on first use
        (EpochChanged while the store has none, or is being built)."""
        if self.epoch is None:
            current = self.current_epoch()
            if not current or current.startswith(_BUILDING):
                raise EpochChanged(None, current)
            self.epoch = current
        return self.epoch

    def open(self) -> str:
        """Work in the store's epoch, or begin one if the store has none: for the process
        that loads the store (the driver). Readers adopt the epoch on first use."""
        self.client.set(self.keys.epoch, secrets.token_hex(8), nx=True)
        self.epoch = None
        return self.working_epoch()

    def _loading(self) -> None:
        """Loading nodes or namespaces into a store nobody has begun: begin it."""
        if self.epoch is None:
            self.open()

    def rebuild(
        self,
        nodes: Iterable[Node],
        namespaces: Mapping[str, Mapping[str, str]],
        pods: Sequence[Pod],
    ) -> list[UnitOutcome]:
        """Build the store anew from the cluster's truth (its nodes, namespaces and bound
        pods, recorded as `observe` does), in a new epoch: whatever a client computed
        against the store before is refused from now on. Until it is done the epoch says
        so, and readers wait. Room held for preemptors is not carried over."""
        token = secrets.token_hex(8)
        self.clear()
        self.client.set(self.keys.epoch, _BUILDING + token)
        self.epoch = _BUILDING + token
        self.put_nodes(nodes)
        if namespaces:
            self.put_namespaces(namespaces)
        outcomes = self.observe(pods)
        self.client.set(self.keys.epoch, token)
        self.epoch = token
        return outcomes

    @property
    def round_trips(self) -> int:
        """Calls this store's client made to Redis (a client from `connect` counts them)."""
        return int(getattr(self.client, "round_trips", 0))

    # --- nodes ----------------------------------------------------------------

    def put_nodes(self, nodes: Iterable[Node]) -> int:
        """Create or update nodes (spec, allocatable and volume limits); returns the new
        version. The first writer of an empty store begins its epoch."""
        self._loading()
        version = self.version()
        batch: list[list[object]] = []
        for node in nodes:
            batch.append(
                [
                    node.name,
                    node.encode(),
                    node.allocatable,
                    _groups(node),
                    dict(node.volume_limits),
                    list(node.migrated_plugins),
                ]
            )
            if len(batch) == _PUT_CHUNK:
                version = int(self._run("put_nodes", _lua_frame(batch)))
                batch = []
        if batch:
            version = int(self._run("put_nodes", _lua_frame(batch)))
        return version

    def remove_nodes(self, names: Sequence[str]) -> int:
        return int(self._run("remove_nodes", _lua_frame(list(names))))

    def version(self) -> int:
        return int(self.client.get(self.keys.seq) or 0)

    def changes_since(
        self, since: int, columns: Sequence[str], awaited: Sequence[str] = ()
    ) -> Delta:
        """Nodes changed after `since` (versions, usage of `columns`, new specs), and
        which of the `awaited` units are committed, all in one snapshot."""
        reply = self._run(
            "changes_since", since, _lua_frame(list(columns)), _lua_frame(list(awaited))
        )
        if reply[0] == b"log":
            _, head, *records = reply
            return _logged(head, records, columns)
        head, *blobs = reply
        frame = msgpack.unpackb(head)
        version, names, versions, used, deleted, committed, ports, spec_count = frame[:8]
        peered, spaces, gpus, attached = frame[8:]
        specs, maps = blobs[:spec_count], blobs[spec_count:]
        usage = np.zeros((len(names), len(columns)), dtype=np.int64)
        rows, cols, amounts = np.asarray(used, dtype=np.int64).reshape(-1, 3).T
        usage[rows, cols] = amounts
        return Delta(
            version=version,
            names=names,
            versions=np.asarray(versions, dtype=np.int64),
            usage=usage,
            specs=[Node.decode(blob) for blob in specs],
            deleted=deleted,
            committed=committed,
            ports={name: [tuple(e) for e in entries] for name, entries in ports},
            peers={
                name: list(msgpack.unpackb(blob).items())
                for name, blob in zip(peered, maps, strict=True)
            },
            namespaces={name: json.loads(labels) if labels else None for name, labels in spaces},
            gpus=dict(gpus),
            attached={name: [tuple(e) for e in entries] for name, entries in attached},
        )

    def put_namespaces(
        self, labels: Mapping[str, Mapping[str, str]], deleted: Sequence[str] = ()
    ) -> int:
        """Namespaces' labels (namespaceSelector matches them), set or deleted; the new
        version."""
        self._loading()
        entries: list[object] = [
            [n, json.dumps(dict(v), sort_keys=True)] for n, v in labels.items()
        ]
        entries += [[n, False] for n in deleted]
        return int(self._run("put_namespaces", _lua_frame(entries)))

    def peers(self, ids: Sequence[str]) -> dict[str, Peer]:
        """The peers stored under these ids (committed pods' affinity-relevant facts), in
        this client's epoch (EpochChanged if the store was lost since the ids were read)."""
        blobs = self._run("peers", _lua_frame(list(ids))) if ids else []
        return {i: Peer.decode(b) for i, b in zip(ids, blobs, strict=True) if b}

    # --- units ----------------------------------------------------------------

    def commit(
        self,
        classes: Sequence[SchedulingSpec],
        decisions: Sequence[Decision],
        mode: str = "fine",
        fences: Fences | None = None,
        epoch: str | None = None,
        reserve_until: float | None = None,
        homes: Sequence[int] = (),
    ) -> Committed:
        """Commit placed units atomically, each all-or-nothing.

        `mode` is "fine" (a pod that still fits is accepted) or "coarse" (a
        candidate node that changed since the shard saw it is a conflict).
        `epoch` is the one the placements were computed in (by default this
        client's): in any other, nothing is committed (EpochChanged). With
        `reserve_until`, the units are parts of units that span partitions (their
        home partitions in `homes`), held as reservations until then, for `settle`
        to confirm or give back.
        """
        if mode not in CONFLICT_MODES and mode != OBSERVED:
            raise ValueError(f"conflict mode {mode!r}: must be one of {', '.join(CONFLICT_MODES)}")
        wire_classes = [
            [
                [n for n, _ in c.requests],
                [a for _, a in c.requests],
                [[p.protocol, p.bind_ip, p.port] for p in c.host_ports],
                (peer := c.peer).id,
                peer.packed,
                bool(c.anti_affinity_required),
                c.gpu_locality,
            ]
            for c in classes
        ]
        wire_units = [[d.unit, [_wire_pod(p) for p in d.placements]] for d in decisions]
        args: list[object] = [_lua_frame([wire_classes, wire_units]), mode]
        if fences is not None or reserve_until is not None:
            args.append(_lua_frame(fences.to_wire(self.keys.fence_prefix)) if fences else "")
        if reserve_until is not None:
            args.append(_lua_frame([float(reserve_until), list(homes)]))
        reply = self._run("commit", *args, epoch=epoch)
        version, results, keep_away = msgpack.unpackb(reply)
        outcomes = []
        for decision, (status, detail, *rest) in zip(decisions, results, strict=True):
            if status == Status.COMMITTED:
                outcomes.append(
                    UnitOutcome(
                        decision.unit, Status.COMMITTED, nodes=list(detail), gpus=list(rest[0])
                    )
                )
            else:
                conflict = Conflict(rest[0]) if rest else None
                outcomes.append(
                    UnitOutcome(decision.unit, Status(status), [], str(detail), conflict=conflict)
                )
        return Committed(int(version), outcomes, int(keep_away))

    def settle(
        self, units: Sequence[str], action: str, at_home: Sequence[bool], keep_s: float
    ) -> list[str]:
        """The second step for units reserved here (settle.lua): `action` is 'confirm',
        'abort' or 'resolve'; where this is a unit's home partition (`at_home`), its
        decision is kept for `keep_s`. Returns settle.lua's answer for each."""
        entries = [
            [u, self.keys.decided(u) if home else ""]
            for u, home in zip(units, at_home, strict=True)
        ]
        _, answers = self._run("settle", _lua_frame(entries), action, max(1, ceil(keep_s)))
        return [a.decode() if isinstance(a, bytes) else str(a) for a in answers]

    def reservations(self) -> dict[str, Reservation]:
        """Unit key -> its reservation here, for units that span partitions."""
        return {
            unit.decode(): Reservation(*msgpack.unpackb(blob))
            for unit, blob in self._hash(self.keys.reserved).items()
        }

    def observe(self, pods: Sequence[Pod]) -> list[UnitOutcome]:
        """Record pods the cluster runs already on their node (bound by another scheduler,
        or before optimist started), fit or not: their room is taken all the same. A pod
        recorded before comes back as `duplicate`; one on a node not in the store, as
        `conflict`. `OBSERVED_PER_CALL` at a time: a start's 200,000 running pods in one
        script held Redis past its clients' read timeout, and the loop took Redis for
        dead."""
        outcomes: list[UnitOutcome] = []
        for start in range(0, len(pods), OBSERVED_PER_CALL):
            chunk = pods[start : start + OBSERVED_PER_CALL]
            outcomes += self.commit(*pinned(chunk), OBSERVED).outcomes
        return outcomes

    def committed_placements(
        self, units: Sequence[str]
    ) -> dict[str, dict[str, tuple[str, list[int]]]]:
        """Of these units, those committed: unit -> pod -> (node, its GPUs there)."""
        records = self.client.hmget(self.keys.units, list(units)) if units else []
        pods = {u: msgpack.unpackb(r) for u, r in zip(units, records, strict=True) if r}
        keys = [p for unit_pods in pods.values() for p in unit_pods]
        placed = self.client.hmget(self.keys.pods, keys) if keys else []
        where = {}
        for pod, blob in zip(keys, placed, strict=True):
            if blob:
                record = msgpack.unpackb(blob)
                where[pod] = (record[0], list(record[6]) if len(record) > 6 else [])
        return {u: {p: where[p] for p in ps if p in where} for u, ps in pods.items()}

    def fence_counts(self, namespaces: Iterable[str]) -> tuple[int, dict[str, int]]:
        """The keep-away count and the fence of each namespace, read together."""
        names = sorted(namespaces)
        keys = [self.keys.keep_away] + [f"{self.keys.fence_prefix}{ns}" for ns in names]
        keep_away, *counts = self.client.mget(keys)
        return int(keep_away or 0), {ns: int(c or 0) for ns, c in zip(names, counts, strict=True)}

    def release(self, units: Sequence[str] = (), pods: Sequence[str] = ()) -> Released:
        """Give back what committed units (all their pods) and single pods hold."""
        reply = self._run("release", _lua_frame(list(units)), _lua_frame(list(pods)))
        version, unit_count, pod_count, hold_count = reply
        return Released(int(version), int(unit_count), int(pod_count), int(hold_count))

    # --- preemption --------------------------------------------------------------

    def preempt(self, victims: Sequence[str], holds: Sequence[Hold]) -> Preempted:
        """Release the victims and hold their room for the preemptors, in one step, or
        change nothing if a victim is gone or a hold does not fit. With no victims: hold
        room if it fits."""
        frame = _lua_frame([list(victims), [h.to_wire() for h in holds]])
        version, status, detail, kind = msgpack.unpackb(self._run("preempt", frame))
        return Preempted(
            int(version), Status(status), str(detail), Conflict(kind) if kind else None
        )

    def expire_holds(self, now: float) -> int:
        """Give back the holds whose time is up; returns how many."""
        _, released = self._run("expire", now)
        return int(released)

    def claim_hold(self, held_as: str, pod: str) -> str:
        """Room held under `held_as` is `pod`'s from now on: 'claimed', or 'gone' (no such
        hold) or 'taken' (the pod holds room already), nothing changed."""
        reply = self._run("claim", held_as, pod)
        return reply.decode() if isinstance(reply, bytes) else str(reply)

    def holds(self) -> dict[str, Hold]:
        """Pod key -> the room held for it."""
        out = {}
        for pod, blob in self._hash(self.keys.holds).items():
            node, names, amounts, expires_at = msgpack.unpackb(blob)
            key = pod.decode()
            out[key] = Hold(key, node, tuple(zip(names, amounts, strict=True)), expires_at)
        return out

    # --- reading the committed truth (checkers, reports) ------------------------

    def room(self, names: Sequence[str], resources: Sequence[str]) -> dict[str, dict[str, int]]:
        """Per node that exists: allocatable minus committed usage (reservations included)
        of these resources, read in one round trip."""
        fields = ["v"] + [f"{kind}:{r}" for r in resources for kind in "au"]
        pipe = self.client.pipeline(transaction=False)
        for name in names:
            pipe.hmget(self.keys.node(name), fields)
        out = {}
        for name, values in zip(names, pipe.execute() if names else [], strict=True):
            if values[0] is None:
                continue  # no such node
            out[name] = {
                r: int(values[1 + 2 * i] or 0) - int(values[2 + 2 * i] or 0)
                for i, r in enumerate(resources)
            }
        return out

    def gpu_usage(self, name: str) -> list[int]:
        """Milli used on each GPU of a node (as far as any is used)."""
        blob = self.client.hget(self.keys.node(name), "g")
        return list(msgpack.unpackb(blob)) if blob else []

    def usage(self, name: str) -> dict[str, int]:
        raw = self._hash(self.keys.node(name))
        return {k.decode()[2:]: int(v) for k, v in raw.items() if k.startswith(b"u:")}

    def node_names(self) -> set[str]:
        """Every node the store holds (a scan: for reconciling after a restart)."""
        prefix = self.keys.node_prefix
        return {
            key.decode()[len(prefix) :] for key in self.client.scan_iter(f"{prefix}*", count=1000)
        }

    def committed_pods(self) -> dict[str, str]:
        """Committed pod key -> node."""
        return {
            pod.decode(): msgpack.unpackb(rec)[0] for pod, rec in self._hash(self.keys.pods).items()
        }

    def given_volumes(self, names: Collection[str]) -> dict[str, str]:
        """Of these free volumes, those given to a claim at commit: volume -> claim."""
        if not names:
            return {}
        names = list(names)
        given = cast(list[bytes | None], self.client.hmget(self.keys.given_volumes, names))
        return {v: claim.decode() for v, claim in zip(names, given, strict=True) if claim}

    def close(self) -> None:
        """Nothing to give back (a split store stops its threads)."""

    def clear(self) -> None:
        """Delete every key under this store's prefix, the epoch's too: the next to load
        nodes begins a new one."""
        self.epoch = None
        for batch in _chunks(self.client.scan_iter(match=f"{self.keys.prefix}*", count=1000), 500):
            self.client.delete(*batch)


def _logged(head: bytes, records: list[bytes], columns: Sequence[str]) -> Delta:
    """The delta from commit.lua's records, oldest first: a node's last record holds its
    state now, as a read of its hash would."""
    version, committed = msgpack.unpackb(head)
    names: list[str] = []
    seqs, blocks = [], []
    peers: dict[str, list[tuple[str, int]]] = {}
    ports: dict[str, list[tuple[str, int, str, int]]] = {}
    gpus: dict[str, list[int]] = {}
    attached: dict[str, list[tuple[str, str, int]]] = {}
    for record in records:
        # a record an optimist before attach limits wrote (Redis kept over an upgrade)
        # has no attached volumes
        seq, resources, changed, flat, maps, in_use, on_gpus, *later = msgpack.unpackb(record)
        volumes = later[0] if later else []
        usage = np.zeros((len(changed), len(resources) + 1), dtype=np.int64)  # + a 0 column
        usage[:, :-1] = np.asarray(flat, dtype=np.int64).reshape(len(changed), len(resources))
        at = {r: j for j, r in enumerate(resources)}
        blocks.append(usage[:, [at.get(c, len(resources)) for c in columns]])
        seqs.append(np.full(len(changed), seq, dtype=np.int64))
        names += changed
        if ports or gpus or attached:  # an earlier record's, for a node changed again
            for name in changed:
                ports.pop(name, None)
                gpus.pop(name, None)
                attached.pop(name, None)
        peers.update(
            (name, list(m.items()) if m else []) for name, m in zip(changed, maps, strict=True)
        )
        ports.update((name, [tuple(e) for e in entries]) for name, entries in in_use)
        gpus.update(on_gpus)
        attached.update((name, [tuple(e) for e in entries]) for name, entries in volumes)
    usage = np.concatenate(blocks) if blocks else np.zeros((0, len(columns)), dtype=np.int64)
    versions = np.concatenate(seqs) if seqs else np.zeros(0, dtype=np.int64)
    last = {name: i for i, name in enumerate(names)}
    if len(last) < len(names):
        keep = np.fromiter(last.values(), dtype=np.intp, count=len(last))
        names, usage, versions = list(last), usage[keep], versions[keep]
    return Delta(
        version=version,
        names=names,
        versions=versions,
        usage=usage,
        committed=committed,
        ports=ports,
        peers=peers,
        gpus=gpus,
        attached=attached,
        from_log=True,
    )


def _groups(node: Node) -> dict[str, list[int]]:
    """The node's GPU groups as the commit script checks them (none if it says nothing)."""
    topology, gpus = node.gpu_topology, node.allocatable.get(GPU, 0)
    if not (topology.nvlink or topology.numa):
        return {}
    return {kind: list(topology.groups(kind, gpus)) for kind in LOCALITIES}


def _wire_pod(p: PodPlacement) -> list[object]:
    """A placed pod as commit.lua reads it, its volumes, claims and picks left out from
    the last it has."""
    entry: list[object] = [p.pod, p.cls, p.nodes, p.versions, p.gpus]
    optional: list[object] = [
        [[a.key, a.volume, a.plugin] for a in p.volumes],
        list(p.claims),
        [[list(pick) for pick in picks] for picks in p.picks],
    ]
    while optional and not optional[-1]:
        optional.pop()
    return entry + optional


def pinned(pods: Sequence[Pod]) -> tuple[list[SchedulingSpec], list[Decision]]:
    """Pods placed on their own spec.nodeName, each a unit of its own under its own
    key, as `commit` takes them: the classes, and a decision per pod, with the GPUs
    the pod's annotation names, if any."""
    classes: dict[SchedulingSpec, int] = {}
    decisions = [
        Decision(
            p.key,
            [
                PodPlacement(
                    p.key,
                    classes.setdefault(p.spec, len(classes)),
                    [p.node_name],
                    [0],
                    annotated_gpus(p.manifest),
                    list(p.attached),
                    list(p.exclusive),
                )
            ],
        )
        for p in pods
    ]
    return list(classes), decisions


def _chunks(items: Iterable[bytes], size: int) -> Iterable[list[bytes]]:
    chunk: list[bytes] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
