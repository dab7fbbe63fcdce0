"""The console across contexts against `sim serve multikueue`, driven with Pilot and checked with
the real `kubernetes` client: every cluster's workloads (`:wl`: the cluster as a column, `/`
filter, `:cluster`, capital-letter sorts), the GPU heatmap grouped by cluster (`:gpu`), and a
hold asked for on a worker's copy that goes to the manager (preview, confirmation, journal),
after which MultiKueue removes the copy; a read-only context sends nothing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from kueuetop.actions.audit import read_audit
from kueuetop.sim.scenarios.multicluster import load_multicluster
from kueuetop.sim.serve_world import ServedWorld, start_served_world
from kueuetop.sources.multi_context import ContextPool
from kueuetop.tui.clusters_app import ClustersApp, pool_client_for
from kueuetop.tui.screens import ConfirmScreen
from kueuetop.views.cluster_workloads import COPY, MANAGER
from kueuetop.views.clusters import cluster_reads
from tests.tui.test_clusters_console import _cells, _text, _until

KUEUE, V2 = "kueue.x-k8s.io", "v1beta2"
WORKERS = ("us-central1", "europe-west4", "asia-southeast1")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServedWorld]:
    s = start_served_world(load_multicluster("multikueue"), speed=30, kubeconfig=str(tmp_path / "kubeconfig"))
    assert s.caught_up.wait(30)
    yield s
    s.stop()


def _workloads(served: ServedWorld, context: str) -> dict[str, dict[str, Any]]:
    api = config.new_client_from_config(config_file=str(served.kubeconfig), context=context)
    try:
        items = client.CustomObjectsApi(api).list_cluster_custom_object(KUEUE, V2, "workloads")["items"]
    finally:
        api.close()
    return {o["metadata"]["name"]: o for o in items}


async def _command(pilot: Pilot[int], text: str) -> None:
    await pilot.press("colon", *text, "enter")
    await pilot.pause()


def _app(served: ServedWorld, pool: ContextPool, **kw: Any) -> ClustersApp:
    return ClustersApp(lambda: cluster_reads(pool.refresh()), interval=0.5, client_for=pool_client_for(pool), **kw)


def _copy_row(app: ClustersApp) -> tuple[int, Any]:
    """The first worker copy of a dispatched manager workload in the `:wl` table."""
    for i, w in enumerate(app.shown):
        if w.role == COPY and w.act_on == "manager" and w.state == "Admitted":
            return i, w
    raise AssertionError("no admitted worker copy shown")


def test_workloads_of_every_cluster_filter_sort_and_hold_at_the_manager(served: ServedWorld) -> None:
    pool = ContextPool(str(served.kubeconfig), served.contexts, timeout=5)
    held: dict[str, Any] = {}

    async def go() -> None:
        app = _app(served, pool)
        async with app.run_test(size=(200, 50)) as pilot:
            await _until(pilot, lambda: any(w.role == MANAGER and w.dispatched for w in app.items)
                         and any(w.role == COPY and w.state == "Admitted" for w in app.items), 30)
            await _command(pilot, "wl")
            assert app.pane == "allwl"
            rows = _cells(app, "allwl")
            assert {r[0] for r in rows} >= {"manager"} and {r[0] for r in rows} & set(WORKERS)
            manager_row = next(r for r in rows if r[0] == "manager" and r[6] in WORKERS)
            assert manager_row[7] == "admitted"  # the chosen worker's copy
            i, copy = _copy_row(app)
            assert rows[i][6] == "copy of manager" and rows[i][0] == copy.cluster
            # `:cluster X`: X's own workloads and the manager's dispatched there.
            await _command(pilot, f"cluster {copy.cluster}")
            assert {r[0] for r in _cells(app, "allwl")} == {copy.cluster, "manager"}
            assert all(r[0] == copy.cluster or r[6] == copy.cluster for r in _cells(app, "allwl"))
            await _command(pilot, "cluster")
            # `/NAME`: that workload on the manager and on its worker.
            await pilot.press("slash", *copy.name, "enter")
            await pilot.pause()
            assert sorted(r[0] for r in _cells(app, "allwl")) == sorted(["manager", copy.cluster])
            assert f"/{copy.name}" in _text(app, "status")
            # Sorted by cluster already: `C` sorts the other way, `C` again back (a busy machine
            # may draw each a frame or two later).
            first = _cells(app, "allwl")[0][0]
            await pilot.press("C")
            await _until(pilot, lambda: _cells(app, "allwl")[0][0] != first)
            await pilot.press("C")
            await _until(pilot, lambda: _cells(app, "allwl")[0][0] == first)
            # Hold on the worker's copy: it goes to the manager's Workload, where Kueue expects it.
            # A refresh may reorder the rows between finding the copy and the explain line
            # following the cursor: the cursor is put on the copy again until the line shows it.
            def on_copy() -> bool:
                i, _ = _copy_row(app)
                table = app.query_one("#allwl", DataTable)
                if table.cursor_row != i:
                    table.move_cursor(row=i)
                return "acting on the manager's Workload (context manager)" in _text(app, "explain")

            await _until(pilot, on_copy, 20)
            _, copy = _copy_row(app)
            await pilot.press("h")
            await _until(pilot, lambda: isinstance(app.screen, ConfirmScreen), 20)
            body = " ".join(str(s.render()) for s in app.screen.query(Static))
            assert "hold" in body and copy.name in body and "context manager" in body
            await pilot.press("y")
            await _until(pilot, lambda: app.last_action.startswith("hold: "), 20)
            assert "fail" not in app.last_action and "refused" not in app.last_action, app.last_action
            held.update(name=copy.name, worker=copy.cluster)
            for r in app._runners.values():
                assert r.idle.wait(10)

    try:
        asyncio.run(go())
    finally:
        pool.close()
    on_manager = _workloads(served, "manager")[held["name"]]
    assert on_manager["spec"]["active"] is False
    # MultiKueue removes the copy once the manager's Workload lost its reservation.
    deadline = asyncio.run(_gone(served, held["name"], held["worker"]))
    assert deadline, f"the copy of {held['name']} is still on {held['worker']}"
    audit = [a for a in read_audit() if a.get("action") == "hold" and a.get("entry") == "outcome"]
    assert audit and audit[-1]["result"] == "ok" and audit[-1]["context"] == "manager"
    assert held["name"] in audit[-1]["target"]


async def _gone(served: ServedWorld, name: str, worker: str, timeout: float = 20.0) -> bool:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if name not in await asyncio.to_thread(_workloads, served, worker):
            return True
        await asyncio.sleep(0.2)
    return False


def test_a_read_only_context_sends_nothing_and_read_only_hides_preempt(served: ServedWorld) -> None:
    pool = ContextPool(str(served.kubeconfig), served.contexts, timeout=5)
    seen: dict[str, Any] = {}

    async def go() -> None:
        app = _app(served, pool, read_only_contexts={"manager"})
        async with app.run_test(size=(200, 50)) as pilot:
            await _until(pilot, lambda: any(w.role == COPY and w.state == "Admitted" for w in app.items), 30)
            await _command(pilot, "wl")
            i, copy = _copy_row(app)
            app.query_one("#allwl", DataTable).move_cursor(row=i)
            await pilot.press("h")
            await pilot.pause()
            assert not isinstance(app.screen, ConfirmScreen)
            assert app.last_action == "hold: read-only (manager), nothing sent"
            assert "read-only: manager" in _text(app, "status")
            seen["name"] = copy.name
            assert app.check_action("workload_action", ("preempt",)) is True  # only manager is read-only
        every = _app(served, pool, read_only=True)
        async with every.run_test(size=(200, 50)) as pilot:
            await pilot.pause()
            assert every.check_action("workload_action", ("preempt",)) is False
            assert every.check_action("workload_action", ("hold",)) is True  # shown; refused when asked

    try:
        asyncio.run(go())
    finally:
        pool.close()
    assert _workloads(served, "manager")[seen["name"]]["spec"].get("active", True) is True
    assert not [a for a in read_audit() if a.get("action") == "hold"]


def test_gpu_heatmap_grouped_by_cluster(served: ServedWorld) -> None:
    pool = ContextPool(str(served.kubeconfig), served.contexts, timeout=5, gpus=True)

    async def go() -> None:
        app = _app(served, pool)
        async with app.run_test(size=(160, 50)) as pilot:
            await _until(pilot, lambda: sum(1 for r in app.reads if r.gpus) == len(WORKERS), 30)
            await _command(pilot, "gpu")
            assert app.pane == "heatmap"
            await _until(pilot, lambda: all(w in _text(app, "heatmap") for w in WORKERS), 10)
            text = _text(app, "heatmap")
            # One group per worker, named cluster · pool; the manager has no GPU nodes.
            heads = [line for line in text.splitlines() if " · " in line]
            assert {h.split(" · ")[0].strip() for h in heads} == set(WORKERS)
            await _command(pilot, "cluster europe-west4")
            await _until(pilot, lambda: "us-central1" not in _text(app, "heatmap"), 10)
            assert "europe-west4" in _text(app, "heatmap")
    try:
        asyncio.run(go())
    finally:
        pool.close()


def test_commands_enter_on_a_copy_and_escape() -> None:
    """Without a cluster: `:` commands with a bad name say so, Enter on a worker's copy opens its
    manager's console, a copy whose manager is not shown refuses an action, `esc` clears filters."""
    from tests.views.test_cluster_workloads import _with_docs

    async def go(reads: list[Any], keys_after: tuple[str, ...], on_eu: set[str]) -> ClustersApp:
        app = ClustersApp(lambda: reads, interval=60)
        async with app.run_test(size=(200, 40)) as pilot:
            await _until(pilot, lambda: app.refreshes >= 1)
            await _command(pilot, "wl")
            await _command(pilot, "cluster nowhere")
            assert app.cluster_filter is None
            await _command(pilot, "cluster eu")
            assert app.cluster_filter == "eu" and "filter: eu" in _text(app, "status")
            await pilot.press("escape")
            await pilot.pause()
            assert app.cluster_filter is None and "filter:" not in _text(app, "status")
            await _command(pilot, "cluster eu")
            assert {w.cluster for w in app.shown} == on_eu  # eu's own, and what was dispatched there
            await _command(pilot, "bogus")
            i = next(i for i, w in enumerate(app.shown) if w.role == COPY)
            app.query_one("#allwl", DataTable).move_cursor(row=i)
            await pilot.pause()
            await pilot.press(*keys_after)
            await pilot.pause()
        return app

    app = asyncio.run(go(_with_docs(), ("enter",), {"eu", "hub"}))
    assert app.chosen_context == "hub"  # Enter on eu's copy: the manager's console
    orphan = asyncio.run(go(_with_docs()[1:], ("h",), {"eu"}))
    assert orphan.last_action == "hold: refused, nothing sent" and orphan.chosen_context is None


def test_rbac_is_each_clusters_own(served: ServedWorld) -> None:
    """The manager served again with authentication, its context holding a viewer's token: a
    hold asked for there is refused by the manager's own SelfSubjectAccessReview and journaled as
    refused, nothing sent; the workers (no authentication: admin) keep their data."""
    from kueuetop.sim.apiserver.server import ApiServer
    from kueuetop.sim.serve import cluster_hooks

    viewer = "viewer-token-for-the-manager-0123456789"
    old = served.servers["manager"]
    parts = served.world.parts["manager"]
    old.stop()
    served.servers["manager"] = ApiServer(parts.cluster.store, port=old.port, hooks=cluster_hooks(parts),
                                          tokens={viewer: {"user": "bob", "role": "viewer"}},
                                          kueue_versions=old.served.kueue).start()
    kc = yaml.safe_load(served.kubeconfig.read_text())
    next(u for u in kc["users"] if u["name"] == "manager")["user"] = {"token": viewer}
    served.kubeconfig.write_text(yaml.safe_dump(kc))
    pool = ContextPool(str(served.kubeconfig), served.contexts, timeout=5)
    seen: dict[str, Any] = {}

    async def go() -> None:
        app = _app(served, pool)
        async with app.run_test(size=(200, 50)) as pilot:
            await _until(pilot, lambda: any(w.role == COPY and w.state == "Admitted" for w in app.items), 30)
            await _command(pilot, "wl")
            i, copy = _copy_row(app)
            app.query_one("#allwl", DataTable).move_cursor(row=i)
            await pilot.press("h")
            await _until(pilot, lambda: app.last_action == "hold: forbidden", 20)
            assert not isinstance(app.screen, ConfirmScreen)
            seen["name"] = copy.name
            rows = {r[0]: r for r in _cells(app, "clusters")}
            assert all(rows[c][1] == "yes" for c in ("manager", *WORKERS))
    try:
        asyncio.run(go())
    finally:
        pool.close()
    refused = [a for a in read_audit() if a.get("action") == "hold"]
    assert [a["result"] for a in refused] == ["refused"] and refused[0]["error"] == "forbidden"
    assert refused[0]["context"] == "manager" and seen["name"] in refused[0]["target"]
    assert viewer not in json.dumps(refused)
