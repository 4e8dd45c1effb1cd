"""The independent checker of the invariants of docs/design.md.

It trusts none of the scheduler's bookkeeping: usage is recomputed from the
pod manifests and the bindings the cluster recorded, then compared with
every node's allocatable and with what the node store believes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from cluster import resources as res
from cluster.errors import InvalidObject
from cluster.gpus import GPU, GPU_INDICES_ANNOTATION, MILLI_PER_GPU, GpuDemand, parse_indices
from cluster.manifests import pod_from_manifest, scheduler_name, terminated
from cluster.objects import ANY_IP, HostPort, Node
from cluster.reservations import is_reservation
from cluster.store import Store
from cluster.volumes.index import VolumeIndex
from cluster.volumes.matching import reaches
from cluster.volumes.resolve import READ_WRITE_ONCE_POD
from cluster.volumes.storage_objects import PersistentVolume, PersistentVolumeClaim
from optimist.offline.simulator import SimulatedCluster


def check_invariants(
    cluster: SimulatedCluster,
    reported_unschedulable: Iterable[str],
    store: Store | None = None,
    volumes: VolumeIndex | None = None,
    neighbours: bool = False,
) -> list[str]:
    """Every violation found, as a sentence; an empty list means all invariants hold.
    `volumes`: the claims and volumes the API server holds, where their binding is
    the scheduler's to finish (`volumes_hold`). `neighbours`: another scheduler places
    pods on the same nodes without seeing optimist's room, so a node promised twice is
    their race, measured by `kubelet_rejections`, not a violation."""
    counted = recount(cluster)
    violations = [
        *bound_once(cluster),
        *(counted.problems if neighbours else no_over_commit(cluster, counted)),
        *gangs_whole(cluster, counted),
        *nothing_lost(cluster, reported_unschedulable),
    ]
    if store is not None:
        violations += store_agrees(cluster, store, counted)
    if volumes is not None:
        violations += volumes_hold(cluster, counted, volumes)
    held = volumes if volumes is not None else cluster.volume_objects()
    violations += attach_limits_hold(cluster, counted, held)
    violations += exclusive_claims_hold(cluster, counted, held)
    return violations


def exclusive_claims_hold(
    cluster: SimulatedCluster, counted: Recount, volumes: VolumeIndex
) -> list[str]:
    """No ReadWriteOncePod claim is named by two bound pods that have not ended
    (VolumeRestrictions)."""
    users: dict[str, list[str]] = {}
    for pod_key, claim_names in counted.claims.items():
        if pod_key in counted.ended:
            continue
        namespace = pod_key.split("/", 1)[0]
        for name in dict.fromkeys(claim_names):
            claim = volumes.claim(f"{namespace}/{name}")
            if isinstance(claim, PersistentVolumeClaim) and READ_WRITE_ONCE_POD in (
                claim.access_modes
            ):
                users.setdefault(claim.key, []).append(pod_key)
    return [
        f"ReadWriteOncePod claim {claim} is used by {', '.join(sorted(pods))}"
        for claim, pods in sorted(users.items())
        if len(pods) > 1
    ]


def volumes_hold(cluster: SimulatedCluster, counted: Recount, volumes: VolumeIndex) -> list[str]:
    """A pod is bound only once every claim it names is bound, to a volume the pod's
    node reaches; and no volume is any two claims' (what VolumeBinding's PreBind keeps)."""
    violations = []
    holders: dict[str, list[str]] = {}
    for key, found in volumes.claims.objects.items():
        if isinstance(found, PersistentVolumeClaim) and found.volume_name:
            holders.setdefault(found.volume_name, []).append(key)
    for name, claims in holders.items():
        if len(claims) > 1:
            violations.append(f"volume {name} is claimed by {', '.join(sorted(claims))}")
    for pod_key, claim_names in counted.claims.items():
        namespace, node = pod_key.split("/", 1)[0], cluster.bindings[pod_key]
        labels = cluster.nodes[node].labels if node in cluster.nodes else {}
        for claim_name in claim_names:
            claim = volumes.claim(f"{namespace}/{claim_name}")
            if not isinstance(claim, PersistentVolumeClaim) or not claim.bound:
                violations.append(f"pod {pod_key} is bound, its claim {claim_name} is not")
                continue
            volume = volumes.volume(claim.volume_name)
            if isinstance(volume, PersistentVolume) and not reaches(volume, labels):
                violations.append(
                    f"pod {pod_key} is on {node}, which its volume {volume.name} does not reach"
                )
    return violations


def attach_limits_hold(
    cluster: SimulatedCluster, counted: Recount, volumes: VolumeIndex
) -> list[str]:
    """No node has more volumes of a CSI driver attached, for pods not ended, than its
    limit (NodeVolumeLimits): each bound claim's volume counted once per node, under its
    driver (an in-tree one where its plugin is migrated there)."""
    attached: dict[str, dict[str, set[str]]] = {}  # node -> limit key -> volumes
    nodes: dict[str, Node] = {}  # with their limits
    for pod_key, claim_names in counted.claims.items():
        name = cluster.bindings[pod_key]
        if pod_key in counted.ended or name not in cluster.nodes:
            continue
        if name not in nodes:
            nodes[name] = volumes.limited(cluster.nodes[name])
        namespace = pod_key.split("/", 1)[0]
        for claim_name in claim_names:
            claim = volumes.claim(f"{namespace}/{claim_name}")
            if not isinstance(claim, PersistentVolumeClaim) or not claim.volume_name:
                continue
            volume = volumes.volume(claim.volume_name)
            if not isinstance(volume, PersistentVolume) or (counts := volume.attach) is None:
                continue
            if not counts.plugin or counts.plugin in nodes[name].migrated_plugins:
                attached.setdefault(name, {}).setdefault(counts.key, set()).add(counts.volume)
    violations = []
    for name, by_key in sorted(attached.items()):
        limits = dict(nodes[name].volume_limits)
        for key, held in sorted(by_key.items()):
            if key in limits and len(held) > limits[key]:
                violations.append(
                    f"node {name} has {len(held)} volumes of {key} attached, over its "
                    f"limit {limits[key]}"
                )
    return violations


@dataclass
class Recount:
    """What the bound pods use, recomputed from their manifests and the bindings the
    cluster recorded: the ground the checks stand on, read once for all of them."""

    ended: set[str]  # bound pods that succeeded or failed: they hold no room
    usage: dict[str, dict[str, int]]  # node -> resource -> requested, by pods not ended
    gpus: dict[str, Counter[int]]  # node -> GPU index -> milli, by pods not ended
    unknown_gpus: set[str]  # nodes with GPU pods whose GPUs nobody wrote down
    members: Counter[str]  # PodGroup -> its pods bound, ended or deleted since or not
    claims: dict[str, tuple[str, ...]]  # bound pod -> the claims it names (none: absent)
    # what reading the bindings found: a pod on an unknown node, a host port held twice,
    # GPU indices missing or not as many as asked
    problems: list[str] = field(default_factory=list)


def recount(cluster: SimulatedCluster) -> Recount:
    """Each node's usage from the manifests of the pods bound there that have not ended
    (a pod that succeeded or failed holds no room)."""
    ended = {key for key in cluster.bindings if terminated(cluster.pod_manifests[key])}
    counted = Recount(
        ended,
        {name: {} for name in cluster.nodes},
        {name: Counter() for name in cluster.nodes},
        set(),
        Counter(cluster.departed_members),
        {},
    )
    ports: dict[str, list[tuple[str, HostPort]]] = {name: [] for name in cluster.nodes}
    scheduled = {b.pod for b in cluster.bind_log}
    for pod_key, node in cluster.bindings.items():
        bound_pod = pod_from_manifest(cluster.pod_manifests[pod_key])
        if bound_pod.volumes:
            counted.claims[pod_key] = tuple(v.claim for v in bound_pod.volumes)
        if node not in cluster.nodes:
            counted.problems.append(f"pod {pod_key} is bound to unknown node {node}")
            continue
        if bound_pod.group:  # placed with its gang, whether or not it has ended since
            counted.members[bound_pod.group] += 1
        if pod_key in ended:
            continue
        spec = bound_pod.spec
        res.add(counted.usage[node], dict(spec.requests))
        counted.problems += _port_clashes(node, pod_key, spec.host_ports, ports[node])
        demand = GpuDemand.of(dict(spec.requests))
        if demand:
            indices = _gpu_indices(
                cluster, pod_key, node, demand, counted.problems, pod_key in scheduled
            )
            if indices is None:
                counted.unknown_gpus.add(node)
            for i in indices or ():
                counted.gpus[node][i] += demand.per_device
    return counted


def bound_once(cluster: SimulatedCluster) -> list[str]:
    """Bound once: the API refuses a second binding, but count anyway."""
    return [
        f"pod {pod} was bound {times} times"
        for pod, times in Counter(b.pod for b in cluster.bind_log).items()
        if times > 1
    ]


def no_over_commit(cluster: SimulatedCluster, counted: Recount) -> list[str]:
    """No over-commit: no GPU, no resource of a node, no host port promised beyond what
    it has, by the pods bound there that have not ended."""
    violations = list(counted.problems)
    for name, per_gpu in counted.gpus.items():
        for i, milli in sorted(per_gpu.items()):
            if milli > MILLI_PER_GPU:
                violations.append(
                    f"node {name} is over-committed on GPU {i}: {milli} milli > {MILLI_PER_GPU}"
                )
    for name, used in counted.usage.items():
        for resource, amount, allocatable in _beyond(cluster.nodes[name].allocatable, used):
            violations.append(
                f"node {name} is over-committed on {resource}: "
                f"{amount} requested > {allocatable} allocatable"
            )
    return violations


def kubelet_rejections(cluster: SimulatedCluster) -> dict[str, list[str]]:
    """Node -> the pods its kubelet would turn away (`OutOf<resource>`), as a kubelet
    admits them: in the order they were bound (those bound before the watch began
    first), each beside the pods admitted before it. What two schedulers that promise
    one node's room twice leave behind; none where one scheduler places every pod."""
    order = {b.pod: i for i, b in enumerate(cluster.bind_log)}
    admitted: dict[str, dict[str, int]] = {name: {} for name in cluster.nodes}
    rejected: dict[str, list[str]] = {}
    for key in sorted(cluster.bindings, key=lambda k: order.get(k, -1)):
        node, manifest = cluster.bindings[key], cluster.pod_manifests[key]
        if node not in cluster.nodes or terminated(manifest):
            continue
        usage = dict(admitted[node])
        res.add(usage, dict(pod_from_manifest(manifest).spec.requests))
        if any(_beyond(cluster.nodes[node].allocatable, usage)):
            rejected.setdefault(node, []).append(key)
        else:
            admitted[node] = usage
    return rejected


def gangs_whole(cluster: SimulatedCluster, counted: Recount) -> list[str]:
    """Gangs are whole: a PodGroup has no pod bound, or at least minMember (counting
    those deleted since they were bound: a gang's finished pods may go)."""
    return [
        f"PodGroup {key} has {counted.members[key]} pods bound, "
        f"fewer than minMember {group.min_member}"
        for key, group in cluster.pod_groups.items()
        if 0 < counted.members[key] < group.min_member
    ]


def nothing_lost(cluster: SimulatedCluster, reported_unschedulable: Iterable[str]) -> list[str]:
    """Nothing lost: every pod of ours is bound or was reported unschedulable, not both.
    A pod being deleted (a finalizer keeps it) is on its way out, never placed."""
    unschedulable = set(reported_unschedulable)
    violations = []
    for key, manifest in cluster.pod_manifests.items():
        if scheduler_name(manifest) not in cluster.scheduler_names:
            continue
        deleting = bool((manifest.get("metadata") or {}).get("deletionTimestamp"))
        if deleting and key not in cluster.bindings:
            continue
        if key not in cluster.bindings and key not in unschedulable:
            violations.append(f"pod {key} is neither bound nor reported unschedulable")
        if key in cluster.bindings and key in unschedulable:
            violations.append(f"pod {key} is bound but also reported unschedulable")
    return violations


def store_agrees(cluster: SimulatedCluster, store: Store, counted: Recount) -> list[str]:
    """The store agrees with the cluster: no leaked or missing reservation, room held
    only for pods still pending, and each node's usage what its pods and holds add up to."""
    violations = _reservations(cluster, store.committed_pods(), counted.ended)
    # Room held for preemptors counts in the store's usage, for pods still pending.
    held: dict[str, dict[str, int]] = {name: dict(used) for name, used in counted.usage.items()}
    owners = {r.owner_pod for r in cluster.reservations.values()}
    for pod, hold in store.holds().items():
        if is_reservation(pod):  # a reservation's, until a pod claims it
            if pod.split("/", 1)[1] not in cluster.reservations:
                violations.append(f"room is held on {hold.node} for {pod}, which is unknown")
        elif pod in cluster.bindings or (pod not in cluster.pod_manifests and pod not in owners):
            violations.append(
                f"room is reserved on {hold.node} for pod {pod}, which is bound or gone"
            )
        if hold.node in held:
            res.add(held[hold.node], dict(hold.requests))
    for name, expected in held.items():
        violations += _node_usage(cluster, store, counted, name, expected)
    return violations


def _reservations(
    cluster: SimulatedCluster, committed: Mapping[str, str], ended: set[str]
) -> list[str]:
    """Each pod the store holds is bound there and has not ended; each bound pod that has
    not ended is held."""
    violations = []
    for pod, node in committed.items():
        if pod in ended:
            violations.append(f"store holds pod {pod} on {node}, which has ended")
        elif cluster.bindings.get(pod) != node:
            violations.append(
                f"store holds pod {pod} on {node}, cluster has it on {cluster.bindings.get(pod)}"
            )
    for pod in cluster.bindings.keys() - committed.keys() - ended:
        violations.append(f"pod {pod} is bound but holds no reservation in the store")
    return violations


def _node_usage(
    cluster: SimulatedCluster,
    store: Store,
    counted: Recount,
    name: str,
    expected: dict[str, int],
) -> list[str]:
    """The node's usage in the store, per resource and per GPU, is the recomputed one
    (`expected`: its bound pods' and holds'), and within its allocatable."""
    violations = []
    stored = {k: v for k, v in store.usage(name).items() if v}
    if stored != {k: v for k, v in expected.items() if v}:
        violations.append(
            f"node {name}: store usage {stored} != recomputed {expected} (bound pods and holds)"
        )
    gpus = dict(counted.gpus[name])
    stored_gpus = {i: m for i, m in enumerate(store.gpu_usage(name)) if m}
    if name not in counted.unknown_gpus and stored_gpus != gpus:
        violations.append(
            f"node {name}: store's milli per GPU {stored_gpus} != recomputed "
            f"{gpus} (from the pods' {GPU_INDICES_ANNOTATION})"
        )
    for resource, amount, allocatable in _beyond(cluster.nodes[name].allocatable, expected):
        violations.append(
            f"node {name} promises more {resource} than it has: {amount} bound "
            f"and held > {allocatable} allocatable"
        )
    return violations


def _port_clashes(
    node: str, pod: str, ports: Iterable[HostPort], held: list[tuple[str, HostPort]]
) -> list[str]:
    """The node's host ports (`held`: pod and port, added to) the pod's clash with."""
    clashes = []
    for port in ports:
        for other_pod, other in held:
            if _ports_clash(port, other):
                clashes.append(
                    f"node {node}: pods {other_pod} and {pod} both hold host port "
                    f"{port.protocol}/{port.port}"
                )
        held.append((pod, port))
    return clashes


def _gpu_indices(
    cluster: SimulatedCluster,
    pod: str,
    node: str,
    demand: GpuDemand,
    violations: list[str],
    scheduled: bool,
) -> tuple[int, ...] | None:
    """The GPUs a bound pod's annotation gives it, checked against what it asks for;
    None when it has none and optimist did not bind it (another scheduler's pod)."""
    annotations = cluster.pod_manifests[pod]["metadata"].get("annotations") or {}
    text = annotations.get(GPU_INDICES_ANNOTATION)
    if text is None:
        if scheduled:
            violations.append(f"pod {pod} asks for GPUs but was bound without GPU indices")
        return None
    try:
        indices = parse_indices(f"Pod {pod}", text, cluster.nodes[node].allocatable.get(GPU, 0))
    except InvalidObject as err:
        violations.append(str(err))
        return ()
    if len(indices) != demand.devices:
        violations.append(f"pod {pod} got GPUs {text}, but asks for {demand.devices}")
    return indices


def _beyond(
    allocatable: Mapping[str, int], amounts: Mapping[str, int]
) -> Iterator[tuple[str, int, int]]:
    """Each checked resource whose amount exceeds what the node has: (resource, amount,
    allocatable)."""
    for resource, amount in amounts.items():
        if not res.is_score_only(resource) and amount > allocatable.get(resource, 0):
            yield resource, amount, allocatable.get(resource, 0)


def _ports_clash(a: HostPort, b: HostPort) -> bool:
    same_ip = a.bind_ip == b.bind_ip or ANY_IP in (a.bind_ip, b.bind_ip)
    return a.protocol == b.protocol and a.port == b.port and same_ip
