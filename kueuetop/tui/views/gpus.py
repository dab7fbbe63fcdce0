"""GPUs: the fleet heatmap (nodes × GPUs by pool), sized to the widget; `m` cycles the metric.

Under it, from the store's history: the utilization distribution over time (time × bucket, the
GPU dashboard's heatmap), GPUs by model over time, and pending/admitted workloads over time of
one ClusterQueue (the busiest by default; `c` cycles through them).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Static

from kueuetop.store import events as K
from kueuetop.tui.charts import gpus_by_model, queue_workloads
from kueuetop.tui.heatmap import METRICS, distribution_heatmap, fleet_heatmap, is_idle
from kueuetop.tui.views.base import View, scope_bindings
from kueuetop.tui.views.fleet import pools_map


class GpusView(View):
    VIEW = "gpus"
    TITLE = "GPUs"
    KINDS = frozenset({K.GPUS, K.NODES, K.CLUSTER_QUEUES})
    BINDINGS: ClassVar = scope_bindings("gpus")
    can_focus = True
    DEFAULT_CSS = """
    GpusView > #heatmap { height: 3fr; padding: 0 1; }
    GpusView > #gpu-charts { height: 2fr; min-height: 8; border-top: solid $panel; }
    GpusView > #gpu-charts > Static { width: 1fr; height: 1fr; padding: 0 1; }
    """

    def __init__(self, *a, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*a, **kw)
        self.metric = "util"
        self.aggregate = "mean"
        self.idle_only = False
        self.chart_queue: str | None = None  # None: the ClusterQueue with the most pending work

    def compose(self) -> ComposeResult:
        yield Static(self.TITLE, classes="view-title")
        yield Static("", id="heatmap")
        with Horizontal(id="gpu-charts"):
            yield Static("", id="util-distribution")
            yield Static("", id="gpus-by-model")
            yield Static("", id="queue-chart")

    def refresh_view(self) -> None:
        super().refresh_view()
        if not self.is_mounted:
            return
        self._refresh_charts()
        body = self.query_one("#heatmap", Static)
        samples = list(self.ctx.store.gpus().values())
        if self.idle_only:
            samples = [s for s in samples if is_idle(s, self.ctx.idle_below)]
        title = f"{self.TITLE}  metric: {METRICS[self.metric].label}  cells: {self.aggregate}" + (
            "  idle only" if self.idle_only else "") + f"  ({len(samples)} GPUs)"
        self.query_one(".view-title", Static).update(Text(title))
        if not samples:
            body.update(Text("no GPU samples: no GPU metrics source is running"
                             if not self.ctx.store.gpus() else "no GPU matches"))
            return
        w = max(10, body.size.width - 2 or self.size.width - 2)
        h = max(3, body.size.height or self.size.height - 1)
        hm = fleet_heatmap(samples, w, h, theme=self.ctx.theme, glyphs=self.ctx.glyphs, metric=self.metric,
                           aggregate=self.aggregate, pool_of=pools_map(self.ctx), idle_below=self.ctx.idle_below,
                           now=self.ctx.now())
        body.update(hm.text)

    def action_heatmap_metric(self) -> None:
        names = list(METRICS)
        self.metric = names[(names.index(self.metric) + 1) % len(names)]
        self.refresh_view()

    def action_heatmap_aggregate(self) -> None:
        self.aggregate = "max" if self.aggregate == "mean" else "mean"
        self.refresh_view()

    def action_heatmap_idle(self) -> None:
        self.idle_only = not self.idle_only
        self.refresh_view()

    def action_heatmap_queue(self) -> None:
        names = sorted(k[1] for k in self.ctx.store.objects(K.CLUSTER_QUEUES))
        if not names:
            return
        current = self.shown_queue()
        self.chart_queue = names[(names.index(current) + 1) % len(names)] if current in names else names[0]
        self.refresh_view()

    # ------------------------------------------------------------ charts from history
    def shown_queue(self) -> str | None:
        store = self.ctx.store
        names = [k[1] for k in store.objects(K.CLUSTER_QUEUES)]
        if self.chart_queue in names:
            return self.chart_queue
        if not names:
            return None

        def busy(name: str) -> tuple[int, int, str]:
            last = store.queue_history.last(name)  # not the whole ring of every queue
            return (-last[1].pending, -last[1].admitted, name) if last else (0, 0, name)

        return min(names, key=busy)

    def _refresh_charts(self) -> None:
        store, th, gl = self.ctx.store, self.ctx.theme, self.ctx.glyphs
        dist = self.query_one("#util-distribution", Static)
        w, h = dist.size.width, dist.size.height
        frames = [(t, f.counts) for t, f in store.gpu_util_history.points()]
        dist.update(distribution_heatmap(frames, max(0, w), max(0, h), theme=th, glyphs=gl,
                                         label="GPU util over time"))
        models = self.query_one("#gpus-by-model", Static)
        history = {m: store.gpu_model_history.get(m) for m in store.gpu_model_history.keys()}  # noqa: SIM118 - a Series, not a dict
        models.update(gpus_by_model(history, models.size.width, models.size.height, theme=th,
                                    glyphs=gl))
        q = self.query_one("#queue-chart", Static)
        cq = self.shown_queue()
        points = store.queue_history.get(cq) if cq else []
        q.update(queue_workloads([(t, c.pending) for t, c in points], [(t, c.admitted) for t, c in points],
                                 cq or "-", q.size.width, q.size.height, theme=th, glyphs=gl))
