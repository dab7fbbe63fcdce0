"""The store keeps parsed objects, not the wire JSON beside them; one object is fetched whole
from the API server when a person asks for its YAML."""

from __future__ import annotations

import pytest

from kueuetop.kueue.core import Node, Pod
from kueuetop.kueue.workload import Workload
from kueuetop.sources.connection import Connection
from kueuetop.sources.kube_http import ApiError
from kueuetop.sources.object_get import UnknownKind, fetch_object, object_path
from kueuetop.store import events as K

from .conftest import Live


def test_entries_of_a_real_list_hold_no_wire_dicts(live: Live) -> None:
    kinds = {K.WORKLOADS: Workload, K.PODS: Pod, K.NODES: Node}
    for kind, parsed in kinds.items():
        entries = live.store.entries(kind)
        assert entries, f"the served scenario has no {kind}"
        for key, e in entries.items():
            assert isinstance(e.obj, parsed), (kind, key, e.error)
            assert e.raw is None, (kind, key)
            assert live.store.raw(kind, key) is None
    for kind in (K.CLUSTER_QUEUES, K.LOCAL_QUEUES, K.RESOURCE_FLAVORS, K.NAMESPACES):
        assert all(e.raw is None and e.obj is not None for e in live.store.entries(kind).values()), kind


def test_one_object_is_fetched_as_the_server_has_it(live: Live, conn: Connection) -> None:
    wkey = sorted(live.store.keys(K.WORKLOADS))[0]
    wl = fetch_object(conn.api, K.WORKLOADS, wkey, kueue_version=conn.kueue.version)
    assert wl["kind"] == "Workload" and wl["apiVersion"] == f"kueue.x-k8s.io/{conn.kueue.version}"
    assert (wl["metadata"]["namespace"], wl["metadata"]["name"]) == wkey
    assert wl["spec"]["podSets"], wl["spec"]
    pkey = sorted(live.store.keys(K.PODS))[0]
    pod = fetch_object(conn.api, K.PODS, pkey)
    assert (pod["metadata"]["namespace"], pod["metadata"]["name"]) == pkey and pod["spec"]["containers"]
    node = sorted(live.store.keys(K.NODES))[0]
    assert fetch_object(conn.api, K.NODES, node)["metadata"]["name"] == node[1]
    with pytest.raises(ApiError) as gone:
        fetch_object(conn.api, K.WORKLOADS, (wkey[0], "no-such-workload"), kueue_version=conn.kueue.version)
    assert gone.value.status == 404


def test_object_paths_by_kind_and_scope() -> None:
    assert object_path(K.WORKLOADS, ("ns", "w"), "v1beta1") == "/apis/kueue.x-k8s.io/v1beta1/namespaces/ns/workloads/w"
    assert object_path(K.CLUSTER_QUEUES, ("", "cq")) == "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq"
    assert object_path(K.PODS, ("ns", "p")) == "/api/v1/namespaces/ns/pods/p"
    assert object_path(K.PRIORITY_CLASSES, ("", "high")) == "/apis/scheduling.k8s.io/v1/priorityclasses/high"
    with pytest.raises(UnknownKind):
        object_path("gpus", ("", "x"))
    with pytest.raises(ValueError):
        object_path(K.WORKLOADS, ("", "w"))  # namespaced without a namespace
