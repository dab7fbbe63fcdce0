"""A node pool that scaled to zero is still one `kueuetop forecast` knows, once it has seen its
nodes: the real `kubernetes` client against a served cluster whose idle autoscaled pool is scaled
down by the simulated cluster-autoscaler (after its 10 simulated minutes unneeded)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from kueuetop.cli import main
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import ServedCluster, start_served
from tests.waiting import wait_until

SCENARIO = """
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: kueuetop.io/v1
kind: NodePool
metadata: {name: gpu-np}
spec:
  machineType: g2-standard-24
  gpu: {model: "NVIDIA L4", count: 2, memoryMiB: 23034}
  zones: [us-central1-a]
  size: 1
  minSize: 0
  maxSize: 3
  autoscaling: true
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: l4}
spec:
  nodeLabels: {cloud.google.com/gke-nodepool: gpu-np}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-a}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: l4
      resources: [{name: nvidia.com/gpu, nominalQuota: "8"}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: team-a}
spec: {clusterQueue: cq-a}
"""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServedCluster]:
    (tmp_path / "s.yaml").write_text(SCENARIO)
    s = start_served(load_scenario(str(tmp_path / "s.yaml")), speed=60, kubeconfig=str(tmp_path / "kubeconfig"))
    yield s
    s.stop()


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("KUEUETOP_STATE_DIR", raising=False)


def _pool_nodes(served: ServedCluster) -> int:
    api = config.new_client_from_config(config_file=str(served.kubeconfig))
    try:
        return len(client.CoreV1Api(api).list_node(label_selector="cloud.google.com/gke-nodepool=gpu-np").items)
    finally:
        api.close()


def test_a_pool_seen_once_is_known_at_zero(served: ServedCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    kc = str(served.kubeconfig)
    assert wait_until(lambda: _pool_nodes(served) == 1, 30, 0.1)
    assert main(["forecast", "--kubeconfig", kc, "-o", "json", "--timeout", "20s"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    saved = json.loads((tmp_path / "state" / "kueuetop" / "known-pools.json").read_text())
    (pools,) = saved["clusters"].values()
    assert [(p["name"], p["gpus"], p["labels"]["cloud.google.com/gke-nodepool"]) for p in pools] == [
        ("gpu-np", 2, "gpu-np")]
    # Idle, the node is scaled down after 10 simulated minutes (10 s here).
    assert wait_until(lambda: _pool_nodes(served) == 0, 60, 0.2), "the idle pool was not scaled down"
    change = ["--with", "nodes gpu-np=+2"]
    assert main(["forecast", "--kubeconfig", kc, "-o", "json", "--timeout", "20s", *change]) == 0, \
        capsys.readouterr().err
    doc = json.loads(capsys.readouterr().out)
    assert doc["whatIf"]["changes"] == ["nodes gpu-np=+2"] and doc["source"]["pods"].startswith("placed on the node pools")
    # A fresh state directory has never seen the pool's nodes: it is unknown, in one line.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "fresh"))
    assert main(["forecast", "--kubeconfig", kc, "--timeout", "20s", *change]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown node pool 'gpu-np'" in err
