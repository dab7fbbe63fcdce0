"""Nodes: pool, GPU model, ready, GPUs allocated/idle/total, mean utilisation, pods."""

from __future__ import annotations

from kueuetop.store import events as K
from kueuetop.tui.context import ViewContext
from kueuetop.tui.rows import Row, cell
from kueuetop.tui.views.base import TableView
from kueuetop.tui.views.fleet import model_of, node_gpus, pool_of


def node_rows(ctx: ViewContext) -> list[Row]:
    out = []
    for ng in node_gpus(ctx):
        n = ng.node
        ready = "Ready" if n.ready else "NotReady"
        if n.unschedulable:
            ready += ",Cordoned"
        out.append(Row(n.name, (
            cell(n.name), cell(pool_of(n)), cell(model_of(n)),
            cell(ready, "" if n.ready else ctx.state_style("evicted")),
            cell(f"{ng.allocated}/{ng.total}" if ng.total else "-"),
            cell("-" if ng.idle is None else ng.idle, ctx.state_style("evicted") if ng.idle else ""),
            cell("-" if ng.util is None else f"{ng.util:.0f}%"), cell(ng.pods),
        ), sort={"name": n.name, "status": ready, "pool": pool_of(n), "gpus": -ng.total, "util": ng.util},
            labels=n.meta.labels, state=ready.lower()))
    return out


class NodesView(TableView):
    VIEW = "nodes"
    TITLE = "Nodes"
    KINDS = frozenset({K.NODES, K.PODS, K.GPUS})
    COLUMNS = ("NAME", "POOL", "GPU MODEL", "STATUS", "GPU ALLOC", "IDLE", "UTIL", "PODS")

    def build_rows(self) -> list[Row]:
        return node_rows(self.ctx)

    def raw_kind(self) -> str:
        return K.NODES
