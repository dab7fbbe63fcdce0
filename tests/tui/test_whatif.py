"""The what-if panel: `w` (or `:whatif`), a change typed or picked, the ETAs it moves, the detail of one.

On the forecast views' cluster (tests/tui/test_forecast_views.py `_store`): 4 GPUs held by `r` until
T0+600; `a` then `b` (4 GPUs each, 300 s) wait. Four more GPUs let `a` in now, and `b` when `a` ends.
"""

from __future__ import annotations

from textual.pilot import Pilot
from textual.widgets import Input, OptionList

from kueuetop.admission.forecast_changes import parse_change
from kueuetop.store import Store
from kueuetop.tui.detail import WorkloadDetailScreen
from kueuetop.tui.keymap import resolve_command
from kueuetop.tui.whatif import COMPUTING, WhatIfScreen
from kueuetop.views.what_if import run_what_if
from tests.builders import T0, cluster_queue, fq, group, local_queue, workload
from tests.tui.screen_text import screen_text
from tests.tui.test_app import make_app, run, until
from tests.tui.test_forecast_views import GPU, NOW, _store
from tests.views.cluster import put


def _panel(app: object) -> WhatIfScreen | None:
    screen = app.screen  # type: ignore[attr-defined]
    return screen if isinstance(screen, WhatIfScreen) else None


def _summary(app: object) -> str:
    panel = _panel(app)
    return str(panel.query_one("#whatif-summary").render()) if panel is not None else ""  # type: ignore[attr-defined]


async def _ask(pilot: Pilot[int], app: object, spec: str) -> None:
    await pilot.press("w")
    assert await until(pilot, lambda: _panel(app) is not None)
    await pilot.press(*spec, "enter")


def test_more_quota_moves_the_waiting_workloads_sooner_and_enter_opens_one() -> None:
    app = make_app(_store(), forecast=True, clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        await _ask(pilot, app, "quota cq nvidia.com/gpu=+4")
        assert await until(pilot, lambda: COMPUTING not in _summary(app) and "sooner" in _summary(app)), _summary(app)
        panel = _panel(app)
        assert panel is not None
        # a starts now instead of when r ends (8 minutes); b when a ends (at T0+420, not T0+900).
        assert _summary(app).startswith("2 workloads start sooner, median"), _summary(app)
        rows = panel.rows()
        # Most sooner first; both by 8 minutes (a: 600 → 120, b: 900 → 420), then by name.
        assert [r[0] for r in rows] == ["team-a/a", "team-a/b"], rows
        a, b = rows
        assert a[1] == "cq" and a[2].startswith("~8m") and a[3] == "now", a
        assert a[4] == "sooner by 8m", a
        assert b[2].startswith("~13m") and b[3].startswith("~5m") and b[4] == "sooner by 8m", b
        assert "team-a/a" in screen_text(app)
        await pilot.press("tab")  # to the suggestions, then the table
        await pilot.press("tab")
        assert await until(pilot, lambda: app.focused is panel.query_one("#whatif-moves"))
        await pilot.press("down", "enter")  # the second row: b
        assert await until(pilot, lambda: isinstance(app.screen, WorkloadDetailScreen))
        assert app.screen.key == ("team-a", "b")  # type: ignore[attr-defined]
        await pilot.press("escape")
        assert await until(pilot, lambda: _panel(app) is not None)
        await pilot.press("escape")
        assert await until(pilot, lambda: len(app.screen_stack) == 1)

    run(app, body)


def test_a_bad_change_is_one_line_and_the_console_keeps_running() -> None:
    app = make_app(_store(), forecast=True, clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        await _ask(pilot, app, "quota nope nvidia.com/gpu=+1")
        assert await until(pilot, lambda: "unknown ClusterQueue 'nope'" in _summary(app)), _summary(app)
        assert "\n" not in _summary(app).strip()
        panel = _panel(app)
        assert panel is not None and panel.rows() == []
        # Unparseable: said at once, without a worker.
        inp = panel.query_one("#whatif-input", Input)
        inp.value = ""
        await pilot.press(*"quota cq gpu", "enter")
        assert await until(pilot, lambda: "bad change 'quota cq gpu'" in _summary(app)), _summary(app)
        # Still answering: a good change after the bad ones.
        inp.value = ""
        await pilot.press(*"hold team-a/a", "enter")
        assert await until(pilot, lambda: "no longer starts" in _summary(app)), _summary(app)
        assert app.is_running

    run(app, body)


def _two_queues() -> Store:
    """The forecast views' cluster plus a busier queue, cq-big, with three workloads of team-b waiting."""
    store = _store()
    waiting = [workload("team-b", f"big-{i}", "lqb", {GPU: "8"}, created=T0 + 10 + i) for i in range(3)]
    put(store, cluster_queue("cq-big", group(GPU, fq("l4", **{GPU: 4}))), local_queue("team-b", "lqb", "cq-big"),
        *waiting)
    return store


def test_suggestions_name_the_queues_namespaces_and_pools_and_fill_the_input() -> None:
    app = make_app(_two_queues(), forecast=True, clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        # Opened from the overview (no workload row): the busiest queue first.
        await pilot.press("w")
        assert await until(pilot, lambda: _panel(app) is not None)
        panel = _panel(app)
        assert panel is not None
        specs = [s.spec for s in panel.suggested]
        assert specs[:2] == ["quota cq-big nvidia.com/gpu=+8", "quota cq nvidia.com/gpu=+4"], specs
        assert specs[2:4] == ["hold team-b/*", "hold team-a/*"], specs
        await pilot.press("escape")
        assert await until(pilot, lambda: len(app.screen_stack) == 1)
        await pilot.press("2")
        assert await until(pilot, lambda: app.table_view() is not None and app.table_view().cursor_row() is not None)
        tv = app.table_view()
        assert tv is not None
        for _ in range(6):  # the cursor to a
            row = tv.cursor_row()
            if row is not None and row.key == ("team-a", "a"):
                break
            await pilot.press("down")
        row = tv.cursor_row()
        assert row is not None and row.key == ("team-a", "a"), row
        await pilot.press("w")
        assert await until(pilot, lambda: _panel(app) is not None)
        panel = _panel(app)
        assert panel is not None
        specs = [s.spec for s in panel.suggested]
        assert specs[0] == "quota cq nvidia.com/gpu=+4", specs  # the row's queue, preselected
        options = panel.query_one("#whatif-suggestions", OptionList)
        assert options.highlighted == 0
        await pilot.press("down", "enter")  # into the list, take the highlighted one
        inp = panel.query_one("#whatif-input", Input)
        assert await until(pilot, lambda: inp.value == "quota cq nvidia.com/gpu=+4"), inp.value
        assert app.focused is inp
        await pilot.press("enter")
        assert await until(pilot, lambda: "sooner" in _summary(app)), _summary(app)

    run(app, body)


def test_whatif_command_opens_the_panel_with_its_change() -> None:
    assert resolve_command(":whatif hold team-a/*") is not None
    app = make_app(_store(), clock=lambda: NOW)  # no forecast worker: runtimes estimated by the panel

    async def body(pilot: Pilot[int]) -> None:
        await pilot.press("colon", *"whatif quota cq nvidia.com/gpu=+4", "enter")
        assert await until(pilot, lambda: "2 workloads start sooner" in _summary(app)), _summary(app)

    run(app, body)


def test_the_before_is_the_console_forecast_when_the_store_has_not_moved() -> None:
    from kueuetop.tui.forecaster import Forecaster

    store = _store()
    f = Forecaster(store, clock=lambda: NOW)
    f.run_once()
    change = [parse_change("quota cq nvidia.com/gpu=+4")]
    again = run_what_if(store, change, NOW + 30, latest=f.latest)
    assert again.reused and again.at == NOW  # its instant too, so before and after compare
    fresh = run_what_if(store, change, NOW, latest=None)
    assert not fresh.reused and [m["name"] for m in fresh.moves] == ["a", "b"]
    assert fresh.moves[0]["after"]["startInSeconds"] == 0
    assert fresh.moves[0]["before"]["startInSeconds"] == T0 + 600 - NOW


def test_a_second_request_replaces_the_first() -> None:
    app = make_app(_store(), forecast=True, clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        await pilot.press("w")
        assert await until(pilot, lambda: _panel(app) is not None)
        panel = _panel(app)
        assert panel is not None
        panel.submit("quota cq nvidia.com/gpu=+4")
        panel.submit("hold team-a/a")  # before the first can answer: its answer is dropped
        assert COMPUTING in _summary(app)
        assert await until(pilot, lambda: "no longer starts" in _summary(app)), _summary(app)
        await pilot.pause(0.5)  # time for a late first answer, which must not replace it
        assert "with hold team-a/a;" in _summary(app), _summary(app)
        # Held, a no longer starts and b takes its place (5m sooner); the quota's answer, both 8m
        # sooner, never shows.
        rows = panel.rows()
        assert [(r[0], r[4][:16]) for r in rows] == [("team-a/b", "sooner by 5m"), ("team-a/a", "no longer starts")], rows

    run(app, body)
