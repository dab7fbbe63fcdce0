"""Headless commands bounded and patient: `--timeout` is a wall-clock bound on the whole command,
a busy server (500s at a rate) is retried like the informers do, and queue positions come from one
index of the engine, not one per ClusterQueue."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from kueuetop.admission.workload_index import WorkloadIndex
from kueuetop.sim.serve import ServedCluster
from kueuetop.views import snapshot as snapshot_view


def kueuetop(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBECONFIG")}
    return subprocess.run([sys.executable, "-m", "kueuetop", *args], capture_output=True, text=True, env=env,
                          timeout=120)


@pytest.fixture
def faults(served20: ServedCluster) -> Iterator[dict]:
    yield served20.server.faults
    served20.server.faults.update({"errorRate": 0, "latencyMs": 0})


def test_snapshot_survives_a_server_answering_500_to_a_third_of_requests(served20: ServedCluster, faults) -> None:
    faults.update({"errorRate": 0.3, "errorCode": 500, "retryAfterSeconds": 0, "seed": 17})
    for _ in range(3):
        p = kueuetop("snapshot", "--kubeconfig", str(served20.kubeconfig), "-o", "json", "--timeout", "60s")
        assert p.returncode == 0, p.stderr
        doc = json.loads(p.stdout)
        assert len(doc["clusterQueues"]) == 12 and doc["workloads"]


def test_timeout_bounds_the_whole_command(served20: ServedCluster, faults) -> None:
    # Every request takes 2 s: discovery alone is five of them, so only a bound on the whole
    # command can end it at 3 s; each request's own timeout would let it run on.
    faults.update({"latencyMs": 2000})
    p = kueuetop("snapshot", "--kubeconfig", str(served20.kubeconfig), "-o", "json", "--timeout", "3s")
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.splitlines() == [
        "kueuetop: snapshot: timed out after 3s (--timeout) (hint: the API server may be slow or overloaded; "
        "try a longer --timeout)"]


def test_engine_positions_build_the_workload_index_once(served20: ServedCluster, monkeypatch) -> None:
    from kueuetop.sources.connection import connect
    from kueuetop.sources.kube import KubeSources
    from kueuetop.store import Store
    from tests.waiting import FAST, wait_until

    conn = connect(str(served20.kubeconfig))
    store = Store()
    src = KubeSources(conn, store, config=FAST).start()
    try:
        assert wait_until(src.synced, 15)
        snap = store.snapshot()
    finally:
        src.stop()
        conn.close()
    builds = []
    original = WorkloadIndex.update

    def counted(self, s):  # type: ignore[no-untyped-def]
        builds.append(1)
        return original(self, s)

    monkeypatch.setattr(WorkloadIndex, "update", counted)
    positions = snapshot_view._engine_positions(snap)
    assert len(snap.cluster_queues) > 1 and builds == [1]
    # Within each ClusterQueue the positions are 0, 1, 2 …, whatever is pending right now.
    by_cq: dict[str, list[int]] = {}
    for key, (pos, _) in positions.items():
        wl = snap.workloads[key]
        by_cq.setdefault(snap.local_queues[(wl.namespace, wl.queue_name)].cluster_queue, []).append(pos)
    assert all(sorted(v) == list(range(len(v))) for v in by_cq.values()), by_cq
