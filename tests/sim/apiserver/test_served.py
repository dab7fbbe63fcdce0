"""Built-in scenarios served as by `kueuetop sim serve`, read by real clients: the `kubernetes`
client's generated models and kubectl."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.scenarios.scenario import parse_scenario
from kueuetop.sim.serve import ServedCluster, start_served

from .conftest import Kubectl, kubectl_path, make_client

NODE_INFO_FIELDS = ("architecture", "boot_id", "container_runtime_version", "kernel_version",
                    "kube_proxy_version", "kubelet_version", "machine_id", "operating_system", "os_image",
                    "system_uuid")

PROVREQ = """\
apiVersion: autoscaling.x-k8s.io/v1
kind: ProvisioningRequest
metadata:
  name: probe
spec:
  provisioningClassName: queued-provisioning.gke.io
  podSets:
  - count: 1
    podTemplateRef:
      name: probe
"""


@pytest.fixture
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ServedCluster]:
    s = start_served(load_scenario(request.param), kubeconfig=str(tmp_path / "kubeconfig"))
    yield s
    s.stop()


@pytest.mark.parametrize("served", ["refarch", "dws", "skypilot"], indirect=True)
def test_nodes_deserialize_into_the_clients_models(served: ServedCluster) -> None:
    api = make_client(served.url)
    try:
        nodes = client.CoreV1Api(api).list_node().items  # generated models: nulls in required fields raise
        assert nodes
        for node in nodes:
            info = node.status.node_info
            assert all(getattr(info, f) for f in NODE_INFO_FIELDS), info
            assert info.kubelet_version.startswith("v1.")
            assert info.architecture == node.metadata.labels["kubernetes.io/arch"]
        assert len({n.status.node_info.machine_id for n in nodes}) == len(nodes)
        assert len({n.status.node_info.system_uuid for n in nodes}) == len(nodes)
        one = client.CoreV1Api(api).read_node(nodes[0].metadata.name)
        assert one.status.node_info == nodes[0].status.node_info
    finally:
        api.close()


@pytest.mark.needs_binary
@pytest.mark.parametrize("served", ["dws"], indirect=True)
def test_kubectl_get_provisioningrequests(served: ServedCluster, tmp_path: Path) -> None:
    kubectl = Kubectl(kubectl_path(), served.kubeconfig, tmp_path)
    # No namespace given: it goes to "default", which exists as on any cluster.
    kubectl.run("create", "-f", "-", input=PROVREQ)
    namespaces = kubectl.run("get", "namespaces", "-o", "name").stdout.split()
    assert {"namespace/default", "namespace/kube-system", "namespace/kube-public"} <= set(namespaces)
    lines = kubectl.run("get", "provisioningrequests", "-A").stdout.strip().splitlines()
    # The autoscaler's CRD declares Age as its only column.
    assert lines[0].split() == ["NAMESPACE", "NAME", "AGE"]
    rows = [line.split() for line in lines[1:]]
    assert ["default", "probe"] in [r[:2] for r in rows]
    assert all(len(r) == 3 for r in rows), rows
    wide = kubectl.run("get", "provreq", "-n", "default", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "AGE"]

    req = urllib.request.Request(served.url + "/apis/autoscaling.x-k8s.io/v1/provisioningrequests",
                                 headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        table = json.loads(resp.read())
    assert [(c["name"], c["type"], c["format"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Name", "string", "name", 0), ("Age", "date", "", 0)]
    assert table["columnDefinitions"][1]["description"] == (
        "Custom resource definition column (in JSONPath format): .metadata.creationTimestamp")


FIRST_INSTANT = """\
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: broken, namespace: team-a}
spec: {}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: team-a}
spec: {clusterQueue: cq}
---
apiVersion: kueuetop.io/v1
kind: NodePool
metadata: {name: pool}
spec: {machineType: g2-standard-24, gpu: {model: NVIDIA L4, count: 2}, size: 3}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec: {namespaceSelector: {}}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b, annotations: {kueuetop.io/at: "1h"}}
"""


def test_first_instant_is_stored_before_serving_and_refusals_are_reported(tmp_path: Path) -> None:
    served = start_served(parse_scenario(FIRST_INSTANT, "first.yaml"), kubeconfig=str(tmp_path / "kc"))
    try:
        store = served.parts.cluster.store
        assert [q["metadata"]["name"] for q in store.list("kueue.x-k8s.io", "localqueues")[0]] == ["lq"]
        assert store.count("kueue.x-k8s.io", "clusterqueues") == 1
        assert store.count("", "nodes") == 3
        names = {ns["metadata"]["name"] for ns in store.list("", "namespaces")[0]}
        assert "team-a" in names and "team-b" not in names  # team-b comes at 1h
        assert served.parts.cluster.errors == ["first.yaml#doc2: spec.clusterQueue: Required value"]
        # Kueue catches up in the simulation thread: the queues get their status.
        assert served.caught_up.wait(30)
        cq = store.get("kueue.x-k8s.io", "clusterqueues", None, "cq")
        assert any(c["type"] == "Active" for c in cq["status"]["conditions"])
        lq = store.get("kueue.x-k8s.io", "localqueues", "team-a", "lq")
        assert any(c["type"] == "Active" for c in lq["status"]["conditions"])
    finally:
        served.stop()
