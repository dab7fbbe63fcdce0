"""A served refarch cluster (speed 30) and a live store feeding the console under test."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kueuetop.connection import Connection, connect
from kueuetop.sim.scenario import load_scenario
from kueuetop.sim.serve import ServedCluster, start_served
from kueuetop.sources.informer import InformerConfig
from kueuetop.sources.kube import KubeSources
from kueuetop.store import Store

FAST = InformerConfig(watch_timeout=5, request_timeout=5, connect_timeout=2, backoff_initial=0.05,
                      backoff_max=0.5, forbidden_retry=0.5)


def wait_until(pred: Callable[[], Any], timeout: float = 10.0, step: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step)


@pytest.fixture(scope="package")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    d = tmp_path_factory.mktemp("tui")
    s = start_served(load_scenario("refarch"), speed=30, kubeconfig=str(d / "kubeconfig"))
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
