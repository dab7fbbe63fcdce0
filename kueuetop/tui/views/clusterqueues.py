"""ClusterQueues: cohort, strategy, pending/reserving/admitted, active or stopped, quota bars.

Under the table, the highlighted queue's quota (one bar per flavor × resource) and its pending
and admitted workloads over time. Side by side from 120 columns; narrower, `c` switches the pane
between the two.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Static

from kueuetop.kueue.actions import Target
from kueuetop.kueue.cluster_queue import ClusterQueue
from kueuetop.store import events as K
from kueuetop.tui.charts import queue_workloads
from kueuetop.tui.context import ViewContext
from kueuetop.tui.messages import JumpTo, RunAction
from kueuetop.tui.views.base import TableView, scope_bindings
from kueuetop.tui.views.queues_common import (
    compact_bars,
    main_resource,
    quota_lines,
    status_cell,
)
from kueuetop.tui.virtual_table import VirtualTable
from kueuetop.views.queue_rows import cluster_queue_row
from kueuetop.views.rows import Row, cell


def cluster_queue_rows(ctx: ViewContext) -> list[Row]:
    out = []
    for key, cq in ctx.store.objects(K.CLUSTER_QUEUES).items():
        if not isinstance(cq, ClusterQueue):
            continue
        q = cluster_queue_row(cq)
        res = main_resource(cq)
        out.append(Row(key[1], (
            cell(q.name), cell(cq.cohort or "-"), cell(cq.queueing_strategy), cell(q.pending),
            cell(q.reserving), cell(q.admitted), status_cell(q.status, ctx.state_style(q.colour)),
            cell(res.split("/")[-1] if res else "-"), compact_bars(ctx, cq),
        ), sort={"name": q.name, "status": q.status, "cohort": cq.cohort, "pending": -q.pending,
                 "admitted": -q.admitted, "namespace": ""},
            labels=cq.meta.labels, state=q.status.lower()))
    return out


class ClusterQueuesView(TableView):
    VIEW = "clusterqueues"
    TITLE = "ClusterQueues"
    KINDS = frozenset({K.CLUSTER_QUEUES})
    COLUMNS = ("NAME", "COHORT", "STRATEGY", "PENDING", "RESERVING", "ADMITTED", "STATUS", "RESOURCE", "QUOTA")
    PRIORITIES = (0, 2, 4, 0, 3, 1, 0, 4, 2)
    MARKS = True
    BINDINGS: ClassVar = scope_bindings("clusterqueues")
    DEFAULT_CSS = """
    ClusterQueuesView > #cq-detail { height: 10; border-top: solid $panel; }
    ClusterQueuesView > #cq-detail > Static { width: 1fr; height: 1fr; padding: 0 1; }
    """
    SIDE_BY_SIDE = 120  # columns from which quota and history both fit

    def __init__(self, ctx: ViewContext, **kw: object) -> None:
        super().__init__(ctx, **kw)
        self.pane = "quota"  # what a narrow terminal shows under the table: "quota" or "history"

    def compose(self) -> ComposeResult:
        yield from super().compose()
        with Horizontal(id="cq-detail"):
            yield Static("", id="cq-quota")
            yield Static("", id="cq-history")

    def build_rows(self) -> list[Row]:
        return cluster_queue_rows(self.ctx)

    def raw_kind(self) -> str:
        return K.CLUSTER_QUEUES

    def after_refresh(self) -> None:
        row = self.cursor_row()
        cq = self.ctx.store.get(K.CLUSTER_QUEUES, ("", str(row.key))) if row else None
        quota, history = self.query_one("#cq-quota", Static), self.query_one("#cq-history", Static)
        both = self.size.width >= self.SIDE_BY_SIDE
        quota.display = both or self.pane == "quota"
        history.display = both or self.pane == "history"
        if not isinstance(cq, ClusterQueue):
            quota.update("")
            history.update("")
            return
        width = (self.size.width // 2 if both else self.size.width) - 4
        if quota.display:
            lines = quota_lines(self.ctx, cq, max(20, width))
            head = Text(f"{cq.name} quota", style="bold")
            quota.update(Text("\n").join([head, *lines]) if lines else head)
        if history.display:
            points = self.ctx.store.queue_history.get(cq.name)
            history.update(queue_workloads(
                [(t, c.pending) for t, c in points], [(t, c.admitted) for t, c in points], cq.name,
                max(0, width), max(0, history.size.height or 9), theme=self.ctx.theme, glyphs=self.ctx.glyphs))

    def action_pane_toggle(self) -> None:
        self.pane = "history" if self.pane == "quota" else "quota"
        self.after_refresh()

    def on_virtual_table_row_highlighted(self, event: VirtualTable.RowHighlighted) -> None:
        self.after_refresh()

    def drill(self, row: Row) -> None:
        self.post_message(JumpTo("workloads", f"^{row.key}$|{row.key}"))

    def action_queue_action(self, action: str) -> None:
        targets = [Target("clusterqueue", str(r.key)) for r in self.selected()]
        self.post_message(RunAction(action, targets))
