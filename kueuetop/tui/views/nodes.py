"""Nodes: pool, flavor, GPU model, capacity type, ready, GPUs allocated/idle, utilisation, age, taints."""

from __future__ import annotations

from kueuetop.kueue.flavor import ResourceFlavor
from kueuetop.store import events as K
from kueuetop.tui.context import ViewContext
from kueuetop.tui.views.base import TableView
from kueuetop.tui.views.fleet import capacity_type, model_of, node_flavors, node_gpus, pool_of
from kueuetop.views.rows import Row, age, cell


def node_rows(ctx: ViewContext) -> list[Row]:
    out = []
    flavors = [f for f in ctx.store.objects(K.RESOURCE_FLAVORS).values() if isinstance(f, ResourceFlavor)]
    now = ctx.now()
    for ng in node_gpus(ctx):
        n = ng.node
        ready = "Ready" if n.ready else "NotReady"
        if n.unschedulable:
            ready += ",Cordoned"
        created = n.meta.creation
        kind = capacity_type(n)
        taints = ",".join(f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in n.taints)
        out.append(Row(n.name, (
            cell(n.name), cell(pool_of(n)), cell(",".join(node_flavors(n, flavors)) or "-"), cell(model_of(n)),
            cell(kind), cell(ready, "" if n.ready else ctx.state_style("evicted")),
            cell(f"{ng.allocated}/{ng.total}" if ng.total else "-"),
            cell("-" if ng.idle is None else ng.idle, ctx.state_style("evicted") if ng.idle else ""),
            cell("-" if ng.util is None else f"{ng.util:.0f}%"), cell(ng.pods),
            cell(age(None if created is None else now - created)), cell(taints or "-"),
        ), sort={"name": n.name, "status": ready, "pool": pool_of(n), "gpus": -ng.total, "util": ng.util,
                 "age": -(created or 0.0), "capacity": kind, "namespace": ""},
            labels=n.meta.labels, state=f"{ready.lower().replace(',', ' ')} {kind}"))
    return out


class NodesView(TableView):
    VIEW = "nodes"
    TITLE = "Nodes"
    KINDS = frozenset({K.NODES, K.PODS, K.GPUS, K.RESOURCE_FLAVORS})
    COLUMNS = ("NAME", "POOL", "FLAVOR", "GPU MODEL", "CAPACITY", "STATUS", "GPU ALLOC", "IDLE", "UTIL", "PODS",
               "AGE", "TAINTS")
    PRIORITIES = (0, 2, 3, 1, 1, 0, 0, 2, 1, 4, 3, 5)

    def build_rows(self) -> list[Row]:
        return node_rows(self.ctx)

    def gpu_focus(self) -> set[str]:
        """The nodes on screen: a budgeted GPU scrape reads them first."""
        return {str(k) for k in self._keys_on_screen()} if self.is_mounted else set()

    def raw_kind(self) -> str:
        return K.NODES
