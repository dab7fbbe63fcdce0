"""Fixtures: the simulated refarch cluster served on loopback, exporter pods, a real Prometheus."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client, config

from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import ServedCluster, start_served
from tests.binaries import require_binary

T = TypeVar("T")
SPEED = 20.0  # refarch's idle jobs start at 5m1s simulated ≈ 15 s of wall time
EXPORTER_NS = "gpu-operator"


def wait_for(what: str, fn: Callable[[], T | None], timeout: float, interval: float = 0.25) -> T:
    """Poll `fn` until it returns something truthy; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {str(last)[:300]})")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    kc = tmp_path_factory.mktemp("kube") / "kubeconfig"
    sc = start_served(load_scenario("refarch"), speed=SPEED, kubeconfig=str(kc))
    assert sc.caught_up.wait(60)  # every node's exporter pod made before the first list
    yield sc
    sc.stop()


@pytest.fixture(scope="module")
def api(served: ServedCluster) -> Iterator[client.ApiClient]:
    c = config.new_client_from_config(str(served.kubeconfig))
    yield c
    c.close()


def raw_list(api: client.ApiClient, path: str) -> list[dict[str, Any]]:
    """List through the real client as plain dicts (`_preload_content=False`, as kueuetop does)."""
    method, url, headers, body, _ = api.param_serialize("GET", path, auth_settings=["BearerToken"])
    resp = api.call_api(method, url, header_params=headers, body=body, _request_timeout=10)
    resp.read()
    return json.loads(resp.data)["items"]


def gpu_nodes(api: client.ApiClient) -> set[str]:
    out = set()
    for n in raw_list(api, "/api/v1/nodes"):
        alloc = (n.get("status") or {}).get("allocatable") or {}
        if int(alloc.get("nvidia.com/gpu", "0") or 0) > 0:
            out.add(n["metadata"]["name"])
    return out


def ensure_exporter_pods(api: client.ApiClient) -> set[str]:
    """One exporter pod per GPU node, labelled as the GPU Operator labels its DaemonSet pods.

    The refarch scenario has no dcgm-exporter DaemonSet, so the test plays the operator."""
    core = client.CoreV1Api(api)
    if not any(ns["metadata"]["name"] == EXPORTER_NS for ns in raw_list(api, "/api/v1/namespaces")):
        core.create_namespace({"metadata": {"name": EXPORTER_NS}}, _preload_content=False)
    have = {p["spec"].get("nodeName") for p in raw_list(api, f"/api/v1/namespaces/{EXPORTER_NS}/pods")}
    nodes = gpu_nodes(api)
    for node in sorted(nodes - have):
        core.create_namespaced_pod(EXPORTER_NS, {
            "metadata": {"generateName": "nvidia-dcgm-exporter-", "labels": {"app": "nvidia-dcgm-exporter"}},
            "spec": {"nodeName": node, "tolerations": [{"operator": "Exists"}], "containers": [{
                "name": "nvidia-dcgm-exporter", "image": "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2",
                "ports": [{"name": "metrics", "containerPort": 9400}]}]},
        }, _preload_content=False)
    return nodes


def running_gpu_pods(api: client.ApiClient) -> set[tuple[str, str]]:
    out = set()
    for p in raw_list(api, "/api/v1/pods"):
        if (p.get("status") or {}).get("phase") != "Running" or not p["metadata"]["namespace"].startswith("team-"):
            continue
        for c in (p.get("spec") or {}).get("containers") or ():
            if ((c.get("resources") or {}).get("limits") or {}).get("nvidia.com/gpu"):
                out.add((p["metadata"]["namespace"], p["metadata"]["name"]))
    return out


# ------------------------------------------------------------------------------ Prometheus


def prometheus_binary() -> str:
    return require_binary("prometheus")


class PrometheusProcess:
    """A real Prometheus on a loopback port with its own tmp storage; kill and restart in place."""

    def __init__(self, binary: str, workdir: Path, target: str, metrics_path: str) -> None:
        self.binary = binary
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        # Static target labels namespace/pod/container make Prometheus rename the exporter's own
        # pod labels to exported_* (honor_labels: false), exactly as a GPU Operator ServiceMonitor does.
        (workdir / "prometheus.yml").write_text(f"""
global: {{scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}}
scrape_configs:
  - job_name: nvidia-dcgm-exporter
    metrics_path: {metrics_path}
    static_configs:
      - targets: ["{target}"]
        labels: {{namespace: {EXPORTER_NS}, pod: nvidia-dcgm-exporter-sim, container: nvidia-dcgm-exporter}}
""")

    def start(self) -> None:
        log = open(self.workdir / "prometheus.log", "ab")  # noqa: SIM115 - owned by the process
        self.proc = subprocess.Popen(
            [self.binary, f"--config.file={self.workdir / 'prometheus.yml'}",
             f"--storage.tsdb.path={self.workdir / 'data'}", f"--web.listen-address=127.0.0.1:{self.port}",
             "--log.level=warn"],
            stdout=log, stderr=log, cwd=self.workdir)
        log.close()
        wait_for("prometheus ready", self._ready, timeout=20)

    def _ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"prometheus exited: {(self.workdir / 'prometheus.log').read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None


@pytest.fixture(scope="module")
def prometheus(served: ServedCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    binary = prometheus_binary()
    target = served.url.removeprefix("http://")
    p = PrometheusProcess(binary, tmp_path_factory.mktemp("prometheus"), target, "/kueuetop/v1/dcgm/metrics")
    p.start()
    yield p
    p.kill()
