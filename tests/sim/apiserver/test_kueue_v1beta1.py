"""A server that offers kueue.x-k8s.io as Kueue ≤ 0.14 did: v1beta1 only, v1beta1 field names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from kueuetop.sim.apiserver import ApiServer, write_kubeconfig
from kueuetop.sim.storage.objectstore import ObjectStore

from .conftest import KUEUE, Kubectl, cluster_queue, kubectl_path, make_client, workload

V1BETA1_ONLY = ("v1beta1",)


def get(api: client.ApiClient, path: str, accept: str = "application/json") -> tuple[int, dict, Any]:
    """GET through the client's transport: (status, headers, decoded JSON body)."""
    method, url, headers, body, post = api.param_serialize("GET", path, header_params={"Accept": accept})
    resp = api.call_api(method, url, headers, body, post)
    resp.read()
    return resp.status, dict(resp.getheaders()), json.loads(resp.data)


@pytest.fixture
def old_server(store: ObjectStore) -> Iterator[ApiServer]:
    store.create(KUEUE, "clusterqueues", cluster_queue("cq-a", "co"))
    wl = workload("w1", "team-a")
    wl["spec"]["priorityClassRef"] = {"group": KUEUE, "kind": "WorkloadPriorityClass", "name": "high"}
    store.create(KUEUE, "workloads", wl)
    srv = ApiServer(store, kueue_versions=V1BETA1_ONLY).start()
    yield srv
    srv.stop()


@pytest.fixture
def old_api(old_server: ApiServer) -> Iterator[client.ApiClient]:
    c = make_client(old_server.url)
    yield c
    c.close()


def test_discovery_offers_only_v1beta1(old_api: client.ApiClient) -> None:
    groups = {g.name: g for g in client.ApisApi(old_api).get_api_versions().groups}
    for name in (KUEUE, f"visibility.{KUEUE}"):
        assert [v.version for v in groups[name].versions] == ["v1beta1"]
        assert groups[name].preferred_version.version == "v1beta1"
    _, _, one = get(old_api, f"/apis/{KUEUE}")
    assert [v["version"] for v in one["versions"]] == ["v1beta1"]


def test_aggregated_discovery_and_openapi_offer_only_v1beta1(old_api: client.ApiClient) -> None:
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    _, _, doc = get(old_api, "/apis", accept)
    kueue = next(i for i in doc["items"] if i["metadata"]["name"] == KUEUE)
    assert [v["version"] for v in kueue["versions"]] == ["v1beta1"]
    _, _, root = get(old_api, "/openapi/v3")
    kueue_paths = sorted(p for p in root["paths"] if KUEUE in p)
    assert kueue_paths == [f"apis/{KUEUE}/v1beta1"]
    assert get(old_api, f"/openapi/v3/apis/{KUEUE}/v1beta2")[0] == 404


@pytest.mark.parametrize("path", [
    f"/apis/{KUEUE}/v1beta2",
    f"/apis/{KUEUE}/v1beta2/clusterqueues",
    f"/apis/{KUEUE}/v1beta2/clusterqueues/cq-a",
    f"/apis/{KUEUE}/v1beta2/namespaces/team-a/workloads",
    f"/apis/visibility.{KUEUE}/v1beta2/clusterqueues/cq-a/pendingworkloads",
])
def test_v1beta2_paths_answer_404_like_an_unknown_version(old_api: client.ApiClient, path: str) -> None:
    status, _, body = get(old_api, path)
    assert status == 404
    assert body["reason"] == "NotFound"


def test_objects_carry_v1beta1_field_names(old_api: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(old_api)
    cq = custom.get_cluster_custom_object(KUEUE, "v1beta1", "clusterqueues", "cq-a")
    assert cq["apiVersion"] == f"{KUEUE}/v1beta1"
    assert cq["spec"]["cohort"] == "co" and "cohortName" not in cq["spec"]
    wls = custom.list_namespaced_custom_object(KUEUE, "v1beta1", "team-a", "workloads")
    assert wls["apiVersion"] == f"{KUEUE}/v1beta1"
    spec = wls["items"][0]["spec"]
    assert spec["priorityClassName"] == "high" and "priorityClassRef" not in spec


def test_no_deprecation_warning_when_v1beta1_is_the_only_version(old_api: client.ApiClient) -> None:
    status, headers, _ = get(old_api, f"/apis/{KUEUE}/v1beta1/clusterqueues")
    assert status == 200
    assert "Warning" not in headers


def test_writes_in_v1beta1_are_stored_as_v1beta2(old_api: client.ApiClient, store: ObjectStore) -> None:
    custom = client.CustomObjectsApi(old_api)
    body = {"apiVersion": f"{KUEUE}/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "cq-b"},
            "spec": {**cluster_queue("cq-b")["spec"], "cohort": "co"}}
    created = custom.create_cluster_custom_object(KUEUE, "v1beta1", "clusterqueues", body)
    assert created["spec"]["cohort"] == "co"
    assert store.get(KUEUE, "clusterqueues", None, "cq-b")["spec"]["cohortName"] == "co"
    with pytest.raises(ApiException) as err:
        custom.create_cluster_custom_object(KUEUE, "v1beta2", "clusterqueues", cluster_queue("cq-c"))
    assert err.value.status == 404


def test_unknown_kueue_versions_are_refused(store: ObjectStore) -> None:
    with pytest.raises(ValueError):
        ApiServer(store, kueue_versions=("v1alpha9",))
    with pytest.raises(ValueError):
        ApiServer(store, kueue_versions=())


@pytest.mark.needs_binary
def test_kubectl_against_a_v1beta1_server(old_server: ApiServer, tmp_path: Path) -> None:
    kubectl = Kubectl(kubectl_path(), write_kubeconfig(tmp_path / "kubeconfig", old_server.url), tmp_path)
    lines = kubectl.run("get", "clusterqueues").stdout.strip().splitlines()
    assert lines[0].split()[:2] == ["NAME", "COHORT"]
    assert lines[1].split()[:2] == ["cq-a", "co"]
    doc = json.loads(kubectl.run("get", "clusterqueues", "-o", "json").stdout)
    item = doc["items"][0]
    assert item["apiVersion"] == f"{KUEUE}/v1beta1"
    assert item["spec"]["cohort"] == "co" and "cohortName" not in item["spec"]
    resources = kubectl.run("api-resources", "--api-group", KUEUE, "-o", "name").stdout.split()
    assert "clusterqueues.kueue.x-k8s.io" in resources
    versions = kubectl.run("api-versions").stdout.split()
    assert f"{KUEUE}/v1beta1" in versions and f"{KUEUE}/v1beta2" not in versions
    missing = kubectl.run("get", f"clusterqueues.v1beta2.{KUEUE}", check=False)
    assert missing.returncode != 0
