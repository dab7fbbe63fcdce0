"""Input first: redraws nobody asked for (store changes, the age refresh, explained headlines)
wait while keys come, run once the keys pause, and run anyway once held `longest` while keys
keep coming. The gate's clock is a test clock that moves only when told: while it stands still,
keys pressed are "still coming"; moving it on is the keys pausing. Ordering only, no timing."""

from __future__ import annotations

import time

from textual.pilot import Pilot

from kueuetop.store import Store
from kueuetop.tui.app import KueuetopApp
from kueuetop.tui.input_first import InputFirst
from kueuetop.tui.views.overview import OverviewView
from tests.builders import workload
from tests.tui.screen_text import screen_text
from tests.tui.test_app import column, make_app, run, until
from tests.tui.test_overview import board, incident_store
from tests.views.cluster import GPU, NOW, base_objects, put


class Clock:
    def __init__(self) -> None:
        self.t = time.monotonic()

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def gated(app: KueuetopApp) -> Clock:
    clock = Clock()
    app.input_first = InputFirst(clock=clock)
    return clock


# ------------------------------------------------------------------ the gate alone
def test_work_runs_at_once_when_no_key_came() -> None:
    gate = InputFirst(clock=Clock())
    assert not gate.hold("store", lambda: None)
    assert not gate.held


def test_held_work_waits_for_the_keys_to_pause_and_a_newer_request_replaces_the_held_one() -> None:
    clock = Clock()
    gate = InputFirst(clock=clock, quiet=0.15, longest=1.0)
    ran: list[str] = []
    gate.key()
    assert gate.hold("store", lambda: ran.append("store 1"))
    assert gate.hold("ages", lambda: ran.append("ages"))
    assert gate.hold("store", lambda: ran.append("store 2"))
    clock.advance(0.1)
    assert gate.take() == [] and gate.held  # keys still coming
    clock.advance(0.1)  # 0.2 s since the last key: they paused
    for work in gate.take():
        work()
    assert ran == ["store 2", "ages"]  # one per name, in the order first held
    assert not gate.held and not gate.overdue()


def test_held_work_may_run_between_keys_once_it_waited_longest() -> None:
    clock = Clock()
    gate = InputFirst(clock=clock, quiet=0.15, longest=1.0)
    gate.key()
    assert gate.hold("store", lambda: None)
    for _ in range(9):  # a key every 0.1 s: they never pause
        clock.advance(0.1)
        gate.key()
        assert not gate.overdue() and gate.take() == [] and gate.take_overdue() == []
    clock.advance(0.15)  # 1.05 s held
    gate.key()
    assert gate.overdue() and gate.keys_active()
    assert gate.take() == []  # not at any moment: between two keys (the app calls take_overdue then)
    assert len(gate.take_overdue()) == 1 and not gate.held


# ------------------------------------------------------------------ in the console
def two_workloads_store() -> Store:
    store = Store(clock=lambda: NOW)
    put(store, *base_objects(), workload("team-a", "first", "lq", {GPU: "1"}, created=NOW - 60))
    return store


def names(app: KueuetopApp) -> list[str]:
    return [n.strip() for n in column(app, "workloads", "NAME")]


def test_a_store_change_while_keys_come_is_shown_once_they_pause() -> None:
    store = two_workloads_store()
    app = make_app(store, initial_view="workloads", clock=lambda: NOW)
    clock = gated(app)

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: names(app) == ["first"])
        await pilot.press("down")  # keys are coming (the gate's clock stands still)
        shown = app.refresh_count
        put(store, workload("team-a", "second", "lq", {GPU: "1"}, created=NOW - 30))
        assert await until(pilot, lambda: app.input_first.holds("store"))
        await pilot.press("down", "up")
        await pilot.pause(0.3)
        assert "second" not in names(app), "a store refresh ran while keys came"
        assert app.refresh_count == shown and app.bridge.pending  # taken by nobody yet
        clock.advance(1.0)  # the keys pause
        assert await until(pilot, lambda: "second" in names(app))
        assert app.refresh_count == shown + 1 and not app.input_first.held

    run(app, body)


def test_a_store_change_reaches_the_screen_within_the_bound_while_keys_keep_coming() -> None:
    store = two_workloads_store()
    app = make_app(store, initial_view="workloads", clock=lambda: NOW)
    clock = gated(app)

    async def body(pilot: Pilot[int]) -> None:
        gate = app.input_first
        assert await until(pilot, lambda: names(app) == ["first"])
        await pilot.press("down")
        put(store, workload("team-a", "second", "lq", {GPU: "1"}, created=NOW - 30))
        assert await until(pilot, lambda: gate.holds("store"))
        assert gate.longest == 1.0
        for step in range(9):  # a key every 0.1 s, up to 0.9 s after the change was held
            clock.advance(0.1)
            await pilot.press("down")
            await pilot.pause(0.05)
            assert "second" not in names(app) and gate.holds("store"), step
        clock.advance(0.15)
        await pilot.press("up")  # past the bound: the next key lets it through
        assert gate.keys_active()  # the keys have not paused (the clock stands still)
        assert await until(pilot, lambda: "second" in names(app))
        assert not gate.held and gate.keys_active()

    run(app, body)


def test_the_age_refresh_and_the_explained_headlines_wait_while_keys_come() -> None:
    """Both redraw the whole board: while keys come they are held, and run once the keys pause."""
    app = make_app(incident_store(), clock=lambda: NOW)
    clock = gated(app)
    drawn: list[int] = []

    async def body(pilot: Pilot[int]) -> None:
        view = board(app)
        assert await until(pilot, lambda: view.problems)
        original = view._show_problems
        view._show_problems = lambda wide: (drawn.append(1), original(wide))  # type: ignore[method-assign]
        await pilot.press("down")
        for _ in range(5):
            app._tick()
        view.on_overview_view_explains_ready(OverviewView.ExplainsReady())
        await pilot.pause(0.3)
        assert drawn == [], "a background redraw ran while keys came"
        assert app.input_first.holds("ages") and app.input_first.holds(("explains", "overview"))
        clock.advance(1.0)
        assert await until(pilot, lambda: len(drawn) >= 2)  # the age refresh and the headlines
        assert not app.input_first.held

    run(app, body)


def test_the_board_shows_new_data_once_the_keys_stop() -> None:
    store = incident_store()
    app = make_app(store, clock=lambda: NOW)
    clock = gated(app)

    async def body(pilot: Pilot[int]) -> None:
        view = board(app)
        assert await until(pilot, lambda: view.problems)
        waiting = view.model.summary()[0]
        assert f"{waiting} waiting" in screen_text(app)
        await pilot.press("down")
        put(store, workload("team-a", "fresh", "lq", {GPU: "1"}, created=NOW - 5))
        assert await until(pilot, lambda: app.input_first.holds("store"))
        await pilot.press("down")
        await pilot.pause(0.3)
        assert f"{waiting + 1} waiting" not in screen_text(app)
        clock.advance(1.0)
        assert await until(pilot, lambda: f"{waiting + 1} waiting" in screen_text(app)), screen_text(app)

    run(app, body)
