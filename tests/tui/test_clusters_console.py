"""The console across contexts (tui/clusters_app.py), driven with Pilot: the Clusters view, the
manager's workloads with their cluster, the filter by cluster, the cross-cluster explain and
each cluster's data age; live against `sim serve multikueue` with a worker taken away."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from textual.widgets import DataTable, Static

from kueuetop.sim.scenarios.multicluster import load_multicluster
from kueuetop.sim.serve_world import start_served_world
from kueuetop.sources.multi_context import ContextPool
from kueuetop.tui.clusters_app import ClustersApp
from kueuetop.views.clusters import cluster_reads
from tests.views.test_clusters_view import _reads


def _cells(app: ClustersApp, table: str) -> list[list[str]]:
    t = app.query_one(f"#{table}", DataTable)
    return [[str(c) for c in t.get_row_at(i)] for i in range(t.row_count)]


def _text(app: ClustersApp, wid: str) -> str:
    return str(app.query_one(f"#{wid}", Static).render())


async def _until(pilot: object, pred: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


def test_clusters_view_filter_and_explain() -> None:
    async def go() -> None:
        app = ClustersApp(lambda: _reads(), interval=60)
        async with app.run_test(size=(160, 40)) as pilot:
            await _until(pilot, lambda: app.refreshes >= 1)
            await pilot.pause()
            rows = {r[0]: r for r in _cells(app, "clusters")}
            assert set(rows) == {"hub", "eu", "us", "asia"}
            assert rows["asia"][1] == "no" and "connection refused" in rows["asia"][6]
            assert rows["eu"][3] == "8/8"
            assert "asia ClientConnectionFailed" in rows["hub"][6]
            wl = _cells(app, "workloads")
            assert [r[:3] for r in wl] == [["team-a/a", "eu", "dispatched"], ["team-a/b", "-", "offered"]]
            assert _text(app, "explain").startswith("dispatched to eu (admitted there")
            app.query_one("#workloads", DataTable).focus()
            await pilot.press("down")
            await pilot.pause()
            assert _text(app, "explain").startswith("offered to eu, us; no worker admitted it yet")
            assert "\x1b" not in _text(app, "explain")
            await pilot.press("f")  # filter: only what runs on eu
            await pilot.pause()
            assert [r[0] for r in _cells(app, "workloads")] == ["team-a/a"]
            assert "filter: eu" in _text(app, "status")
            await pilot.press("f")
            await pilot.pause()
            assert len(_cells(app, "workloads")) == 2
            status = _text(app, "status")
            assert "hub 2s" in status or "hub 1s" in status
            assert "asia unreachable" in status
    asyncio.run(go())


def test_live_clusters_console_with_a_worker_away(tmp_path: Path) -> None:
    served = start_served_world(load_multicluster("multikueue"), speed=30, kubeconfig=str(tmp_path / "kubeconfig"))
    pool = ContextPool(str(served.kubeconfig), served.contexts, timeout=5)

    async def go() -> None:
        app = ClustersApp(lambda: cluster_reads(pool.refresh()), interval=0.5)
        async with app.run_test(size=(180, 40)) as pilot:
            await _until(pilot, lambda: sum(1 for r in _cells(app, "workloads") if r[2] == "dispatched") >= 3, 20)
            rows = {r[0]: r for r in _cells(app, "clusters")}
            assert set(rows) == {"manager", "us-central1", "europe-west4", "asia-southeast1"}
            assert all(r[1] == "yes" for r in rows.values())
            first = next(r for r in _cells(app, "workloads") if r[2] == "dispatched")
            assert first[3] == "admitted"
            served.set_worker_up("asia-southeast1", False)
            await _until(pilot, lambda: {r[0]: r for r in _cells(app, "clusters")}["asia-southeast1"][1] == "no", 20)
            rows = {r[0]: r for r in _cells(app, "clusters")}
            assert rows["europe-west4"][1] == "yes" and rows["manager"][1] == "yes"
            assert "asia-southeast1" in _text(app, "status") and "unreachable" in _text(app, "status")
            await _until(pilot, lambda: "asia-southeast1 ClientConnectionFailed"
                         in {r[0]: r for r in _cells(app, "clusters")}["manager"][6], 20)
    try:
        asyncio.run(go())
    finally:
        pool.close()
        served.stop()


def test_enter_opens_the_chosen_cluster_or_the_workloads_manager() -> None:
    async def go(table: str, downs: int) -> str | None:
        app = ClustersApp(lambda: _reads(), interval=60)
        async with app.run_test(size=(160, 40)) as pilot:
            await _until(pilot, lambda: app.refreshes >= 1)
            await pilot.pause()
            app.query_one(f"#{table}", DataTable).focus()
            for _ in range(downs):
                await pilot.press("down")
            await pilot.press("enter")
            await pilot.pause()
        return app.chosen_context
    assert asyncio.run(go("clusters", 1)) == "eu"
    assert asyncio.run(go("workloads", 1)) == "hub"  # holds go to the manager, where Kueue expects them
