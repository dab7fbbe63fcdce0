"""Every node carries the whole NodeSystemInfo, so the generated client's models load it."""

from __future__ import annotations

from pathlib import Path

from kubernetes import client

from kueuetop.sim.scenarios.scenario import parse_scenario
from kueuetop.sim.serve import start_served

from .conftest import make_client

# v1.NodeSystemInfo's required fields, as the generated client names them.
REQUIRED = ("architecture", "boot_id", "container_runtime_version", "kernel_version", "kube_proxy_version",
            "kubelet_version", "machine_id", "operating_system", "os_image", "system_uuid")

BARE_NODES = """\
apiVersion: v1
kind: Node
metadata:
  name: bare-partial
  labels:
    kubernetes.io/arch: arm64
status:
  nodeInfo:
    kubeletVersion: v1.30.2
---
apiVersion: v1
kind: Node
metadata:
  name: bare-none
---
apiVersion: kueuetop.io/v1
kind: NodePool
metadata:
  name: pool
spec:
  machineType: e2-small
  zones: [us-central1-f]
  size: 2
  autoscaling: false
"""


def _check(nodes: list[client.V1Node]) -> None:
    for node in nodes:
        info = node.status.node_info
        missing = [f for f in REQUIRED if not getattr(info, f)]
        assert not missing, (node.metadata.name, missing)


def test_bare_scenario_nodes_list_through_the_generated_client(tmp_path: Path) -> None:
    served = start_served(parse_scenario(BARE_NODES, "bare.yaml"), kubeconfig=str(tmp_path / "kubeconfig"))
    try:
        with make_client(served.url) as api:
            nodes = client.CoreV1Api(api).list_node().items  # raises ValueError on a null required field
        by_name = {n.metadata.name: n for n in nodes}
        assert {"bare-partial", "bare-none"} <= set(by_name) and len(nodes) == 4
        _check(nodes)
        partial = by_name["bare-partial"].status.node_info
        assert (partial.kubelet_version, partial.architecture) == ("v1.30.2", "arm64")
        assert len({n.status.node_info.machine_id for n in nodes}) == len(nodes)
    finally:
        served.stop()


def test_node_created_through_the_api_reports_node_info(core: client.CoreV1Api) -> None:
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"nodeInfo": {"osImage": "Ubuntu 24.04 LTS"}}}
    # Raw POST: the generated create_node refuses a partial nodeInfo before sending it.
    api = core.api_client
    method, url, headers, data, post = api.param_serialize(
        "POST", "/api/v1/nodes", body=body, header_params={"Content-Type": "application/json"})
    resp = api.call_api(method, url, headers, data, post)
    resp.read()
    assert resp.status == 201
    [node] = core.list_node().items
    assert node.status.node_info.os_image == "Ubuntu 24.04 LTS"
    _check(core.list_node().items)
