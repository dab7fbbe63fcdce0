"""`kueuetop snapshot` and live `kueuetop explain` against the simulated refarch cluster."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kubernetes import client, config

from kueuetop.cli import main
from kueuetop.sim.serve import ServedCluster

from .conftest import KUEUE, wait_until

CONTROL = ("\x1b", "\x07", "\x9b")


def _server(served: ServedCluster, group: str, plural: str) -> list[dict]:
    return served.parts.cluster.store.list(group, plural, copy=False)[0]


def _snapshot(served: ServedCluster, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    code = main(["snapshot", "--kubeconfig", str(served.kubeconfig), "--timeout", "20s", *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_snapshot_json_matches_the_server(served20: ServedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    doc: dict = {}
    wl_before = len(_server(served20, KUEUE, "workloads"))

    def util_seen() -> bool:
        nonlocal doc
        code, out, err = _snapshot(served20, capsys, "-o", "json")
        assert code == 0, err
        doc = json.loads(out)
        return any(w["state"] == "Admitted" and w["gpuUtil"] is not None for w in doc["workloads"])

    assert wait_until(util_seen, 40, 0.5), "no admitted workload with GPU utilization"
    wl_after = len(_server(served20, KUEUE, "workloads"))
    assert doc["schema"] == 1 and doc["cluster"]["kueueApi"] == "v1beta2"
    assert doc["cluster"]["positions"] == "visibility"
    assert len(doc["clusterQueues"]) == len(_server(served20, KUEUE, "clusterqueues")) == 12
    assert wl_before <= len(doc["workloads"]) <= wl_after
    server_wl = {(w["metadata"]["namespace"], w["metadata"]["name"]) for w in _server(served20, KUEUE, "workloads")}
    assert {(w["namespace"], w["name"]) for w in doc["workloads"]} <= server_wl
    server_gpu_nodes = {n["metadata"]["name"] for n in _server(served20, "", "nodes")
                        if int(n["status"]["allocatable"].get("nvidia.com/gpu", "0")) > 0}
    assert {n["name"] for n in doc["nodes"]} & server_gpu_nodes and all(n["gpus"] > 0 for n in doc["nodes"])
    # A known ClusterQueue, as the scenario defines it.
    cq = next(q for q in doc["clusterQueues"] if q["name"] == "cq-team-a-hp")
    assert cq["cohort"] == "team-a-b" and cq["active"] and cq["stopPolicy"] == "None"
    quota = {(r["flavor"], r["resource"]): r for r in cq["quota"]}
    assert quota[("gpu-l4-reserved", "nvidia.com/gpu")]["nominal"] == "4"
    assert quota[("gpu-l4-reserved", "nvidia.com/gpu")]["borrowingLimit"] == "0"
    assert quota[("gpu-l4-ondemand", "memory")]["nominal"] == "20Gi"
    # GPU telemetry came through the exporter pods and the pod proxy.
    src = {s["name"]: s for s in doc["sources"]}
    assert src["gpu/scrape"]["state"] == "live" and "exporters ok" in src["gpu/scrape"]["message"]
    busy = [w for w in doc["workloads"] if w["gpuUtil"] is not None]
    assert all(w["state"] in ("Admitted", "Evicting") and w["flavors"] for w in busy)
    gpus_of_pods = [g for g in doc["gpus"] if g["pod"]]
    assert gpus_of_pods and all(g["util"] is not None and g["memTotalMiB"] for g in gpus_of_pods)
    pending = [w for w in doc["workloads"] if w["state"] == "Pending" and w["position"] is not None]
    for w in pending:
        assert w["position"] >= 1 and w["clusterQueue"]


def test_snapshot_table_output(served20: ServedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _snapshot(served20, capsys)
    assert code == 0, err
    for title in ("ClusterQueues (12)", "Workloads (", "Nodes (", "GPUs ("):
        assert title in out
    assert "cq-team-a-hp" in out and "team-a-b" in out


def test_explain_live_names_queue_and_flavors(served20: ServedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    def attempt() -> str | None:
        pending = [w for w in _server(served20, KUEUE, "workloads")
                   if w["spec"].get("active", True) and not (w.get("status") or {}).get("admission")
                   and "high-priority" in w["metadata"]["name"]]
        if not pending:
            return None
        w = pending[-1]
        code = main(["explain", f"{w['metadata']['namespace']}/{w['metadata']['name']}",
                     "--kubeconfig", str(served20.kubeconfig), "--timeout", "20s"])
        out, err = capsys.readouterr()
        assert code == 0, err
        return out if "flavors tried" in out else None

    out = wait_until(attempt, 40, 0.5)
    assert out, "no pending high-priority workload to explain"
    assert "ClusterQueue cq-team-" in out and "in ClusterQueue" in out
    assert "gpu-l4-reserved" in out and "gpu-l4-ondemand" in out


def test_explain_live_unknown_workload(served20: ServedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["explain", "team-a/no-such-workload", "--kubeconfig", str(served20.kubeconfig)])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err.startswith("kueuetop: workload team-a/no-such-workload not found") and err.count("\n") == 1


def _run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kueuetop", *args], capture_output=True, text=True, timeout=60)


def test_unreachable_or_broken_kubeconfig_is_one_line_and_an_exit_code(tmp_path: Path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
                   "users: [{name: u, user: {token: secret-token}}]\n"
                   "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n")
    started = time.monotonic()
    r = _run_cli("snapshot", "--kubeconfig", str(bad))
    assert time.monotonic() - started < 30
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("kueuetop: cannot reach http://127.0.0.1:9") and "hint:" in r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr and "secret-token" not in r.stderr
    r = _run_cli("explain", "team-a/x", "--kubeconfig", str(tmp_path / "missing"))
    assert r.returncode == 2 and r.stderr.startswith("kueuetop: kubeconfig") and "Traceback" not in r.stderr
    bad.write_text("this: [is not: a kubeconfig")
    r = _run_cli("snapshot", "--kubeconfig", str(bad))
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1


def test_no_kueue_is_exit_1(tmp_path: Path) -> None:
    """A server that answers but serves no kueue.x-k8s.io: exit 1 with the NoKueue hint."""
    import http.server
    import threading

    class NoKueue(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'{"major":"1","minor":"31"}' if self.path == "/version" else b'{"kind":"Status","code":404}'
            self.send_response(200 if self.path == "/version" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NoKueue)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    kc = tmp_path / "kc"
    kc.write_text(f"apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{srv.server_port}'}}}}]\n"
                  "users: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n")
    try:
        assert main(["snapshot", "--kubeconfig", str(kc)]) == 1
    finally:
        srv.shutdown()


def test_control_characters_never_reach_the_output(served20: ServedCluster,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    api = config.new_client_from_config(str(served20.kubeconfig))
    co = client.CustomObjectsApi(api)
    evil = "evil \x1b[31mred\x1b[0m\x07 bell \x1b]0;title\x07"
    try:
        co.create_namespaced_custom_object(KUEUE, "v1beta2", "team-a", "workloads", {
            "apiVersion": f"{KUEUE}/v1beta2", "kind": "Workload", "metadata": {"name": "evil-msg", "namespace": "team-a"},
            "spec": {"queueName": "lq-team-a-hp", "active": False, "podSets": [{"name": "main", "count": 1, "template": {
                "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}]}})
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(served20.parts.cluster.now))

        def patched() -> bool:
            co.patch_namespaced_custom_object_status(KUEUE, "v1beta2", "team-a", "workloads", "evil-msg", {"status": {
                "conditions": [{"type": "Evicted", "status": "True", "reason": "Deactivated", "message": evil,
                                "lastTransitionTime": stamp},
                               {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": evil,
                                "lastTransitionTime": stamp}]}})
            wl = co.get_namespaced_custom_object(KUEUE, "v1beta2", "team-a", "workloads", "evil-msg")
            return any(c.get("message") == evil for c in wl["status"]["conditions"])

        assert wait_until(patched, 10, 0.2)
        for args in (["snapshot", "-o", "json"], ["snapshot"], ["explain", "team-a/evil-msg"]):
            code = main([*args, "--kubeconfig", str(served20.kubeconfig)])
            out, err = capsys.readouterr()
            assert code == 0, err
            assert not any(ch in out or ch in err for ch in CONTROL), args
            assert "\\u001b" not in out and "\\u0007" not in out  # not even JSON-escaped
            if args[0] == "snapshot" and "-o" in args:
                row = next(w for w in json.loads(out)["workloads"] if w["name"] == "evil-msg")
                assert row["state"] == "Inactive" and "red" in (row["message"] or "")
            else:
                assert "evil-msg" in out
    finally:
        with contextlib.suppress(client.ApiException):
            co.delete_namespaced_custom_object(KUEUE, "v1beta2", "team-a", "workloads", "evil-msg")
        api.close()
