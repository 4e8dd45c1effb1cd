"""Resource names and how a pod's requests add up, as kube-scheduler counts them.

Every amount is an exact integer: CPU in millicores, memory and storage in
bytes, `pods` and extended resources as counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from cluster.errors import InvalidObject
from cluster.quantity import quantity_field

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"
# Score-only accounting: the requests kube-scheduler's scorers use, where a
# container that asks for nothing counts as 100m CPU and 200Mi memory. The
# tilde cannot appear in a Kubernetes resource name, so these never clash
# with a real resource, and the commit script never checks them for fit.
NONZERO_CPU = "~cpu"
NONZERO_MEMORY = "~memory"
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
# Lua numbers are doubles: amounts above 2**53 could not be compared exactly.
MAX_AMOUNT = 2**53

Resources = dict[str, int]


def is_score_only(name: str) -> bool:
    return name.startswith("~")


def is_extended(name: str) -> bool:
    """`domain/name` resources outside kubernetes.io, counted in whole units."""
    return "/" in name and not name.split("/", 1)[0].endswith("kubernetes.io")


def parse_resource_list(obj: str, path: str, raw: object) -> Resources:
    """A `requests`, `limits`, `capacity` or `allocatable` map as exact integers."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InvalidObject(obj, path, raw, "must be a map of resource name to quantity")
    out: Resources = {}
    for name, text in raw.items():
        field = f"{path}.{name}"
        amount = quantity_field(
            obj, field, text, milli=name == CPU, whole=is_extended(str(name)) or name == PODS
        )
        if amount > MAX_AMOUNT:
            raise InvalidObject(
                obj, field, text, f"exceeds the largest supported amount {MAX_AMOUNT}"
            )
        out[str(name)] = amount
    return out


def add(into: Resources, other: Mapping[str, int]) -> None:
    for name, amount in other.items():
        into[name] = into.get(name, 0) + amount


def max_into(into: Resources, other: Mapping[str, int]) -> None:
    for name, amount in other.items():
        if amount > into.get(name, 0):
            into[name] = amount


def with_nonzero_defaults(requests: Mapping[str, int]) -> Resources:
    """One container's requests as the scorers see them (`GetNonzeroRequests`)."""
    return {
        NONZERO_CPU: requests.get(CPU, DEFAULT_MILLI_CPU_REQUEST),
        NONZERO_MEMORY: requests.get(MEMORY, DEFAULT_MEMORY_REQUEST),
    }


def init_moments(
    init_containers: Iterable[tuple[Resources, bool]], sidecars: Resources
) -> Iterator[Resources]:
    """What each init container's start needs: a sidecar (restartPolicy Always) beside
    the sidecars before it, an ordinary one beside the sidecars started so far. The
    sidecars are added up into `sidecars` on the way, for callers that keep them."""
    for requests, is_sidecar in init_containers:
        if is_sidecar:
            add(sidecars, requests)
            yield dict(sidecars)
        else:
            moment = dict(requests)
            add(moment, sidecars)
            yield moment


def nonzero_on_node(
    containers: Iterable[Resources],
    init_containers: Iterable[tuple[Resources, bool]],
    overhead: Mapping[str, int],
) -> Resources:
    """The non-zero CPU and memory a bound pod adds to its node, as upstream's NodeInfo
    counts them (`calculateResource`): each regular container defaulted alone, each init
    container's moment (itself beside the sidecars before it) defaulted as a whole, and
    sidecars left out of the regular sum; the larger of the two, plus overhead.

    The pod being placed is weighed otherwise (`pod_requests` over defaulted
    containers, sidecars added in): the two differ only for pods with init containers.
    """
    total: Resources = {}
    for requests in containers:
        add(total, with_nonzero_defaults(requests))
    init_peak: Resources = {}
    for moment in init_moments(init_containers, {}):
        max_into(init_peak, with_nonzero_defaults(moment))
    max_into(total, init_peak)
    add(total, {NONZERO_CPU: overhead.get(CPU, 0), NONZERO_MEMORY: overhead.get(MEMORY, 0)})
    return total


def pod_requests(
    containers: Iterable[Resources],
    init_containers: Iterable[tuple[Resources, bool]],
    overhead: Mapping[str, int],
) -> Resources:
    """Effective requests of a pod, following upstream `resource.PodRequests`.

    Regular containers add up; sidecars (init containers that restart always)
    add up and stay; each ordinary init container runs alone beside the
    sidecars started before it, so the pod needs the largest of those moments.
    """
    total: Resources = {}
    for requests in containers:
        add(total, requests)
    sidecars: Resources = {}
    init_peak: Resources = {}
    for moment in init_moments(init_containers, sidecars):
        max_into(init_peak, moment)
    add(total, sidecars)
    max_into(total, init_peak)
    add(total, overhead)
    return total
