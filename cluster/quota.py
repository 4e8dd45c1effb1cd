"""Elastic quota: a tree of quotas with a guaranteed `min` and a ceiling `max` per resource.

As Koordinator's ElasticQuota and Volcano's capacity plugin do it: a leaf
quota owns namespaces (or is named by a pod's `quota.optimist.io/name`
label); what its pods request counts against it and every quota above it.
Each quota may use its `min`; beyond that it borrows what its siblings leave
of their parent's share, split between the borrowers in proportion to their
`sharedWeight`, never past its `max`. The top of the tree shares the
cluster's allocatable. How much each quota may use now (its runtime quota)
follows from what every quota's pods ask for: the pods it holds and those
that wait (`QuotaTree.runtime`).

The dispatcher admits a unit only if each quota on its path still has room
for it; a unit that does not fit waits, costing no scheduling attempt,
until quota is freed. A quota that uses more than its runtime quota (it
borrowed while its lender was idle) gives the room back through preemption:
its pods may be evicted for pods of other quotas, lowest priority first
(`binder/preemption.py`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cluster import resources as res
from cluster.errors import InvalidObject
from cluster.inventory import BoundPod
from cluster.objects import Pod

QUOTA_LABEL = "quota.optimist.io/name"
Amounts = Mapping[str, int]


@dataclass(frozen=True, slots=True)
class Quota:
    name: str
    parent: str = ""  # "" for a quota at the top of the tree
    min: Amounts = field(default_factory=dict)  # guaranteed; a resource left out: 0
    max: Amounts = field(default_factory=dict)  # the ceiling; a resource left out: none
    weight: int = 1  # sharedWeight: its part of what borrowers share
    namespaces: tuple[str, ...] = ()


def quotas_from_config(raw: Any, path: str = "quotas") -> list[Quota]:
    """The `quotas` list of the OptimistConfiguration document (or ElasticQuota-like maps)."""
    if not isinstance(raw, list):
        raise InvalidObject("OptimistConfiguration", path, raw, "must be a list of quotas")
    quotas = [_quota(f"{path}[{i}]", item) for i, item in enumerate(raw)]
    QuotaTree(quotas)  # validates the tree as a whole
    return quotas


_FIELDS = {"name", "parent", "min", "max", "sharedWeight", "namespaces"}
PARENT_LABEL = "quota.scheduling.koordinator.sh/parent"  # an ElasticQuota's parent, by name


def quota_from_manifest(raw: Mapping[str, Any]) -> Quota:
    """An ElasticQuota object (scheduler-plugins' scheduling.x-k8s.io/v1alpha1, as
    Koordinator uses it): it owns its namespace, with spec.min and spec.max; the
    label PARENT_LABEL names a parent quota, for a tree."""
    meta = raw.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str):
        raise InvalidObject("ElasticQuota", "metadata.name", raw.get("metadata"), "must be a name")
    namespace = str(meta.get("namespace") or "default")
    obj = f"ElasticQuota {namespace}/{meta['name']}"
    spec = raw.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise InvalidObject(obj, "spec", spec, "must be a map")
    labels = meta.get("labels") or {}
    quota = {"name": meta["name"], "min": spec.get("min"), "max": spec.get("max")}
    if isinstance(labels, Mapping) and labels.get(PARENT_LABEL):
        quota["parent"] = labels[PARENT_LABEL]
    try:
        return replace(_quota("spec", quota), namespaces=(namespace,))
    except InvalidObject as err:  # name the object, not the configuration file
        raise InvalidObject(obj, err.field, err.value, err.problem) from None


def _quota(path: str, raw: Any) -> Quota:
    if not isinstance(raw, Mapping):
        raise InvalidObject("OptimistConfiguration", path, raw, "must be a map")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidObject("OptimistConfiguration", f"{path}.name", name, "must be a name")
    obj = f"quota {name}"
    for key in raw:
        if key not in _FIELDS:
            raise InvalidObject(obj, f"{path}.{key}", raw[key], "unknown field")
    parent = raw.get("parent") or ""
    if not isinstance(parent, str):
        raise InvalidObject(obj, f"{path}.parent", parent, "must be the name of a quota")
    weight = raw.get("sharedWeight", 1)
    if not isinstance(weight, int) or isinstance(weight, bool) or weight < 1:
        raise InvalidObject(obj, f"{path}.sharedWeight", weight, "must be an integer >= 1")
    namespaces = raw.get("namespaces") or []
    if not isinstance(namespaces, list) or not all(isinstance(n, str) and n for n in namespaces):
        raise InvalidObject(obj, f"{path}.namespaces", namespaces, "must be a list of names")
    low = res.parse_resource_list(obj, f"{path}.min", raw.get("min"))
    high = res.parse_resource_list(obj, f"{path}.max", raw.get("max"))
    for resource, amount in low.items():
        if resource in high and amount > high[resource]:
            raise InvalidObject(obj, f"{path}.min.{resource}", raw["min"][resource], "exceeds max")
    return Quota(name, parent, low, high, weight, tuple(namespaces))


@dataclass(slots=True)
class _Node:
    quota: Quota
    children: list[_Node] = field(default_factory=list)
    used: Counter[str] = field(default_factory=Counter)  # pods admitted, in its subtree
    waiting: Counter[str] = field(default_factory=Counter)  # pods queued, in its subtree


class QuotaTree:
    """The quotas, what their pods use and ask for, and whether a unit may be admitted."""

    def __init__(self, quotas: Sequence[Quota], capacity: Amounts | None = None) -> None:
        self.nodes: dict[str, _Node] = {}
        for q in quotas:
            if q.name in self.nodes:
                raise InvalidObject(f"quota {q.name}", "name", q.name, "is defined twice")
            self.nodes[q.name] = _Node(q)
        self.top: list[_Node] = []
        owner: dict[str, str] = {}
        for node in self.nodes.values():
            q = node.quota
            if not q.parent:
                self.top.append(node)
            elif q.parent not in self.nodes:
                raise InvalidObject(f"quota {q.name}", "parent", q.parent, "no such quota")
            else:
                self.nodes[q.parent].children.append(node)
            for ns in q.namespaces:
                if ns in owner:
                    raise InvalidObject(
                        f"quota {q.name}", "namespaces", ns, f"already owned by quota {owner[ns]}"
                    )
                owner[ns] = q.name
        self._check_tree()
        self.by_namespace = owner
        self.capacity: Amounts = dict(capacity or {})  # the cluster's allocatable
        self._runtime: dict[str, dict[str, int]] | None = None
        # pod key -> (leaf, its request), for pods waiting and pods admitted
        self.waiting_pods: dict[str, tuple[str, Amounts]] = {}
        self.admitted_pods: dict[str, tuple[str, Amounts]] = {}
        self._room_grew = False  # since the last `take_room_grew`
        self._over: set[str] | None = None  # `over_runtime`, until the books change

    @property
    def quotas(self) -> list[Quota]:
        return [node.quota for node in self.nodes.values()]

    def count_running(self, pods: Iterable[BoundPod]) -> None:
        """Pods bound before this tree knew their quota: they count as used."""
        for pod in pods:
            leaf = self.leaf_for(pod.namespace, pod.labels)
            if leaf is not None and pod.key not in self.admitted_pods:
                request = {n: a for n, a in pod.requests if not res.is_score_only(n)}
                self.admitted_pods[pod.key] = (leaf, request)
                self._add(leaf, "used", request, 1)
        self._runtime = None

    def take_room_grew(self) -> bool:
        """Whether some quota may admit more than before (used or asked went down, or the
        cluster grew) since the last call: units held back are worth trying again."""
        grew, self._room_grew = self._room_grew, False
        return grew

    def _check_tree(self) -> None:
        for node in self.nodes.values():
            seen, at = {node.quota.name}, node.quota.parent
            while at:
                if at in seen:
                    raise InvalidObject(f"quota {node.quota.name}", "parent", at, "makes a cycle")
                seen.add(at)
                at = self.nodes[at].quota.parent
            if node.children and node.quota.namespaces:
                raise InvalidObject(
                    f"quota {node.quota.name}",
                    "namespaces",
                    list(node.quota.namespaces),
                    "only a quota with no children owns namespaces",
                )
            for resource, amount in node.quota.min.items():
                below = sum(c.quota.min.get(resource, 0) for c in node.children)
                if below > amount:
                    raise InvalidObject(
                        f"quota {node.quota.name}",
                        f"min.{resource}",
                        amount,
                        f"is less than its children's min together ({below})",
                    )

    # --- which quota ------------------------------------------------------------------

    def leaf_of(self, pod: Pod) -> str | None:
        """The quota a pod counts against: its label's, else its namespace's; None: no quota."""
        return self.leaf_for(pod.namespace, pod.spec.labels)

    def leaf_for(self, namespace: str, labels: Iterable[tuple[str, str]]) -> str | None:
        named = dict(labels).get(QUOTA_LABEL)
        if named in self.nodes and not self.nodes[named].children:
            return named
        return self.by_namespace.get(namespace)

    def over_runtime(self) -> set[str]:
        """The leaf quotas that use more than they may now, themselves or through a quota
        above them: they borrowed room that its lender wants back (reclaim), and their
        pods may be evicted for the pods of other quotas, whatever their priority."""
        if self._over is None:
            self._over = self._find_over()
        return self._over

    def _find_over(self) -> set[str]:
        runtime = self.runtime()
        over = {
            name
            for name, node in self.nodes.items()
            if any(node.used[r] > allowed for r, allowed in runtime[name].items())
        }
        if not over:
            return set()
        return {
            name
            for name, node in self.nodes.items()
            if not node.children and any(n.quota.name in over for n in self.path(name))
        }

    def path(self, leaf: str) -> list[_Node]:
        out, at = [], leaf
        while at:
            node = self.nodes[at]
            out.append(node)
            at = node.quota.parent
        return out

    # --- bookkeeping --------------------------------------------------------------------

    def wait(self, pods: Iterable[Pod]) -> None:
        """Pods queued: what their quotas are asked for grows."""
        for pod in pods:
            leaf = self.leaf_of(pod)
            if leaf is not None and pod.key not in self.waiting_pods:
                request = quota_request(pod)
                self.waiting_pods[pod.key] = (leaf, request)
                self._add(leaf, "waiting", request, 1)
                self._runtime = None  # more is asked: the shares move

    def blocked(self, pods: Sequence[Pod]) -> str | None:
        """Why these pods, admitted together, would overrun a quota; None if they fit."""
        need: dict[str, Counter[str]] = {}
        for pod in pods:
            entry = self.waiting_pods.get(pod.key)
            if entry is not None:
                leaf, request = entry
                for node in self.path(leaf):
                    need.setdefault(node.quota.name, Counter()).update(request)
        runtime = self.runtime()
        for name, asked in need.items():
            node = self.nodes[name]
            for resource, amount in asked.items():
                allowed = runtime[name].get(resource)
                if allowed is not None and node.used[resource] + amount > allowed:
                    return (
                        f"quota {name}: {resource} {node.used[resource]} in use + {amount} "
                        f"asked exceeds {allowed} it may use now"
                    )
        return None

    def admit(self, pods: Iterable[Pod]) -> None:
        """Waiting pods now count as used. What is asked of each quota does not change,
        so neither do the shares."""
        self._move(pods, "waiting", "used")

    def return_to_queue(self, pods: Iterable[Pod]) -> None:
        """Admitted pods back in the queue (their attempt failed): they wait again, and
        what they held is room for others of their quota."""
        if self._move(pods, "used", "waiting"):
            self._room_grew = True

    def _move(self, pods: Iterable[Pod], source: str, target: str) -> bool:
        books = {"waiting": self.waiting_pods, "used": self.admitted_pods}
        moved = False
        for pod in pods:
            entry = books[source].pop(pod.key, None)
            if entry is not None:
                books[target][pod.key] = entry
                self._add(entry[0], source, entry[1], -1)
                self._add(entry[0], target, entry[1], 1)
                moved = True
        return moved

    def forget(self, pod_keys: Iterable[str]) -> bool:
        """Pods gone from the cluster; True if admitted room was freed. Less is asked
        either way, so other quotas' shares may grow."""
        freed = gone = False
        for key in pod_keys:
            entry = self.waiting_pods.pop(key, None)
            if entry is not None:
                self._add(entry[0], "waiting", entry[1], -1)
                gone = True
            entry = self.admitted_pods.pop(key, None)
            if entry is not None:
                self._add(entry[0], "used", entry[1], -1)
                freed = gone = True
        if gone:
            self._runtime = None
            self._room_grew = True
        return freed

    def set_capacity(self, capacity: Amounts) -> None:
        grew = any(amount > self.capacity.get(r, 0) for r, amount in capacity.items())
        self._room_grew = self._room_grew or grew
        self.capacity = dict(capacity)
        self._runtime = self._over = None

    def _add(self, leaf: str, kind: str, request: Amounts, sign: int) -> None:
        self._over = None
        for node in self.path(leaf):
            counter: Counter[str] = getattr(node, kind)
            for resource, amount in request.items():
                counter[resource] += sign * amount

    # --- runtime quota ------------------------------------------------------------------

    def runtime(self) -> dict[str, dict[str, int]]:
        """Per quota and resource, how much its pods may use now (a resource with no
        ceiling anywhere on the way is left out): its min, or what it asks if less, plus
        its weighted share of what its siblings leave of their parent's, up to its max."""
        if self._runtime is None:
            out: dict[str, dict[str, int]] = {}
            self._share(self.top, dict(self.capacity), out)
            self._runtime = out
        return self._runtime

    def _share(
        self, siblings: list[_Node], allowance: dict[str, int], out: dict[str, dict[str, int]]
    ) -> None:
        resources = set(allowance).union(*(set(n.quota.max) | set(n.quota.min) for n in siblings))
        given: dict[str, dict[str, int]] = {n.quota.name: {} for n in siblings}
        for resource in resources:
            for name, amount in _water_fill(siblings, resource, allowance.get(resource)).items():
                if amount is not None:
                    given[name][resource] = amount
        for node in siblings:
            out[node.quota.name] = given[node.quota.name]
            self._share(node.children, given[node.quota.name], out)


def _water_fill(
    siblings: list[_Node], resource: str, allowance: int | None
) -> dict[str, int | None]:
    """One resource of a parent's allowance (None: unlimited) shared between siblings."""
    ceiling = {n.quota.name: n.quota.max.get(resource) for n in siblings}
    want = {
        n.quota.name: _capped(n.used[resource] + n.waiting[resource], ceiling[n.quota.name])
        for n in siblings
    }
    if allowance is None:  # nothing to share: each may use up to its max
        return dict(ceiling)
    # first the guaranteed part: min, or what it asks if less
    give = {n.quota.name: min(n.quota.min.get(resource, 0), want[n.quota.name]) for n in siblings}
    left = allowance - sum(give.values())
    weight = {n.quota.name: n.quota.weight for n in siblings}
    hungry = [name for name in give if give[name] < want[name]]
    while left > 0 and hungry:
        total = sum(weight[name] for name in hungry)
        spent = 0
        for name in hungry:
            share = max(left * weight[name] // total, 1)
            take = min(share, want[name] - give[name], left - spent)
            give[name] += take
            spent += take
        left -= spent
        hungry = [name for name in hungry if give[name] < want[name]]
        if spent == 0:
            break
    return dict(give)


def _capped(amount: int, ceiling: int | None) -> int:
    return amount if ceiling is None else min(amount, ceiling)


def quota_request(pod: Pod) -> dict[str, int]:
    """What a pod counts against its quota: its requests, the scheduler's own
    accounting entries (score-only amounts) left out."""
    return {name: amount for name, amount in pod.spec.requests if not res.is_score_only(name)}
