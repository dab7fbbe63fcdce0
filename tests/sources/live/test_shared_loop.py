"""The shared watch loop (sources/watch_loop.py, loop_informer.py, aio_http.py) against the
served refarch cluster over real sockets: the same store as the server after sync, through
dropped streams, forced compaction (410), 429/5xx answers and latency past the probe's bound;
and over HTTPS with a bearer token."""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from kueuetop.sim.apiserver import write_kubeconfig
from kueuetop.sim.apiserver.kubeconfig import kubeconfig_dict
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import ServedCluster, start_served
from kueuetop.sources import loop_informer
from kueuetop.sources.connection import Connection, connect
from kueuetop.sources.kube import KubeSources
from kueuetop.sources.loop_informer import LoopInformer
from kueuetop.sources.watch_loop import AUTH_NAME, THREAD_NAME, WatchLoop
from kueuetop.store import SourceState, Store
from tests.fault_proxy import FaultProxy
from tests.waiting import FAST

from .conftest import ADMIN_TOKEN, Live, assert_converges, frozen, wait_until
from .test_faults import admin_post


@pytest.fixture
def watch_loop() -> Iterator[WatchLoop]:
    loop = WatchLoop()
    yield loop
    loop.stop()


@pytest.fixture
def on_loop(conn: Connection, live_factory: Callable[..., Live], watch_loop: WatchLoop) -> Live:
    live = live_factory(conn, watch_loop=watch_loop)
    assert live.sources.on_loop and all(isinstance(i, LoopInformer) for i in live.sources.informers)
    return live


def _informer_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(("kueuetop-informer", "kueuetop-liveness"))]


def test_sync_equals_server_with_no_informer_thread(served: ServedCluster, on_loop: Live) -> None:
    assert_converges(served, on_loop.store)
    assert _informer_threads() == []
    assert on_loop.sources.informers[0].loop.thread.name == THREAD_NAME


def test_dropped_streams_resume_without_relist(served: ServedCluster, on_loop: Live) -> None:
    before = {i.spec.source: i.lists for i in on_loop.sources.informers}
    served.server.faults.update({"dropWatchesEverySeconds": 0.3})
    time.sleep(2.0)
    served.server.faults.update({"dropWatchesEverySeconds": 0})
    assert_converges(served, on_loop.store)
    assert {i.spec.source: i.lists for i in on_loop.sources.informers} == before


def test_forced_compaction_relists(served: ServedCluster, on_loop: Live) -> None:
    wl = on_loop.sources.informer("workloads")
    before = wl.lists
    with frozen(served):
        served.parts.cluster.store.patch("", "namespaces", None, "team-a", lambda o: {
            **o, "metadata": {**o["metadata"], "labels": {**(o["metadata"].get("labels") or {}),
                                                          "bump": str(time.time())}}})
        admin_post(served, "/kueuetop/v1/faults", {"compactNow": True})
        admin_post(served, "/kueuetop/v1/faults", {"dropWatchesNow": True})
    assert wait_until(lambda: wl.lists > before, 10), "no relist after 410"
    assert_converges(served, on_loop.store)


def test_429_and_500_then_live(served: ServedCluster, on_loop: Live) -> None:
    for code in (429, 500):
        served.server.faults.update({"errorRate": 0.4, "errorCode": code, "retryAfterSeconds": 0, "seed": code,
                                     "dropWatchesEverySeconds": 0.4})
        time.sleep(1.5)
    served.server.faults.update({"errorRate": 0, "dropWatchesEverySeconds": 0})
    assert_converges(served, on_loop.store)
    assert wait_until(lambda: all(s.state is SourceState.LIVE for s in on_loop.store.sources().values()), 10)


def test_latency_past_the_probe_bound_marks_stale(served: ServedCluster, on_loop: Live) -> None:
    states = lambda: {s.state for n, s in on_loop.store.sources().items() if n != "visibility"}  # noqa: E731
    assert wait_until(lambda: states() == {SourceState.LIVE}, 10), states()
    served.server.faults.update({"latencyMs": 3000})
    assert wait_until(lambda: SourceState.STALE in states(), 10), states()
    served.server.faults.update({"latencyMs": 0})
    assert wait_until(lambda: states() == {SourceState.LIVE}, 15), states()
    assert_converges(served, on_loop.store)


def test_stop_ends_every_coroutine(served: ServedCluster, conn: Connection, watch_loop: WatchLoop) -> None:
    store = Store()
    src = KubeSources(conn, store, config=FAST, visibility_interval=0, watch_loop=watch_loop).start()
    assert wait_until(src.synced, 10)
    src.stop(timeout=3)
    assert not any(i.alive for i in src.informers)
    assert {s.state for n, s in store.sources().items() if n != "visibility"} == {SourceState.STOPPED}


@pytest.fixture(scope="module")
def served_tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    d = tmp_path_factory.mktemp("tls")
    tokens = d / "tokens.yaml"
    tokens.write_text(f"{ADMIN_TOKEN}: {{user: alice, role: admin}}\n")
    s = start_served(load_scenario("refarch"), speed=60, token_file=str(tokens), kubeconfig=str(d / "kubeconfig"),
                     tls=True)
    yield s
    s.stop()


def test_https_with_the_kubeconfig_ca_and_token(served_tls: ServedCluster, watch_loop: WatchLoop) -> None:
    assert served_tls.url.startswith("https://")
    conn = connect(str(served_tls.kubeconfig))
    store = Store()
    src = KubeSources(conn, store, config=FAST, visibility_interval=0, watch_loop=watch_loop).start()
    try:
        assert src.on_loop
        assert wait_until(src.synced, 15), store.sources()
        assert_converges(served_tls, store)
    finally:
        src.stop(timeout=3)
        conn.close()


def test_https_wrong_token_is_forbidden_and_no_ca_fails(served_tls: ServedCluster, watch_loop: WatchLoop) -> None:
    conn = connect(str(served_tls.kubeconfig))
    # The header is the client Configuration's, read at each request (as a refreshed token is).
    conn.api.configuration.api_key = {"BearerToken": "Bearer not-a-token"}
    conn.api.configuration.api_key_prefix = {}
    conn.api.configuration.refresh_api_key_hook = None  # the kubeconfig loader's would put the good one back
    store = Store()
    src = KubeSources(conn, store, config=FAST, visibility_interval=0, watch_loop=watch_loop).start()
    try:
        assert wait_until(lambda: store.source("workloads") is not None
                          and store.source("workloads").state is SourceState.FORBIDDEN, 10), store.sources()
    finally:
        src.stop(timeout=3)
        conn.close()
    # Without the CA the server's certificate is not trusted: a connection problem, never data.
    conn = connect(str(served_tls.kubeconfig))
    conn.api.configuration.ssl_ca_cert = None
    conn.api.configuration.ca_cert_data = None
    store = Store()
    src = KubeSources(conn, store, config=FAST, visibility_interval=0, watch_loop=watch_loop).start()
    try:
        assert wait_until(lambda: store.source("nodes") is not None
                          and "connection problem (SSL" in store.source("nodes").message, 10), store.sources()
        assert not store.keys("nodes")
    finally:
        src.stop(timeout=3)
        conn.close()


def test_paged_lists_parsed_in_slices(served: ServedCluster, conn: Connection, live_factory: Callable[..., Live],
                                      watch_loop: WatchLoop, monkeypatch: pytest.MonkeyPatch) -> None:
    # Pages of 7 (continue tokens) parsed 3 items at a time: the same store as the server's.
    monkeypatch.setattr(loop_informer, "PARSE_SLICE", 3)
    pages = dataclasses.replace(FAST, page_size=7)
    live = live_factory(conn, watch_loop=watch_loop, config=pages)
    assert len(served.parts.cluster.store.list("", "nodes", copy=False)[0]) > 7
    assert_converges(served, live.store)


def test_partitioned_cluster_never_holds_up_the_other_on_the_loop(
        served: ServedCluster, conn: Connection, live_factory: Callable[..., Live], watch_loop: WatchLoop,
        tmp_path: Path) -> None:
    # Two clusters on one loop: the same server directly, and through a proxy that partitions.
    direct = live_factory(conn, watch_loop=watch_loop)
    with FaultProxy(served.url) as proxy:
        pconn = connect(str(write_kubeconfig(tmp_path / "proxied", proxy.url, token=ADMIN_TOKEN)))
        try:
            behind = live_factory(pconn, watch_loop=watch_loop)
            lists = {i.spec.source: i.lists for i in behind.sources.informers}
            proxy.partition()
            assert wait_until(lambda: SourceState.STALE in _states(behind), 8), _states(behind)
            # Meanwhile the other cluster's probe answers and its watches deliver.
            seen = direct.store.source("workloads").last_ok
            assert wait_until(lambda: direct.store.source("workloads").last_ok > seen, 5)
            assert _states(direct) == {SourceState.LIVE}
            assert_converges(served, direct.store)
            proxy.heal()
            assert wait_until(lambda: _states(behind) == {SourceState.LIVE}, 15), _states(behind)
            assert_converges(served, behind.store)
            assert {i.spec.source: i.lists for i in behind.sources.informers} == lists
        finally:
            proxy.heal()
            pconn.close()


def _states(live: Live) -> set[SourceState]:
    return {s.state for n, s in live.store.sources().items() if n != "visibility"}


def test_exec_plugin_token_refreshed_off_the_loop(served: ServedCluster, watch_loop: WatchLoop,
                                                  tmp_path: Path) -> None:
    # A plugin whose token is always about to expire: the client's refresh hook runs it again for
    # each request (its expiry skew is minutes), on the loop's credentials thread.
    runs = tmp_path / "runs"
    plugin = tmp_path / "auth-plugin"
    plugin.write_text(f"#!{sys.executable}\nimport datetime, json, threading\n"
                      f"open({str(runs)!r}, 'a').write('run\\n')\n"
                      "exp = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1)\n"
                      "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1beta1', "
                      "'kind': 'ExecCredential', 'status': {'token': " + repr(ADMIN_TOKEN) + ", "
                      "'expirationTimestamp': exp.strftime('%Y-%m-%dT%H:%M:%SZ')}}))\n")
    plugin.chmod(0o755)
    cfg = kubeconfig_dict(served.url, context="exec")
    cfg["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                        "command": str(plugin), "interactiveMode": "Never"}}
    path = tmp_path / "exec.kubeconfig"
    path.write_text(yaml.safe_dump(cfg))
    conn = connect(str(path))
    store = Store()
    src = KubeSources(conn, store, config=FAST, visibility_interval=0, watch_loop=watch_loop).start()
    try:
        assert src.on_loop
        assert wait_until(src.synced, 20), store.sources()
        after_sync = len(runs.read_text().splitlines())
        # The probes (every 0.5 s) keep asking for fresh credentials, and keep being answered.
        assert wait_until(lambda: len(runs.read_text().splitlines()) >= after_sync + 3, 15)
        assert any(t.name.startswith(AUTH_NAME) for t in threading.enumerate())
        assert wait_until(lambda: _states(Live(store, src)) == {SourceState.LIVE}, 10), store.sources()
        assert_converges(served, store)
    finally:
        src.stop(timeout=3)
        conn.close()


def test_https_insecure_skip_verify(served_tls: ServedCluster, watch_loop: WatchLoop) -> None:
    # insecure-skip-tls-verify: no CA, and yet the data (what the kubeconfig asks for).
    conn = connect(str(served_tls.kubeconfig))
    conn.api.configuration.ssl_ca_cert = conn.api.configuration.ca_cert_data = None
    conn.api.configuration.verify_ssl = False
    store = Store()
    src = KubeSources(conn, store, config=FAST, visibility_interval=0, watch_loop=watch_loop).start()
    try:
        assert wait_until(src.synced, 15), store.sources()
        assert_converges(served_tls, store)
    finally:
        src.stop(timeout=3)
        conn.close()
