"""Overview: the one screen an on-call engineer opens first.

GPUs by model and node pool (allocated / idle / total), workloads pending and admitted,
admitted workloads whose GPUs sit idle, stopped or inactive queues, stale data sources.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from kueuetop.kueue.cluster_queue import ClusterQueue
from kueuetop.kueue.local_queue import LocalQueue
from kueuetop.kueue.workload import Workload
from kueuetop.kueue.workload_state import Phase
from kueuetop.store import events as K
from kueuetop.tui.context import ViewContext
from kueuetop.tui.rows import age, cell
from kueuetop.tui.views.base import View
from kueuetop.tui.views.fleet import model_of, node_gpus, pool_of
from kueuetop.tui.views.queues_common import queue_status
from kueuetop.tui.views.workloads import gpu_util

PENDING_PHASES = (Phase.PENDING, Phase.BACKOFF, Phase.BLOCKED, Phase.GATED, Phase.ON_HOLD)


def _table(title: str, *columns: str) -> Table:
    t = Table(title=title, title_justify="left", title_style="bold", box=None, pad_edge=False,
              show_edge=False, expand=False, padding=(0, 1), min_width=len(title) + 2)
    for c in columns:
        t.add_column(c, no_wrap=True, header_style="bold")
    return t


def gpu_table(ctx: ViewContext) -> Table:
    # (model, pool) → [allocated, idle, total, nodes, nodes with GPU samples]
    groups: dict[tuple[str, str], list[int]] = {}
    for ng in node_gpus(ctx):
        if not ng.total:
            continue
        g = groups.setdefault((model_of(ng.node), pool_of(ng.node)), [0, 0, 0, 0, 0])
        g[0] += ng.allocated
        g[1] += ng.idle or 0
        g[2] += ng.total
        g[3] += 1
        g[4] += ng.idle is not None
    t = _table("GPUs by model and node pool", "MODEL", "POOL", "NODES", "ALLOCATED", "IDLE", "TOTAL")
    tot = [0, 0, 0]
    for (model, pool), (alloc, idle, total, nodes, sampled) in sorted(groups.items()):
        # Idle needs GPU samples: a pool nobody measures says n/a, not 0.
        t.add_row(cell(model), cell(pool), cell(nodes), cell(alloc),
                  cell(idle if sampled else "n/a", ctx.state_style("evicted") if idle else ""), cell(total))
        tot[0] += alloc
        tot[1] += idle
        tot[2] += total
    if not groups:
        t.add_row(cell("no GPU nodes seen"), *(cell("") for _ in range(5)))
    else:
        t.add_row(cell("all", "bold"), cell(""), cell(""), cell(tot[0], "bold"), cell(tot[1], "bold"),
                  cell(tot[2], "bold"))
    return t


def workload_summary(ctx: ViewContext) -> tuple[Text, list[tuple[tuple[str, str], Workload, float]]]:
    store = ctx.store
    counts = {p: len(store.workloads_in_phase(p)) for p in Phase}
    pending = sum(counts[p] for p in PENDING_PHASES)
    line = Text("Workloads  ", style="bold")
    for label, n, state in (("pending", pending, "pending"), ("reserving", counts[Phase.RESERVED], "pending"),
                            ("admitted", counts[Phase.ADMITTED], "admitted"),
                            ("inactive", counts[Phase.INACTIVE], "inactive"),
                            ("evicting", counts[Phase.EVICTING], "evicted"),
                            ("finished", counts[Phase.FINISHED], "finished")):
        line.append(f"{label} ", style="")
        line.append(str(n), style=ctx.state_style(state) + " bold")
        line.append("   ")
    idle = []
    for key in store.workloads_in_phase(Phase.ADMITTED):
        wl = store.get(K.WORKLOADS, key)
        util = gpu_util(ctx, key)
        if isinstance(wl, Workload) and util is not None and util < ctx.idle_below:
            idle.append((key, wl, util))
    return line, sorted(idle, key=lambda x: x[2])


def idle_table(ctx: ViewContext, idle: list[tuple[tuple[str, str], Workload, float]], limit: int = 8) -> Table:
    t = _table(f"Admitted but idle GPUs ({len(idle)})", "NAMESPACE", "WORKLOAD", "GPUS", "UTIL", "ADMITTED")
    now = ctx.now()
    for key, wl, util in idle[:limit]:
        c = wl.condition("Admitted")
        since = now - c.last_transition if c and c.last_transition else None
        t.add_row(cell(key[0]), cell(key[1]), cell(len(ctx.store.gpus_of_workload(key))),
                  cell(f"{util:.0f}%", ctx.state_style("evicted")), cell(age(since)))
    if not idle:
        has_gpu = bool(ctx.store.gpus())
        t.add_row(cell("none" if has_gpu else "no GPU metrics (no GPU source)"), cell(""), cell(""), cell(""), cell(""))
    return t


def queue_problems(ctx: ViewContext) -> Table:
    t = _table("Stopped or inactive queues", "KIND", "QUEUE", "STATUS")
    n = 0
    for key, cq in sorted(ctx.store.objects(K.CLUSTER_QUEUES).items()):
        if isinstance(cq, ClusterQueue):
            word, colour = queue_status(cq.stop_policy, cq.conditions)
            if word != "Active":
                t.add_row(cell("ClusterQueue"), cell(key[1]), cell(word, ctx.state_style(colour)))
                n += 1
    for key, lq in sorted(ctx.store.objects(K.LOCAL_QUEUES).items()):
        if isinstance(lq, LocalQueue):
            word, colour = queue_status(lq.stop_policy, lq.conditions)
            if word != "Active":
                t.add_row(cell("LocalQueue"), cell(f"{key[0]}/{key[1]}"), cell(word, ctx.state_style(colour)))
                n += 1
    if not n:
        t.add_row(cell("none"), cell(""), cell(""))
    return t


def source_problems(ctx: ViewContext) -> Table:
    t = _table("Stale or failing data sources", "SOURCE", "STATE", "AGE", "MESSAGE")
    now = ctx.now()
    n = 0
    for name, st in sorted(ctx.store.sources().items()):
        if st.stale(now):
            t.add_row(cell(name), cell(st.state.value, ctx.state_style("stale")), cell(age(st.age(now))),
                      cell(st.message or "-"))
            n += 1
    if not n:
        t.add_row(cell("none: all sources live"), cell(""), cell(""), cell(""))
    return t


def overview_renderable(ctx: ViewContext) -> RenderableType:
    line, idle = workload_summary(ctx)
    return Group(gpu_table(ctx), Text(""), line, Text(""), idle_table(ctx, idle), Text(""),
                 queue_problems(ctx), Text(""), source_problems(ctx))


class OverviewView(View):
    VIEW = "overview"
    TITLE = "Overview"
    KINDS = frozenset({K.NODES, K.PODS, K.GPUS, K.WORKLOADS, K.CLUSTER_QUEUES, K.LOCAL_QUEUES, K.SOURCES})
    DEFAULT_CSS = """
    OverviewView > VerticalScroll { height: 1fr; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(self.TITLE, classes="view-title")
        with VerticalScroll():
            yield Static("", id="overview-body")

    def refresh_view(self) -> None:
        super().refresh_view()
        if self.is_mounted:
            self.query_one("#overview-body", Static).update(overview_renderable(self.ctx))
