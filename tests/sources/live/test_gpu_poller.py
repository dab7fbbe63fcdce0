"""GpuPoller: GPU telemetry into the store, stale while the source fails, fresh again after."""

from __future__ import annotations

from pathlib import Path

from kubernetes import client, config

from kueuetop.sim.apiserver import write_kubeconfig
from kueuetop.sim.serve import ServedCluster
from kueuetop.sources.connection import connect
from kueuetop.sources.gpu_poller import PROMETHEUS_SOURCE, SCRAPE_SOURCE, GpuPoller, gpu_source_for
from kueuetop.sources.prom import PrometheusSource
from kueuetop.sources.scrape import ScrapeSource
from kueuetop.store import SourceState, Store
from tests.fault_proxy import FaultProxy

from .conftest import wait_until


def _own_client(served: ServedCluster) -> client.ApiClient:
    api = config.new_client_from_config(str(served.kubeconfig))
    api.configuration.retries = False
    return api


def test_factory_picks_prometheus_only_with_a_url(served20: ServedCluster) -> None:
    conn = connect(str(served20.kubeconfig))
    try:
        prom = gpu_source_for(conn, "http://127.0.0.1:9", token="t", headers={"X-Scope-OrgID": "a"})
        assert isinstance(prom, PrometheusSource) and prom.config.token == "t"
        assert prom.config.headers == {"X-Scope-OrgID": "a"}
        prom.close()
        assert isinstance(gpu_source_for(conn), ScrapeSource)
    finally:
        conn.close()


def test_poller_feeds_store_and_marks_stale_on_failure_then_fresh(served20: ServedCluster, tmp_path: Path) -> None:
    proxy = FaultProxy(served20.url).start()
    api = config.new_client_from_config(str(write_kubeconfig(tmp_path / "proxied", proxy.url)))
    api.configuration.retries = False
    store = Store()
    poller = GpuPoller(store, ScrapeSource(api, timeout=2.0), interval=0.1, max_backoff=0.2)
    assert poller.name == SCRAPE_SOURCE and store.source(SCRAPE_SOURCE).state is SourceState.CONNECTING
    poller.start()
    try:
        assert wait_until(lambda: store.gpus() and not store.stale(SCRAPE_SOURCE), 15), store.sources()
        gpus = store.gpus()
        assert all(s.model and s.mem_total_mib for s in gpus.values())
        # The API server goes away (every connection reset): last data kept, marked stale with the reason.
        proxy.rule(lambda method, path: "lose-request")
        proxy.drop_connections()
        assert wait_until(lambda: store.stale(SCRAPE_SOURCE), 10)
        st = store.source(SCRAPE_SOURCE)
        assert st.state is SourceState.ERROR and "listing exporter pods" in st.message
        assert store.gpus().keys() == gpus.keys()
        # Back: fresh again, on the next poll (the backoff is capped).
        proxy.rule(None)
        assert wait_until(lambda: not store.stale(SCRAPE_SOURCE), 10), store.source(SCRAPE_SOURCE)
        assert store.source(SCRAPE_SOURCE).state is SourceState.LIVE
    finally:
        poller.stop(timeout=5)
        api.close()
        proxy.stop()
    assert not poller.running and store.source(SCRAPE_SOURCE).state is SourceState.STOPPED


def test_unreachable_prometheus_is_an_error_not_an_exception() -> None:
    store = Store()
    poller = GpuPoller(store, PrometheusSource("http://127.0.0.1:9"), interval=1)
    assert poller.name == PROMETHEUS_SOURCE
    assert poller.poll_once() is False
    st = store.source(PROMETHEUS_SOURCE)
    assert st.state is SourceState.ERROR and "connection refused" in st.message and store.stale(PROMETHEUS_SOURCE)
    poller.stop()


def test_a_source_that_raises_does_not_kill_the_thread() -> None:
    class Broken:
        calls = 0

        def gpus(self):
            Broken.calls += 1
            raise RuntimeError("bug")

    store = Store()
    poller = GpuPoller(store, Broken(), interval=0.05, max_backoff=0.05, name="gpu/test").start()
    try:
        assert wait_until(lambda: Broken.calls >= 3, 5)
        assert poller.running and store.source("gpu/test").state is SourceState.ERROR
    finally:
        poller.stop()


def test_prometheus_token_from_environment(monkeypatch):
    from kueuetop.sources.gpu_poller import gpu_source_for
    from kueuetop.sources.prom import PrometheusSource

    monkeypatch.setenv("KUEUETOP_PROMETHEUS_TOKEN", "s3cret-token")
    src = gpu_source_for(None, "http://127.0.0.1:1")  # no connection needed for Prometheus
    assert isinstance(src, PrometheusSource)
    assert src.config.token == "s3cret-token"
    assert gpu_source_for(None, "http://127.0.0.1:1", token="explicit").config.token == "explicit"
