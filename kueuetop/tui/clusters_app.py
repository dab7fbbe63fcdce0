"""The console across contexts (`kueuetop --context a --context b`, `--all-contexts`,
`--demo multikueue`): a Clusters view (each cluster reachable or not, its Kueue API, GPUs,
pending / admitted, the manager's MultiKueueClusters), the manager's workloads with the cluster
MultiKueue placed each on and the worker copy's state, a filter by cluster, and the cross-cluster
explain of the highlighted workload. The status bar shows each cluster's data age.

Kept apart from the one-cluster console (tui/app.py): reads come from a `reader()` the caller
gives (live: a `sources.multi_context.ContextPool`, refreshed off the UI thread); rows come from
`views.clusters`. Read-only: actions stay in the one-cluster console, where Kueue expects them
(hold a workload on its manager's context).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Static

from kueuetop.views.clusters import (
    ClusterRead,
    Placement,
    cluster_reads,
    cluster_rows,
    explain_placement,
    placements,
)
from kueuetop.views.safe_text import clean

Reader = Callable[[], Sequence[ClusterRead]]


def _markup_safe(text: str) -> str:
    return clean(text).replace("[", r"\[")


class ClustersApp(App[int]):
    CSS = """
    #clusters { height: auto; max-height: 40%; }
    #workloads { height: 1fr; }
    #explain { height: auto; min-height: 2; padding: 0 1; }
    #status { height: 1; background: $panel; padding: 0 1; }
    """
    BINDINGS: ClassVar = [
        Binding("q", "quit", "Quit"),
        Binding("r", "refresh", "Refresh"),
        Binding("f", "cycle_filter", "Filter by cluster"),
        Binding("enter", "open_cluster", "Open cluster"),
        Binding("tab", "focus_next", "Next table", show=False),
    ]

    def __init__(self, reader: Reader, *, interval: float = 5.0, title: str = "clusters") -> None:
        super().__init__()
        self.reader = reader
        self.interval = interval
        self.title_text = title
        self.reads: list[ClusterRead] = []
        self.places: list[Placement] = []
        self.cluster_filter: str | None = None  # show only workloads placed on this cluster
        self._busy = threading.Lock()
        self.refreshes = 0
        self.chosen_context: str | None = None  # Enter: the one-cluster console for this context

    def compose(self) -> ComposeResult:
        yield Static(f"kueuetop · {_markup_safe(self.title_text)}", id="title")
        yield DataTable(id="clusters", cursor_type="row")
        yield DataTable(id="workloads", cursor_type="row")
        yield Static("", id="explain")
        yield Static("", id="status")
        yield Footer()

    def on_mount(self) -> None:
        ct = self.query_one("#clusters", DataTable)
        ct.add_columns("CLUSTER", "REACHABLE", "KUEUE API", "GPUS USED/ALL", "PENDING", "ADMITTED", "MULTIKUEUE")
        wt = self.query_one("#workloads", DataTable)
        wt.add_columns("WORKLOAD (MANAGER)", "CLUSTER", "STATE", "WORKER COPY")
        self.action_refresh()
        self.set_interval(self.interval, self.action_refresh)

    # ------------------------------------------------------------------ reading
    def action_refresh(self) -> None:
        if not self._busy.acquire(blocking=False):
            return  # a read is under way: one at a time
        threading.Thread(target=self._read, name="kueuetop-clusters-read", daemon=True).start()

    def _read(self) -> None:
        try:
            try:
                reads = list(self.reader())
            except Exception as exc:  # the reader itself failed: say so, keep the last rows
                self.call_from_thread(self._say, f"cannot read the clusters: {type(exc).__name__}: {exc}")
                return
            self.call_from_thread(self.show, reads)
        finally:
            self._busy.release()

    def _say(self, text: str) -> None:
        self.query_one("#status", Static).update(_markup_safe(text))

    # ------------------------------------------------------------------ drawing
    def show(self, reads: Sequence[ClusterRead]) -> None:
        self.reads = list(reads)
        self.places = placements(self.reads)
        self.refreshes += 1
        ct = self.query_one("#clusters", DataTable)
        ct.clear()
        for r in cluster_rows(self.reads):
            mk = ", ".join(f"{n} {'Active' if v['active'] else (v['reason'] or 'inactive')}"
                           for n, v in sorted(r["multiKueueClusters"].items())) or "-"
            if r["reachable"] or r.get("gpus") is not None:
                gpus = f"{r.get('gpusAllocated', 0)}/{r.get('gpus', 0)}"
                cells = [r["context"], "yes" if r["reachable"] else "no", r.get("kueueApi") or "?", gpus,
                         str(r.get("pending", "")), str(r.get("admitted", "")), mk]
            else:
                cells = [r["context"], "no", "-", "-", "-", "-", r["error"] or "unreachable"]
            ct.add_row(*[_markup_safe(str(c)) for c in cells], key=r["context"])
        self._fill_workloads()
        ages = []
        for r in self.reads:
            if r.error and r.age is None:
                ages.append(f"{r.context} unreachable")
            elif r.error:
                ages.append(f"{r.context} {r.age:.0f}s old (unreachable)")
            else:
                ages.append(f"{r.context} {r.age or 0:.0f}s")
        flt = f" · filter: {self.cluster_filter}" if self.cluster_filter else ""
        self._say("data age: " + " · ".join(ages) + flt)

    def _visible(self) -> list[Placement]:
        return [p for p in self.places if self.cluster_filter is None or p.cluster == self.cluster_filter]

    def _fill_workloads(self) -> None:
        wt = self.query_one("#workloads", DataTable)
        wt.clear()
        for p in self._visible():
            copy = p.copies.get(p.cluster, "") if p.cluster else ", ".join(f"{w}: {s}" for w, s in p.copies.items())
            wt.add_row(*[_markup_safe(c) for c in (f"{p.namespace}/{p.name}", p.cluster or "-", p.state, copy)],
                       key=f"{p.manager}/{p.namespace}/{p.name}")
        self._explain_row(wt.cursor_row)

    def _explain_row(self, row: int) -> None:
        visible = self._visible()
        text = explain_placement(visible[row]) if 0 <= row < len(visible) else ""
        self.query_one("#explain", Static).update(_markup_safe(text))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        # Enter on a table row arrives here (the table's own binding), not as the app's binding.
        self.action_open_cluster()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "workloads":
            self._explain_row(event.cursor_row)

    def action_open_cluster(self) -> None:
        """Enter on a cluster: its own console (all views, actions with that cluster's RBAC and
        read-only setting); on a workload: its manager's, where Kueue expects holds and requeues."""
        focused = self.focused
        if not isinstance(focused, DataTable) or focused.row_count == 0:
            return
        if focused.id == "clusters":
            rows = cluster_rows(self.reads)
            if 0 <= focused.cursor_row < len(rows):
                self.chosen_context = rows[focused.cursor_row]["context"]
        else:
            visible = self._visible()
            if 0 <= focused.cursor_row < len(visible):
                self.chosen_context = visible[focused.cursor_row].manager
        if self.chosen_context is not None:
            self.exit(0)

    def action_cycle_filter(self) -> None:
        """No filter → each cluster a workload was placed on → no filter."""
        clusters = sorted({p.cluster for p in self.places if p.cluster})
        options: list[str | None] = [None, *clusters]
        at = options.index(self.cluster_filter) if self.cluster_filter in options else 0
        self.cluster_filter = options[(at + 1) % len(options)]
        self.show(self.reads)


def run_clusters_console(kubeconfig: str | None, contexts: Sequence[str], *, interval: float = 5.0,
                         title: str = "", mouse: bool = True,
                         open_single: Callable[[str], int] | None = None) -> int:
    """The live console over several contexts until the user quits; Enter on a cluster runs
    `open_single(context)` (the one-cluster console) and comes back here when it ends."""
    from kueuetop.sources.multi_context import ContextPool

    pool = ContextPool(kubeconfig, contexts, timeout=10.0)
    try:
        while True:
            # A short wait: a cluster that answers slowly keeps its last rows; the others show now.
            app = ClustersApp(lambda: cluster_reads(pool.refresh(wait=2.0)), interval=interval,
                              title=title or ", ".join(contexts))
            code = app.run(mouse=mouse)
            if app.chosen_context is None or open_single is None:
                return int(code or 0)
            open_single(app.chosen_context)
    finally:
        pool.close()
