"""Cohorts as a tree: each cohort with its pooled quota, its ClusterQueues under it, who borrows.

Cohorts exist implicitly (a ClusterQueue naming one) or as Cohort objects (with a parent); both
show up, child cohorts and member ClusterQueues indented under their parent. The quota columns
show the main resource (GPUs when any queue has them); under the table, the highlighted row's
pooled quota per flavor × resource and its loans: who borrows how much, and whose unused quota
that is.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from kueuetop.kueue.cluster_queue import ClusterQueue
from kueuetop.kueue.cohort import Cohort
from kueuetop.kueue.core import GPU_RESOURCE
from kueuetop.store import events as K
from kueuetop.tui.context import ViewContext
from kueuetop.tui.messages import JumpTo
from kueuetop.tui.quota_bar import quota_bar
from kueuetop.tui.views.base import TableView
from kueuetop.tui.views.queues_common import _fmt, _scale
from kueuetop.tui.virtual_table import VirtualTable
from kueuetop.views.cohort_pool import CohortPool, Loan, QuotaLine, cohort_pools, queue_lines, total_of
from kueuetop.views.rows import Row, cell
from kueuetop.views.safe_text import clean


def _inputs(ctx: ViewContext) -> tuple[list[ClusterQueue], dict[str, Cohort]]:
    cqs = [cq for cq in ctx.store.objects(K.CLUSTER_QUEUES).values() if isinstance(cq, ClusterQueue)]
    cohorts = {k[1]: co for k, co in ctx.store.objects(K.COHORTS).items() if isinstance(co, Cohort)}
    return cqs, cohorts


def main_resource(pools: dict[str, CohortPool]) -> str:
    resources = {res for p in pools.values() for _, res in p.lines}
    return GPU_RESOURCE if GPU_RESOURCE in resources or not resources else sorted(resources)[0]


def _amount(resource: str, value: int) -> str:
    return _fmt(resource)(value / _scale(resource))


def _quota_cells(ctx: ViewContext, q: QuotaLine, resource: str) -> tuple[Text, ...]:
    s = _scale(resource)
    bar = quota_bar(q.nominal / s, q.usage / s, 16, glyphs=ctx.glyphs, theme=ctx.theme, fmt=_fmt(resource))
    return (bar, cell(_amount(resource, q.borrowed) if q.borrowed else "-"),
            cell(_amount(resource, q.lendable) if q.lendable else "-"))


def cohort_rows(ctx: ViewContext) -> tuple[list[Row], str, list[ClusterQueue], dict[str, CohortPool]]:
    """The tree's rows, the resource their quota columns show, and the queues and pools they
    were built from (the pane under the table draws from the same)."""
    cqs, cohorts = _inputs(ctx)
    pools = cohort_pools(cqs, cohorts)
    res = main_resource(pools)
    by_name = {cq.name: cq for cq in cqs}
    parents = {name: (cohorts[name].parent if name in cohorts else "") for name in pools}
    children: dict[str, list[str]] = {}
    for name, parent in parents.items():
        children.setdefault(parent if parent in pools else "", []).append(name)
    out: list[Row] = []
    seen: set[str] = set()

    def walk(name: str, depth: int) -> None:
        if name in seen:  # a cycle in user objects must not hang the console
            return
        seen.add(name)
        pool = pools[name]
        members = [by_name[m] for m in pool.members if m in by_name]
        out.append(Row(("cohort", name), (
            cell(("  " * depth) + name), cell("cohort"), cell(parents.get(name) or "-"), cell(len(members)),
            *_quota_cells(ctx, pool.total(res), res),
            cell(sum(c.pending_workloads for c in members)), cell(sum(c.admitted_workloads for c in members)),
        ), sort={"order": len(out), "name": name}, state="cohort"))
        for child in sorted(children.get(name, [])):
            walk(child, depth + 1)
        for cq in sorted((by_name[m] for m in pool.members if by_name[m].cohort == name), key=lambda c: c.name):
            total = total_of(queue_lines(cq), res)
            out.append(Row(("cq", cq.name), (
                cell(("  " * (depth + 1)) + cq.name), cell("cq"), cell(name), cell("-"),
                *_quota_cells(ctx, total, res), cell(cq.pending_workloads), cell(cq.admitted_workloads),
            ), sort={"order": len(out), "name": cq.name}, labels=cq.meta.labels, state="clusterqueue"))

    for root in sorted(children.get("", [])):
        walk(root, 0)
    return out, res, cqs, pools


def loan_line(loan: Loan) -> Text:
    amount = _amount(loan.resource, loan.amount)
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(clean(loan.borrower), style="bold")
    line.append(f" borrows {amount} {clean(loan.resource)} of {clean(loan.flavor)}")
    if loan.lenders:
        line.append(" ← unused quota of ")
        line.append(", ".join(f"{clean(w)} ({_amount(loan.resource, n)})" for w, n in loan.lenders))
    return line


def pool_lines(ctx: ViewContext, lines: dict[tuple[str, str], QuotaLine], width: int, resource: str) -> list[Text]:
    """One bar per flavor of `resource` (the other resources would not fit under the table)."""
    lines = {fr: q for fr, q in lines.items() if fr[1] == resource}
    labels = {fr: f"{clean(fr[0])} {clean(fr[1])}" for fr in lines}
    label_w = max((len(v) for v in labels.values()), default=0)
    out = []
    for fr, q in sorted(lines.items()):
        s = _scale(fr[1])
        line = Text(labels[fr].ljust(label_w) + "  ", no_wrap=True)
        line.append_text(quota_bar(q.nominal / s, q.usage / s, max(8, width - label_w - 2), glyphs=ctx.glyphs,
                                   theme=ctx.theme, fmt=_fmt(fr[1])))
        out.append(line)
    return out


class CohortsView(TableView):
    VIEW = "cohorts"
    TITLE = "Cohorts"
    KINDS = frozenset({K.COHORTS, K.CLUSTER_QUEUES})
    COLUMNS = ("NAME", "KIND", "PARENT", "CQS", "QUOTA", "BORROWED", "LENDABLE", "PENDING", "ADMITTED")
    PRIORITIES = (0, 3, 2, 3, 0, 0, 1, 1, 1)
    DEFAULT_SORT = "order"  # tree order
    DEFAULT_CSS = """
    CohortsView > #cohort-pool { height: auto; max-height: 14; border-top: solid $panel; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield from super().compose()
        yield Static("", id="cohort-pool")

    def __init__(self, ctx: ViewContext, **kw: Any) -> None:
        super().__init__(ctx, **kw)
        self._resource = GPU_RESOURCE
        self._cqs: list[ClusterQueue] = []
        self._pools: dict[str, CohortPool] = {}

    def build_rows(self) -> list[Row]:
        rows, self._resource, self._cqs, self._pools = cohort_rows(self.ctx)
        return rows

    def raw_kind(self) -> str:
        return K.COHORTS

    def yaml_target(self, row: Row) -> tuple[str, Any]:
        kind, name = row.key  # type: ignore[misc]
        return (K.CLUSTER_QUEUES if kind == "cq" else K.COHORTS), name

    def drill(self, row: Row) -> None:
        kind, name = row.key  # type: ignore[misc]
        if kind == "cq":
            self.post_message(JumpTo("workloads", f"^{name}$|{name}"))
        else:
            self.post_message(JumpTo("clusterqueues", str(name)))

    def title_extra(self) -> list[str]:
        return [f"quota: {self._resource}"]

    def after_refresh(self) -> None:
        pane = self.query_one("#cohort-pool", Static)
        row = self.cursor_row()
        if row is None:
            pane.update("")
            return
        kind, name = row.key  # type: ignore[misc]
        cqs, pools = self._cqs, self._pools  # as the rows were built: a cursor move recomputes nothing
        width = max(20, self.size.width - 4)
        if kind == "cohort" and name in pools:
            pool = pools[name]
            head = Text(f"{name}: pooled quota of {len(pool.members)} ClusterQueues", style="bold")
            body = pool_lines(self.ctx, pool.lines, width, self._resource)
            loans = [loan_line(x) for x in pool.loans]
        else:
            cq = next((c for c in cqs if c.name == name), None)
            if cq is None:
                pane.update("")
                return
            head = Text(f"{name} in cohort {cq.cohort}", style="bold")
            body = pool_lines(self.ctx, queue_lines(cq), width, self._resource)
            pool = pools.get(cq.cohort)
            loans = [loan_line(x) for x in (pool.loans if pool else [])
                     if x.borrower == name or any(w == name for w, _ in x.lenders)]
        lines = [head, *(loans or [Text("nobody borrows", style="dim")]), *body]
        pane.update(Text("\n").join(lines))

    def on_virtual_table_row_highlighted(self, event: VirtualTable.RowHighlighted) -> None:
        self.after_refresh()
