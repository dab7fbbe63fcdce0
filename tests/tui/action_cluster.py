"""A served refarch cluster with an admin and a viewer token, and small queues of the test's own.

Each test gets a ClusterQueue `cq-ui-N` (one GPU, no cohort, no preemption) fed by LocalQueue
team-a/`lq-ui-N`, and workloads `low-N` / `high-N` in it, so what an action causes does not
depend on where the scenario's timeline is. Mirrors tests/actions/conftest.py for the console.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client, config

from kueuetop.sim.apiserver import write_kubeconfig
from kueuetop.sim.serve import ServedCluster
from kueuetop.sources.connection import Connection, connect
from kueuetop.sources.kube import KubeSources
from kueuetop.store import Store
from tests.waiting import FAST, wait_until

ADMIN_TOKEN = "tui-admin-token-0123456789"
VIEWER_TOKEN = "tui-viewer-token-9876543210"
KUEUE, V2 = "kueue.x-k8s.io", "v1beta2"
NS, FLAVOR = "team-a", "ui-flavor"
_numbers = itertools.count(1)


def write_tokens(path: Path) -> Path:
    path.write_text(f"{ADMIN_TOKEN}: {{user: alice, role: admin}}\n{VIEWER_TOKEN}: {{user: bob, role: viewer}}\n")
    return path


def viewer_kubeconfig(served: ServedCluster, path: Path) -> Path:
    return write_kubeconfig(path, served.url, token=VIEWER_TOKEN)


def conds(obj: dict) -> dict[str, str]:
    return {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or []}


class Queues:
    """Test-side writes through the admin client."""

    def __init__(self, served: ServedCluster) -> None:
        self.api = config.new_client_from_config(config_file=str(served.kubeconfig))
        self.co = client.CustomObjectsApi(self.api)
        self.co.create_cluster_custom_object(KUEUE, V2, "resourceflavors", {
            "apiVersion": f"{KUEUE}/{V2}", "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}, "spec": {}})

    def close(self) -> None:
        self.api.close()

    def new_queue(self) -> int:
        """A fresh cq-ui-N / lq-ui-N pair; returns N."""
        n = next(_numbers)
        self.co.create_cluster_custom_object(KUEUE, V2, "clusterqueues", {
            "apiVersion": f"{KUEUE}/{V2}", "kind": "ClusterQueue", "metadata": {"name": f"cq-ui-{n}"},
            "spec": {"namespaceSelector": {}, "queueingStrategy": "StrictFIFO", "resourceGroups": [{
                "coveredResources": ["cpu", "nvidia.com/gpu"],
                "flavors": [{"name": FLAVOR, "resources": [
                    {"name": "cpu", "nominalQuota": "8"}, {"name": "nvidia.com/gpu", "nominalQuota": "1"}]}]}]}})
        self.co.create_namespaced_custom_object(KUEUE, V2, NS, "localqueues", {
            "apiVersion": f"{KUEUE}/{V2}", "kind": "LocalQueue", "metadata": {"name": f"lq-ui-{n}", "namespace": NS},
            "spec": {"clusterQueue": f"cq-ui-{n}"}})
        return n

    def add_workload(self, name: str, n: int, priority: int, *, active: bool = True) -> None:
        self.co.create_namespaced_custom_object(KUEUE, V2, NS, "workloads", {
            "apiVersion": f"{KUEUE}/{V2}", "kind": "Workload",
            "metadata": {"name": name, "namespace": NS, "annotations": {"kueuetop.io/runtime": "10h"}},
            "spec": {"queueName": f"lq-ui-{n}", "priority": priority, "active": active, "podSets": [{
                "name": "main", "count": 1, "template": {"spec": {"containers": [{
                    "name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}}}]}}}]}})

    def wl(self, name: str) -> dict:
        return self.co.get_namespaced_custom_object(KUEUE, V2, NS, "workloads", name)

    def holds_quota(self, name: str) -> bool:
        return conds(self.wl(name)).get("QuotaReserved") == "True"

    def low_running_high_waiting(self) -> int:
        """`low-N` (priority 10) admitted on the queue's only GPU, `high-N` (100) waiting behind it."""
        n = self.new_queue()
        self.add_workload(f"low-{n}", n, 10)
        assert wait_until(lambda: self.holds_quota(f"low-{n}"), 15), "low not admitted"
        self.add_workload(f"high-{n}", n, 100)
        assert wait_until(lambda: conds(self.wl(f"high-{n}")).get("QuotaReserved") == "False", 15)
        time.sleep(0.3)  # a few more scheduling passes: high must still be waiting
        assert not self.holds_quota(f"high-{n}")
        return n


@dataclass
class Watch:
    conn: Connection
    store: Store
    sources: KubeSources


def watch(kubeconfig: Path) -> Iterator[Watch]:
    """The console's own data path: informers into a Store, through `kubeconfig`."""
    conn = connect(str(kubeconfig))
    store = Store()
    sources = KubeSources(conn, store, config=FAST, visibility_interval=0.5).start()
    assert wait_until(sources.synced, 10), store.sources()
    yield Watch(conn, store, sources)
    sources.stop(timeout=2.0)
    conn.close()
