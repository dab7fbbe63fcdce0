"""LocalQueues: namespace, ClusterQueue, pending/reserving/admitted, active or stopped."""

from __future__ import annotations

from typing import ClassVar

from kueuetop.kueue.actions import Target
from kueuetop.kueue.local_queue import LocalQueue
from kueuetop.store import events as K
from kueuetop.tui.context import ViewContext
from kueuetop.tui.messages import JumpTo, RunAction
from kueuetop.tui.views.base import TableView, scope_bindings
from kueuetop.tui.views.queues_common import status_cell
from kueuetop.views.eta_text import eta_cell, eta_sort, next_admissions
from kueuetop.views.queue_rows import local_queue_row
from kueuetop.views.rows import Row, cell


def local_queue_rows(ctx: ViewContext) -> list[Row]:
    out = []
    now = ctx.now()
    nexts = next_admissions(ctx.store)
    for key, lq in ctx.store.objects(K.LOCAL_QUEUES).items():
        if not isinstance(lq, LocalQueue) or (ctx.namespace and lq.namespace != ctx.namespace):
            continue
        q = local_queue_row(lq)
        out.append(Row(key, (
            cell(q.namespace), cell(q.name), cell(lq.cluster_queue), cell(q.pending),
            cell(q.reserving), cell(q.admitted), status_cell(q.status, ctx.state_style(q.colour)),
            cell(eta_cell(nexts[key], now) if key in nexts else "-"),
        ), sort={"name": q.name, "namespace": q.namespace, "status": q.status, "cq": lq.cluster_queue,
                 "eta": eta_sort(nexts.get(key), now)},
            labels=lq.meta.labels, state=q.status.lower()))
    return out


class LocalQueuesView(TableView):
    VIEW = "localqueues"
    TITLE = "LocalQueues"
    KINDS = frozenset({K.LOCAL_QUEUES, K.FORECAST})
    # NEXT ADMISSION: when the forecast admits this queue's first pending workload.
    COLUMNS = ("NAMESPACE", "NAME", "CLUSTERQUEUE", "PENDING", "RESERVING", "ADMITTED", "STATUS", "NEXT ADMISSION")
    PRIORITIES = (1, 0, 2, 0, 3, 1, 0, 1)
    MARKS = True
    BINDINGS: ClassVar = scope_bindings("localqueues")

    def build_rows(self) -> list[Row]:
        return local_queue_rows(self.ctx)

    def raw_kind(self) -> str:
        return K.LOCAL_QUEUES

    def drill(self, row: Row) -> None:
        ns, name = row.key  # type: ignore[misc]
        self.post_message(JumpTo("workloads", f"{ns} {name}"))

    def action_queue_action(self, action: str) -> None:
        targets = [Target("localqueue", r.key[1], r.key[0]) for r in self.selected()]  # type: ignore[index]
        self.post_message(RunAction(action, targets))
