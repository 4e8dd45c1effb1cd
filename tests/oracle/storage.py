"""Random storage for the oracle's clusters (`tests/oracle/clusters.py`): storage classes,
PersistentVolumes, claims and CSINodes as the API server holds them, and the pods'
volumes that name the claims.

Drawn for the four volume plugins' cases: claims bound to a volume (its node affinity,
its zone labels, a CSI or migrated in-tree disk that counts against a node's attach
limit), claims waiting for their first consumer (a free static volume that fits, or a
class that provisions there, or neither), claims of an Immediate class left unbound,
ReadWriteOncePod claims other pods use, and what upstream refuses: a claim or class or
volume that is not there, a claim being deleted, an ephemeral claim its pod does not own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

Manifest = dict[str, Any]
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
DRIVER = "ebs.csi.aws.com"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
CLAIMS = ("claim-0", "claim-1", "claim-2", "claim-3")
WFFC = "WaitForFirstConsumer"


def _class(name: str, provisioner: str, mode: str, **spec: Any) -> Manifest:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        **spec,
    }


CLASSES = (
    _class("local", "kubernetes.io/no-provisioner", WFFC),
    _class("csi", DRIVER, WFFC),
    _class(
        "zonal",
        DRIVER,
        WFFC,
        allowedTopologies=[{"matchLabelExpressions": [{"key": ZONE, "values": ["z0"]}]}],
    ),
    _class("instant", DRIVER, "Immediate"),
)
# a claim's class: one of those, one not there, or none named
CLAIM_CLASSES = ("local", "csi") * 5 + ("zonal",) * 3 + ("instant", "missing", None)


def _terms(key: str, values: Sequence[str]) -> Manifest:
    term = {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}
    return {"required": {"nodeSelectorTerms": [term]}}


@st.composite
def volume(draw: st.DrawFn, i: int, nodes: Sequence[str]) -> Manifest:
    """A PersistentVolume, free until `bind` gives it a claim."""
    source = draw(
        st.sampled_from(
            (
                {"csi": {"driver": DRIVER, "volumeHandle": f"h{draw(st.integers(0, 3))}"}},
                {"awsElasticBlockStore": {"volumeID": f"vol-{draw(st.integers(0, 3))}"}},
                {"local": {"path": "/mnt/disk"}},
                {"hostPath": {"path": "/tmp/disk"}},
            )
        )
    )
    affinity = draw(
        st.one_of(
            st.none(),
            st.lists(st.sampled_from(nodes), min_size=1, max_size=2, unique=True).map(
                lambda names: _terms(HOST, names)
            ),
            st.sampled_from((_terms(ZONE, ["z0"]), _terms(ZONE, ["z1", "z0"]))),
        )
    )
    spec: Manifest = {
        **source,
        "capacity": {"storage": draw(st.sampled_from(("10Gi", "1Gi", "100Gi")))},
        "accessModes": draw(
            st.sampled_from(
                (["ReadWriteOnce"], ["ReadWriteOncePod"], ["ReadWriteOnce", "ReadOnlyMany"])
            )
        ),
        "storageClassName": draw(st.sampled_from(("local", "csi", "zonal", "local", ""))),
    }
    if affinity is not None:
        spec["nodeAffinity"] = affinity
    if draw(st.sampled_from((False,) * 5 + (True,))):
        spec["volumeMode"] = "Block"
    labels = draw(
        st.sampled_from(({}, {}, {ZONE: "z0"}, {ZONE: "z1"}, {BETA_ZONE: "z0"}, {ZONE: "z0__z1"}))
    )
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"pv-{i}", "labels": labels, "resourceVersion": "1"},
        "spec": spec,
        "status": {"phase": "Available"},
    }


@st.composite
def claim(draw: st.DrawFn, namespace: str, name: str, nodes: Sequence[str]) -> Manifest:
    """A claim not yet bound: its class, size and modes; now and then being deleted, or
    with a node selected for its provisioning."""
    spec: Manifest = {
        "accessModes": draw(st.sampled_from((["ReadWriteOnce"],) * 4 + (["ReadWriteOncePod"],))),
        "resources": {"requests": {"storage": draw(st.sampled_from(("5Gi", "1Gi", "50Gi")))}},
    }
    if (storage_class := draw(st.sampled_from(CLAIM_CLASSES))) is not None:
        spec["storageClassName"] = storage_class
    metadata: Manifest = {
        "name": name,
        "namespace": namespace,
        "uid": f"{namespace}-{name}",
        "resourceVersion": "1",
    }
    if draw(st.sampled_from((False,) * 9 + (True,))):
        metadata["annotations"] = {SELECTED_NODE: draw(st.sampled_from((*nodes, "ghost")))}
    if draw(st.sampled_from((False,) * 24 + (True,))):
        metadata["deletionTimestamp"] = "2026-12-07T00:00:00Z"
        metadata["finalizers"] = ["kubernetes.io/pvc-protection"]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def bind(pv: Manifest, pvc: Manifest) -> None:
    """The volume and the claim bound to each other, as the PV controller leaves them."""
    meta = pvc["metadata"]
    pv["spec"]["claimRef"] = {
        "kind": "PersistentVolumeClaim",
        "namespace": meta["namespace"],
        "name": meta["name"],
        "uid": meta["uid"],
    }
    pv["status"]["phase"] = "Bound"
    pvc["spec"]["volumeName"] = pv["metadata"]["name"]
    meta.setdefault("annotations", {})[BIND_COMPLETED] = "yes"
    pvc["status"]["phase"] = "Bound"


@st.composite
def csi_node(draw: st.DrawFn, name: str) -> Manifest | None:
    """A node's CSINode, or none: the driver's attach limit, or none given. Never with the
    migrated-plugins annotation, through which upstream's VolumeBinding checks an in-tree
    volume against its driver's own zone label (a departure, docs/plugins.md)."""
    shape = draw(st.sampled_from(("limit", "limit", "no limit", "no driver", None)))
    if shape is None:
        return None
    driver: Manifest = {"name": DRIVER, "nodeID": name, "topologyKeys": [ZONE]}
    if shape == "limit":
        driver["allocatable"] = {"count": draw(st.sampled_from((2, 1, 3, 0)))}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {"drivers": [] if shape == "no driver" else [driver]},
    }


def claim_volume(claim_name: str) -> Manifest:
    return {"name": f"v-{claim_name}", "persistentVolumeClaim": {"claimName": claim_name}}


@st.composite
def storage(
    draw: st.DrawFn, nodes: Sequence[str], pods: Sequence[Manifest], pod: Manifest
) -> list[Manifest]:
    """Classes, volumes, claims and CSINodes for a cluster of `nodes`, with claim volumes
    given to some of the `pods` bound there and to the incoming `pod` (edited in place)."""
    # hypothesis favours the first of a list: what is usual comes first
    objects: list[Manifest] = [c for c in CLASSES if draw(st.sampled_from((True,) * 5 + (False,)))]
    volumes = [draw(volume(i, nodes)) for i in range(draw(st.sampled_from((3, 2, 4, 1, 0, 5))))]
    claims: dict[tuple[str, str], Manifest] = {}

    def named(namespace: str, name: str) -> None:
        """The claim exists, mostly: drawn once, or left out for NotFound."""
        if (namespace, name) not in claims and draw(st.sampled_from((True,) * 19 + (False,))):
            claims[namespace, name] = draw(claim(namespace, name, nodes))

    for bound in pods:
        if draw(st.sampled_from((False, False, True))):
            name = draw(st.sampled_from(CLAIMS))
            bound["spec"]["volumes"] = [claim_volume(name)]
            named(bound["metadata"]["namespace"], name)
    count = draw(st.sampled_from((2, 1, 1)))
    wanted = draw(st.lists(st.sampled_from(CLAIMS), min_size=count, max_size=count, unique=True))
    namespace = pod["metadata"]["namespace"]
    pod_volumes = [claim_volume(name) for name in wanted]
    for name in wanted:
        named(namespace, name)
    if draw(st.sampled_from((False,) * 4 + (True,))):  # an ephemeral volume, its claim made
        template = {"spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "csi"}}
        pod_volumes.append({"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}})
        made = draw(claim(namespace, f"{pod['metadata']['name']}-scratch", nodes))
        if draw(st.sampled_from((True, True, True, False))):  # by the controller, for this pod
            made["metadata"]["ownerReferences"] = [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod["metadata"]["name"],
                    "uid": pod["metadata"]["uid"],
                    "controller": True,
                }
            ]
        claims[namespace, made["metadata"]["name"]] = made
    pod["spec"]["volumes"] = pod_volumes

    # each volume bound to a claim, or promised to a missing one, or left free
    free = list(claims.values())
    for pv in volumes:
        how = draw(st.sampled_from(("free", "free", "bind", "bind", "promised")))
        if how == "bind" and free:
            bind(pv, free.pop(draw(st.integers(0, len(free) - 1))))
        elif how == "promised":
            pv["spec"]["claimRef"] = {"namespace": namespace, "name": draw(st.sampled_from(CLAIMS))}
    if free and draw(st.sampled_from((False,) * 6 + (True,))):  # bound to a volume not there
        gone = {"metadata": {"name": "pv-gone"}, "spec": {"claimRef": {}}, "status": {}}
        bind(gone, free.pop())
    objects += volumes + list(claims.values())
    objects += [m for name in nodes if (m := draw(csi_node(name))) is not None]
    return objects
