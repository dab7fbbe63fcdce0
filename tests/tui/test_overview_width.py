"""The board's problem lines are cut for the columns the list really draws them in: its content
region, less its scrollbar while that shows (the list scrolls), less the board's own scrollbar
(80 columns, the queues below the problems overflow), beside the queues at 160 columns. A line
longer than the list ends with an ellipsis in the list's last column; none wraps, none is cut
early, and a second refresh of unchanged data draws the same lines."""

from __future__ import annotations

import pytest
from textual.pilot import Pilot

from kueuetop.tui.app import KueuetopApp
from kueuetop.tui.views.overview import ProblemList
from kueuetop.views.rows import age
from tests.tui.screen_text import screen_text
from tests.tui.test_app import make_app, run, until
from tests.tui.test_overview import board, incident_store
from tests.views.cluster import NOW

ELLIPSIS = "…"


def list_rows(app: KueuetopApp) -> list[str]:
    """What the screen shows in the problem list's content region (scrollbar left out)."""
    region = app.main.query_one(ProblemList).scrollable_content_region
    lines = screen_text(app).splitlines()
    return [line[region.x:region.right] for line in lines[region.y:region.bottom]]


def expected_lines(app: KueuetopApp) -> list[str]:
    """Each problem's line in full: the age of the oldest, then the text."""
    return [f"{age(p.oldest) if p.oldest is not None else '':>5} {p.text}" for p in board(app).problems]


def one_line_each(app: KueuetopApp) -> list[str]:
    """Problems (of those on screen) whose line is not its text, or its text cut with an
    ellipsis in the list's last column; and rows that belong to no line (a wrapped rest)."""
    rows = list_rows(app)
    width = len(rows[0])
    full = expected_lines(app)
    titles = {f"({sum(1 for q in board(app).problems if q.category == p.category)})" for p in board(app).problems}
    wrong = []
    for row in rows:
        shown = row.rstrip()
        shown = shown[:-1] if shown.endswith(ELLIPSIS) else shown
        wants = [t.ljust(width) if len(t) <= width else t[:width - 1] + ELLIPSIS
                 for t in full if len(shown) >= 8 and t.startswith(shown)]
        if wants:
            if row not in wants:
                wrong.append(f"{row!r} != {wants[0]!r}")
        elif not (row.startswith("Workloads ") or row.rstrip().endswith(tuple(titles)) or not row.strip()):
            wrong.append(f"a row of no line: {row!r}")
    return wrong


async def check(pilot: Pilot[int], app: KueuetopApp) -> None:
    lst = app.main.query_one(ProblemList)
    assert await until(pilot, lambda: board(app).problems and lst.show_vertical_scrollbar)
    assert await until(pilot, lambda: not one_line_each(app)), one_line_each(app)
    assert any(row.rstrip().endswith(ELLIPSIS) for row in list_rows(app)), list_rows(app)  # a line was cut
    board(app).refresh_view()  # nothing changed: the same lines, still right
    await pilot.pause()
    assert not one_line_each(app), one_line_each(app)
    lst.focus()
    await pilot.press("end")  # the lines below, scrolled into view
    await pilot.pause()
    assert not one_line_each(app), one_line_each(app)


@pytest.mark.parametrize("size", [(80, 24), (80, 16), (160, 12)], ids=["80x24", "80x16-board-scrolls", "160x12-wide"])
def test_problem_lines_fit_the_list_while_it_scrolls(size: tuple[int, int]) -> None:
    app = make_app(incident_store(), clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        await check(pilot, app)

    run(app, body, size=size)


def test_problem_lines_use_every_column_of_a_list_without_scrollbar() -> None:
    """120×32 (the README's size): the problems, stacked above the queues, do not scroll; a long
    line is cut at the list's last column, not two columns before it."""
    app = make_app(incident_store(), clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        lst = app.main.query_one(ProblemList)
        assert await until(pilot, lambda: board(app).problems and lst.scrollable_content_region.width == 120)
        assert not lst.show_vertical_scrollbar
        assert await until(pilot, lambda: not one_line_each(app)), one_line_each(app)
        assert any(row.endswith(ELLIPSIS) for row in list_rows(app)), list_rows(app)

    run(app, body, size=(120, 32))


def test_wide_lines_wrap_in_the_list_beside_the_queues() -> None:
    """160×48: the problems have 82 columns beside the queues (78); a long one takes a few
    lines of those 82, and every line of the list stays inside it."""
    app = make_app(incident_store(), clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        lst = app.main.query_one(ProblemList)
        assert await until(pilot, lambda: board(app).problems and "-wide" in board(app).classes)
        assert await until(pilot, lambda: lst.line_width == 82 and board(app)._prompt_width == 82)
        rows = [row.rstrip() for row in list_rows(app)]
        text = " ".join(" ".join(rows).split())
        for line in expected_lines(app):  # each in full, wrapped at the list's edge
            assert " ".join(line.split()) in text, (line, rows)
        assert any(len(row) > 79 for row in rows), rows  # the columns beyond 79 are used

    run(app, body, size=(160, 48))
