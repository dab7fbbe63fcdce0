"""`kueuetop clusters` against `sim serve multikueue`: every context read side by side with the
real kubernetes client; a worker that goes away is one row's error and the others keep their
data; a context that does not exist is its own row."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kueuetop.sim.scenarios.multicluster import load_multicluster
from kueuetop.sim.serve_world import ServedWorld, start_served_world

WORKERS = ("us-central1", "europe-west4", "asia-southeast1")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServedWorld]:
    s = start_served_world(load_multicluster("multikueue"), speed=30, kubeconfig=str(tmp_path / "kubeconfig"))
    assert s.caught_up.wait(30)
    yield s
    s.stop()


def _clusters(served: ServedWorld, *args: str) -> tuple[int, dict[str, Any], str]:
    out = subprocess.run([sys.executable, "-m", "kueuetop", "clusters", "--kubeconfig", str(served.kubeconfig),
                          "-o", "json", "--timeout", "8s", *args], capture_output=True, text=True, timeout=60)
    return out.returncode, json.loads(out.stdout) if out.stdout else {}, out.stderr


def test_all_contexts_rows_and_placement(served: ServedWorld) -> None:
    deadline = time.monotonic() + 20
    while True:
        code, doc, err = _clusters(served, "--all-contexts")
        assert code == 0, err
        if sum(1 for w in doc["workloads"] if w["state"] == "dispatched") >= 3 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    rows = {r["context"]: r for r in doc["clusters"]}
    assert set(rows) == {"manager", *WORKERS}
    assert all(r["reachable"] and r["kueueApi"] == "v1beta2" for r in rows.values())
    assert {n: v["active"] for n, v in rows["manager"]["multiKueueClusters"].items()} == {w: True for w in WORKERS}
    assert rows["manager"]["gpus"] == 0 and sum(rows[w]["gpus"] for w in WORKERS) == 18
    dispatched = [w for w in doc["workloads"] if w["state"] == "dispatched"]
    assert len(dispatched) >= 3
    for w in dispatched:
        assert w["copies"][w["cluster"]] == "admitted"
        assert w["explain"].startswith(f"dispatched to {w['cluster']} (admitted there")
        assert all(state == "no copy" for c, state in w["copies"].items() if c != w["cluster"])


def test_one_worker_away_and_an_unknown_context_stay_in_their_rows(served: ServedWorld) -> None:
    served.set_worker_up("asia-southeast1", False)
    code, doc, err = _clusters(served, "--context", "manager", "--context", "asia-southeast1",
                               "--context", "europe-west4", "--context", "no-such-context")
    assert code == 0, err
    rows = {r["context"]: r for r in doc["clusters"]}
    assert list(rows) == ["manager", "asia-southeast1", "europe-west4", "no-such-context"]
    assert rows["asia-southeast1"]["reachable"] is False and rows["asia-southeast1"]["error"]
    assert "not found" in rows["no-such-context"]["error"]
    assert rows["europe-west4"]["reachable"] and rows["europe-west4"]["gpus"] == 6
    assert rows["manager"]["reachable"]
    deadline = time.monotonic() + 10
    while rows["manager"]["multiKueueClusters"]["asia-southeast1"]["reason"] != "ClientConnectionFailed":
        assert time.monotonic() < deadline, rows["manager"]
        time.sleep(0.3)
        rows = {r["context"]: r for r in _clusters(served, "--context", "manager")[1]["clusters"]}


def test_no_cluster_readable_is_exit_1(served: ServedWorld) -> None:
    code, doc, _ = _clusters(served, "--context", "nope")
    assert code == 1 and doc["clusters"][0]["reachable"] is False


def test_a_silent_cluster_does_not_hold_up_the_others(served: ServedWorld, tmp_path: Path) -> None:
    """A context whose server accepts connections and never answers: the console's short wait
    returns the other clusters' rows at once, that one says it is connecting."""
    import socket

    import yaml

    from kueuetop.sources.multi_context import ContextPool
    from kueuetop.views.clusters import cluster_reads, cluster_rows

    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(16)  # the kernel completes the handshakes; nothing ever reads or answers
    try:
        cfg = yaml.safe_load(served.kubeconfig.read_text())
        cfg["clusters"].append({"name": "silent", "cluster": {"server": f"http://127.0.0.1:{hole.getsockname()[1]}"}})
        cfg["users"].append({"name": "silent", "user": {}})
        cfg["contexts"].append({"name": "silent", "context": {"cluster": "silent", "user": "silent"}})
        kc = tmp_path / "with-silent.kubeconfig"
        kc.write_text(yaml.safe_dump(cfg))
        pool = ContextPool(str(kc), ["manager", "silent", "europe-west4"], timeout=20)
        try:
            t0 = time.monotonic()
            rows = {r["context"]: r for r in cluster_rows(cluster_reads(pool.refresh(wait=3.0)))}
            assert time.monotonic() - t0 < 15  # well under the 20 s a read of the silent one may take
            assert rows["manager"]["reachable"] and rows["europe-west4"]["gpus"] == 6
            assert rows["silent"]["reachable"] is False and rows["silent"]["error"] == "connecting…"
        finally:
            pool.close()
    finally:
        hole.close()


def test_an_action_on_a_workers_copy_warns_that_the_manager_owns_it(served: ServedWorld, tmp_path: Path) -> None:
    """A worker's copy of a manager's workload (label kueue.x-k8s.io/multikueue-origin): the
    action warns before anything is sent; the manager's own workload gets no such warning."""
    from kubernetes import client, config

    def copies() -> list[tuple[str, str, str]]:
        api = config.new_client_from_config(config_file=str(served.kubeconfig), context="europe-west4")
        try:
            items = client.CustomObjectsApi(api).list_cluster_custom_object(
                "kueue.x-k8s.io", "v1beta2", "workloads")["items"]
        finally:
            api.close()
        return [(w["metadata"]["namespace"], w["metadata"]["name"],
                 (w["metadata"].get("labels") or {}).get("kueue.x-k8s.io/multikueue-origin", "")) for w in items]

    deadline = time.monotonic() + 60
    while not [c for c in copies() if c[2]]:
        assert time.monotonic() < deadline, "no workload was dispatched to europe-west4"
        time.sleep(0.5)
    ns, name, origin = next(c for c in copies() if c[2])
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}

    def hold(context: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "kueuetop", "hold", f"{ns}/{name}", "--dry-run", "--kubeconfig",
                               str(served.kubeconfig), "--context", context], capture_output=True, text=True,
                              timeout=60, env={**os.environ, **env})

    on_worker = hold("europe-west4")
    assert on_worker.returncode == 0, on_worker.stderr
    assert f"{ns}/{name} is a MultiKueue copy of a workload of manager '{origin}'" in on_worker.stderr
    on_manager = hold("manager")
    assert on_manager.returncode == 0, on_manager.stderr
    assert "MultiKueue copy" not in on_manager.stderr
