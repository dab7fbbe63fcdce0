"""`kueuetop sim serve multikueue` as a process: one kubeconfig with a context per cluster that
kubectl uses against each, a clean stop on SIGTERM (kubeconfig removed), and a clear one-line
error for a multi-cluster scenario that is wrong."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.binaries import require_binary
from tests.sim.test_serve_process import free_port, http_get

WORKERS = ("us-central1", "europe-west4", "asia-southeast1")


def free_ports(n: int) -> int:
    """A port free with the n − 1 after it (a free one alone may have a neighbour in use)."""
    for _ in range(50):
        base = free_port()
        with contextlib.ExitStack() as held:
            try:
                for p in range(base, base + n):
                    sock = held.enter_context(socket.socket())
                    sock.bind(("127.0.0.1", p))
            except OSError:
                continue
        return base
    raise RuntimeError(f"no {n} free ports in a row")


def test_serve_multikueue_process_contexts_and_stop(tmp_path: Path) -> None:
    kubectl = require_binary("kubectl")
    port = free_ports(len(WORKERS) + 1)  # the manager on it, the workers on the next ones
    kubeconfig = tmp_path / "kubeconfig"
    proc = subprocess.Popen([sys.executable, "-m", "kueuetop", "sim", "serve", "multikueue", "--port", str(port),
                             "--kubeconfig", str(kubeconfig)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not kubeconfig.exists():
            assert proc.poll() is None, proc.communicate()[1]
            time.sleep(0.1)
        assert http_get(f"http://127.0.0.1:{port}/readyz")[0] == 200  # the manager on --port
        for ctx in ("manager", *WORKERS):
            out = subprocess.run([kubectl, "--kubeconfig", str(kubeconfig), "--context", ctx, "get", "clusterqueues",
                                  "-o", "name"], capture_output=True, text=True, timeout=30)
            assert out.returncode == 0, out.stderr
            assert out.stdout.strip() == "clusterqueue.kueue.x-k8s.io/gpu-cluster-queue"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    for ctx in ("manager", *WORKERS):
        assert f"context {ctx})" in out
    assert not kubeconfig.exists()


def test_bad_multicluster_scenario_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kueuetop.io/v1\nkind: Cluster\nmetadata: {name: m}\nspec: {role: manager}\n---\n"
                   "apiVersion: v1\nkind: Namespace\nmetadata: {name: x, annotations: {kueuetop.io/cluster: nope}}\n")
    out = subprocess.run([sys.executable, "-m", "kueuetop", "sim", "serve", str(bad)], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "no Cluster named 'nope'" in lines[0]


def test_sim_run_of_a_multicluster_scenario_says_to_serve_it() -> None:
    out = subprocess.run([sys.executable, "-m", "kueuetop", "sim", "run", "multikueue", "--for", "1m"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert out.stderr.strip() == ("kueuetop: multikueue holds several clusters: serve it with `kueuetop sim serve "
                                  "multikueue` (sim run, explain and forecast take one cluster)")
