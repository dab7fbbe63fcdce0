"""The board's problem list is kept, not rebuilt: a refresh whose lines did not change leaves
the list's options (and the highlighted line) as they are, a line whose count moved gets its new
text in place, and the list is filled again only when lines come or go, the highlight staying on
the same problem."""

from __future__ import annotations

from textual.pilot import Pilot

from kueuetop.tui.app import KueuetopApp
from kueuetop.tui.views.overview import ProblemList
from tests.builders import workload
from tests.tui.screen_text import screen_text
from tests.tui.test_app import make_app, run, until
from tests.tui.test_overview import board, by_kind, incident_store
from tests.views.cluster import GPU, NOW, pod, put


def options(app: KueuetopApp) -> list[object]:
    return list(app.main.query_one(ProblemList).options)


def highlight(app: KueuetopApp, kind: str) -> str:
    lst = app.main.query_one(ProblemList)
    oid = next(oid for oid in board(app)._targets if oid.split("-", 1)[1].startswith(kind))
    lst.highlighted = lst.get_option_index(oid)
    return oid


def highlighted_id(app: KueuetopApp) -> str | None:
    option = app.main.query_one(ProblemList).highlighted_option
    return option.id if option is not None else None


def test_a_refresh_with_nothing_changed_keeps_the_list() -> None:
    app = make_app(incident_store(), clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        view = board(app)
        assert await until(pilot, lambda: view.problems)
        await pilot.pause(0.3)
        oid = highlight(app, "preempted")
        before, rebuilds, text = options(app), view.problem_rebuilds, screen_text(app)
        for _ in range(3):
            view.refresh_view()
            await pilot.pause()
        assert view.problem_rebuilds == rebuilds
        assert all(a is b for a, b in zip(options(app), before, strict=True))  # the same options, not new ones
        assert highlighted_id(app) == oid
        assert screen_text(app) == text

    run(app, body)


def test_a_changed_count_is_replaced_in_its_line() -> None:
    store = incident_store()
    app = make_app(store, clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        view = board(app)
        assert await until(pilot, lambda: "3 workloads pending" in screen_text(app))
        await pilot.pause(0.3)
        oid = highlight(app, "preempted")
        lst = app.main.query_one(ProblemList)
        waiting = lst.get_option(next(o for o in view._targets if o.startswith("p-waiting-")))
        before, rebuilds = options(app), view.problem_rebuilds
        put(store, workload("team-a", "late-3", "lq", {GPU: "32"}, created=NOW - 3000))
        assert await until(pilot, lambda: "4 workloads pending" in screen_text(app)), screen_text(app)
        assert "3 workloads pending" not in screen_text(app)
        assert view.problem_rebuilds == rebuilds  # the same lines: the one that moved, replaced in place
        assert all(a is b for a, b in zip(options(app), before, strict=True))
        assert "4 workloads pending" in str(getattr(waiting.prompt, "plain", waiting.prompt))
        assert highlighted_id(app) == oid

    run(app, body)


def test_a_line_that_goes_fills_the_list_again_and_the_highlight_stays_on_its_problem() -> None:
    store = incident_store()
    app = make_app(store, clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        view = board(app)
        assert await until(pilot, lambda: "image-pull" in by_kind(app))
        oid = highlight(app, "preempted")
        rebuilds = view.problem_rebuilds
        put(store, pod("team-a", "img-0", "img", 0, node_name="spot-0", phase="Running"))
        assert await until(pilot, lambda: "image-pull" not in by_kind(app))
        await pilot.pause()
        assert view.problem_rebuilds > rebuilds
        assert "image pull failing" not in screen_text(app)
        assert highlighted_id(app) == oid

    run(app, body)
