"""Fixtures: the refarch scenario served on loopback, reached with the real kubernetes client.

Besides the scenario's own queues, tests add a small ClusterQueue `cq-actions` (one GPU, no
cohort, no preemption policy) fed by LocalQueue team-a/lq-actions, so a high-priority workload
waits behind a low-priority one until an operator acts, whatever the scenario does meanwhile.
StrictFIFO like the scenario's own queues (and because the what-if engine's `simulate` does not
yet requeue BestEffortFIFO's parked heads when quota is released).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from kueuetop.sim.apiserver import write_kubeconfig
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import ServedCluster, start_served

ADMIN_TOKEN = "admin-secret-token-0123456789"
VIEWER_TOKEN = "viewer-secret-token-9876543210"
KUEUE, V2 = "kueue.x-k8s.io", "v1beta2"
NS, CQ, LQ, FLAVOR = "team-a", "cq-actions", "lq-actions", "actions-flavor"
SPEED = 30.0  # simulated seconds per wall second: Kueue reacts within a few polls


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServedCluster]:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"{ADMIN_TOKEN}: {{user: alice, role: admin}}\n{VIEWER_TOKEN}: {{user: bob, role: viewer}}\n")
    s = start_served(load_scenario("refarch"), speed=SPEED, token_file=str(tokens),
                     kubeconfig=str(tmp_path / "admin.kubeconfig"))
    assert s.caught_up.wait(60)  # the first instant settled before any test looks
    yield s
    s.stop()


@pytest.fixture
def api(served: ServedCluster) -> Iterator[client.ApiClient]:
    c = config.new_client_from_config(config_file=str(served.kubeconfig))
    yield c
    c.close()


@pytest.fixture
def viewer_kubeconfig(served: ServedCluster, tmp_path: Path) -> Path:
    return write_kubeconfig(tmp_path / "viewer.kubeconfig", served.url, token=VIEWER_TOKEN)


@pytest.fixture
def viewer_api(viewer_kubeconfig: Path) -> Iterator[client.ApiClient]:
    c = config.new_client_from_config(config_file=str(viewer_kubeconfig))
    yield c
    c.close()


def wait_until(fn: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def conds(obj: dict) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c.get("reason", "")) for c in (obj.get("status") or {}).get("conditions") or []}


class Kueue:
    """Test-side reads and writes through the admin client."""

    def __init__(self, api: client.ApiClient) -> None:
        self.co = client.CustomObjectsApi(api)

    def add_queue(self) -> None:
        # A flavor of its own: the scenario's GPU flavors carry taints a bare Workload doesn't tolerate.
        self.co.create_cluster_custom_object(KUEUE, V2, "resourceflavors", {
            "apiVersion": f"{KUEUE}/{V2}", "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}, "spec": {}})
        self.co.create_cluster_custom_object(KUEUE, V2, "clusterqueues", {
            "apiVersion": f"{KUEUE}/{V2}", "kind": "ClusterQueue", "metadata": {"name": CQ},
            "spec": {"namespaceSelector": {}, "queueingStrategy": "StrictFIFO", "resourceGroups": [{
                "coveredResources": ["cpu", "nvidia.com/gpu"],
                "flavors": [{"name": FLAVOR, "resources": [
                    {"name": "cpu", "nominalQuota": "8"}, {"name": "nvidia.com/gpu", "nominalQuota": "1"}]}]}]}})
        self.co.create_namespaced_custom_object(KUEUE, V2, NS, "localqueues", {
            "apiVersion": f"{KUEUE}/{V2}", "kind": "LocalQueue", "metadata": {"name": LQ, "namespace": NS},
            "spec": {"clusterQueue": CQ}})

    def add_workload(self, name: str, priority: int) -> None:
        self.co.create_namespaced_custom_object(KUEUE, V2, NS, "workloads", {
            "apiVersion": f"{KUEUE}/{V2}", "kind": "Workload",
            "metadata": {"name": name, "namespace": NS, "annotations": {"kueuetop.io/runtime": "10h"}},
            "spec": {"queueName": LQ, "priority": priority, "podSets": [{"name": "main", "count": 1, "template": {
                "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {
                    "requests": {"cpu": "1", "nvidia.com/gpu": "1"}}}]}}}]}})

    def wl(self, name: str) -> dict:
        return self.co.get_namespaced_custom_object(KUEUE, V2, NS, "workloads", name)

    def cq(self, name: str = CQ) -> dict:
        return self.co.get_cluster_custom_object(KUEUE, V2, "clusterqueues", name)

    def lq(self, name: str = LQ) -> dict:
        return self.co.get_namespaced_custom_object(KUEUE, V2, NS, "localqueues", name)

    def holds_quota(self, name: str) -> bool:
        return conds(self.wl(name)).get("QuotaReserved", ("", ""))[0] == "True"


@pytest.fixture
def kueue(api: client.ApiClient) -> Kueue:
    return Kueue(api)


def scheduling_passes(served: ServedCluster, n: int = 2, what: str = "scheduling passes") -> None:
    """Wait until the simulated Kueue has run `n` more scheduling cycles than now."""
    start = served.parts.kueue.cycles
    wait_until(lambda: served.parts.kueue.cycles >= start + n, what=what)


@pytest.fixture
def low_running_high_waiting(served: ServedCluster, kueue: Kueue) -> Kueue:
    """`low` (priority 10) admitted on the only GPU of cq-actions, `high` (priority 100) waiting behind it."""
    kueue.add_queue()
    kueue.add_workload("low", 10)
    wait_until(lambda: kueue.holds_quota("low"), what="low admitted")
    kueue.add_workload("high", 100)
    wait_until(lambda: conds(kueue.wl("high")).get("QuotaReserved", ("", ""))[0] == "False", what="high evaluated")
    # Later cycles must leave it so (no preemption policy): high still waits, low still runs.
    scheduling_passes(served, what="scheduling passes after high was evaluated")
    assert not kueue.holds_quota("high") and kueue.holds_quota("low")
    return kueue
