"""VirtualTable and the TableView model on synthetic rows (no cluster): only visible rows are
drawn, the cursor follows its row, marks, filters, keyed updates, the empty message."""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Awaitable, Callable, Hashable, Mapping
from typing import Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.pilot import Pilot

from kueuetop.store import Changes, Store
from kueuetop.tui.context import ViewContext
from kueuetop.tui.glyphs import ASCII
from kueuetop.tui.themes import load_themes
from kueuetop.tui.views.base import TableView
from kueuetop.tui.virtual_table import VirtualTable, fit
from kueuetop.views.rows import Row, cell
from tests.tui.screen_text import screen_text

Cells = dict[str, tuple[Text, ...]]


def synthetic(n: int) -> Cells:
    return {f"r{i}": (Text(f"row-{i:05d}"), Text(str(i % 7))) for i in range(n)}


class TableApp(App[None]):
    def __init__(self, cells: Cells, marks: set[str] | None = None, ellipsis: str = "…") -> None:
        super().__init__()
        self.cells = cells
        self.messages: list[Any] = []
        self._marks, self._ellipsis = marks, ellipsis

    def compose(self) -> ComposeResult:
        yield VirtualTable(("NAME", "GROUP"), self.cells.get, marks=self._marks, ellipsis=self._ellipsis)

    @property
    def table(self) -> VirtualTable:
        return self.query_one(VirtualTable)

    def on_virtual_table_row_selected(self, event: VirtualTable.RowSelected) -> None:
        self.messages.append(event)

    def on_virtual_table_row_highlighted(self, event: VirtualTable.RowHighlighted) -> None:
        self.messages.append(event)


def run(app: App[Any], body: Callable[[Pilot[Any]], Awaitable[None]], size: tuple[int, int] = (60, 12)) -> None:
    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await body(pilot)

    asyncio.run(asyncio.wait_for(main(), 30))


def test_only_rows_in_the_viewport_are_drawn() -> None:
    app = TableApp(synthetic(100_000))

    async def body(pilot: Pilot[Any]) -> None:
        t = app.table
        t.set_order(list(app.cells))
        t.focus()
        await pilot.pause()
        rows_on_screen = t.size.height - 1  # the header takes a line
        assert 0 < t.lines_rendered <= 2 * rows_on_screen  # a first layout may draw twice
        before = t.lines_rendered
        await pilot.press("pagedown")
        await pilot.pause()
        assert 0 < t.lines_rendered - before <= 2 * rows_on_screen
        text = screen_text(app)
        assert "NAME" in text and "row-00000" not in text and f"row-{rows_on_screen:05d}" in text

    run(app, body)


def test_cursor_keeps_its_row_across_a_resort_and_keys_move_it() -> None:
    app = TableApp(synthetic(50))

    async def body(pilot: Pilot[Any]) -> None:
        t = app.table
        t.set_order(list(app.cells))
        t.focus()
        await pilot.press("down", "down", "down")
        assert t.cursor_key == "r3"
        t.set_order(list(reversed(list(app.cells))))
        assert t.cursor_key == "r3" and t.cursor_row == 46
        await pilot.press("end")
        assert t.cursor_key == "r0"
        await pilot.press("home", "pagedown")
        assert t.cursor_row == t.size.height - 1  # a page: the rows under the header
        # The row under the cursor goes away: the cursor stays at its position.
        key = t.cursor_key
        t.set_order([k for k in t.order if k != key])
        assert t.cursor_key is not None and t.cursor_key != key
        await pilot.press("enter")
        await pilot.pause()
        selected = [m for m in app.messages if isinstance(m, VirtualTable.RowSelected)]
        assert [m.row_key for m in selected] == [t.cursor_key]
        assert any(isinstance(m, VirtualTable.RowHighlighted) and m.row_key == "r3" for m in app.messages)

    run(app, body)


def test_marks_are_drawn_and_follow_the_shared_set() -> None:
    marks: set[str] = set()
    app = TableApp(synthetic(5), marks=marks)

    async def body(pilot: Pilot[Any]) -> None:
        t = app.table
        t.set_order(list(app.cells))
        marks.add("r1")
        t.refresh_rows(["r1"])
        await pilot.pause()
        lines = screen_text(app).splitlines()
        assert [ln for ln in lines if "*" in ln] == [ln for ln in lines if "row-00001" in ln]
        assert t.get_row_at(1)[0].plain == "*" and t.get_row_at(0)[0].plain == " "

    run(app, body)


def test_empty_table_says_so() -> None:
    app = TableApp({})

    async def body(pilot: Pilot[Any]) -> None:
        app.table.set_order([])
        await pilot.pause()
        assert "no rows" in screen_text(app)
        assert app.table.cursor_key is None

    run(app, body)


def test_long_cells_end_in_the_ascii_ellipsis() -> None:
    assert fit(Text("abcdefghij"), 5, "~").plain == "abcd~"
    assert fit(Text("abc"), 5, "~").plain == "abc"
    long = {"r0": (Text("x" * 100), Text("1"))}
    app = TableApp(long, ellipsis="~")

    async def body(pilot: Pilot[Any]) -> None:
        app.table.set_order(["r0"])
        await pilot.pause()
        text = screen_text(app)
        assert "x" * 47 + "~" in text and "…" not in text

    run(app, body)


# ---------------------------------------------------------------- the TableView model
class Things(TableView):
    """Rows from a dict; changes arrive as store notifications of the kind "things"."""

    VIEW = "things"
    TITLE = "Things"
    KINDS = frozenset({"things"})
    COLUMNS = ("NAME", "SIZE")
    MARKS = True
    data: ClassVar[dict[str, int]] = {}
    built: ClassVar[list[Hashable]] = []

    def _row(self, name: str) -> Row:
        return Row(name, (cell(name), cell(self.data[name])), sort={"name": name, "size": self.data[name]})

    def build_rows(self) -> list[Row]:
        self.built.append("*")
        return [self._row(n) for n in self.data]

    def build_row(self, key: Hashable) -> Row | None:
        self.built.append(key)
        return self._row(str(key)) if key in self.data else None

    def row_keys_for(self, changes: Mapping[str, set[Any]]) -> set[Hashable] | None:
        return set(changes.get("things", ()))


class ViewApp(App[None]):
    def __init__(self, ctx: ViewContext) -> None:
        super().__init__()
        self.ctx = ctx

    def compose(self) -> ComposeResult:
        yield Things(self.ctx)

    def check_binding(self, action: str, parameters: tuple[object, ...]) -> bool:
        return True


def names(view: TableView) -> list[str]:
    return [r.sort["name"] for r in view.model.visible_rows()]


def test_view_updates_by_key_sorts_filters_and_keeps_the_cursor() -> None:
    Things.data.clear()
    Things.data.update({f"t{i:03d}": i % 10 for i in range(300)})
    Things.built.clear()
    ctx = ViewContext(Store(), load_themes().themes["dark"], ASCII)
    app = ViewApp(ctx)

    async def body(pilot: Pilot[Any]) -> None:
        v = app.query_one(Things)
        v.refresh_view()
        assert Things.built.count("*") == 1 and names(v)[:2] == ["t000", "t001"] and v.model.total == 300
        v.table.move_cursor(5)
        assert v.cursor_id() == "t005"
        # One object changes: only it (and the rows on screen) are rebuilt; the cursor stays.
        Things.built.clear()
        Things.data["t005"] = 99
        v._on_store_changes(Changes({"things": frozenset({"t005"})}))
        v.refresh_view()
        assert "*" not in Things.built and len(Things.built) <= v.table.size.height + 1
        assert "99" in [c.plain for c in v.table.get_row_at(5)]
        v.sort_by("size")
        assert v.cursor_id() == "t005" and names(v)[-1] == "t005"
        # Removed and added objects.
        del Things.data["t000"]
        Things.data["t999"] = -1
        v._on_store_changes(Changes({"things": frozenset({"t000", "t999"})}))
        v.refresh_view()
        assert names(v)[0] == "t999" and "t000" not in names(v) and v.model.total == 300
        # Filter and marks.
        v.set_filter("t00[1-3]")
        assert names(v) == ["t001", "t002", "t003"]
        v.table.move_cursor(1)
        v.toggle_mark()
        assert v.model.marks == {"t002"} and [r.sort["name"] for r in v.selected()] == ["t002"]
        v.set_filter("nothing-matches")
        assert names(v) == [] and v.cursor_id() is None
        await pilot.pause()
        assert "no rows match the filter" in screen_text(app)
        v.set_filter("")
        assert len(names(v)) == 300

    run(app, body, size=(60, 20))


def _expected(data: dict[str, int], sort: str, reverse: bool, word: str) -> list[str]:
    """The plain answer: every row sorted (ties by name) and filtered from scratch."""
    by_name = sorted(data)
    if sort == "size":
        order = sorted(by_name, key=lambda n: data[n], reverse=reverse)
    else:
        order = sorted(by_name, reverse=reverse)
    rx = re.compile(word, re.IGNORECASE) if word else None
    return [n for n in order if rx is None or rx.search(f"{n} {data[n]}")]


def test_keyed_updates_keep_sort_and_filter_equal_to_a_full_recompute() -> None:
    """Random changes, adds and removals between sorts, typing and backspacing a filter: the
    shown order always equals sorting and filtering every row again; the cursor keeps its row."""
    rnd = random.Random(7)
    Things.data.clear()
    Things.data.update({f"w{i:03d}": rnd.randrange(20) for i in range(400)})
    ctx = ViewContext(Store(), load_themes().themes["dark"], ASCII)
    app = ViewApp(ctx)

    async def body(pilot: Pilot[Any]) -> None:
        v = app.query_one(Things)
        v.refresh_view()
        word = ""
        for step in range(120):
            what = rnd.random()
            if what < 0.45:  # a few objects change, come or go
                keys = set()
                for _ in range(rnd.randrange(1, 12)):
                    name = f"w{rnd.randrange(460):03d}"
                    if name in Things.data and rnd.random() < 0.2:
                        del Things.data[name]
                    else:
                        Things.data[name] = rnd.randrange(20)
                    keys.add(name)
                before = v.cursor_id()
                v._on_store_changes(Changes({"things": frozenset(keys)}))
                v.refresh_view()
                if before is not None and before in v.model.order:
                    assert v.cursor_id() == before, step
            elif what < 0.65:
                before = v.cursor_id()
                v.sort_by(rnd.choice(["size", "name"]))
                assert before is None or v.cursor_id() == before, step  # sorting hides nothing
            elif what < 0.85:  # type on, or backspace
                if word and rnd.random() < 0.4:
                    word = word[:-1]
                else:
                    word += rnd.choice("w0123 ")[0].strip() or "1"
                v.set_filter(word)
            else:
                v.table.move_cursor(rnd.randrange(max(1, len(v.model.order))))
            want = _expected(Things.data, v.model.sort_name or "name", v.model.sort_reverse, word)
            assert names(v) == want, (step, v.model.sort_name, v.model.sort_reverse, word)
            assert v.model.total == len(Things.data)
        await pilot.pause()

    run(app, body, size=(60, 20))


class PriorityApp(App[None]):
    """Four columns: NAME and STATE always shown, NOTE (wide) gives way first, then GROUP."""

    COLUMNS = ("NAME", "GROUP", "NOTE", "STATE")

    def __init__(self) -> None:
        super().__init__()
        self.cells = {f"r{i}": (Text(f"row-{i:03d}"), Text("group-x"), Text("n" * 30), Text("Pending"))
                      for i in range(20)}
        self.hidden: list[tuple[str, ...]] = []

    def compose(self) -> ComposeResult:
        yield VirtualTable(self.COLUMNS, self.cells.get, priorities=(0, 1, 2, 0))

    def on_virtual_table_columns_hidden(self, event: VirtualTable.ColumnsHidden) -> None:
        self.hidden.append(event.hidden)


def test_columns_give_way_by_priority_and_wide_shows_them_all() -> None:
    app = PriorityApp()

    async def body(pilot: Pilot[Any]) -> None:
        t = app.query_one(VirtualTable)
        t.set_order(sorted(app.cells))
        await pilot.pause()
        header = screen_text(app).splitlines()[0]
        # 40 columns: NAME (9+2), STATE (7+2) and GROUP (7+2) fit; the 30-wide NOTE does not.
        assert header.split() == ["NAME", "GROUP", "STATE"], header
        await pilot.pause()  # the message posted while drawing
        assert t.hidden_columns == ("NOTE",) and app.hidden[-1] == ("NOTE",)
        assert "Pending" in screen_text(app).splitlines()[1]
        # The column cursor walks over shown columns only.
        t.focus()
        for _ in range(3):
            await pilot.press("right")
        assert t.cursor_column == 3  # STATE, skipping the hidden NOTE
        t.wide = True
        await pilot.pause()
        await pilot.pause()
        assert screen_text(app).splitlines()[0].split()[:3] == ["NAME", "GROUP", "NOTE"]
        assert t.hidden_columns == () and app.hidden[-1] == ()
        t.wide = False
        await pilot.pause()
        assert t.hidden_columns == ("NOTE",)

    run(app, body, size=(40, 10))


def test_columns_of_priority_zero_stay_however_narrow() -> None:
    app = PriorityApp()

    async def body(pilot: Pilot[Any]) -> None:
        t = app.query_one(VirtualTable)
        t.set_order(sorted(app.cells))
        await pilot.pause()
        assert t.shown_columns == ("NAME", "STATE") and set(t.hidden_columns) == {"GROUP", "NOTE"}
        assert screen_text(app).splitlines()[0].split() == ["NAME", "STATE"]

    run(app, body, size=(22, 10))


class SqueezeApp(PriorityApp):
    """NOTE (30 wide) is the first column after NAME and STATE: cut short, not left out."""

    def compose(self) -> ComposeResult:
        yield VirtualTable(self.COLUMNS, self.cells.get, priorities=(0, 2, 1, 0))


def test_a_priority_one_column_too_wide_is_cut_to_the_space_left() -> None:
    app = SqueezeApp()

    async def body(pilot: Pilot[Any]) -> None:
        t = app.query_one(VirtualTable)
        t.set_order(sorted(app.cells))
        await pilot.pause()
        await pilot.pause()
        lines = screen_text(app).splitlines()
        # 40 columns: NAME (9+2) and STATE (7+2) leave 20; NOTE takes 18 of them (+2 padding),
        # so GROUP, narrower but less important, does not come in.
        assert lines[0].split() == ["NAME", "NOTE", "STATE"], lines[0]
        assert t.hidden_columns == ("GROUP",)
        row = lines[1]
        assert "Pending" in row and "row-000" in row
        assert "n" * 17 + "…" in row and "n" * 18 not in row, row
        t.wide = True
        await pilot.pause()
        await pilot.pause()
        assert t.hidden_columns == ()
        row = screen_text(app).splitlines()[1]
        assert "…" not in row and row.rstrip().endswith("n" * 19), row  # whole, running off the edge

    run(app, body, size=(40, 10))

    # Too little room left (under SQUEEZE_MIN): the column is left out, as before.
    app = SqueezeApp()

    async def narrow(pilot: Pilot[Any]) -> None:
        t = app.query_one(VirtualTable)
        t.set_order(sorted(app.cells))
        await pilot.pause()
        assert t.shown_columns == ("NAME", "STATE"), t.shown_columns

    run(app, narrow, size=(28, 10))


def test_one_priority_per_column() -> None:
    import pytest

    with pytest.raises(ValueError, match="one priority per column"):
        VirtualTable(("A", "B"), {}.get, priorities=(0,))


def _styled_chars(segments: Any) -> list[tuple[str, Any]]:
    """Each cell of a line with its style (segments cut differently compare equal)."""
    from rich.style import Style

    return [(ch, seg.style or Style.null()) for seg in segments for ch in seg.text]


def test_rows_drawn_as_segments_look_as_rich_would_draw_them() -> None:
    """Plain, styled, wide, cut and spanned cells, with and without marks: the same characters
    in the same styles as assembling the line as one Text and rendering it."""
    from rich.style import Style

    from kueuetop.tui.virtual_table import PAD

    spanned = Text("ab")
    spanned.stylize("bold", 0, 1)
    cells: Cells = {
        "a": (cell("plain"), cell("Pending", "red"), cell("数据中心"), cell("x" * 60, "bold #ff0000"), spanned),
        "b": (cell(""), cell("Admitted", "green on black"), cell("-"), cell("y"), Text("z")),
    }
    for marks in (None, {"a"}):
        app = TableApp({}, marks=marks)

        async def body(pilot: Pilot[Any], marks: set[str] | None = marks, app: TableApp = app) -> None:
            t = app.table
            t.columns = ("A", "B", "C", "D", "E")
            t.priorities = (0,) * 5
            t._shown = list(range(5))
            t._widths = [6, 8, 8, 20, 3]
            t._cells_of = cells.get
            for rid in cells:
                marked = marks is not None and rid in marks
                line = Text(no_wrap=True, end="")
                if marks is not None:
                    line.append(" " * PAD + ("*" if marked else " ") + " " * PAD, Style(bold=True))
                for c, w in zip(cells[rid], t._widths, strict=True):
                    cut = fit(c, w, t.ellipsis)
                    line.append(" " * PAD)
                    line.append_text(cut)
                    line.append(" " * (w - cut.cell_len + PAD))
                want = _styled_chars(line.render(app.console))
                assert _styled_chars(t._row_segments(rid, marked)) == want, (rid, marks)

        run(app, body)


def test_a_burst_of_changes_shows_the_rows_on_screen_first_then_all_of_them() -> None:
    """More changed rows than a refresh builds at once: the rows on screen are rebuilt for the
    next frame, the others right after it; then every row, the order and the filter are as a
    full recompute says, and the cursor kept its row."""
    from kueuetop.views.table_model import CATCH_UP_STEP as _CATCH_UP_STEP
    from kueuetop.views.table_model import CATCH_UP_STEPS as _CATCH_UP_STEPS
    from kueuetop.views.table_model import LATER_OVER as _LATER_OVER

    rnd = random.Random(3)
    Things.data.clear()
    Things.data.update({f"b{i:04d}": rnd.randrange(50) for i in range(2000)})
    ctx = ViewContext(Store(), load_themes().themes["dark"], ASCII)
    app = ViewApp(ctx)

    async def body(pilot: Pilot[Any]) -> None:
        v = app.query_one(Things)
        v.refresh_view()
        v.sort_by("size")
        v.set_filter("b1")
        v.table.move_cursor(3)
        await pilot.pause()
        cursor = v.cursor_id()
        changed = rnd.sample(sorted(Things.data), _LATER_OVER * 6)
        for name in changed:
            Things.data[name] = rnd.randrange(50)
        Things.built.clear()
        top = int(v.table.scroll_y)
        shown = {v.model.rows[rid].key for rid in v.model.order[top:top + v.table.size.height]}
        painted: list[int] = []  # rows built when each frame drew the table
        render_lines = v.table.render_lines

        def render(crop: Any) -> Any:
            painted.append(len(Things.built))
            return render_lines(crop)

        v.table.render_lines = render  # type: ignore[method-assign]
        v._on_store_changes(Changes({"things": frozenset(changed)}))
        v.refresh_view()
        assert len(Things.built) <= v.table.size.height + 1  # only what is on screen, so far
        assert all(v.model.rows[str(k)].sort["size"] == Things.data[str(k)] for k in shown)
        assert v.model.later
        steps: list[int] = []  # rows built by each catch-up step
        catch_up = v._catch_up

        def step() -> None:
            before = len(Things.built)
            catch_up()
            steps.append(len(Things.built) - before)

        v._catch_up = step  # type: ignore[method-assign]
        for _ in range(20):
            await pilot.pause()
            if not v.model.later:
                break
        # The first frame came before the others were built (not held back by them).
        assert painted and painted[0] <= v.table.size.height + 1
        assert set(changed) <= set(Things.built) and not v.model.later
        # A step at a time (the first one is not in `steps`), and no more steps than allowed.
        assert 1 < len([n for n in steps if n]) < _CATCH_UP_STEPS
        assert _CATCH_UP_STEP < max(steps) <= -(-len(changed) // _CATCH_UP_STEPS)
        assert names(v) == _expected(Things.data, "size", False, "b1")
        assert v.cursor_id() == cursor

    run(app, body, size=(60, 20))


def test_one_line_labels_repaint_without_a_layout_pass_and_only_when_their_text_changes() -> None:
    from textual.containers import Vertical

    from kueuetop.tui.oneline import OneLine

    class LabelApp(App[None]):
        def compose(self) -> ComposeResult:
            with Vertical():
                yield OneLine("start")

    app = LabelApp()

    async def body(pilot: Pilot[Any]) -> None:
        label = app.query_one(OneLine)
        layouts: list[bool] = []
        repaints: list[bool] = []
        original = label.refresh

        def refresh(*a: Any, layout: bool = False, **kw: Any) -> Any:
            (layouts if layout else repaints).append(True)
            return original(*a, layout=layout, **kw)

        label.refresh = refresh  # type: ignore[method-assign]
        label.show_text(Text("title (3/3)"))
        label.show_text(Text("title (3/3)"))  # the same again: nothing to paint
        assert layouts == [] and len(repaints) == 1
        label.show_text(Text("title (3/3)", style="bold"))  # same characters, another style
        assert len(repaints) == 2
        await pilot.pause()
        assert "title (3/3)" in screen_text(app) and label.size.height == 1

    run(app, body)


def test_rows_built_in_numbers_get_their_filter_text_ahead_and_unchanged_rows_keep_theirs() -> None:
    """Many rows rebuilt without moving any order (a queue's positions, ages): the worker joins
    their filter text, so the first `/` does not; a row rebuilt the same is the row it was."""
    from kueuetop.views.table_model import TEXT_AHEAD as _TEXT_AHEAD

    class Labels(Things):
        def _row(self, name: str) -> Row:  # SIZE shown, not sorted on: a change moves no order
            return Row(name, (cell(name), cell(self.data[name])), sort={"name": name})

    class LabelsApp(ViewApp):
        def compose(self) -> ComposeResult:
            yield Labels(self.ctx)

    Things.data.clear()
    Things.data.update({f"c{i:04d}": i for i in range(3 * _TEXT_AHEAD)})
    app = LabelsApp(ViewContext(Store(), load_themes().themes["dark"], ASCII))

    async def body(pilot: Pilot[Any]) -> None:
        v = app.query_one(Labels)
        v.refresh_view()
        for _ in range(100):  # the orders ahead (and every row's text) at start
            if not v.model.sorts.missing(v.model.sort_keys) and not v._ahead_running:
                break
            await asyncio.sleep(0.05)
        assert all(r._lower is not None for r in v.model.rows.values())
        before = dict(v.model.rows)
        changed = sorted(Things.data)[: 2 * _TEXT_AHEAD]
        for name in changed:
            Things.data[name] += 1
        v._on_store_changes(Changes({"things": frozenset([*changed, "c0700"])}))
        v.refresh_view()
        await pilot.pause()
        assert v.model.rows["c0700"] is before["c0700"]  # built again, the same: kept
        assert not v.model.sorts.missing(v.model.sort_keys) and v.model.rows[changed[0]]._lower is None
        for _ in range(100):
            if all(v.model.rows[n]._lower is not None for n in changed):
                break
            await asyncio.sleep(0.05)
        assert all(v.model.rows[n]._lower is not None for n in changed)
        assert v.model.rows[changed[0]].lower == f"{changed[0]} {Things.data[changed[0]]}"

    run(app, body)


def test_a_one_word_filter_follows_rows_whose_text_changes_in_place() -> None:
    """The rows' text kept in sort order for a word filter is dropped when a row changes, even
    one that keeps its place (its SIZE is shown, not sorted on)."""

    class Labels(Things):
        def _row(self, name: str) -> Row:
            return Row(name, (cell(name), cell(self.data[name])), sort={"name": name})

    class LabelsApp(ViewApp):
        def compose(self) -> ComposeResult:
            yield Labels(self.ctx)

    Things.data.clear()
    Things.data.update({f"d{i:03d}": i for i in range(300)})
    app = LabelsApp(ViewContext(Store(), load_themes().themes["dark"], ASCII))

    def expected(word: str) -> list[str]:
        return sorted(n for n, size in Things.data.items() if word in f"{n} {size}".lower())

    async def body(pilot: Pilot[Any]) -> None:
        v = app.query_one(Labels)
        v.refresh_view()
        v.set_filter("7")
        assert v.model.filter.literal == "7" and names(v) == expected("7")
        v.set_filter("77")
        assert names(v) == expected("77")
        Things.data["d001"] = 770
        Things.data["d277"] = 5  # d277 still matches by name; d177's size goes from 177 to 1
        Things.data["d177"] = 1
        v._on_store_changes(Changes({"things": frozenset({"d001", "d277", "d177"})}))
        v.refresh_view()
        assert names(v) == expected("77") and "d001" in names(v)
        v.set_filter("7")  # backspace
        assert names(v) == expected("7")
        v.set_filter("D00")
        assert names(v) == expected("d00")

    run(app, body)


def test_orders_ahead_wait_while_a_change_is_on_its_way_to_the_screen(monkeypatch: Any) -> None:
    from kueuetop.tui.views import base
    from kueuetop.views.filtering import sort_ids

    Things.data.clear()
    Things.data.update({f"e{i:03d}": i % 9 for i in range(200)})
    ctx = ViewContext(Store(), load_themes().themes["dark"], ASCII)
    app = ViewApp(ctx)
    calls: list[bool] = []

    def busy() -> bool:  # busy for the first three looks
        calls.append(len(calls) < 3)
        return calls[-1]

    async def body(pilot: Pilot[Any]) -> None:
        v = app.query_one(Things)
        v.refresh_view()
        ctx.busy = busy
        got: list[Any] = []
        post = v.post_message

        def capture(message: Any) -> bool:
            got.append(message)
            return post(message)

        monkeypatch.setattr(v, "post_message", capture)
        wanted = [("size", False), ("size", True)]
        v._compute_ahead(dict(v.model.rows), v.model.sorts.generation, wanted)
        # Waited out the busy spell, then looked again before the texts and before each order.
        assert calls == [True, True, True, False, False, False]
        assert got[0].orders == {w: sort_ids(v.model.rows, *w) for w in wanted}
        ctx.busy = lambda: True  # always busy: the run still ends, after its longest wait
        monkeypatch.setattr(base, "_AHEAD_YIELD_MAX", 0.05)
        v._compute_ahead(dict(v.model.rows), v.model.sorts.generation, wanted)
        assert got[1].orders == got[0].orders

    run(app, body)


def test_a_resize_rebuilds_no_rows_and_keeps_the_cursor_on_screen() -> None:
    Things.data.clear()
    Things.data.update({f"f{i:03d}": i for i in range(200)})
    app = ViewApp(ViewContext(Store(), load_themes().themes["dark"], ASCII))

    async def body(pilot: Pilot[Any]) -> None:
        v = app.query_one(Things)
        v.refresh_view()
        await pilot.pause()
        t = v.table
        t.move_cursor(int(t.scroll_y) + t.size.height - 2)  # the last row on screen
        await pilot.pause()
        Things.built.clear()
        await pilot.resize_terminal(60, 8)
        await pilot.pause()
        await pilot.pause()
        assert Things.built == []  # nothing rebuilt for a new height
        top = int(t.scroll_y)
        assert top <= t.cursor_row < top + t.size.height - 1  # line 0 is the header
        assert f"f{t.cursor_row:03d}" in screen_text(app)

    run(app, body, size=(60, 20))


def test_rows_replaced_after_the_orders_ahead_are_freed_without_a_full_collection() -> None:
    """The worker that computed the orders ahead worked on a copy of the rows; once it is done,
    rows replaced later go with reference counting alone. A finished worker is kept by reference
    cycles until a full collection (which the console holds back while changes come, and never
    finds once the heap freezer froze it): it must not keep the copy."""
    import gc

    from kueuetop.views.table_model import TEXT_AHEAD as _TEXT_AHEAD

    class Labels(Things):
        def _row(self, name: str) -> Row:
            return Row(name, (cell(name), cell(self.data[name])), sort={"name": name, "size": self.data[name]})

    class LabelsApp(ViewApp):
        def compose(self) -> ComposeResult:
            yield Labels(self.ctx)

    Things.data.clear()
    Things.data.update({f"e{i:04d}": i for i in range(3 * _TEXT_AHEAD)})
    app = LabelsApp(ViewContext(Store(), load_themes().themes["dark"], ASCII))

    def stale_rows(v: Labels) -> int:
        kept = {id(r) for r in v.model.rows.values()}
        return sum(1 for o in gc.get_objects() if type(o) is Row and str(o.key).startswith("e") and id(o) not in kept)

    async def body(pilot: Pilot[Any]) -> None:
        v = app.query_one(Labels)
        v.refresh_view()
        for _ in range(100):  # the orders ahead (and every row's text) at start
            if not v.model.sorts.missing(v.model.sort_keys) and not v._ahead_running:
                break
            await asyncio.sleep(0.05)
        assert not v._ahead_running
        await pilot.pause()
        gc.collect()
        gc.disable()  # as while the console holds full collections back
        try:
            for name in Things.data:
                Things.data[name] += 1
            v._on_store_changes(Changes({"things": frozenset(Things.data)}))
            v.refresh_view()
            await pilot.pause()
            for _ in range(20):  # the changed rows left for after the frame
                v.refresh_view()
                await pilot.pause()
            assert all(r.cells[1].plain == str(Things.data[r.key]) for r in v.model.rows.values())
            # At most what the screen still shows of the old rows.
            assert stale_rows(v) < 20
        finally:
            gc.enable()

    run(app, body)
