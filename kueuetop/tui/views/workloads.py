"""Workloads: one row per Workload with its queue, state and Kueue's reason, position, GPUs."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, ClassVar

from kueuetop.kueue.actions import WORKLOAD, Target
from kueuetop.kueue.workload import Workload
from kueuetop.kueue.workload_state import Phase
from kueuetop.store import Store
from kueuetop.store import events as K
from kueuetop.tui.context import ViewContext
from kueuetop.tui.gpu_focus import nodes_of_workloads
from kueuetop.tui.messages import OpenWorkload, RunAction
from kueuetop.tui.views.base import TableView, scope_bindings
from kueuetop.views.eta_text import eta_cell, eta_sort, forecast_of
from kueuetop.views.forecast_report import awaits_checks
from kueuetop.views.rows import Row, age, cell
from kueuetop.views.workload_rows import QUEUED
from kueuetop.views.workload_rows import workload_row as build_workload_row

# Workload phase → the theme's state colour.
PHASE_COLOUR = {
    Phase.PENDING: "pending", Phase.BACKOFF: "pending", Phase.BLOCKED: "pending", Phase.GATED: "pending",
    Phase.ON_HOLD: "inactive", Phase.INACTIVE: "inactive", Phase.RESERVED: "pending",
    Phase.ADMITTED: "admitted", Phase.EVICTING: "evicted", Phase.FINISHED: "finished",
}


def workload_row(ctx: ViewContext, key: tuple[str, str], wl: Workload, now: float) -> Row:
    """The shared row (views/workload_rows.py), styled."""
    r = build_workload_row(ctx.store, key, wl, now)
    st, util = r.state, r.gpu_util
    checks = st.phase is Phase.RESERVED and awaits_checks(wl)
    forecast, wf = forecast_of(ctx.store, key) if st.phase in QUEUED or checks else (None, None)
    eta = eta_cell(wf, now, complete=forecast.complete, horizon=forecast.horizon) if forecast is not None else "-"
    if checks and wf is None:
        # Admitted when its admission checks pass; the forecast times only ProvisioningRequests'
        # on known node pools (admission/check_timing.py). The detail says which checks wait.
        eta = "checks"
    colour = ctx.state_style(PHASE_COLOUR.get(st.phase, ""))
    idle = st.phase is Phase.ADMITTED and util is not None and util < ctx.idle_below
    cells = (
        cell(wl.namespace), cell(wl.name), cell(wl.queue_name), cell(r.cluster_queue or "-"),
        cell(wl.effective_priority), cell(st.phase.value, colour), cell(st.reason or "-"),
        cell(r.position if r.position is not None else "-"), cell(",".join(r.flavors) or "-"),
        cell(age(r.wait)), cell(eta, ctx.state_style("evicted") if eta == "never" else ""),
        cell(f"{util:.0f}%{'!' if idle else ''}" if util is not None else "-",
                                ctx.state_style("evicted") if idle else ""),
        cell(r.evictions or "-"),
    )
    return Row(key, cells,
               sort={"name": wl.name, "namespace": wl.namespace, "age": -(wl.meta.creation or 0.0),
                     "status": st.phase.value, "priority": -wl.effective_priority, "position": r.position,
                     "lq": wl.queue_name, "cq": r.cluster_queue, "wait": r.wait, "eta": eta_sort(wf, now), "util": util, "evictions": r.evictions},
               labels=wl.meta.labels,
               state=f"{st.phase.value.lower()} {st.kueue_status.lower()} {st.report_state.lower()}")


def workload_rows(ctx: ViewContext) -> list[Row]:
    now = ctx.now()
    out = []
    for key, wl in ctx.store.objects(K.WORKLOADS).items():
        if not isinstance(wl, Workload) or (ctx.namespace and wl.namespace != ctx.namespace):
            continue
        out.append(workload_row(ctx, key, wl, now))
    return out


def workload_keys_for(store: Store, changes: Mapping[str, set[Any]]) -> set[Hashable]:
    """Workloads whose row a store change may alter: the workload itself, those of a changed
    LocalQueue (its ClusterQueue), of a ClusterQueue with new queue positions, of a changed pod
    or GPU sample (GPU%)."""
    keys: set[Hashable] = set(changes.get(K.WORKLOADS, ()))
    for ns, name in changes.get(K.LOCAL_QUEUES, ()):
        keys |= store.workloads_in_local_queue(ns, name)
    for cq in changes.get(K.POSITIONS, ()):
        keys |= store.workloads_in_cluster_queue(cq)
    keys |= changes.get(K.FORECAST, set())
    for pod in changes.get(K.PODS, ()):
        if (wl := store.workload_of_pod(pod)) is not None:
            keys.add(wl)
    if gpus := changes.get(K.GPUS):
        samples = store.gpus()
        for gkey in gpus:
            s = samples.get(gkey)  # a GPU that went away: its workload's pods change too
            if s is not None and s.pod and (wl := store.workload_of_pod((s.namespace, s.pod))) is not None:
                keys.add(wl)
    return keys


class WorkloadsView(TableView):
    VIEW = "workloads"
    TITLE = "Workloads"
    KINDS = frozenset({K.WORKLOADS, K.LOCAL_QUEUES, K.POSITIONS, K.GPUS, K.PODS, K.FORECAST})
    # ETA: the forecast's admission time for a pending workload, as a range.
    COLUMNS = ("NAMESPACE", "NAME", "LQ", "CQ", "PRIO", "STATE", "REASON", "POS", "FLAVORS", "WAIT",
               "ETA", "GPU%", "EVICT")
    # At 80 columns NAME, STATE and Kueue's reason stay; queue names and flavors go first.
    PRIORITIES = (1, 0, 5, 3, 4, 0, 1, 2, 5, 2, 1, 3, 4)
    MARKS = True
    SORT_KEYS = (*TableView.SORT_KEYS, "position", "priority", "eta")
    BINDINGS: ClassVar = scope_bindings("workloads")

    def build_rows(self) -> list[Row]:
        return workload_rows(self.ctx)

    def build_row(self, key: Hashable) -> Row | None:
        wl = self.ctx.store.get(K.WORKLOADS, key)  # type: ignore[arg-type]
        if not isinstance(wl, Workload) or (self.ctx.namespace and wl.namespace != self.ctx.namespace):
            return None
        return workload_row(self.ctx, key, wl, self.ctx.now())  # type: ignore[arg-type]

    def row_keys_for(self, changes: Mapping[str, set[Any]]) -> set[Hashable] | None:
        return workload_keys_for(self.ctx.store, changes)

    def position_focus(self) -> set[str]:
        """The ClusterQueues of the rows on screen (plus a screenful either side for scrolling)."""
        if not self.is_mounted:
            return set()
        table = self.table
        height = max(1, table.size.height)
        start = max(0, int(table.scroll_y) - height)
        cqs = set()
        rows = self.model.rows
        for rid in self.model.order[start: start + 3 * height]:
            row = rows.get(rid)
            if row is not None and row.sort.get("cq"):
                cqs.add(row.sort["cq"])
        return cqs

    def gpu_focus(self) -> set[str]:
        """The nodes of the workloads on screen: a budgeted GPU scrape reads them first."""
        if not self.is_mounted:
            return set()
        return nodes_of_workloads(self.ctx.store, self._keys_on_screen())  # type: ignore[arg-type]

    def raw_kind(self) -> str:
        return K.WORKLOADS

    def drill(self, row: Row) -> None:
        self.post_message(OpenWorkload(row.key))  # type: ignore[arg-type]

    def action_workload_explain(self) -> None:
        row = self.cursor_row()
        if row is not None:
            self.post_message(OpenWorkload(row.key))  # type: ignore[arg-type]

    def action_sort_position(self) -> None:
        self.sort_by("position")

    def action_sort_priority(self) -> None:
        self.sort_by("priority")

    def action_sort_eta(self) -> None:
        self.sort_by("eta")

    def action_workload_action(self, action: str) -> None:
        targets = [Target(WORKLOAD, r.key[1], r.key[0]) for r in self.selected()]  # type: ignore[index]
        self.post_message(RunAction(action, targets))
