"""Short names as each emulated Kueue release's CRDs declare them, resolved by the real kubectl."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from kueuetop.sim.apiserver import ApiServer, write_kubeconfig
from kueuetop.sim.storage.objectstore import ObjectStore

from .conftest import KUEUE, Kubectl, cluster_queue, kubectl_path, make_client, workload

pytestmark = pytest.mark.needs_binary


def _seed(store: ObjectStore) -> None:
    store.create(KUEUE, "clusterqueues", cluster_queue("cq-a"))
    store.create(KUEUE, "localqueues", {"apiVersion": f"{KUEUE}/v1beta2", "kind": "LocalQueue",
                                        "metadata": {"name": "lq", "namespace": "team-a"},
                                        "spec": {"clusterQueue": "cq-a"}})
    store.create(KUEUE, "resourceflavors", {"apiVersion": f"{KUEUE}/v1beta2", "kind": "ResourceFlavor",
                                            "metadata": {"name": "default-flavor"}, "spec": {}})
    store.create(KUEUE, "workloads", workload("w1", "team-a"))


def _names(kubectl: Kubectl, *args: str) -> list[str]:
    out = kubectl.run("get", *args, "-o", "name").stdout
    return sorted(out.split())


@pytest.fixture
def served(store: ObjectStore, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Kubectl]:
    _seed(store)
    srv = ApiServer(store, kueue_versions=request.param).start()
    try:
        yield Kubectl(kubectl_path(), write_kubeconfig(tmp_path / "kubeconfig", srv.url), tmp_path)
    finally:
        srv.stop()


@pytest.mark.parametrize("served", [("v1beta1",)], indirect=True)
def test_kueue_0_14_short_names(served: Kubectl) -> None:
    # Kueue ≤ 0.14: wl, cq, queue/queues/lq, flavor/flavors/rf.
    assert _names(served, "wl", "-A") == [f"workload.{KUEUE}/w1"]
    assert _names(served, "cq") == [f"clusterqueue.{KUEUE}/cq-a"]
    for short in ("lq", "queue", "queues"):
        assert _names(served, short, "-A") == [f"localqueue.{KUEUE}/lq"]
    for short in ("rf", "flavor", "flavors"):
        assert _names(served, short) == [f"resourceflavor.{KUEUE}/default-flavor"]
    # Names that came with later releases are unknown to kubectl here.
    for later in ("kwl", "co", "ac", "wpc", "prc"):
        proc = served.run("get", later, "-A", check=False)
        assert proc.returncode != 0 and "doesn't have a resource type" in proc.stderr, later


@pytest.mark.parametrize("served", [("v1beta2", "v1beta1")], indirect=True)
def test_current_kueue_short_names(served: Kubectl) -> None:
    # Kueue 0.16+ replaced wl by kwl/kueueworkload/kueueworkloads; 0.18 added co, ac, wpc, prc.
    for short in ("kwl", "kueueworkload", "kueueworkloads"):
        assert _names(served, short, "-A") == [f"workload.{KUEUE}/w1"]
    assert _names(served, "cq") == [f"clusterqueue.{KUEUE}/cq-a"]
    assert _names(served, "lq", "-A") == [f"localqueue.{KUEUE}/lq"]
    assert _names(served, "rf") == [f"resourceflavor.{KUEUE}/default-flavor"]
    proc = served.run("get", "wl", "-A", check=False)
    assert proc.returncode != 0 and "doesn't have a resource type" in proc.stderr


def test_discovery_lists_the_release_short_names(store: ObjectStore) -> None:
    srv = ApiServer(store, kueue_versions=("v1beta1",)).start()
    try:
        with make_client(srv.url) as api:
            res = client.CustomObjectsApi(api).get_api_resources(KUEUE, "v1beta1")
        short = {r.name: r.short_names for r in res.resources if "/" not in r.name}
        assert short["workloads"] == ["wl"]
        assert short["localqueues"] == ["queue", "queues", "lq"]
        assert short["cohorts"] is None
    finally:
        srv.stop()
