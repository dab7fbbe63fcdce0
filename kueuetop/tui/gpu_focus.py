"""Which nodes' GPUs the console shows, told to the GPU poller so a budgeted scrape reads them first.

Each place that shows nodes reports its own set under its own name (the visible view's rows, the
open workload detail); the poller gets their union whenever it changes. Kept in the view
context (`ctx.extra`), so views need neither the app nor the poller. Main (UI) thread only; the
poller's setter is thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kueuetop.kueue.core import Pod
from kueuetop.store import Store
from kueuetop.store import events as K
from kueuetop.tui.context import ViewContext

KEY = "gpu_focus"


class GpuFocus:
    def __init__(self, setter: Callable[[Iterable[str]], None]) -> None:
        self._setter = setter
        self._by_origin: dict[str, frozenset[str]] = {}

    def set(self, origin: str, nodes: Iterable[str]) -> None:
        new = frozenset(n for n in nodes if n)
        if self._by_origin.get(origin, frozenset()) == new:
            return
        self._by_origin[origin] = new
        self._setter(frozenset().union(*self._by_origin.values()))


def wire_gpu_focus(ctx: ViewContext, setter: Callable[[Iterable[str]], None]) -> None:
    """Send the nodes on screen to `setter` (e.g. `GpuPoller.set_priority_nodes`) from now on."""
    ctx.extra[KEY] = GpuFocus(setter)


def report_gpu_focus(ctx: ViewContext, origin: str, nodes: Iterable[str]) -> None:
    focus = ctx.extra.get(KEY)
    if isinstance(focus, GpuFocus):
        focus.set(origin, nodes)


def nodes_of_workloads(store: Store, keys: Iterable[tuple[str, str]]) -> set[str]:
    """The nodes the pods of these workloads run on."""
    out: set[str] = set()
    for key in keys:
        for pkey in store.pods_of_workload(key):
            pod = store.get(K.PODS, pkey)
            if isinstance(pod, Pod) and pod.node_name:
                out.add(pod.node_name)
    return out
