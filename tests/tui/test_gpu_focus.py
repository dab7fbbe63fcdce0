"""The console tells the GPU scrape which nodes it shows: the visible view's rows and the open
workload detail, so a budgeted scrape reads those first (sources/scrape_budget.py)."""

from __future__ import annotations

from collections.abc import Iterable

from textual.pilot import Pilot

from kueuetop.kueue.core import Pod
from kueuetop.sources.scrape import ScrapeSource
from kueuetop.store import events as K
from kueuetop.tui.gpu_focus import wire_gpu_focus
from kueuetop.tui.views.base import TableView

from .conftest import Live
from .test_app import column, make_app, run, until


def test_nodes_on_screen_and_the_open_workload_are_the_scrapes_priority(live: Live) -> None:
    assert live.poller is not None and isinstance(live.poller.source, ScrapeSource)
    source: ScrapeSource = live.poller.source
    app = make_app(live.store, live)
    sent: list[frozenset[str]] = []

    def setter(nodes: Iterable[str]) -> None:
        sent.append(frozenset(nodes))
        live.poller.set_priority_nodes(nodes)

    wire_gpu_focus(app.ctx, setter)

    async def body(pilot: Pilot[int]) -> None:
        await pilot.press("7")  # Nodes
        shown = lambda: {s.strip() for s in column(app, "nodes", "NAME")}  # noqa: E731
        assert await until(pilot, lambda: shown() and sent and sent[-1] == shown()), (sent[-1:], shown())
        assert source.priority_nodes == sent[-1]
        # A short window: only the rows on screen count, not every node of the cluster.
        app.main.query_one("#nodes", TableView).table.styles.height = 3
        assert await until(pilot, lambda: sent and 0 < len(sent[-1]) <= 3
                           and sent[-1] < set(k[1] for k in live.store.objects(K.NODES))), sent[-1:]
        app.main.query_one("#nodes", TableView).table.styles.height = "1fr"
        # A workload whose pods run on nodes: its detail puts them first, going back takes them away.
        await pilot.press("3")  # ClusterQueues: no nodes shown
        assert await until(pilot, lambda: sent and sent[-1] == frozenset())

        def placed() -> tuple[tuple[str, str], set[str]] | None:
            for key, pod in live.store.objects(K.PODS).items():
                wl = live.store.workload_of_pod(key)
                if isinstance(pod, Pod) and pod.node_name and wl is not None:
                    return wl, {pod.node_name}
            return None

        found = await until(pilot, placed, timeout=30)
        assert found, "no workload pod was placed on a node"
        wl, nodes = found
        app.open_workload(wl)
        assert await until(pilot, lambda: sent and nodes <= sent[-1]), (sent[-1:], nodes)
        assert nodes <= source.priority_nodes
        await pilot.press("escape")
        assert await until(pilot, lambda: len(app.screen_stack) == 1 and sent and sent[-1] == frozenset())

    run(app, body)
