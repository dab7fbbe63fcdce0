"""ScrapeSource through the real kubernetes client and the API server's pod proxy (simulated cluster)."""

from __future__ import annotations

from unittest import mock

from kubernetes import client

from kueuetop.sim.serve import ServedCluster
from kueuetop.sources.kube_http import ApiError
from kueuetop.sources.scrape import ScrapeSource

from .conftest import EXPORTER_NS, ensure_exporter_pods, running_gpu_pods, wait_for


def test_scrape_all_exporters_through_pod_proxy(api: client.ApiClient) -> None:
    nodes = ensure_exporter_pods(api)
    src = ScrapeSource(api, concurrency=4, timeout=5.0, budget=0)  # every exporter every round

    def complete():
        reading = src.gpus()
        ensure_exporter_pods(api)  # node pools scale: play the DaemonSet
        return reading if {s.node for s in reading.samples} >= nodes and src.status.ok else None

    reading = wait_for("samples from every exporter", complete, timeout=20)
    assert all(e.ok and e.samples == 2 and e.skipped_lines == 0 for e in src.exporters)
    assert {e.namespace for e in src.exporters} == {EXPORTER_NS}
    assert all(s.model == "NVIDIA L4" and s.mem_total_mib and not s.stale for s in reading.samples)
    running = running_gpu_pods(api)
    pods = {(s.namespace, s.pod) for s in reading.samples if s.allocated}
    assert running and len(running & pods) >= len(running) - 2  # pods starting between the two lists
    assert "exporters ok" in src.status.message


def test_one_bad_exporter_does_not_break_the_round(api: client.ApiClient) -> None:
    ensure_exporter_pods(api)
    src = ScrapeSource(api, budget=0)  # every exporter every round: the bad one is in it
    first = wait_for("a first round", lambda: (r := src.gpus()) and r.samples and r, timeout=10)
    victim = src.exporters[0]
    real = src.fetch_text

    def flaky(namespace: str, pod: str, port: int) -> str:
        if pod == victim.pod:
            raise ApiError(503, "ServiceUnavailable", "no endpoints available for service")
        if pod == src.exporters[-1].pod:
            return real(namespace, pod, port) + "garbage {{{\nDCGM_FI_DEV_GPU_UTIL{gpu=0 1\n"
        return real(namespace, pod, port)

    with mock.patch.object(src, "fetch_text", side_effect=flaky):
        second = src.gpus()
    bad = next(e for e in src.exporters if e.pod == victim.pod)
    assert not bad.ok and bad.error.startswith("HTTP 503") and bad.last_success is not None
    assert src.exporters[-1].ok and src.exporters[-1].skipped_lines == 2
    assert src.status.ok and "HTTP 503" in src.status.message and "2 malformed lines" in src.status.message
    victim_gpus = [s for s in second.samples if s.node == victim.node]
    assert victim_gpus and all(s.stale for s in victim_gpus)  # last data kept, marked stale
    assert not any(s.stale for s in second.samples if s.node != victim.node)
    assert {s.key for s in first.samples} <= {s.key for s in second.samples}


def test_api_server_down_keeps_last_data(api: client.ApiClient, served: ServedCluster) -> None:
    ensure_exporter_pods(api)
    cfg = client.Configuration.get_default_copy()
    cfg.host = api.configuration.host
    cfg.retries = False
    own = client.ApiClient(cfg)
    src = ScrapeSource(own, timeout=2.0, budget=0)
    before = wait_for("a first round", lambda: (r := src.gpus()) and r.samples and r, timeout=10)
    own.configuration.host = "http://127.0.0.1:9"  # nothing listens on the discard port
    own.rest_client.pool_manager.clear()
    after = src.gpus()
    own.close()
    assert after.stale and not src.status.ok and "listing exporter pods" in src.status.message
    assert [s.key for s in after.samples] == [s.key for s in before.samples] and all(s.stale for s in after.samples)
