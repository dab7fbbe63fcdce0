"""GPUs: the fleet heatmap (nodes × GPUs by pool), sized to the widget; `m` cycles the metric."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from kueuetop.store import events as K
from kueuetop.tui.heatmap import METRICS, fleet_heatmap, is_idle
from kueuetop.tui.views.base import View, scope_bindings
from kueuetop.tui.views.fleet import pools_map


class GpusView(View):
    VIEW = "gpus"
    TITLE = "GPUs"
    KINDS = frozenset({K.GPUS, K.NODES})
    BINDINGS: ClassVar = scope_bindings("gpus")
    can_focus = True
    DEFAULT_CSS = """
    GpusView > #heatmap { height: 1fr; padding: 0 1; }
    """

    def __init__(self, *a, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*a, **kw)
        self.metric = "util"
        self.aggregate = "mean"
        self.idle_only = False

    def compose(self) -> ComposeResult:
        yield Static(self.TITLE, classes="view-title")
        yield Static("", id="heatmap")

    def refresh_view(self) -> None:
        super().refresh_view()
        if not self.is_mounted:
            return
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
                           aggregate=self.aggregate, pool_of=pools_map(self.ctx), idle_below=self.ctx.idle_below)
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
