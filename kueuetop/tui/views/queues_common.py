"""Shared by the queue views: the status cell and quota bars from a queue's objects (the
row's values themselves come from views/queue_rows.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rich.text import Text

from kueuetop.kueue.cluster_queue import ClusterQueue, FlavorUsage
from kueuetop.kueue.core import GPU_RESOURCE
from kueuetop.kueue.quantity import CPU, format_resource_value
from kueuetop.tui.context import ViewContext
from kueuetop.tui.quota_bar import quota_bar
from kueuetop.views.safe_text import clean

# The table sizes a column when rows are added, not when a cell changes: pad the status to its
# longest word so stopping a queue never shows as a clipped "Stopp…".
STATUS_WIDTH = len("Stopped(HoldAndDrain)")


def status_cell(word: str, style: str) -> Text:
    return Text(clean(word).ljust(STATUS_WIDTH), style=style, no_wrap=True, overflow="ellipsis")


def _scale(resource: str) -> float:
    # CPU is held in millicores; bars read better in cores. Memory stays in bytes (fmt handles it).
    return 1000.0 if resource == CPU else 1.0


def _fmt(resource: str) -> Callable[[float], str]:
    if resource == CPU:
        return lambda v: str(int(v)) if v == int(v) else f"{v:.1f}"
    return lambda v: format_resource_value(resource, round(v))


def main_resource(cq: ClusterQueue) -> str:
    covered = [r for g in cq.resource_groups for r in g.covered]
    return GPU_RESOURCE if GPU_RESOURCE in covered else (covered[0] if covered else "")


def _usage(rows: Iterable[FlavorUsage]) -> dict[tuple[str, str], int]:
    return {(u.flavor, u.resource): u.total for u in rows}


def quota_lines(ctx: ViewContext, cq: ClusterQueue, width: int, resources: set[str] | None = None) -> list[Text]:
    """One bar per flavor × resource: `flavor resource  bar used/nominal +borrowed`."""
    usage, reserved = _usage(cq.flavors_usage), _usage(cq.flavors_reservation)
    out: list[Text] = []
    label_w = 0
    items = []
    for g in cq.resource_groups:
        for fq in g.flavors:
            for res, q in fq.resources.items():
                if resources is not None and res not in resources:
                    continue
                label = f"{clean(fq.name)} {clean(res)}"
                label_w = max(label_w, len(label))
                items.append((label, res, q, usage.get((fq.name, res), 0), reserved.get((fq.name, res))))
    for label, res, q, used, resv in items:
        s = _scale(res)
        bar = quota_bar(q.nominal / s, used / s, max(8, width - label_w - 2),
                        reserved=None if resv is None else resv / s,
                        borrowing_limit=None if q.borrowing_limit is None else q.borrowing_limit / s,
                        lending_limit=None if q.lending_limit is None else q.lending_limit / s,
                        glyphs=ctx.glyphs, theme=ctx.theme, fmt=_fmt(res))
        line = Text(label.ljust(label_w) + "  ", no_wrap=True)
        line.append_text(bar)
        out.append(line)
    return out


def compact_bars(ctx: ViewContext, cq: ClusterQueue, width: int = 10) -> Text:
    """The main resource's bar per flavor on one line, for a table cell."""
    res = main_resource(cq)
    usage = _usage(cq.flavors_usage)
    out = Text(no_wrap=True)
    for g in cq.resource_groups:
        for fq in g.flavors:
            q = fq.resources.get(res)
            if q is None:
                continue
            if out.plain:
                out.append(" ")
            s = _scale(res)
            out.append_text(quota_bar(q.nominal / s, usage.get((fq.name, res), 0) / s, width,
                                      borrowing_limit=None if q.borrowing_limit is None else q.borrowing_limit / s,
                                      glyphs=ctx.glyphs, theme=ctx.theme, fmt=_fmt(res)))
    return out
