"""Upstream's DefaultSelector: what the Services and the controller of a pod select."""

import pytest

from cluster.errors import InvalidObject
from cluster.manifests import pod_from_manifest
from cluster.selectors import LabelSelector, Requirement
from cluster.workload_selectors import WorkloadSelectors, workload_selector_from_manifest
from shards.testing import pod_spec


def pod(labels, owner=None, namespace="default"):
    manifest = pod_spec({"cpu": "100m"})
    manifest["metadata"].update(labels=labels, namespace=namespace)
    if owner:
        kind, version = owner
        ref = {"apiVersion": version, "kind": kind, "name": "owner", "controller": True}
        manifest["metadata"]["ownerReferences"] = [ref]
    return pod_from_manifest(manifest)


def known(*manifests):
    selectors = WorkloadSelectors()
    for m in manifests:
        selectors.put(workload_selector_from_manifest(m))
    return selectors


def service(name, selector, namespace="default"):
    spec = {"selector": selector} if selector is not None else {}
    return {"kind": "Service", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def controller(kind, selector):
    return {"kind": kind, "metadata": {"name": "owner"}, "spec": {"selector": selector}}


def test_services_that_select_the_pod_merge_and_others_do_not_count():
    selectors = known(
        service("web", {"app": "web"}),
        service("front", {"tier": "front"}),
        service("db", {"app": "db"}),  # does not select the pod
        service("none", None),  # a Service without a selector selects nothing
        service("elsewhere", {"app": "web"}, namespace="prod"),
    )
    got = selectors.selector_for(pod({"app": "web", "tier": "front"}))
    assert got == LabelSelector((("app", "web"), ("tier", "front")))
    assert selectors.selector_for(pod({"app": "other"})) is None


def test_the_controller_adds_its_selector_by_its_exact_kind_and_version():
    rs = controller("ReplicaSet", {"matchExpressions": [{"key": "app", "operator": "Exists"}]})
    selectors = known(service("web", {"app": "web"}), rs)
    got = selectors.selector_for(pod({"app": "web"}, ("ReplicaSet", "apps/v1")))
    assert got == LabelSelector((("app", "web"),), (Requirement("app", "Exists", ()),))
    # a reference of another version is not the ReplicaSet upstream looks for
    assert selectors.selector_for(pod({"app": "web"}, ("ReplicaSet", "apps/v1beta2"))) == (
        LabelSelector((("app", "web"),))
    )
    rc = known(controller("ReplicationController", {"app": "web", "tier": "x"}))
    got = rc.selector_for(pod({"app": "web"}, ("ReplicationController", "v1")))
    assert got == LabelSelector((("app", "web"), ("tier", "x")))


def test_a_removed_service_no_longer_selects_and_a_bad_selector_names_its_field():
    selectors = known(service("web", {"app": "web"}))
    selectors.remove("Service", "default", "web")
    assert selectors.selector_for(pod({"app": "web"})) is None
    with pytest.raises(InvalidObject, match=r"Service default/web: spec.selector="):
        workload_selector_from_manifest(service("web", {"app": 3}))
