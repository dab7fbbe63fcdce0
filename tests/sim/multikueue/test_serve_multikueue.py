"""`sim serve multikueue` over loopback HTTP, read with the real `kubernetes` client and the real
`kubectl`: one kubeconfig with a context per cluster, workloads dispatched from the manager,
the first worker to admit keeps its copy, a worker that goes away mid-test and the re-dispatch
of its work, no workload lost."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from kueuetop.sim.scenarios.multicluster import load_multicluster
from kueuetop.sim.serve_world import ServedWorld, start_served_world
from tests.binaries import require_binary

KUEUE, V2 = "kueue.x-k8s.io", "v1beta2"
WORKERS = ("us-central1", "europe-west4", "asia-southeast1")
SPEED = 120.0  # workerLostTimeout (15m) is 7.5 s of wall time; the Jobs run 20-60 s


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServedWorld]:
    s = start_served_world(load_multicluster("multikueue"), speed=SPEED, kubeconfig=str(tmp_path / "kubeconfig"))
    assert s.caught_up.wait(30)
    yield s
    s.stop()


def _api(served: ServedWorld, context: str) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(config.new_client_from_config(config_file=str(served.kubeconfig), context=context))


def _workloads(co: client.CustomObjectsApi) -> dict[str, dict[str, Any]]:
    items = co.list_cluster_custom_object(KUEUE, V2, "workloads")["items"]
    return {o["metadata"]["name"]: o for o in items}


def _true(obj: dict[str, Any], ctype: str) -> bool:
    return any(c.get("type") == ctype and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


def _wait(pred: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _kubectl(served: ServedWorld, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([require_binary("kubectl"), "--kubeconfig", str(served.kubeconfig), *args],
                          capture_output=True, text=True, timeout=30)


def test_kubeconfig_has_a_context_per_cluster(served: ServedWorld) -> None:
    out = _kubectl(served, "config", "get-contexts", "-o", "name")
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.split()) == sorted(("manager", *WORKERS))
    for ctx in WORKERS:
        nodes = _kubectl(served, "--context", ctx, "get", "nodes", "-o", "json")
        assert nodes.returncode == 0, nodes.stderr
        pools = {n["metadata"]["labels"]["cloud.google.com/gke-nodepool"] for n in json.loads(nodes.stdout)["items"]}
        assert len(pools) == 1  # each worker has its own region's pool, and only it
    mkc = _kubectl(served, "--context", "manager", "get", "multikueueclusters")
    assert mkc.returncode == 0, mkc.stderr
    assert mkc.stdout.split("\n")[0].split() == ["NAME", "CONNECTED", "AGE"]
    rows = {r.split()[0]: r.split()[1] for r in mkc.stdout.strip().split("\n")[1:]}
    assert rows == {w: "True" for w in WORKERS}


def test_dispatch_first_admit_wins_worker_lost_and_redispatch(served: ServedWorld) -> None:
    manager = _api(served, "manager")
    workers = {w: _api(served, w) for w in WORKERS}

    def placed() -> dict[str, str]:
        return {n: o["status"]["clusterName"] for n, o in _workloads(manager).items()
                if _true(o, "Admitted") and (o.get("status") or {}).get("clusterName")}

    first = _wait(lambda: placed() if len(placed()) >= 3 else None, 20, "three dispatched workloads")
    # First admission wins: the chosen worker holds an admitted copy; no other worker holds one.
    for name, chosen in first.items():
        for w, co in workers.items():
            copy = _workloads(co).get(name)
            if w == chosen:
                assert copy is not None and _true(copy, "Admitted")
                assert copy["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] == "multikueue"
            else:
                assert copy is None or not _true(copy, "Admitted"), f"{name} admitted twice ({w})"
    got = _kubectl(served, "--context", next(iter(first.values())), "get", "workloads", "-A", "-o", "json")
    assert got.returncode == 0, got.stderr
    assert {o["metadata"]["name"] for o in json.loads(got.stdout)["items"]} & set(first)

    # A worker goes away mid-run: its API refuses connections; the others keep answering.
    lost = max(WORKERS, key=lambda w: sum(1 for c in first.values() if c == w))
    on_lost = {n for n, c in placed().items() if c == lost}
    served.set_worker_up(lost, False)
    down = _kubectl(served, "--context", lost, "get", "workloads", "-A", "--request-timeout=3s")
    assert down.returncode != 0
    up = _kubectl(served, "--context", next(w for w in WORKERS if w != lost), "get", "workloads", "-A")
    assert up.returncode == 0, up.stderr

    def inactive() -> bool:
        mkc = manager.get_cluster_custom_object(KUEUE, V2, "multikueueclusters", lost)
        return any(c["type"] == "Active" and c["status"] == "False" and c["reason"] == "ClientConnectionFailed"
                   for c in mkc["status"]["conditions"])

    _wait(inactive, 10, f"MultiKueueCluster {lost} Active=False")
    # After workerLostTimeout its Workloads are retried and land on the workers that answer.
    def moved() -> bool:
        now = _workloads(manager)
        return all(n in now and (_true(now[n], "Finished")
                                 or now[n]["status"].get("clusterName") not in (None, lost)) for n in on_lost)

    _wait(moved, 40, f"the workloads of {lost} re-dispatched")
    served.set_worker_up(lost, True)
    _wait(lambda: _kubectl(served, "--context", lost, "get", "ns").returncode == 0, 10, f"{lost} back")
    # No workload lost: every Job of the manager has its Workload, each placed or finished or
    # waiting in the manager's queue.
    jobs = client.BatchV1Api(config.new_client_from_config(config_file=str(served.kubeconfig), context="manager"))
    raw = jobs.list_namespaced_job("team-a", _preload_content=False)
    names = {j["metadata"]["name"] for j in json.loads(raw.data)["items"]}
    wls = _workloads(manager)
    owners = {o["metadata"]["ownerReferences"][0]["name"] for o in wls.values()}
    assert names == owners


def test_worker_on_an_older_kueue_api_is_served_and_dispatched_to(tmp_path: Path) -> None:
    """One worker answers like Kueue <= 0.14 (kueue.x-k8s.io/v1beta1 only): kubectl reads it in
    that version, and MultiKueue dispatches to it like to the others."""
    from kueuetop.sim.scenarios.multicluster import MULTI_DIR, parse_multicluster

    text = (MULTI_DIR / "multikueue.yaml").read_text()
    old = "spec: {role: worker, region: europe-west4}"
    assert old in text
    sc = parse_multicluster(text.replace(old, "spec: {role: worker, region: europe-west4, kueueAPI: v1beta1}"),
                            "mixed.yaml")
    s = start_served_world(sc, speed=SPEED, kubeconfig=str(tmp_path / "kubeconfig"))
    try:
        versions = _kubectl(s, "--context", "europe-west4", "api-versions")
        assert versions.returncode == 0, versions.stderr
        assert "kueue.x-k8s.io/v1beta1" in versions.stdout.split()
        assert "kueue.x-k8s.io/v1beta2" not in versions.stdout.split()

        def copies() -> list[dict[str, Any]]:
            got = _kubectl(s, "--context", "europe-west4", "get", "workloads.v1beta1.kueue.x-k8s.io", "-A", "-o", "json")
            assert got.returncode == 0, got.stderr
            return json.loads(got.stdout)["items"]

        items = _wait(copies, 20, "a copy dispatched to the v1beta1 worker")
        assert all(o["apiVersion"] == "kueue.x-k8s.io/v1beta1" for o in items)
        # The console reads each cluster in the version it serves.
        out = subprocess.run([sys.executable, "-m", "kueuetop", "clusters", "--kubeconfig", str(s.kubeconfig),
                              "--all-contexts", "-o", "json"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        apis = {r["context"]: r["kueueApi"] for r in json.loads(out.stdout)["clusters"]}
        assert apis == {"manager": "v1beta2", "us-central1": "v1beta2", "europe-west4": "v1beta1",
                        "asia-southeast1": "v1beta2"}
    finally:
        s.stop()
