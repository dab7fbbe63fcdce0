"""ResourceFlavors: node labels, taints, and how many nodes match each flavor."""

from __future__ import annotations

from kueuetop.kueue.core import Node
from kueuetop.kueue.flavor import ResourceFlavor
from kueuetop.store import events as K
from kueuetop.tui.context import ViewContext
from kueuetop.tui.views.base import TableView
from kueuetop.views.rows import Row, cell


def flavor_rows(ctx: ViewContext) -> list[Row]:
    nodes = [n for n in ctx.store.objects(K.NODES).values() if isinstance(n, Node)]
    out = []
    for key, rf in ctx.store.objects(K.RESOURCE_FLAVORS).items():
        if not isinstance(rf, ResourceFlavor):
            continue
        matching = [n for n in nodes if all(n.meta.labels.get(k) == v for k, v in rf.node_labels.items())]
        labels = ",".join(f"{k}={v}" for k, v in sorted(rf.node_labels.items()))
        taints = ",".join(f"{t.key}={t.value}:{t.effect}" for t in rf.node_taints)
        out.append(Row(key[1], (
            cell(rf.name), cell(labels or "-"), cell(taints or "-"), cell(len(matching)),
            cell(sum(n.gpus for n in matching)),
        ), sort={"name": rf.name}, labels=rf.meta.labels))
    return out


class FlavorsView(TableView):
    VIEW = "flavors"
    TITLE = "ResourceFlavors"
    KINDS = frozenset({K.RESOURCE_FLAVORS, K.NODES})
    COLUMNS = ("NAME", "NODE LABELS", "TAINTS", "NODES", "GPUS")

    def build_rows(self) -> list[Row]:
        return flavor_rows(self.ctx)

    def raw_kind(self) -> str:
        return K.RESOURCE_FLAVORS
