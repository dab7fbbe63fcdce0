"""ClusterQueues: cohort, strategy, pending/reserving/admitted, active or stopped, quota bars.

Under the table, the highlighted queue's quota: one bar per flavor × resource.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from kueuetop.actions.plan import Target
from kueuetop.kueue.cluster_queue import ClusterQueue
from kueuetop.store import events as K
from kueuetop.tui.context import ViewContext
from kueuetop.tui.rows import Row, cell
from kueuetop.tui.views.base import TableView, scope_bindings
from kueuetop.tui.views.queues_common import (
    compact_bars,
    main_resource,
    queue_status,
    quota_lines,
    status_cell,
)
from kueuetop.tui.virtual_table import VirtualTable


def cluster_queue_rows(ctx: ViewContext) -> list[Row]:
    out = []
    for key, cq in ctx.store.objects(K.CLUSTER_QUEUES).items():
        if not isinstance(cq, ClusterQueue):
            continue
        word, colour = queue_status(cq.stop_policy, cq.conditions)
        res = main_resource(cq)
        out.append(Row(key[1], (
            cell(cq.name), cell(cq.cohort or "-"), cell(cq.queueing_strategy), cell(cq.pending_workloads),
            cell(cq.reserving_workloads), cell(cq.admitted_workloads), status_cell(word, ctx.state_style(colour)),
            cell(res.split("/")[-1] if res else "-"), compact_bars(ctx, cq),
        ), sort={"name": cq.name, "status": word, "cohort": cq.cohort, "pending": -cq.pending_workloads,
                 "admitted": -cq.admitted_workloads, "namespace": ""},
            labels=cq.meta.labels, state=word.lower()))
    return out


class ClusterQueuesView(TableView):
    VIEW = "clusterqueues"
    TITLE = "ClusterQueues"
    KINDS = frozenset({K.CLUSTER_QUEUES})
    COLUMNS = ("NAME", "COHORT", "STRATEGY", "PENDING", "RESERVING", "ADMITTED", "STATUS", "RESOURCE", "QUOTA")
    MARKS = True
    BINDINGS: ClassVar = scope_bindings("clusterqueues")
    DEFAULT_CSS = """
    ClusterQueuesView > #cq-quota { height: auto; max-height: 12; border-top: solid $panel; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield from super().compose()
        yield Static("", id="cq-quota")

    def build_rows(self) -> list[Row]:
        return cluster_queue_rows(self.ctx)

    def raw_kind(self) -> str:
        return K.CLUSTER_QUEUES

    def after_refresh(self) -> None:
        row = self.cursor_row()
        cq = self.ctx.store.get(K.CLUSTER_QUEUES, ("", str(row.key))) if row else None
        pane = self.query_one("#cq-quota", Static)
        if not isinstance(cq, ClusterQueue):
            pane.update("")
            return
        lines = quota_lines(self.ctx, cq, max(20, self.size.width - 4))
        head = Text(f"{cq.name} quota", style="bold")
        pane.update(Text("\n").join([head, *lines]) if lines else head)

    def on_virtual_table_row_highlighted(self, event: VirtualTable.RowHighlighted) -> None:
        self.after_refresh()

    def drill(self, row: Row) -> None:
        self.kapp.jump_to("workloads", f"^{row.key}$|{row.key}")

    def action_queue_action(self, action: str) -> None:
        targets = [Target("clusterqueue", str(r.key)) for r in self.selected()]
        self.kapp.start_actions(action, targets)
