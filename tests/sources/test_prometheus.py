"""A real Prometheus scrapes the simulated cluster: dcgm-exporter GPU telemetry and Kueue's metrics.

Prometheus listens on loopback only and scrapes only the simulated API server. Every wait is
bounded; the whole test takes well under a minute.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest
import requests
from kubernetes import client
from prometheus_api_client import PrometheusApiClientException, PrometheusConnect
from urllib3.util.retry import Retry

from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import ServedCluster, start_served
from tests.binaries import require_binary

pytestmark = pytest.mark.needs_binary

KUEUE = "kueue.x-k8s.io"
DCGM_PATH = "/kueuetop/v1/dcgm/metrics"
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prometheus_binary() -> str:
    return require_binary("prometheus")


def loopback_session() -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # loopback only: no proxy from the environment
    return session


def wait_for(what: str, probe: Callable[[], T | None], timeout: float) -> T:
    """Poll `probe` until it returns something truthy; fail (never hang) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            got = probe()
        except (requests.RequestException, PrometheusApiClientException, ValueError) as exc:
            last = exc  # not up yet: keep polling, report the error if it never comes
        else:
            if got:
                return got
            last = got
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")


def prometheus_config(sim_hostport: str) -> str:
    # Two jobs as a real install has them: dcgm-exporter's plain endpoint, and Kueue's /metrics.
    return f"""\
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: dcgm
    metrics_path: {DCGM_PATH}
    static_configs: [{{targets: ["{sim_hostport}"]}}]
  - job_name: kueue
    metrics_path: /metrics
    static_configs: [{{targets: ["{sim_hostport}"]}}]
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    tmp = tmp_path_factory.mktemp("sim")
    s = start_served(load_scenario("refarch"), speed=20, kubeconfig=str(tmp / "kubeconfig"))
    assert s.caught_up.wait(60)  # the first instant settled before any test looks
    yield s
    s.stop()


@pytest.fixture(scope="module")
def prom(served: ServedCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    binary = prometheus_binary()
    tmp = tmp_path_factory.mktemp("prometheus")
    config = tmp / "prometheus.yml"
    config.write_text(prometheus_config(served.url.removeprefix("http://")))
    port = free_port()
    log = (tmp / "prometheus.log").open("w")
    proc = subprocess.Popen([binary, f"--config.file={config}", f"--storage.tsdb.path={tmp / 'data'}",
                             f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=1h"],
                            stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
    session = loopback_session()
    try:
        # No client-side retries: they back off for seconds; wait_for polls with its own bound.
        pc = PrometheusConnect(url=f"http://127.0.0.1:{port}", session=session, timeout=5, retry=Retry(total=0))
        wait_for("prometheus to answer", lambda: proc.poll() is None and pc.check_prometheus_connection(), 20)
        wait_for("both targets up", lambda: _targets_up(pc) == {"dcgm", "kueue"}, 20)
        yield pc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()
        session.close()


def _targets_up(pc: Any) -> set[str]:
    return {r["metric"]["job"] for r in pc.custom_query("up") if r["value"][1] == "1"}


@pytest.fixture(scope="module")
def custom(served: ServedCluster) -> Iterator[client.CustomObjectsApi]:
    cfg = client.Configuration()
    cfg.host = served.url
    api = client.ApiClient(cfg)
    yield client.CustomObjectsApi(api)
    api.close()


def test_gpu_utilization_series_carry_dcgm_labels_and_pods(prom: Any) -> None:
    series = wait_for("DCGM_FI_DEV_GPU_UTIL series", lambda: prom.custom_query("DCGM_FI_DEV_GPU_UTIL"), 10)
    for s in series:
        assert {"Hostname", "gpu", "modelName"} <= set(s["metric"]), s["metric"]
        assert 0 <= float(s["value"][1]) <= 100
    # Once refarch's jobs run, GPUs allocated to pods name the pod and its namespace.
    allocated = wait_for("GPU series with pod labels",
                         lambda: prom.custom_query('DCGM_FI_DEV_GPU_UTIL{pod!=""}'), 20)
    for s in allocated:
        assert s["metric"]["namespace"].startswith("team-"), s["metric"]
        assert s["metric"]["pod"]


def _cq_status(custom: client.CustomObjectsApi) -> dict[str, tuple[int, int]]:
    cqs = custom.list_cluster_custom_object(KUEUE, "v1beta2", "clusterqueues")["items"]
    return {cq["metadata"]["name"]: (int((cq.get("status") or {}).get("admittedWorkloads") or 0),
                                     int((cq.get("status") or {}).get("pendingWorkloads") or 0))
            for cq in cqs}


def _prom_by_cq(prom: Any) -> dict[str, tuple[int, int]]:
    admitted = {r["metric"]["cluster_queue"]: int(float(r["value"][1]))
                for r in prom.custom_query("sum by (cluster_queue) (kueue_admitted_active_workloads)")}
    pending = {r["metric"]["cluster_queue"]: int(float(r["value"][1]))
               for r in prom.custom_query("sum by (cluster_queue) (kueue_pending_workloads)")}
    return {cq: (admitted.get(cq, -1), pending.get(cq, -1)) for cq in admitted.keys() | pending.keys()}


def test_kueue_gauges_match_cluster_queue_status(prom: Any, custom: client.CustomObjectsApi) -> None:
    def agree() -> tuple[dict, dict] | None:
        # The simulation moves on between scrapes: accept a reading when the API said the same
        # thing before and after the query, and Prometheus's last scrape agrees with it.
        before = _cq_status(custom)
        scraped = _prom_by_cq(prom)
        after = _cq_status(custom)
        return (before, scraped) if before == after == scraped else None

    status, scraped = wait_for("kueue gauges to match ClusterQueue status", agree, 20)
    assert set(status) == set(scraped)
    assert sum(a for a, _ in status.values()) > 0, "refarch admits workloads from the start"


def test_range_query_returns_history(prom: Any) -> None:
    end = datetime.now(UTC)
    start = end - timedelta(seconds=30)

    def history() -> list[Any] | None:
        got = prom.custom_query_range("sum(kueue_admitted_active_workloads)", start_time=start,
                                      end_time=datetime.now(UTC), step="1s")
        return got if got and len(got[0]["values"]) >= 3 else None

    rows = wait_for("three samples of history", history, 30)  # generous: CI machines are small
    stamps = [float(t) for t, _ in rows[0]["values"]]
    assert stamps == sorted(stamps) and stamps[-1] - stamps[0] >= 2

    def gpu_history() -> list[Any] | None:
        got = prom.custom_query_range("count(DCGM_FI_DEV_GPU_UTIL)", start_time=start,
                                      end_time=datetime.now(UTC), step="1s")
        return got if got and len(got[0]["values"]) >= 3 else None

    # The fleet endpoint is larger than /metrics, so its history can lag by a scrape or two.
    gpu = wait_for("three samples of GPU history", gpu_history, 30)
    assert len(gpu[0]["values"]) >= 3


def test_prometheus_scrapes_only_the_simulated_cluster(prom: Any, served: ServedCluster) -> None:
    with loopback_session() as session:
        targets = session.get(f"{prom.url}/api/v1/targets", timeout=5).json()["data"]["activeTargets"]
    urls = sorted(t["scrapeUrl"] for t in targets)
    assert urls == sorted([f"{served.url}{DCGM_PATH}", f"{served.url}/metrics"])
