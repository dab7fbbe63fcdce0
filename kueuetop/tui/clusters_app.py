"""The console across contexts (`kueuetop --context a --context b`, `--all-contexts`,
`--demo multikueue`): a Clusters view (each cluster reachable or not, its Kueue API, GPUs,
pending / admitted, the manager's MultiKueueClusters) above one of three panes, k9s style
(`:mk`, `:wl`, `:gpu`):

- MultiKueue placement: the manager's workloads with the cluster MultiKueue placed each on and
  the worker copy's state;
- every cluster's workloads, the cluster as a column, `/` filter and capital-letter sorts;
- the GPU heatmap of every cluster, grouped by cluster (then pool).

`f` (or `:cluster NAME`) keeps one cluster's workloads; the explain line says why the
highlighted workload runs where it does; the status bar shows each cluster's data age.

Actions (`h` hold, `u` resume, `r` requeue, `ctrl+k` preempt) go where Kueue expects them: to
the manager's Workload, MultiKueue then removing or updating the worker copies. Each goes
through the one-cluster console's runner (tui/action_flow.py: RBAC check, preview, confirmation,
journal) on a client of the cluster it goes to, with that cluster's RBAC; `--read-only` (every
cluster) or a read-only context refuses them, and hides the dangerous ones.

Kept apart from the one-cluster console (tui/app.py): reads come from a `reader()` the caller
gives (live: a `sources.multi_context.ContextPool`, refreshed off the UI thread); rows come from
`views.clusters` and `views.cluster_workloads`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import ContentSwitcher, DataTable, Footer, Input, Static

from kueuetop.kueue.actions import DANGEROUS, WORKLOAD, Target
from kueuetop.tui.action_flow import ActionRunner, Identity
from kueuetop.views.cluster_workloads import (
    COLUMNS,
    SORTS,
    CrossWorkload,
    action_place,
    cross_workloads,
    workload_rows,
)
from kueuetop.views.clusters import (
    ClusterRead,
    Placement,
    cluster_reads,
    cluster_rows,
    explain_placement,
    gpus_by_cluster,
    placements,
)
from kueuetop.views.safe_text import clean

Reader = Callable[[], Sequence[ClusterRead]]


@dataclass(frozen=True)
class ClusterClient:
    """What an action on one cluster needs: its API client, Kueue API version, who and where."""

    api: Any
    kueue_version: str
    identity: Identity


ClientFor = Callable[[str], "ClusterClient | None"]
PANES = {"mk": "placement", "placement": "placement", "multikueue": "placement",
         "wl": "allwl", "workloads": "allwl", "workload": "allwl",
         "gpu": "heatmap", "gpus": "heatmap", "heatmap": "heatmap"}
WORKLOAD_ACTIONS = {"hold": "hold", "resume": "resume", "requeue": "requeue", "preempt": "preempt"}


def _markup_safe(text: str) -> str:
    return clean(text).replace("[", r"\[")


class _Clock:
    """The runner reads `ctx.now()` for previews; this console has no ViewContext."""

    @staticmethod
    def now() -> float:
        import time

        return time.time()


class _ClusterHost:
    """The app as one cluster's ActionRunner sees it: that cluster's read-only setting, the
    app's notifications, screens and workers."""

    def __init__(self, app: ClustersApp, read_only: bool) -> None:
        self._app = app
        self.read_only = read_only
        self.ctx = _Clock()

    @property
    def _thread_id(self) -> int:
        return self._app._thread_id

    def notify(self, *args: Any, **kwargs: Any) -> None:
        self._app.notify(*args, **kwargs)

    def set_last_action(self, text: str, ok: bool | None) -> None:
        self._app.set_last_action(text, ok)

    def call_from_thread(self, callback: Any, *args: Any, **kwargs: Any) -> Any:
        return self._app.call_from_thread(callback, *args, **kwargs)

    def run_worker(self, work: Any, *args: Any, **kwargs: Any) -> Any:
        return self._app.run_worker(work, *args, **kwargs)

    def push_screen(self, screen: Any, callback: Any = None, *args: Any, **kwargs: Any) -> Any:
        return self._app.push_screen(screen, callback, *args, **kwargs)


class ClustersApp(App[int]):
    CSS = """
    #clusters { height: auto; max-height: 40%; }
    #panes { height: 1fr; }
    #workloads, #allwl { height: 1fr; }
    #heatmap { height: 1fr; }
    #explain { height: auto; min-height: 2; padding: 0 1; }
    .prompt { display: none; }
    .prompt.-shown { display: block; }
    #status { height: 1; background: $panel; padding: 0 1; }
    """
    BINDINGS: ClassVar = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+r", "refresh", "Refresh"),
        Binding("f", "cycle_filter", "Filter by cluster"),
        Binding("enter", "open_cluster", "Open cluster"),
        Binding("tab", "focus_next", "Next table", show=False),
        Binding("colon", "prompt('command')", "Command", show=False),
        Binding("slash", "prompt('filter')", "Filter", show=False),
        Binding("escape", "back", "Back", show=False),
        *(Binding(k, f"sort('{name}')", f"Sort by {name}", show=False) for k, name in SORTS.items()),
        Binding("h", "workload_action('hold')", "Hold"),
        Binding("u", "workload_action('resume')", "Resume"),
        Binding("r", "workload_action('requeue')", "Requeue"),
        Binding("ctrl+k", "workload_action('preempt')", "Preempt!"),
    ]

    def __init__(self, reader: Reader, *, interval: float = 5.0, title: str = "clusters",
                 client_for: ClientFor | None = None, read_only: bool = False,
                 read_only_contexts: Collection[str] = ()) -> None:
        super().__init__()
        self.reader = reader
        self.interval = interval
        self.title_text = title
        self.reads: list[ClusterRead] = []
        self.places: list[Placement] = []
        self.items: list[CrossWorkload] = []  # every cluster's workloads (`:wl`)
        self.shown: list[CrossWorkload] = []  # … as the `:wl` table shows them now
        self.cluster_filter: str | None = None  # show only workloads placed on this cluster
        self.text_filter = ""  # `/` over the `:wl` table
        self.sort: tuple[str, bool] = ("cluster", False)
        self.pane = "placement"
        self._busy = threading.Lock()
        self.refreshes = 0
        self.chosen_context: str | None = None  # Enter: the one-cluster console for this context
        self.client_for = client_for
        self.read_only = read_only
        self.read_only_contexts = frozenset(read_only_contexts)
        self._runners: dict[str, ActionRunner] = {}
        self._heatmap_theme: Any = None
        self.last_action = ""

    def compose(self) -> ComposeResult:
        yield Static(f"kueuetop · {_markup_safe(self.title_text)}", id="title")
        yield DataTable(id="clusters", cursor_type="row")
        yield Input(placeholder=":command  (mk, wl, gpu, cluster NAME, hold, resume, requeue, q)", id="command",
                    classes="prompt")
        yield Input(placeholder="/filter  regex · !inverse · state:pending", id="filter", classes="prompt")
        with ContentSwitcher(initial="placement", id="panes"):
            with Vertical(id="placement"):
                yield DataTable(id="workloads", cursor_type="row")
            yield DataTable(id="allwl", cursor_type="row")
            yield Static("", id="heatmap")
        yield Static("", id="explain")
        yield Static("", id="status")
        yield Footer()

    def on_mount(self) -> None:
        ct = self.query_one("#clusters", DataTable)
        ct.add_columns("CLUSTER", "REACHABLE", "KUEUE API", "GPUS USED/ALL", "PENDING", "ADMITTED", "MULTIKUEUE")
        wt = self.query_one("#workloads", DataTable)
        wt.add_columns("WORKLOAD (MANAGER)", "CLUSTER", "STATE", "WORKER COPY")
        self.query_one("#allwl", DataTable).add_columns(*COLUMNS)
        self.action_refresh()
        self.set_interval(self.interval, self.action_refresh)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # --read-only hides what evicts running work; the runner refuses every action there.
        return not (action == "workload_action" and bool(parameters) and self.read_only
                    and parameters[0] in DANGEROUS)

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
                self._from_thread(self._say, f"cannot read the clusters: {type(exc).__name__}: {exc}")
                return
            heatmap = self.heatmap_text(reads) if self.pane == "heatmap" else None
            self._from_thread(self.show, reads, heatmap)
        finally:
            self._busy.release()

    def _from_thread(self, fn: Callable[..., object], *args: object) -> None:
        if not self.is_running:
            return  # quit while this cluster read was out: nothing to draw on
        with contextlib.suppress(RuntimeError):  # … or it stopped just now
            self.call_from_thread(fn, *args)

    def _say(self, text: str) -> None:
        self.query_one("#status", Static).update(_markup_safe(text))

    def set_last_action(self, text: str, ok: bool | None) -> None:
        self.last_action = text
        self._status()

    # ------------------------------------------------------------------ drawing
    def show(self, reads: Sequence[ClusterRead], heatmap: Text | None = None) -> None:
        self.reads = list(reads)
        self.places = placements(self.reads)
        self.items = cross_workloads(self.reads, self.places)
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
        self._fill_all()
        if heatmap is not None and self.pane == "heatmap":
            self.query_one("#heatmap", Static).update(heatmap)
        self._status()

    def _status(self) -> None:
        ages = []
        for r in self.reads:
            if r.error and r.age is None:
                ages.append(f"{r.context} unreachable")
            elif r.error:
                ages.append(f"{r.context} {r.age:.0f}s old (unreachable)")
            else:
                ages.append(f"{r.context} {r.age or 0:.0f}s")
        flt = f" · filter: {self.cluster_filter}" if self.cluster_filter else ""
        if self.text_filter and self.pane == "allwl":
            flt += f" · /{self.text_filter}"
        ro = " · READ-ONLY" if self.read_only else (
            f" · read-only: {', '.join(sorted(self.read_only_contexts))}" if self.read_only_contexts else "")
        last = f" · {self.last_action}" if self.last_action else ""
        self._say("data age: " + " · ".join(ages) + flt + ro + last)

    def _visible(self) -> list[Placement]:
        return [p for p in self.places if self.cluster_filter is None or p.cluster == self.cluster_filter]

    def _fill_workloads(self) -> None:
        wt = self.query_one("#workloads", DataTable)
        wt.clear()
        for p in self._visible():
            copy = p.copies.get(p.cluster, "") if p.cluster else ", ".join(f"{w}: {s}" for w, s in p.copies.items())
            wt.add_row(*[_markup_safe(c) for c in (f"{p.namespace}/{p.name}", p.cluster or "-", p.state, copy)],
                       key=f"{p.manager}/{p.namespace}/{p.name}")
        if self.pane == "placement":
            self._explain_row(wt.cursor_row)

    def _fill_all(self) -> None:
        t = self.query_one("#allwl", DataTable)
        row_at = t.cursor_row
        t.clear()
        pairs = workload_rows(self.items, cluster=self.cluster_filter, text_filter=self.text_filter,
                              sort=self.sort[0], reverse=self.sort[1])
        self.shown = [w for w, _ in pairs]
        for _, row in pairs:
            t.add_row(*[Text(c.plain) for c in row.cells], key="/".join(row.key))
        if self.shown:
            t.move_cursor(row=min(max(0, row_at), len(self.shown) - 1))
        if self.pane == "allwl":
            self._explain_all(t.cursor_row)

    def heatmap_text(self, reads: Sequence[ClusterRead]) -> Text:
        """The `:gpu` pane for these reads. Pure drawing, off the UI thread: ten fleets of a
        thousand nodes are 80,000 GPUs, about a second to group and draw (benchmarks/multicluster.py)."""
        from kueuetop.tui.heatmap import fleet_heatmap

        samples, group = gpus_by_cluster([r for r in reads
                                          if self.cluster_filter is None or r.context == self.cluster_filter])
        if not samples:
            return Text("no GPU samples from any cluster yet")
        body = self.query_one("#heatmap", Static)
        w = max(10, body.size.width - 2 or self.size.width - 2)
        h = max(3, body.size.height or 12)
        return fleet_heatmap(samples, w, h, theme=self._theme(), pool_of=group).text

    def _theme(self) -> Any:
        if self._heatmap_theme is None:
            from kueuetop.tui.themes import load_themes, no_color

            self._heatmap_theme, _ = load_themes().get(None, no_color=no_color())
        return self._heatmap_theme

    def _reshow(self) -> None:
        """Draw the last reads again (a filter or the pane changed)."""
        self.show(self.reads)
        self._draw_heatmap()

    def _draw_heatmap(self) -> None:
        """Draw the `:gpu` pane now, in a worker thread: the pane says so until it is drawn."""
        if self.pane != "heatmap":
            return
        reads = self.reads
        self.query_one("#heatmap", Static).update(Text("drawing the GPUs of every cluster…"))

        def draw() -> None:
            text = self.heatmap_text(reads)
            self._from_thread(self.query_one("#heatmap", Static).update, text)
        self.run_worker(draw, thread=True, group="heatmap", exclusive=True, exit_on_error=False)

    def _explain_row(self, row: int) -> None:
        visible = self._visible()
        text = explain_placement(visible[row]) if 0 <= row < len(visible) else ""
        self._set_explain(text)

    def _explain_all(self, row: int) -> None:
        text = ""
        if 0 <= row < len(self.shown):
            w = self.shown[row]
            place = next((p for p in self.places if (p.manager, p.namespace, p.name) == (w.cluster, w.namespace, w.name)),
                         None)
            if place is not None:
                text = explain_placement(place)
            else:
                note = action_place(w).note or action_place(w).refused
                text = note or f"{w.namespace}/{w.name} on {w.cluster}: {w.state}"
        self._set_explain(text)

    def _set_explain(self, text: str) -> None:
        # A highlight queued before a screen change, or the app's exit, arrives when the line is
        # no longer on the screen shown: then there is nothing to set.
        for line in self.query("#explain").results(Static):
            line.update(_markup_safe(text))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        # Enter on a table row arrives here (the table's own binding), not as the app's binding.
        self.action_open_cluster()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        # The table's cursor now, not the event's: a refresh (clear, rows again, cursor put back)
        # queues highlights of rows the cursor has already left.
        if event.data_table.id == "workloads":
            self._explain_row(event.data_table.cursor_row)
        elif event.data_table.id == "allwl":
            self._explain_all(event.data_table.cursor_row)

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
        elif focused.id == "allwl":
            if 0 <= focused.cursor_row < len(self.shown):
                self.chosen_context = action_place(self.shown[focused.cursor_row]).context or None
        else:
            visible = self._visible()
            if 0 <= focused.cursor_row < len(visible):
                self.chosen_context = visible[focused.cursor_row].manager
        if self.chosen_context is not None:
            self.exit(0)

    def action_cycle_filter(self) -> None:
        """No filter → each cluster a workload was placed on (or, in `:wl`, runs on) → no filter."""
        clusters = {p.cluster for p in self.places if p.cluster}
        if self.pane != "placement":
            clusters |= {r.context for r in self.reads}
        options: list[str | None] = [None, *sorted(clusters)]
        at = options.index(self.cluster_filter) if self.cluster_filter in options else 0
        self.cluster_filter = options[(at + 1) % len(options)]
        self._reshow()

    # ------------------------------------------------------------------ k9s keys: `:` `/` sorts
    def action_prompt(self, which: str) -> None:
        for inp in self.query(".prompt").results(Input):
            inp.set_class(inp.id == which, "-shown")
        inp = self.query_one(f"#{which}", Input)
        inp.value = self.text_filter if which == "filter" else ""
        inp.focus()

    def _hide_prompts(self) -> None:
        for inp in self.query(".prompt").results(Input):
            inp.remove_class("-shown")
        self._focus_pane()

    def _focus_pane(self) -> None:
        target = {"placement": "#workloads", "allwl": "#allwl"}.get(self.pane)
        if target:
            self.query_one(target, DataTable).focus()

    def action_back(self) -> None:
        if any(i.has_class("-shown") for i in self.query(".prompt").results(Input)):
            self._hide_prompts()
        elif self.text_filter or self.cluster_filter:
            self.text_filter, self.cluster_filter = "", None
            self._reshow()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        self._hide_prompts()
        if event.input.id == "filter":
            self.text_filter = value
            if self.pane != "allwl":
                self.switch_pane("allwl")
            self._reshow()
        else:
            self.run_command(value)

    def switch_pane(self, pane: str) -> None:
        self.pane = pane
        self.query_one("#panes", ContentSwitcher).current = pane
        self._focus_pane()
        self._reshow()

    def run_command(self, text: str) -> None:
        """`:mk` `:wl` `:gpu` switch the pane; `:cluster NAME` filters (bare: no filter); `:hold`,
        `:resume`, `:requeue`, `:preempt` act on the highlighted workload; `:q` quits."""
        word, _, arg = text.lstrip(":").strip().partition(" ")
        word, arg = word.lower(), arg.strip()
        if word in PANES:
            self.switch_pane(PANES[word])
        elif word in ("cluster", "ctx", "context"):
            known = {r.context for r in self.reads}
            if arg and arg not in known:
                self.notify(f"no cluster {clean(arg)!r}: {', '.join(sorted(known))}", severity="warning")
                return
            self.cluster_filter = arg or None
            self._reshow()
        elif word in WORKLOAD_ACTIONS:
            self.action_workload_action(WORKLOAD_ACTIONS[word])
        elif word in ("q", "quit"):
            self.exit(0)
        elif word:
            self.notify(f"unknown command :{clean(word)} (mk, wl, gpu, cluster NAME, hold, resume, requeue, "
                        "preempt, q)", severity="warning")

    def action_sort(self, name: str) -> None:
        """A capital letter sorts the `:wl` table by that column; again, the other way."""
        self.sort = (name, not self.sort[1] if self.sort[0] == name else False)
        if self.pane != "allwl":
            self.switch_pane("allwl")
        else:
            self._fill_all()

    # ------------------------------------------------------------------ actions, at the manager
    def highlighted_workload(self) -> CrossWorkload | None:
        """The workload under the cursor of the pane shown (a placement row: the manager's)."""
        if self.pane == "allwl":
            row = self.query_one("#allwl", DataTable).cursor_row
            return self.shown[row] if 0 <= row < len(self.shown) else None
        if self.pane == "placement":
            visible = self._visible()
            row = self.query_one("#workloads", DataTable).cursor_row
            if 0 <= row < len(visible):
                p = visible[row]
                return next((w for w in self.items if (w.cluster, w.namespace, w.name)
                             == (p.manager, p.namespace, p.name)), None)
        return None

    def action_workload_action(self, action: str) -> None:
        w = self.highlighted_workload()
        if w is None:
            self.notify("no workload highlighted (:wl or :mk)", severity="warning")
            return
        place = action_place(w)
        if place.refused:
            self.notify(place.refused, title=f"{action} refused", severity="error")
            self.set_last_action(f"{action}: refused, nothing sent", False)
            return
        if self.read_only or place.context in self.read_only_contexts:
            why = "--read-only" if self.read_only else f"context {place.context} is read-only"
            self.notify(f"{action} {place.namespace}/{place.name} on {place.context}: {why}, nothing sent",
                        title="read-only", severity="warning")
            self.set_last_action(f"{action}: read-only ({place.context}), nothing sent", None)
            return
        runner = self._runner(place.context)
        if runner is None:
            return
        if place.note:
            self.notify(place.note, title=action)
        runner.start(action, [Target(WORKLOAD, place.name, place.namespace)])

    def _runner(self, context: str) -> ActionRunner | None:
        """One ActionRunner per cluster acted on: its own client, RBAC and read-only setting."""
        cc = self.client_for(context) if self.client_for is not None else None
        if cc is None:
            self.notify(f"{context}: not connected, nothing sent", title="action unavailable", severity="error")
            return None
        runner = self._runners.get(context)
        if runner is not None and runner.api is cc.api:
            return runner  # the same connection (a reconnected cluster gets a runner of its own)
        runner = ActionRunner(_ClusterHost(self, self.read_only or context in self.read_only_contexts), cc.api,
                              kueue_version=cc.kueue_version, identity=cc.identity)
        self._runners[context] = runner
        return runner

    def action_quit(self) -> None:
        for r in self._runners.values():
            r.shutdown()  # in-flight actions stop between steps and are journaled as interrupted
        self.exit(0)


def pool_client_for(pool: Any) -> ClientFor:
    """Actions on a context go through the client of its live session in `pool` (a
    sources.multi_context.ContextPool); None while that cluster is not connected."""

    def client_for(context: str) -> ClusterClient | None:
        session = pool.session(context)
        if session is None:
            return None
        info = session.conn.info
        return ClusterClient(session.conn.api, session.conn.kueue.version,
                             Identity(context, info.server, info.user))
    return client_for


def run_clusters_console(kubeconfig: str | None, contexts: Sequence[str], *, interval: float = 5.0,
                         title: str = "", mouse: bool = True,
                         open_single: Callable[[str], int] | None = None, read_only: bool = False,
                         read_only_contexts: Collection[str] = ()) -> int:
    """The live console over several contexts until the user quits; Enter on a cluster runs
    `open_single(context)` (the one-cluster console) and comes back here when it ends."""
    from kueuetop.sources.multi_context import ContextPool

    pool = ContextPool(kubeconfig, contexts, timeout=10.0, gpus=True)
    try:
        while True:
            # A short wait: a cluster that answers slowly keeps its last rows; the others show now.
            app = ClustersApp(lambda: cluster_reads(pool.refresh(wait=2.0)), interval=interval,
                              title=title or ", ".join(contexts), client_for=pool_client_for(pool),
                              read_only=read_only, read_only_contexts=read_only_contexts)
            code = app.run(mouse=mouse)
            if app.chosen_context is None or open_single is None:
                return int(code or 0)
            open_single(app.chosen_context)
    finally:
        pool.close()
