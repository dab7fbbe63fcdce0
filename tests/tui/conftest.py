"""A served refarch cluster (speed 30) and a live store feeding the console under test."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import ServedCluster, start_served
from kueuetop.sources.connection import Connection, connect
from kueuetop.sources.kube import KubeSources
from kueuetop.store import Store
from tests.tui.action_cluster import Queues, Watch, watch, write_tokens
from tests.waiting import FAST, wait_until


@pytest.fixture(scope="package")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    d = tmp_path_factory.mktemp("tui")
    s = start_served(load_scenario("refarch"), speed=30, kubeconfig=str(d / "kubeconfig"))
    assert s.caught_up.wait(60)  # the first instant settled before any test looks
    yield s
    s.stop()


@dataclass
class Live:
    conn: Connection
    store: Store
    sources: KubeSources
    poller: Any


@pytest.fixture
def live(served: ServedCluster) -> Iterator[Live]:
    conn = connect(str(served.kubeconfig))
    store = Store()
    sources = KubeSources(conn, store, config=FAST, visibility_interval=0.5).start()
    poller = None
    try:
        from kueuetop.sources.gpu_poller import GpuPoller, gpu_source_for

        poller = GpuPoller(store, gpu_source_for(conn), interval=1.0).start()
    except ImportError:
        pass
    assert wait_until(sources.synced, 10), store.sources()
    yield Live(conn, store, sources, poller)
    if poller is not None:
        poller.stop(timeout=1.0)
    sources.stop(timeout=2.0)
    conn.close()


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Audit lines and user config of the tests stay in the test's own directory.
    monkeypatch.setenv("KUEUETOP_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("NO_COLOR", raising=False)


# ------------------------------------------------------------------ a served cluster for action tests
# Module-scoped: each module that asks for them (the action keys, quitting during an action) gets
# its own refarch cluster, queues of its own on it, and the console's data path into a store.
@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    d = tmp_path_factory.mktemp("tui-actions")
    s = start_served(load_scenario("refarch"), speed=30, token_file=str(write_tokens(d / "tokens.yaml")),
                     kubeconfig=str(d / "admin.kubeconfig"))
    assert s.caught_up.wait(60)  # the first instant settled before any test looks
    yield s
    s.stop()


@pytest.fixture(scope="module")
def queues(cluster: ServedCluster) -> Iterator[Queues]:
    q = Queues(cluster)
    yield q
    q.close()


@pytest.fixture
def admin(cluster: ServedCluster) -> Iterator[Watch]:
    yield from watch(cluster.kubeconfig)
