"""Cohorts as a tree flattened into rows: each cohort, its parent, and its ClusterQueues.

Cohorts exist implicitly (a ClusterQueue naming one) or as Cohort objects (with a parent);
both show up, indented under their parent so the hierarchy reads top to bottom.
"""

from __future__ import annotations

from kueuetop.kueue.cluster_queue import ClusterQueue
from kueuetop.kueue.cohort import Cohort
from kueuetop.store import events as K
from kueuetop.tui.context import ViewContext
from kueuetop.tui.rows import Row, cell
from kueuetop.tui.views.base import TableView


def cohort_rows(ctx: ViewContext) -> list[Row]:
    parents: dict[str, str] = {}
    for key, co in ctx.store.objects(K.COHORTS).items():
        if isinstance(co, Cohort):
            parents[key[1]] = co.parent
    members: dict[str, list[ClusterQueue]] = {}
    for cq in ctx.store.objects(K.CLUSTER_QUEUES).values():
        if isinstance(cq, ClusterQueue) and cq.cohort:
            members.setdefault(cq.cohort, []).append(cq)
            parents.setdefault(cq.cohort, "")
    children: dict[str, list[str]] = {}
    for name, parent in parents.items():
        children.setdefault(parent if parent in parents else "", []).append(name)
    out: list[Row] = []
    seen: set[str] = set()

    def walk(name: str, depth: int) -> None:
        if name in seen:  # a cycle in user objects must not hang the console
            return
        seen.add(name)
        cqs = sorted(members.get(name, []), key=lambda c: c.name)
        out.append(Row(name, (
            cell(("  " * depth) + name), cell(parents.get(name) or "-"), cell(len(cqs)),
            cell(",".join(c.name for c in cqs) or "-"),
            cell(sum(c.pending_workloads for c in cqs)), cell(sum(c.admitted_workloads for c in cqs)),
        ), sort={"order": len(out)}))
        for child in sorted(children.get(name, [])):
            walk(child, depth + 1)

    for root in sorted(children.get("", [])):
        walk(root, 0)
    return out


class CohortsView(TableView):
    VIEW = "cohorts"
    TITLE = "Cohorts"
    KINDS = frozenset({K.COHORTS, K.CLUSTER_QUEUES})
    COLUMNS = ("COHORT", "PARENT", "CQS", "CLUSTERQUEUES", "PENDING", "ADMITTED")
    DEFAULT_SORT = "order"  # tree order

    def build_rows(self) -> list[Row]:
        return cohort_rows(self.ctx)

    def raw_kind(self) -> str:
        return K.COHORTS

    def drill(self, row: Row) -> None:
        self.kapp.jump_to("clusterqueues", str(row.key))
