"""Charts in views, drawn from the store's history of the served refarch scenario.

GPUs view: the utilization distribution over time, GPUs by model over time, pending/admitted of a
ClusterQueue over time. Workload detail: each pod's GPUs with a utilization sparkline.
"""

from __future__ import annotations

from textual.pilot import Pilot

from kueuetop.kueue.workload import Workload
from kueuetop.store import Store
from kueuetop.store import events as K
from kueuetop.tui.glyphs import UNICODE
from kueuetop.tui.views.base import TableView
from kueuetop.tui.views.gpus import GpusView
from tests.tui.screen_text import screen_text
from tests.tui.test_app import make_app, run, until

from .conftest import Live


def _history_ready(store: Store) -> bool:
    # A few GPU writes (distribution frames), and queue counts recorded at least twice.
    return len(store.gpu_util_history) >= 3 and any(len(store.queue_history.get(k)) >= 2
                                                     for k in store.queue_history.keys())  # noqa: SIM118


def test_gpus_view_shows_distribution_models_and_queue_charts(live: Live) -> None:
    live.store.record_queue_history()
    app = make_app(live.store, live, initial_view="gpus")

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: _history_ready(live.store), 20), len(live.store.gpu_util_history)
        live.store.record_queue_history()
        app.refresh_all()
        assert await until(pilot, lambda: "GPU util over time" in screen_text(app), 10), screen_text(app)
        text = screen_text(app)
        # Distribution heatmap: bucket axis and time axis.
        assert "100%" in text and "0%" in text and "now" in text
        # GPUs by model: the scenario's models are the series labels.
        models = {s.model for s in live.store.gpus().values()}
        assert "GPUs by model" in text and models and all(m in text for m in models), models
        # Queue chart: the busiest ClusterQueue, pending and admitted series.
        view = app.main.query_one(GpusView)
        cq = view.shown_queue()
        assert cq and f"cq/{cq}" in text and "pending" in text and "admitted" in text
        await pilot.press("c")
        assert await until(pilot, lambda: view.shown_queue() != cq)
        assert await until(pilot, lambda: f"cq/{view.shown_queue()}" in screen_text(app))

    run(app, body)


def _with_gpus(store: Store) -> tuple[str, str] | None:
    for key, wl in sorted(store.objects(K.WORKLOADS).items()):
        if isinstance(wl, Workload) and any(len(store.gpu_history.get(g.key)) >= 2
                                            for g in store.gpus_of_workload(key)):
            return key
    return None


def test_workload_detail_has_gpu_sparklines(live: Live) -> None:
    app = make_app(live.store, live, initial_view="workloads")

    async def body(pilot: Pilot[int]) -> None:
        key = await until(pilot, lambda: _with_gpus(live.store), 20)
        assert key, "no workload with GPU history"
        tv = app.table_view()
        assert isinstance(tv, TableView)
        tv.set_filter(key[1])
        assert await until(pilot, lambda: (r := tv.cursor_row()) is not None and r.key == key)
        await pilot.press("enter")
        assert await until(pilot, lambda: "Pods and GPUs" in screen_text(app))
        lines = [line for line in screen_text(app).splitlines() if "    GPU " in line]
        assert lines and all("util" in line for line in lines)
        gpu_model = live.store.gpus_of_workload(key)[0].model
        assert any(gpu_model in line for line in lines)
        assert any(ch in "".join(lines) for ch in UNICODE.spark)

    run(app, body)
